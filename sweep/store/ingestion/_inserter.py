"""The writer of an ingest: a thread that inserts batches in order from a bounded queue.

Before, the reading handed over one batch and waited for its insert before handing over the
next; the parsing workers stalled meanwhile (2.5 to 5.2 s of a first ingest of 1M traces on a
16-core host), and each insert opened and closed the store, so each checkpointed
(``bench/ingest_timeline.py``, docs/store-and-sql.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from sweep.store.ingestion._spool import SpoolBatch, insert_spooled_on
from sweep.store.rows import AddCounts, LogMark, RowBatch, WritableStore, insert_batch

if TYPE_CHECKING:
    import duckdb

__all__ = ["INGEST_LOGGER", "Inserter", "ingest_log"]

#: The logger of each insert's size, how long the reading waited for the insert before it and
#: how long the insert took, at DEBUG: whether an ingest is bound by its parsing or its writer.
INGEST_LOGGER = "sweep.store.ingest"
ingest_log = logging.getLogger(INGEST_LOGGER)

#: Batches of spooled rows that may wait for the writer. They are files on disk, not memory;
#: while the writer is behind, the reading goes on (its workers would stall otherwise) and the
#: writer inserts the waiting batches through one connection, closing (a checkpoint) once.
_QUEUED_SPOOLED = 4


def _insert_on(
    con: duckdb.DuckDBPyConnection, batch: RowBatch | SpoolBatch, marks: list[LogMark]
) -> AddCounts:
    if isinstance(batch, SpoolBatch):
        return insert_spooled_on(con, batch, marks)
    return insert_batch(con, batch, marks)


class Inserter:
    """Inserts batches in order in a thread of its own, so the reading goes on while DuckDB
    stores (DuckDB lets go of the GIL while it works).

    A batch of spooled files waits behind at most :data:`_QUEUED_SPOOLED` others; a batch of
    rows built here (in memory) waits until the writer is idle, so memory holds one being
    built and one being inserted. The writer opens the store when work arrives and inserts
    every waiting batch through that one connection, then closes it when none is left: a
    close checkpoints (a second or more on a store of a million traces), and other processes
    get in whenever the writer waits for the reading. An error is raised at the next
    :meth:`submit` or :meth:`wait`; nothing queued after it is inserted."""

    def __init__(self, store: WritableStore, added: AddCounts) -> None:
        self.store = store
        self.added = added  # what the writer stored, summed
        self._cond = threading.Condition()
        self._queue: deque[tuple[RowBatch | SpoolBatch, list[LogMark]]] = deque()
        self._busy = False  # the writer holds a batch taken from the queue
        self._thread: threading.Thread | None = None
        self._done: list[AddCounts] = []
        self._error: BaseException | None = None

    def submit(self, batch: RowBatch | SpoolBatch, marks: list[LogMark]) -> None:
        start = time.perf_counter()
        with self._cond:
            while self._error is None and self._no_room_for(batch):
                self._cond.wait()
            self._collect()
            if not len(batch) and not marks:  # nothing to store: no need to open the store
                self._done.append(AddCounts(present=batch.duplicates))
                if isinstance(batch, SpoolBatch):
                    batch.remove()
                return
            if ingest_log.isEnabledFor(logging.DEBUG):
                rows = batch.trace_rows if isinstance(batch, SpoolBatch) else batch.count("traces")
                ingest_log.debug(
                    "insert of %d trace rows: reading waited %.3f s for the writer (%d batch(es) waiting)",
                    rows,
                    time.perf_counter() - start,
                    len(self._queue),
                )
            self._queue.append((batch, marks))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sweep-ingest-insert")
                self._thread.start()
            self._cond.notify_all()

    def _no_room_for(self, batch: RowBatch | SpoolBatch) -> bool:
        if isinstance(batch, SpoolBatch):
            return len(self._queue) >= _QUEUED_SPOOLED
        return bool(self._queue) or self._busy

    def _next(self) -> tuple[RowBatch | SpoolBatch, list[LogMark]] | None:
        """The next batch to insert (marked busy), or None: nothing left, or an error."""
        with self._cond:
            self._busy = False
            self._cond.notify_all()
            if not self._queue or self._error is not None:
                return None
            self._busy = True
            return self._queue.popleft()

    def _run(self) -> None:
        while True:
            try:
                item = self._next()
                if item is not None:
                    with self.store.writing() as con:  # one connection for all that waits
                        while item is not None:
                            start = time.perf_counter()
                            counts = _insert_on(con, *item)
                            ingest_log.debug("insert done in %.3f s", time.perf_counter() - start)
                            with self._cond:
                                self._done.append(counts)
                            item = self._next()
            except BaseException as e:  # noqa: BLE001 - raised in the ingesting thread by wait()
                with self._cond:
                    self._error = e
                    self._busy = False
                    self._cond.notify_all()
            with self._cond:
                # A batch handed over while the store was closing goes round again; after an
                # error, what waits is dropped (its files go with the spool folder).
                if not self._queue or self._error is not None:
                    self._queue.clear()
                    self._thread = None
                    self._cond.notify_all()
                    return

    def _collect(self) -> None:
        """Add what the writer stored to :attr:`added`; raise its error (held by the lock)."""
        for counts in self._done:
            self.added.add(counts)
        self._done.clear()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def join(self) -> None:
        """Drop the batches not yet begun and wait for the writer to end, without raising what
        it raised (cleanup on an error)."""
        with self._cond:
            self._queue.clear()
            thread = self._thread
        if thread is not None:
            thread.join()

    def wait(self) -> None:
        """Wait until every batch handed over is stored; raise what the writer raised."""
        with self._cond:
            while self._error is None and (self._queue or self._busy or self._thread is not None):
                self._cond.wait()
            self._collect()
