"""ResultsWriter: the sweep driver's one way to record traces.

Each trace is appended to its JSONL log as the bytes of its canonical serialization
(``Trace.to_json_bytes``), one ``write`` per log per group; a thread of its own syncs the logs
(:mod:`sweep.store.write._log_files`: one ``fsync`` per log for everything written since its last
pass, a group commit that grows with the load). A group counts as done only once it is
synced: :meth:`ResultsWriter.write_many` returns then, and :meth:`ResultsWriter.submit`
returns at once and calls back then, so the driver loop never waits on the disk.

Rows reach the DuckDB file from a child process (:mod:`sweep.store.write._follower`), which reads
the synced lines of the logs as ``sweep ingest`` does, and inserts them in batches, holding the
file only for the moment of one insert (so ``sweep query`` and ``sweep report`` get in between)
and recording in the same transaction how far each log is stored. A writer that starts on a
results folder first catches the store up with whatever an earlier, killed run logged but
never stored.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

from sweep.errors import StoreError, printable, reason
from sweep.schema import Provenance, Trace
from sweep.schema.files import write_atomic
from sweep.schema.limits import read_bytes
from sweep.store.db import StoreContext
from sweep.store.read import Store, read_log_tails
from sweep.store.rows import RowBatch, insert_batch
from sweep.store.write._follower import Stored
from sweep.store.write._follower_client import FollowerClient
from sweep.store.write._log_files import Log, LogFiles, log_path, safe_part

__all__ = ["ResultsWriter", "completed_task_ids"]

_log = logging.getLogger("sweep.store")


def _write_record(path: Path, text: str, root: Path) -> None:
    """A record's file under the results folder ``root``, unless it holds ``text`` already."""
    data = text.encode()
    try:
        if read_bytes(path, len(data)) == data:
            return
    except (OSError, ValueError):  # missing, larger, not a regular file: written (or refused) below
        pass
    try:
        write_atomic(path, data, inside=root)
    except (OSError, ValueError) as e:  # OutputRefused: a folder there, a link out of the results
        raise StoreError(f"cannot write {path}: {reason(e)}") from None


