"""Ingest in chunks and in worker processes: the same rows, counts and warnings, in the same
order, however a log is cut into chunks and whichever process parses a chunk.

Hypothesis examples are derandomized (the same every run) and parse in this process; the
worker processes are exercised by a few explicit tests (each starts two interpreters).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.errors import StoreError
from sweep.store import RowBatch, Store
from sweep.store.ingestion._ingest import IngestReport, ingest_into
from sweep.store.ingestion._ingest_pool import (
    PARALLEL_MIN_BYTES,
    _Worker,
    auto_workers,
    parse_in_order,
    usable_cpus,
)
from sweep.store.ingestion._jsonl_chunks import Chunk, ChunkReadError, LogEnd, read_chunk, split_log
from sweep.store.ingestion._trace_files import LogReader
from sweep.store.rows._writable_store import WritableStore

from .conftest import make_definition, make_solution, make_trace

_SETTINGS = settings(
    max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

_VALID = [
    make_trace("s1", "wl-1").to_json(),
    make_trace("s1", "wl-2", "NVIDIA_H200", latency=0.5).to_json(),
    make_trace("s2", "wl-1", status="RUNTIME_ERROR", log="boom").to_json(),
    make_trace(None, "wl-3", evaluated=False).to_json(),  # a workload-only record
    json.dumps(make_trace("s1", "wl-4").to_json_obj(), indent=None),  # not the canonical spacing
]
_BAD = [
    "{not json",
    json.dumps({"definition": "vec_add"}),
    make_trace("s1", "wl-5").to_json().replace('"batch":1', '"batch":0'),  # refused by the store's checks
    make_trace("s1", "wl-6").to_json().replace('"status":"PASSED"', '"status":"GREAT"'),
    "[1, 2, 3]",
]
_line = st.sampled_from(_VALID) | st.sampled_from(_BAD) | st.sampled_from(["", "   ", "\t"])


def _report_fields(r: IngestReport) -> dict[str, object]:
    return {k: v for k, v in dataclasses.asdict(r).items() if k != "store"}


def _stored(store: WritableStore) -> dict[str, list[tuple[object, ...]]]:
    """Every stored row but the ingest time (sorted: a table's row order is no contract, and
    an insert's joins may change it)."""
    assert store._mem is not None
    con = store._mem
    return {
        table: sorted((tuple(r.values()) for r in con.sql(sql).to_arrow_table().to_pylist()), key=repr)
        for table, sql in (
            ("traces", "SELECT * EXCLUDE (ingested_at) FROM traces"),
            ("workloads", "SELECT * FROM workloads"),
            ("log_progress", "SELECT * FROM log_progress"),
        )
    }


def _ingest(paths: list[Path], **kw: int) -> tuple[dict[str, object], dict[str, list[tuple[object, ...]]]]:
    store = WritableStore.memory()
    try:
        report = ingest_into(store, paths, **kw)
        return _report_fields(report), _stored(store)
    finally:
        store.close()


def _write_log(path: Path, lines: list[str], tail: str) -> None:
    path.write_bytes(("".join(line + "\n" for line in lines) + tail).encode())


@_SETTINGS
@given(
    st.lists(_line, max_size=12),
    st.sampled_from(["", _VALID[0], _VALID[1][:40], "  "]),
    st.integers(min_value=1, max_value=3000),
    st.integers(min_value=1, max_value=5),
)
def test_any_cut_into_chunks_stores_and_reports_the_same(
    lines: list[str], tail: str, chunk_bytes: int, batch_rows: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "t.jsonl"
        _write_log(log, lines, tail)
        whole = _ingest([log], workers=1)
        assert _ingest([log], workers=1, chunk_bytes=chunk_bytes, batch_rows=batch_rows) == whole


@_SETTINGS
@given(st.lists(st.binary(max_size=30), max_size=8), st.binary(max_size=20), st.integers(1, 64))
def test_chunks_are_the_lines_a_log_reader_reads(lines: list[bytes], tail: bytes, chunk_bytes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "t.jsonl"
        body = b"".join(line.replace(b"\n", b"") + b"\n" for line in lines)
        tail = tail.replace(b"\n", b"")
        log.write_bytes(body + tail)
        items = list(split_log(log, chunk_bytes))
        chunks = [c for c in items if isinstance(c, Chunk)]
        end = items[-1]
        assert isinstance(end, LogEnd) and all(isinstance(c, Chunk) for c in items[:-1])
        reader = LogReader(log)
        whole = [line.data for line in reader]
        # Chunks hold the whole lines, in order, each numbered by the lines before it.
        assert b"".join(c.data for c in chunks) == b"".join(whole) == body
        for c in chunks:
            assert c.data.endswith(b"\n") and c.size == len(c.data)
            assert c.first_line == body[: c.offset].count(b"\n") + 1
            assert read_chunk(c.without_data()) == c.data
        assert (end.end, end.torn, end.lines) == (reader.end, reader.torn, len(whole))


def _folder(tmp_path: Path) -> Path:
    """Logs with everything ingest meets: repeats within and across files, refused lines,
    workload-only records, blank lines, a last line without its newline (one that parses,
    one cut short), and JSON records beside them."""
    root = tmp_path / "results"
    (root / "traces" / "a").mkdir(parents=True)
    (root / "definitions").mkdir()
    (root / "definitions" / "vec_add.json").write_text(make_definition().to_json())
    (root / "solutions").mkdir()
    (root / "solutions" / "s1.json").write_text(make_solution("s1").to_json())
    many = [make_trace("s1", f"wl-{i}", latency=1 + i / 100).to_json() for i in range(60)]
    _write_log(root / "traces" / "a" / "one.jsonl", [*many[:30], _BAD[0], "", *_VALID, *many[:5]], _VALID[1])
    _write_log(root / "traces" / "a" / "two.jsonl", [*many[25:], _BAD[2], _VALID[3]], _VALID[0][:50])
    _write_log(root / "traces" / "three.jsonl", _BAD[3:] + many[::7], "")
    return root


def test_worker_processes_store_and_report_what_this_process_does(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    here = _ingest([root], workers=1)
    # Small chunks: every log is cut several times, and a chunk's rows repeat earlier ones.
    there = _ingest([root], workers=2, chunk_bytes=2048, batch_rows=40)
    assert there == here
    report = here[0]
    assert (report["traces_read"], report["workload_records"], report["skipped"]) == (84, 2, 5)
    warnings = report["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 5
    assert warnings[0].startswith(f"{root / 'traces' / 'a' / 'one.jsonl'}:31: not valid JSON")
    assert (
        warnings[2]
        == f"{root / 'traces' / 'a' / 'two.jsonl'}:38: incomplete last line (a write cut short?), skipped"
    )
    assert warnings[-1].startswith(f"{root / 'traces' / 'three.jsonl'}:2: not a valid trace")


def test_worker_processes_ingest_into_a_file_twice_without_repeats(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    first = ingest_into(Store(tmp_path / "s.duckdb"), [root], workers=2, chunk_bytes=4096)
    again = ingest_into(Store(tmp_path / "s.duckdb"), [root], workers=2, chunk_bytes=4096)
    assert first.added.traces == 64 and again.added.traces == 0
    assert again.added.present == first.traces_read == again.traces_read


def test_a_log_that_changes_under_a_worker_is_an_error(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    _write_log(log, [make_trace("s1", f"wl-{i}").to_json() for i in range(20)], "")
    items = list(split_log(log, 1024))
    log.write_bytes(log.read_bytes()[:1500])  # replaced by a shorter file
    with pytest.raises(ChunkReadError, match=r"t\.jsonl changed while it was being ingested"):
        list(parse_in_order(items, 2))
    with pytest.raises(StoreError, match="no longer whole lines"):
        read_chunk(next(c for c in items if isinstance(c, Chunk) and c.offset > 1500).without_data())


def test_a_worker_that_dies_is_an_error_naming_it() -> None:
    worker = _Worker()
    try:
        worker.proc.kill()
        with pytest.raises(StoreError, match=rf"ingest worker process \(pid {worker.proc.pid}\) stopped"):
            worker.receive()
    finally:
        worker.close(kill=True)


def test_workers_only_for_large_logs() -> None:
    assert auto_workers(PARALLEL_MIN_BYTES - 1, 1 << 20) == 1
    assert auto_workers(PARALLEL_MIN_BYTES, PARALLEL_MIN_BYTES) == 1  # one chunk: one worker
    assert auto_workers(100 * PARALLEL_MIN_BYTES, 1 << 20) == min(usable_cpus(), max(2, usable_cpus() - 1))
    # Past two CPUs, one is left to the writing process.
    for cpus, workers in ((1, 1), (2, 2), (3, 2), (16, 15)):
        with mock.patch("sweep.store.ingestion._ingest_pool.usable_cpus", return_value=cpus):
            assert auto_workers(100 * PARALLEL_MIN_BYTES, 1 << 20) == workers


def test_rows_built_elsewhere_join_a_batch_in_order_without_repeats() -> None:
    a, b = RowBatch(), RowBatch()
    t1, t2, t3 = (make_trace("s1", f"wl-{i}") for i in range(3))
    a.add_trace(t1, source="x")
    b.add_trace(t1, source="y")  # the same trace: left out when b joins a
    b.add_trace(t2, source="y")
    a.add_arrow("traces", b.arrow("traces"), duplicates=3)
    a.add_arrow("workloads", b.arrow("workloads"))
    a.add_trace(t3, source="x")
    a.add_trace(t2, source="x")  # came with b: a repeat
    traces = a.arrow("traces")
    assert traces.column("workload_uuid").to_pylist() == ["wl-0", "wl-1", "wl-2"]
    assert traces.column("source").to_pylist() == ["x", "y", "x"]
    assert a.count("traces") == 3 and a.duplicates == 3 + 1 + 1
    assert a.arrow("workloads").column("uuid").to_pylist() == ["wl-0", "wl-1", "wl-2"]
    with pytest.raises(ValueError, match="Arrow schema"):
        a.add_arrow("traces", pa.table({"trace_key": ["k"]}))
    with pytest.raises(ValueError, match="only traces and workloads"):
        a.add_arrow("definitions", a.arrow("definitions"))
