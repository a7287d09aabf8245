"""Ingest's fast paths give exactly what the plain path gives: the same rows, keys, counts and
warnings (with file:line), on any mix of lines.

The fast paths: a line of a log's stored part whose raw bytes hash to a stored trace key is
counted present without being parsed (:mod:`sweep.store.ingestion._present_lines`); a line whose raw
bytes hash to a key its chunk holds already is a repeat without being parsed
(:meth:`~sweep.store.ingestion._jsonl_chunks.LineSink.line`). The plain path parses every line; it is
had here by switching both off.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.store import RowBatch
from sweep.store.ingestion import _ingest as ingest_module
from sweep.store.ingestion import _present_lines
from sweep.store.ingestion._ingest import IngestReport, ingest_into
from sweep.store.rows._row_batch import trace_key
from sweep.store.rows._writable_store import WritableStore

from ..conftest import SHARED_DATA
from .conftest import make_trace

_SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

_TRACES = [
    make_trace("s1", "wl-1"),
    make_trace("s1", "wl-2", "NVIDIA_H200", latency=0.5),
    make_trace("s2", "wl-1", status="RUNTIME_ERROR", log="boom"),
    make_trace("s2", "wl-7", latency=0.25),
]


def _reordered(line: str) -> str:
    """The same record with its keys in reverse order (not the canonical spelling)."""
    obj = json.loads(line)
    return json.dumps(dict(reversed(obj.items())), separators=(",", ":"))


_FIB = SHARED_DATA / "flashinfer-trace"
# Lines as FlashInfer-Bench wrote them: evaluated traces and workload-only records.
_FIB_LINES = [
    *(_FIB / "traces" / "rmsnorm" / "rmsnorm_h4096.jsonl").read_text().splitlines()[:3],
    *(_FIB / "workloads" / "rmsnorm" / "rmsnorm_h4096.jsonl").read_text().splitlines()[:2],
]
_CANONICAL = [t.to_json() for t in _TRACES] + [make_trace(None, "wl-3", evaluated=False).to_json()]
_NON_CANONICAL = [
    json.dumps(_TRACES[0].to_json_obj()),  # extra spaces
    _reordered(_TRACES[1].to_json()),
    _TRACES[3].to_json() + "   ",  # trailing spaces
    *_FIB_LINES,
]
_BAD = [
    "{not json",
    json.dumps({"definition": "vec_add"}),
    _TRACES[0].to_json().replace('"batch":1', '"batch":0'),  # refused by the store's checks
    _TRACES[1].to_json().replace('"status":"PASSED"', '"status":"GREAT"'),
    "",
    "   ",
]
_line = st.sampled_from(_CANONICAL) | st.sampled_from(_NON_CANONICAL) | st.sampled_from(_BAD)
_lines = st.lists(_line, max_size=10)


@contextmanager
def _plain() -> Iterator[None]:
    """Every line parsed: no present-line lookup, no raw-hash repeats."""
    with (
        mock.patch.object(ingest_module, "mark_present", lambda items, marks, lookup: items),
        mock.patch.object(RowBatch, "has_trace", lambda self, key: False),
    ):
        yield


def _report(r: IngestReport) -> dict[str, object]:
    return {k: v for k, v in dataclasses.asdict(r).items() if k != "store"}


def _stored(store: WritableStore) -> dict[str, list[tuple[object, ...]]]:
    """Every stored row but the ingest time, sorted (row order is no contract); checks that
    each trace's key is the hash of its stored canonical record."""
    assert store._mem is not None
    for key, record in store._mem.sql("SELECT trace_key, record FROM traces").fetchall():
        assert key == trace_key(record)
    return {
        table: sorted((tuple(r.values()) for r in store._mem.sql(sql).to_arrow_table().to_pylist()), key=repr)
        for table, sql in (
            ("traces", "SELECT * EXCLUDE (ingested_at) FROM traces"),
            ("workloads", "SELECT * FROM workloads"),
            ("log_progress", "SELECT * FROM log_progress"),
        )
    }