class ResultsWriter:
    """Appends traces to JSONL logs and, from a child process, to the DuckDB store.

    Use as a context manager, from one thread of one process (the sweep driver). A second
    writer on the same results folder is refused.

    Args:
        results_dir: The results folder; logs go to ``traces/`` in it, and the definitions and
            solutions of logged traces to ``definitions/`` and ``solutions/`` (FlashInfer-Bench
            layout), so the folder alone can rebuild the store.
        store_path: The DuckDB file (created if missing, migrated if older).
        sweep: Sweep name, stamped into traces whose provenance lacks one.
        run_id: Run id, likewise.
        context: Definitions, solutions and workloads of the sweep (stored in their tables,
            and used to fill op_type, tags, author, language and solution hash).
        flush_interval_s: How often the store follower inserts what is synced.
        lock_timeout_s: How long :meth:`flush` and :meth:`close` wait for readers.
        on_stored: Called with ``(seconds, traces)`` as lines reach the store: how long after
            their append, for how many (on a thread of the writer; keep it short).

    Raises:
        StoreError: Another writer holds the results folder, or the store cannot be opened.
    """

    def __init__(
        self,
        results_dir: Path,
        store_path: Path,
        *,
        sweep: str,
        run_id: str,
        context: StoreContext | None = None,
        flush_interval_s: float = 0.25,
        lock_timeout_s: float = 10.0,
        on_stored: Callable[[float, int], None] | None = None,
    ) -> None:
        self.results_dir = Path(results_dir)
        self.sweep = sweep
        self.run_id = run_id
        self.context = context or StoreContext()
        self.store = Store(Path(store_path), lock_timeout_s=lock_timeout_s)
        self.lock_timeout_s = lock_timeout_s
        self.last_error: str | None = None
        self.written = 0
        self.on_stored = on_stored
        self._lock = threading.Lock()  # what the follower's answers change
        self._unstored: dict[str, deque[tuple[int, float, int]]] = {}  # log -> (end, when, lines)
        self._pending = 0
        # Each group's number and callback; not its traces: a trace held for the few ms of a sync
        # outlives collections of the youngest generation, and costs the driver's GC.
        self._groups: deque[tuple[int, Callable[[], None] | None]] = deque()
        self._log_of_definition: dict[str, Log] = {}
        self._log_of: dict[tuple[str, str | None], Log] = {}  # by (definition, solution)
        self._records_written: set[tuple[str, str]] = set()
        self._closed = False
        (self.results_dir / "traces").mkdir(parents=True, exist_ok=True)
        self._lock_fd = self._take_folder_lock()
        try:
            self._catch_up()
            self._follower = FollowerClient(
                Path(store_path),
                self.context,
                interval_s=flush_interval_s,
                lock_timeout_s=lock_timeout_s,
                on_stored=self._stored,
            )
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._logs = LogFiles(self._follower.synced)

    # -- setup -----------------------------------------------------------------------------

    def _take_folder_lock(self) -> int:
        path = self.results_dir / ".sweep-writer.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreError(
                f"another sweep is writing to {self.results_dir} (pid {holder}, lock file {path}); "
                "wait for it to finish, or set output.results_dir to another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return fd

    def _catch_up(self) -> None:
        """Store the context, and log lines an earlier run wrote but never stored."""
        with self.store.writing() as con:
            batch = RowBatch()
            batch.add_context(self.context)
            marks, warnings = read_log_tails(self.results_dir, self.store.log_marks(con), batch, self.context)
            for w in warnings:
                _log.warning("%s", printable(w))  # it may quote names from the logs
            insert_batch(con, batch, marks)

    # -- writing ---------------------------------------------------------------------------

    def _stamp(self, trace: Trace) -> Trace:
        prov = trace.provenance
        if prov is not None and prov.sweep and prov.run_id:
            return trace
        update = {}
        if prov is None or not prov.sweep:
            update["sweep"] = self.sweep
        if prov is None or not prov.run_id:
            update["run_id"] = self.run_id
        new = prov.model_copy(update=update) if prov is not None else Provenance(**update)
        return trace.model_copy(update={"provenance": new})

    def _write_records(self, trace: Trace) -> None:
        """Write the trace's definition and solution next to the logs, once per writer."""
        defn = self.context.definitions.get(trace.definition)
        if defn is not None and ("d", defn.name) not in self._records_written:
            _write_record(
                self.results_dir / "definitions" / safe_part(defn.op_type) / f"{safe_part(defn.name)}.json",
                defn.to_json() + "\n",
                self.results_dir,
            )
            self._records_written.add(("d", defn.name))
        sol = self.context.solution_for(trace.definition, trace.solution)
        if sol is not None and ("s", sol.name) not in self._records_written:
            op = safe_part(defn.op_type) if defn is not None else "_"
            _write_record(
                self.results_dir
                / "solutions"
                / safe_part(sol.author)
                / op
                / safe_part(sol.definition)
                / f"{safe_part(sol.name)}.json",
                sol.to_json() + "\n",
                self.results_dir,
            )
            self._records_written.add(("s", sol.name))

    def _first_of_pair(self, trace: Trace) -> Log:
        """The log of the first trace of its (definition, solution): its records written, its
        log's path worked out (once per definition)."""
        self._write_records(trace)
        log = self._log_of_definition.get(trace.definition)
        if log is None:
            log = self._log_of_definition[trace.definition] = self._logs.log(
                log_path(self.results_dir, trace, self.context)
            )
        self._log_of[(trace.definition, trace.solution)] = log
        return log

    def write(self, trace: Trace) -> None:
        """Log one trace durably (append, fsync) and leave it for the store.

        Raises:
            StoreError: The writer is closed, or the log could not be synced.
        """
        self.write_many([trace])

    def write_many(self, traces: Sequence[Trace]) -> None:
        """Log several traces durably and leave them for the store: the lines are appended in
        order (one write per log file), then each log file touched is synced once (a group
        commit: the traces of one finished call cost one disk sync, not one each); returns
        when they are synced.

        Raises:
            StoreError: The writer is closed, or the log could not be synced.
        """
        self._logs.wait(self.submit(traces))
        self.poll()

    def submit(self, traces: Sequence[Trace], then: Callable[[], None] | None = None) -> int:
        """Append traces to their logs now, and have them synced on the writer's thread: they
        are done, and ``then()`` is called, once they are durable (from a later
        :meth:`submit`, :meth:`poll`, :meth:`drain` or :meth:`close`, on the caller's thread,
        groups in order). A driver killed before then loses at most these lines, which no
        one was told are done.

        Returns:
            The group's number.

        Raises:
            StoreError: The writer is closed, or an earlier sync failed.
        """
        if self._closed:
            raise StoreError("ResultsWriter.write after close()")
        lines: dict[Log, list[bytes]] = {}
        log_of = self._log_of
        for trace in traces:
            prov = trace.provenance
            if prov is None or not prov.sweep or not prov.run_id:
                trace = self._stamp(trace)
            # One lookup a trace: its records are written and its log known once per pair.
            log = log_of.get((trace.definition, trace.solution))
            if log is None:
                log = self._first_of_pair(trace)
            group = lines.get(log)
            if group is None:
                group = lines[log] = []
            group.append(trace.to_json_bytes())
        number = self._logs.append(lines)
        now = time.monotonic()
        with self._lock:
            for log, group in lines.items():
                self._unstored.setdefault(log.key, deque()).append((log.end, now, len(group)))
                self._pending += len(group)
        self.written += len(traces)
        self._groups.append((number, then))
        self.poll()
        return number

    def poll(self) -> None:
        """Call back the groups that are durable now (see :meth:`submit`).

        Raises:
            StoreError: A sync failed.
        """
        synced = self._logs.synced
        while self._groups and self._groups[0][0] <= synced:
            _, then = self._groups.popleft()
            if then is not None:
                then()
        if self._logs.error is not None:
            self._logs.wait(0)  # raises it

    def drain(self) -> None:
        """Wait until every group is durable, and call them back.

        Raises:
            StoreError: A sync failed.
        """
        if self._groups:
            self._logs.wait(self._groups[-1][0])
        self.poll()

    def _stored(self, answer: Stored) -> None:
        """The follower's answer (on its client's thread): what reached the store."""
        now = time.monotonic()
        lags: list[tuple[float, int]] = []
        with self._lock:
            if answer.error is not None:
                self.last_error = answer.error
            elif answer.ends:
                self.last_error = None
            for key, end in answer.ends.items():
                queue = self._unstored.get(key)
                while queue and queue[0][0] <= end:
                    _, when, n = queue.popleft()
                    self._pending -= n
                    lags.append((now - when, n))
        for w in answer.warnings:
            _log.warning("%s", printable(w))  # it may quote names from the logs
        if self.on_stored is not None:
            for lag, n in lags:
                self.on_stored(lag, n)

    @property
    def pending(self) -> int:
        """Traces logged but not yet in the store file."""
        with self._lock:
            return self._pending

    def flush(self) -> None:
        """Sync and store every pending trace now.

        Raises:
            StoreError: The store stayed locked for ``lock_timeout_s`` (the traces are safe in
                the logs; the next writer or ``sweep ingest <results>`` stores them).
        """
        self.drain()
        self._follower.flush()

    def close(self) -> None:
        """Sync the logs and call back what is durable, let the follower store what is left,
        close the logs, free the folder.

        Never raises for a busy store: pending traces stay in the logs and a warning is logged.

        Raises:
            StoreError: The last sync failed (the groups not synced were not called back).
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._logs.close()
            self.poll()
        finally:
            try:
                self._follower.close()
            except StoreError as e:
                self.last_error = str(e)
            finally:
                os.close(self._lock_fd)
            if self.pending:
                _log.warning(
                    "%s; %d traces are in the logs only: run 'sweep ingest %s' to store them",
                    printable(self.last_error or "the store did not catch up"),
                    self.pending,
                    self.results_dir,
                )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def completed_task_ids(results_dir: Path, store_path: Path) -> set[str]:
    """Task ids that already have a trace, in the store or only in the JSONL logs.

    Args:
        results_dir: The results folder whose logs to read.
        store_path: The DuckDB file (may not exist yet).
    """
    store = Store(Path(store_path))
    results_dir = Path(results_dir)
    if not Path(store_path).exists() and not (results_dir / "traces").is_dir():
        return set()
    try:
        with store.session(results_dir) as s:
            rows = s.con.execute("SELECT DISTINCT task_id FROM traces WHERE task_id IS NOT NULL").fetchall()
    except StoreError as e:
        if "no trace logs" in str(e):
            return set()
        raise
    return {r[0] for r in rows}
