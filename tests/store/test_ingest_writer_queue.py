"""The ingest's writer thread: batches of spooled files wait in a bounded queue, so the reading
goes on while the writer is behind; waiting batches share one connection (one checkpoint); a
batch of rows built in memory waits for an idle writer; an error stops what comes after it.

A stand-in for the insert holds the writer until the test lets it go, so each test sees the
queue in a state it chose, not one a race picked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from sweep.store.ingestion import _ingest, _inserter
from sweep.store.ingestion._ingest import IngestReport, ingest_into
from sweep.store.ingestion._spool import SpoolBatch
from sweep.store.rows import AddCounts, RowBatch
from sweep.store.rows._writable_store import WritableStore

from .conftest import make_trace
from .test_ingest_spool import _fields, _logs, _stored

_WAIT_S = 30.0  # a bound on waits that never binds unless something hangs


class _Writer:
    """A stand-in insert: records each batch and the connection it came on; the first call
    blocks until :meth:`release`; ``fail_at`` raises at that call (0-based)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[tuple[int, int]] = []  # (batch's trace rows, id of its connection)
        self.started = threading.Event()
        self.gate = threading.Event()
        self.fail_at = fail_at

    def __call__(self, con: Any, batch: RowBatch | SpoolBatch, marks: list[Any]) -> AddCounts:
        self.started.set()
        assert self.gate.wait(_WAIT_S)
        if len(self.calls) == self.fail_at:
            self.calls.append((-1, id(con)))
            raise RuntimeError(f"insert {self.fail_at} failed")
        rows = batch.trace_rows if isinstance(batch, SpoolBatch) else batch.count("traces")
        self.calls.append((rows, id(con)))
        return AddCounts(traces=rows)

    def release(self) -> None:
        self.gate.set()


def _spooled(rows: int) -> SpoolBatch:
    return SpoolBatch(traces_files=[f"/nonexistent/{rows}.arrow"], trace_rows=rows)


@contextmanager
def _opens(store: WritableStore) -> Iterator[list[int]]:
    """The store's connections opened (each close of a file store checkpoints), by the writer thread."""
    opened: list[int] = []
    real = WritableStore.writing

    @contextmanager
    def writing(self: WritableStore, **kw: Any) -> Iterator[Any]:
        with real(self, **kw) as con:
            if threading.current_thread().name == "sweep-ingest-insert":
                opened.append(id(con))
            yield con

    with mock.patch.object(WritableStore, "writing", writing):
        yield opened


def _make(tmp_path: Path) -> tuple[_inserter.Inserter, IngestReport]:
    report = IngestReport(store="s")
    store = WritableStore(tmp_path / "s.duckdb")
    return _inserter.Inserter(store, report.added), report


def test_spooled_batches_wait_in_the_queue_and_share_one_connection(tmp_path: Path) -> None:
    writer = _Writer()
    inserter, report = _make(tmp_path)
    with mock.patch.object(_inserter, "_insert_on", writer), _opens(inserter.store) as opened:
        inserter.submit(_spooled(1), [])
        assert writer.started.wait(_WAIT_S)  # the writer holds batch 1
        # While it does, the reading hands over as many as the queue holds, without waiting.
        for rows in range(2, 2 + _inserter._QUEUED_SPOOLED):
            inserter.submit(_spooled(rows), [])
        assert len(inserter._queue) == _inserter._QUEUED_SPOOLED
        writer.release()
        inserter.wait()
    assert [rows for rows, _ in writer.calls] == list(range(1, 2 + _inserter._QUEUED_SPOOLED))
    # One connection: the queue never ran dry, so the store closed (checkpointed) once.
    assert len(opened) == 1 and {con for _, con in writer.calls} == set(opened)
    assert report.added.traces == sum(range(1, 2 + _inserter._QUEUED_SPOOLED))


def test_a_full_queue_makes_the_reading_wait(tmp_path: Path) -> None:
    writer = _Writer()
    inserter, _ = _make(tmp_path)
    with mock.patch.object(_inserter, "_insert_on", writer):
        inserter.submit(_spooled(1), [])
        assert writer.started.wait(_WAIT_S)
        for rows in range(2, 2 + _inserter._QUEUED_SPOOLED):
            inserter.submit(_spooled(rows), [])
        extra = threading.Thread(target=inserter.submit, args=(_spooled(99), []))
        extra.start()
        extra.join(0.3)
        assert extra.is_alive()  # the queue is full: this one waits for the writer
        writer.release()
        extra.join(_WAIT_S)
        assert not extra.is_alive()
        inserter.wait()
    assert [rows for rows, _ in writer.calls][-1] == 99


def test_rows_built_in_memory_wait_for_an_idle_writer(tmp_path: Path) -> None:
    writer = _Writer()
    inserter, _ = _make(tmp_path)
    built = RowBatch()
    built.add_trace(make_trace("s1", "wl-1"), source="x")
    with mock.patch.object(_inserter, "_insert_on", writer):
        inserter.submit(_spooled(1), [])
        assert writer.started.wait(_WAIT_S)
        held = threading.Thread(target=inserter.submit, args=(built, []))
        held.start()
        held.join(0.3)
        assert held.is_alive()  # memory holds one batch inserting and one being built, no more
        writer.release()
        held.join(_WAIT_S)
        inserter.wait()
    assert [rows for rows, _ in writer.calls] == [1, 1]