def _write(path: Path, lines: list[str]) -> None:
    path.write_bytes("".join(line + "\n" for line in lines).encode())


@_SETTINGS
@given(_lines, _lines, _lines, st.integers(1, 2000), st.integers(1, 8))
def test_reingest_with_fast_paths_stores_and_reports_what_parsing_every_line_does(
    first: list[str], appended: list[str], other: list[str], chunk_bytes: int, group_lines: int
) -> None:
    """A log ingested, then grown and ingested again beside a new log: a first ingest and the
    re-ingest each give the plain path's report and rows, whatever the chunks and groups."""
    fast, plain = WritableStore.memory(), WritableStore.memory()
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            mock.patch.object(_present_lines, "GROUP_LINES", group_lines),
        ):
            log, new = Path(tmp) / "a.jsonl", Path(tmp) / "b.jsonl"
            _write(log, first)
            kw = {"workers": 1, "chunk_bytes": chunk_bytes}
            got = _report(ingest_into(fast, [log], **kw))
            with _plain():
                want = _report(ingest_into(plain, [log], **kw))
            assert got == want
            assert _stored(fast) == _stored(plain)

            _write(log, first + appended)
            _write(new, other)
            got = _report(ingest_into(fast, [log, new], **kw))
            with _plain():
                want = _report(ingest_into(plain, [log, new], **kw))
            assert got == want
            assert _stored(fast) == _stored(plain)
    finally:
        fast.close()
        plain.close()


@_SETTINGS
@given(st.lists(st.sampled_from(_CANONICAL[:3]) | st.sampled_from(_NON_CANONICAL[:2]), max_size=12))
def test_reingest_of_stored_lines_counts_them_present(lines: list[str]) -> None:
    """Re-ingesting a log counts every trace present and adds nothing, as parsing would."""
    fast, plain = WritableStore.memory(), WritableStore.memory()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "a.jsonl"
            _write(log, lines)
            for store in (fast, plain):
                ingest_into(store, [log], workers=1)
            got = _report(ingest_into(fast, [log], workers=1))
            with _plain():
                want = _report(ingest_into(plain, [log], workers=1))
            assert got == want
            assert got["added"]["traces"] == 0
            assert got["added"]["present"] == got["traces_read"]
            assert _stored(fast) == _stored(plain)
    finally:
        fast.close()
        plain.close()


def test_reingest_in_worker_processes_matches_the_plain_path(tmp_path: Path) -> None:
    """Present lines travel to worker processes with their chunk (and whole chunks of present
    lines never reach one): the same report as parsing every line here."""
    lines = [*_CANONICAL, *_NON_CANONICAL, *_BAD] * 3
    log = tmp_path / "a.jsonl"
    _write(log, lines)
    reports = []
    for fast in (True, False):
        store = WritableStore(tmp_path / f"{fast}.duckdb")
        ingest_into(store, [log], workers=1)
        _write(log, lines + [make_trace("s3", "wl-9").to_json()])
        if fast:
            reports.append(_report(ingest_into(store, [log], workers=2, chunk_bytes=700)))
        else:
            with _plain():
                reports.append(_report(ingest_into(store, [log], workers=1, chunk_bytes=700)))
        _write(log, lines)
    assert reports[0] == reports[1]
    assert reports[0]["added"]["traces"] == 1


def test_rows_with_repeats_among_them_join_a_batch_once() -> None:
    """Rows handed over built may repeat keys among themselves (the set-at-once path must
    then fall back to row by row)."""
    import pyarrow as pa

    other = RowBatch()
    for t in _TRACES[:3]:
        other.add_trace(t, source="y")
    rows = other.arrow("traces")
    batch = RowBatch()
    batch.add_arrow("traces", pa.concat_tables([rows, rows]))
    assert batch.count("traces") == 3 and batch.duplicates == 3
    batch.add_arrow("traces", rows.slice(1), duplicates=1)
    assert batch.count("traces") == 3 and batch.duplicates == 3 + 1 + 2
    assert batch.arrow("traces").column("trace_key").to_pylist() == rows.column("trace_key").to_pylist()