def test_an_error_stops_the_batches_after_it_and_is_raised(tmp_path: Path) -> None:
    writer = _Writer(fail_at=1)
    inserter, report = _make(tmp_path)
    with mock.patch.object(_inserter, "_insert_on", writer):
        inserter.submit(_spooled(1), [])
        assert writer.started.wait(_WAIT_S)
        for rows in (2, 3, 4):
            inserter.submit(_spooled(rows), [])
        writer.release()
        with pytest.raises(RuntimeError, match="insert 1 failed"):
            inserter.wait()
    assert [rows for rows, _ in writer.calls] == [1, -1]  # 3 and 4 never inserted
    assert report.added.traces == 1
    assert inserter._thread is None and not inserter._queue


def test_an_empty_batch_opens_nothing(tmp_path: Path) -> None:
    writer = _Writer()
    writer.release()
    inserter, report = _make(tmp_path)
    with mock.patch.object(_inserter, "_insert_on", writer), _opens(inserter.store) as opened:
        inserter.submit(SpoolBatch(duplicates=3), [])
        inserter.wait()
    assert opened == [] and writer.calls == [] and report.added.present == 3


def test_a_queued_ingest_stores_what_one_batch_at_a_time_stores(tmp_path: Path) -> None:
    """Many small batches through the queue (the writer slowed, so they wait and share a
    connection) store the rows, counts and warnings of the ingest parsed here."""
    root = _logs(tmp_path)
    here, there = WritableStore.memory(), WritableStore.memory()
    a = ingest_into(here, [root], workers=1)
    real = _inserter._insert_on
    slow = threading.Event()

    def slowed(*args: Any) -> AddCounts:
        slow.wait(0.05)
        return real(*args)

    with mock.patch.object(_inserter, "_insert_on", slowed):
        b = ingest_into(there, [root], workers=2, chunk_bytes=2048, batch_rows=10)
    assert _fields(b) == _fields(a) and a.added.traces == 81
    assert _stored(there) == _stored(here)


def test_a_file_store_ingest_checkpoints_less_than_once_a_batch(tmp_path: Path) -> None:
    """With the writer behind, a file store is opened (and checkpointed) fewer times than there
    are batches. Each new connection's first insert waits until another batch waits behind it
    (or the reading has ended), so the writer is behind by construction, whatever the load."""
    root = _logs(tmp_path)
    real_insert, real_parse, real_submit = (
        _inserter._insert_on,
        _ingest.parse_in_order,
        _inserter.Inserter.submit,
    )
    read_all = threading.Event()
    inserters: list[_inserter.Inserter] = []
    seen: set[int] = set()
    batches: list[int] = []

    def parse(*args: Any, **kw: Any) -> Iterator[Any]:
        yield from real_parse(*args, **kw)
        read_all.set()

    def submit(self: _inserter.Inserter, *args: Any) -> None:
        inserters[:] = [self]
        real_submit(self, *args)

    def behind(con: Any, *args: Any) -> AddCounts:
        if id(con) not in seen:
            seen.add(id(con))
            for _ in range(int(_WAIT_S / 0.01)):
                if inserters[0]._queue or read_all.is_set():
                    break
                threading.Event().wait(0.01)
        batches.append(1)
        return real_insert(con, *args)

    store = WritableStore(tmp_path / "store" / "s.duckdb")
    with (
        mock.patch.object(_inserter, "_insert_on", behind),
        mock.patch.object(_ingest, "parse_in_order", parse),
        mock.patch.object(_inserter.Inserter, "submit", submit),
        _opens(store) as opened,
    ):
        report = ingest_into(store, [root], workers=2, chunk_bytes=2048, batch_rows=10)
    assert report.added.traces == 81
    assert len(batches) >= 8 and 1 <= len(opened) < len(batches), (opened, batches)


def test_a_store_another_process_holds_stops_the_ingest_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """Another process takes the store once the reading has begun: the writer's open gives up
    after the lock timeout, the ingest raises it, and no spool folder or writer thread is left."""
    import subprocess
    import sys

    from sweep.store import StoreLockedError

    root = _logs(tmp_path)
    db = tmp_path / "store" / "s.duckdb"
    holder: list[subprocess.Popen[str]] = []
    real_parse = _ingest.parse_in_order

    def parse(*args: Any, **kw: Any) -> Iterator[Any]:
        for item in real_parse(*args, **kw):
            if not holder:  # the store is closed here: the writer has not begun
                code = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"
                proc = subprocess.Popen(
                    [sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True
                )
                holder.append(proc)
                assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
            yield item

    try:
        with (
            mock.patch.object(_ingest, "parse_in_order", parse),
            pytest.raises(StoreLockedError, match=str(db)),
        ):
            ingest_into(
                WritableStore(db, lock_timeout_s=0.5), [root], workers=2, chunk_bytes=2048, batch_rows=10
            )
    finally:
        for proc in holder:
            proc.kill()
            proc.wait()
    assert holder
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(".sweep-ingest-")] == []
    assert not [t for t in threading.enumerate() if t.name == "sweep-ingest-insert"]
