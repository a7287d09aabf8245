"""Rows spooled to Arrow files by worker processes and inserted by DuckDB store what rows
built in this process store: every column of every table, the same counts and warnings, no
repeats (within a chunk, across the chunks of a batch, across batches, against the store), and
the spool folder is gone afterwards, also after an error.

The property-based test spools chunks in this process (:func:`spool_chunk`, what a worker
runs) so that hypothesis can try many cuts cheaply; a few explicit tests start the workers.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.schema import Trace
from sweep.store.ingestion import _spool
from sweep.store.ingestion._ingest import IngestReport, ingest_into
from sweep.store.ingestion._jsonl_chunks import Chunk, LogEnd, split_log
from sweep.store.ingestion._spool import SpoolBatch, insert_spooled, spool_chunk
from sweep.store.rows._writable_store import WritableStore

from .conftest import make_trace

_TABLES = {
    "traces": "SELECT * EXCLUDE (ingested_at) FROM traces",
    "workloads": "SELECT * FROM workloads",
    "log_progress": "SELECT * FROM log_progress",
    "cross_hardware_latest": "SELECT * EXCLUDE (ingested_at) FROM cross_hardware_latest",
    "cross_hardware_pairs": "SELECT * FROM cross_hardware_pairs",
}


def _rich(i: int, hardware: str = "NVIDIA_H100") -> Trace:
    """A trace with most optional fields set: timing and reference timing, seed, provenance, a
    log of two lines with a non-ASCII letter."""
    timing = {
        "clock": "cuda_event",
        "iterations": 200 + i,
        "p10_ms": 0.09,
        "p50_ms": 0.1,
        "p90_ms": 0.11,
        "mean_ms": 0.1,
        "cv": 0.03,
    }
    trace: Trace = make_trace(
        f"s{i % 3}",
        f"wl-{i}",
        hardware,
        latency=0.5 + i / 1000,
        batch=1 + i % 5,
        log=f"line one {i}\nline \u00e9 two",
        extra_eval={"timing": timing, "reference_timing": timing, "seed": i},
        provenance={
            "task_id": f"t-{i}",
            "sweep": "spool",
            "run_id": "run-1",
            "solution_hash": f"h{i % 3}",
            "settings_hash": "set",
            "node_id": "node-1",
            "gpu_id": str(i % 8),
            "attempt": 1,
        },
    )
    return trace


_VALID = [make_trace("s1", "wl-1").to_json(), _rich(1).to_json(), _rich(2, "NVIDIA_H200").to_json()]
_VALID += [make_trace(None, "wl-3", evaluated=False).to_json()]  # workload only
_VALID += [json.dumps(_rich(4).to_json_obj(), indent=1).replace("\n", " ")]  # not canonical
_BAD = ["{not json", json.dumps({"definition": "vec_add"}), "[1]"]
_BAD += [make_trace("s1", "wl-9").to_json().replace('"batch":1', '"batch":0')]  # refused by the store


def _stored(store: WritableStore) -> dict[str, list[str]]:
    assert store._mem is not None
    return {
        t: sorted(repr(tuple(r.values())) for r in store._mem.sql(sql).to_arrow_table().to_pylist())
        for t, sql in _TABLES.items()
    }


def _fields(r: IngestReport) -> dict[str, object]:
    return {k: v for k, v in dataclasses.asdict(r).items() if k != "store"}


def _write(path: Path, lines: list[str], tail: str = "") -> Path:
    path.write_bytes(("".join(line + "\n" for line in lines) + tail).encode())
    return path


def _spooled_ingest(log: Path, chunk_bytes: int, batch_rows: int, spool: Path) -> WritableStore:
    """What a worker-process ingest of ``log`` stores, its chunks spooled here, in batches of
    at least ``batch_rows`` traces (a last line without its newline is left out)."""
    store = WritableStore.memory()
    batch = SpoolBatch()
    for n, item in enumerate(split_log(log, chunk_bytes)):
        if isinstance(item, Chunk):
            batch.add(spool_chunk(dataclasses.replace(item, spool=str(spool / f"{n:010d}"))))
            if batch.trace_rows >= batch_rows:
                insert_spooled(store, batch, [])
                batch = SpoolBatch()
        else:
            assert isinstance(item, LogEnd)
    insert_spooled(store, batch, [])
    return store


_SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(
    st.lists(st.sampled_from(_VALID) | st.sampled_from(_BAD) | st.just(""), max_size=16),
    st.integers(min_value=1, max_value=4000),
    st.integers(min_value=1, max_value=6),
)
def test_any_cut_spooled_stores_what_rows_built_here_store(
    lines: list[str], chunk_bytes: int, batch_rows: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = _write(Path(tmp) / "t.jsonl", lines)
        here = WritableStore.memory()
        report = ingest_into(here, [log], workers=1)
        spool = Path(tmp) / "spool"
        spool.mkdir()
        there = _spooled_ingest(log, chunk_bytes, batch_rows, spool)
        # log_progress is the job's, not the insert's: compared in the tests that run workers.
        want, got = _stored(here), _stored(there)
        want.pop("log_progress"), got.pop("log_progress")
        assert got == want
        assert list(spool.iterdir()) == []  # every batch's files deleted once stored
        assert len(want["traces"]) == report.added.traces


def test_repeats_across_a_batch_keep_the_first_and_count_the_rest_present(tmp_path: Path) -> None:
    line = _rich(7).to_json()
    log = _write(tmp_path / "t.jsonl", [line, _rich(8).to_json(), line, line])
    store = WritableStore.memory()
    batch = SpoolBatch()
    chunks = [c for c in split_log(log, 1) if isinstance(c, Chunk)]  # one line per chunk
    assert len(chunks) == 4
    for n, chunk in enumerate(chunks):
        batch.add(spool_chunk(dataclasses.replace(chunk, spool=str(tmp_path / f"{n:010d}"))))
    counts = insert_spooled(store, batch, [])
    assert (counts.traces, counts.present) == (2, 2)
    again = SpoolBatch()
    again.add(spool_chunk(dataclasses.replace(chunks[0], spool=str(tmp_path / "again"))))
    counts = insert_spooled(store, again, [])  # stored already: present, not added
    assert (counts.traces, counts.present) == (0, 1)


def test_a_repeat_across_logs_keeps_the_first_logs_row(tmp_path: Path) -> None:
    """The same line in two logs (one ingested under two names): the row of the log read first
    is stored, whichever file's name sorts first, as rows built here keep it."""
    line = _rich(3).to_json()
    logs = [_write(tmp_path / "z.jsonl", [_rich(4).to_json(), line]), _write(tmp_path / "a.jsonl", [line])]
    store = WritableStore.memory()
    batch = SpoolBatch()
    chunks = [c for log in logs for c in split_log(log, 1) if isinstance(c, Chunk)]
    for n, chunk in enumerate(chunks):
        batch.add(spool_chunk(dataclasses.replace(chunk, spool=str(tmp_path / f"{n:010d}"))))
    counts = insert_spooled(store, batch, [])
    assert (counts.traces, counts.present) == (2, 1)
    with store.writing() as con:
        rows = con.execute("SELECT source FROM traces WHERE record = ?", [line]).fetchall()
    assert rows == [(str(logs[0].resolve()),)]


def _logs(root: Path) -> Path:
    traces = root / "traces"
    traces.mkdir()
    rich = [_rich(i, hw).to_json() for i in range(40) for hw in ("NVIDIA_H100", "NVIDIA_H200")]
    _write(traces / "a.jsonl", [*rich[:50], _BAD[0], "", *_VALID, *rich[:5]], _VALID[1])
    _write(traces / "b.jsonl", [*rich[45:], _BAD[3], _VALID[3]], _VALID[0][:30])
    _write(traces / "c.jsonl", rich[::3])
    return traces


def test_workers_store_every_field_of_every_record(tmp_path: Path) -> None:
    root = _logs(tmp_path)
    here, there = WritableStore.memory(), WritableStore.memory()
    a = ingest_into(here, [root], workers=1)
    b = ingest_into(there, [root], workers=2, chunk_bytes=2048, batch_rows=30)
    arrow = WritableStore.memory()
    c = ingest_into(arrow, [root], workers=2, chunk_bytes=2048, batch_rows=30, spool=False)
    assert _fields(b) == _fields(a) == _fields(c)
    assert _stored(there) == _stored(here) == _stored(arrow)
    # 80 rich traces and one plain (the rest repeat them); refused: bad JSON, a zero axis, a torn tail
    assert a.added.traces == 81 and a.skipped == 3
    # Round trip: each stored record is the trace of a line, field for field, and every
    # evaluated trace of the logs is stored.
    assert there._mem is not None
    stored = [Trace.model_validate_json(r) for (r,) in there._mem.sql("SELECT record FROM traces").fetchall()]
    rich = {_rich(i, hw).to_json(): _rich(i, hw) for i in range(40) for hw in ("NVIDIA_H100", "NVIDIA_H200")}
    by_json = {t.to_json(): t for t in stored}
    assert set(rich) <= set(by_json)
    for text, trace in rich.items():
        assert by_json[text] == trace and by_json[text].to_json_obj() == trace.to_json_obj()
    assert len(by_json) == len(stored) == 81


def test_workers_into_a_file_twice_add_nothing_and_leave_no_spool(tmp_path: Path) -> None:
    root = _logs(tmp_path)
    db = tmp_path / "store" / "s.duckdb"
    first = ingest_into(WritableStore(db), [root], workers=2, chunk_bytes=2048, batch_rows=30)
    again = ingest_into(WritableStore(db), [root], workers=2, chunk_bytes=2048, batch_rows=30)
    assert first.added.traces == 81 and again.added.traces == 0
    assert again.added.present == first.traces_read == again.traces_read
    # A second copy of a log under another name: every trace in it is present, none added.
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes((root / "a.jsonl").read_bytes())
    third = ingest_into(WritableStore(db), [copy], workers=2, chunk_bytes=2048, batch_rows=30)
    assert third.added.traces == 0 and third.added.present == third.traces_read > 0
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(".sweep-ingest-")] == []


def test_a_failed_insert_leaves_no_spool_and_raises(tmp_path: Path) -> None:
    root = _logs(tmp_path)
    db = tmp_path / "store" / "s.duckdb"

    def boom(*_: object) -> object:
        raise RuntimeError("insert failed")

    with (
        mock.patch("sweep.store.ingestion._inserter.insert_spooled_on", boom),
        pytest.raises(RuntimeError, match="insert failed"),
    ):
        ingest_into(WritableStore(db), [root], workers=2, chunk_bytes=2048, batch_rows=30)
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(".sweep-ingest-")] == []


def test_an_empty_chunk_writes_no_files(tmp_path: Path) -> None:
    log = _write(tmp_path / "t.jsonl", ["", _BAD[0]])
    (chunk,) = [c for c in split_log(log) if isinstance(c, Chunk)]
    got = spool_chunk(dataclasses.replace(chunk, spool=str(tmp_path / "x")))
    assert (got.traces_file, got.workloads_file, got.trace_rows) == ("", "", 0)
    assert len(got.warnings) == 1 and list(tmp_path.glob("x*")) == []


def test_default_batches_store_what_rows_built_here_store_and_no_repeat(tmp_path: Path) -> None:
    """With the default batch sizes (spooled rows SPOOL_BATCH_ROWS at a time, inserted in
    order as a plain append; built rows BATCH_ROWS), a log and its copy under another name in
    one ingest, and the folder again into the same file: each trace stored once, the same rows
    as parsed here."""
    root = _logs(tmp_path)
    (root / "z.jsonl").write_bytes((root / "a.jsonl").read_bytes())
    here, there = WritableStore.memory(), WritableStore.memory()
    a = ingest_into(here, [root], workers=1)
    b = ingest_into(there, [root], workers=2, chunk_bytes=2048)
    assert _fields(b) == _fields(a) and a.added.traces == 81
    assert _stored(there) == _stored(here)
    db = tmp_path / "store" / "s.duckdb"
    first = ingest_into(WritableStore(db), [root], workers=2, chunk_bytes=2048)
    again = ingest_into(WritableStore(db), [root], workers=2, chunk_bytes=2048)
    assert (first.added.traces, again.added.traces) == (81, 0)
    assert again.added.present == again.traces_read == first.traces_read
    with WritableStore(db).writing() as con:
        assert con.execute("SELECT count(*), count(DISTINCT trace_key) FROM traces").fetchall() == [(81, 81)]


@pytest.mark.parametrize("before", ["true", "false"])
def test_inserts_leave_the_connections_insertion_order_as_it_was(before: str) -> None:
    """The plain append (in order) and the anti-join (out of order) each set the insert's
    order for their statement only: the connection's setting is what it was."""
    from sweep.store.rows import RowBatch, insert_batch

    store = WritableStore.memory()
    assert store._mem is not None
    con = store._mem
    con.execute(f"SET preserve_insertion_order = {before}").fetchall()
    for expect_added in (2, 0):  # a new batch (plain append), then the same (the anti-join)
        batch = RowBatch()
        for t in (_rich(1), _rich(2, "NVIDIA_H200")):
            batch.add_trace(t, source="x")
        assert insert_batch(con, batch).traces == expect_added
        ((setting,),) = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()
        assert str(setting).lower() == before


def test_spooled_rows_are_batched_by_their_own_size() -> None:
    """Spooled rows fill a batch at ``spool_rows``, rows built here at ``batch_rows``."""
    from sweep.store.ingestion._ingest import IngestJob
    from sweep.store.ingestion._spool import SpooledChunk

    job = IngestJob(WritableStore.memory(), IngestReport(store="m"), 2, 5)
    chunk = SpooledChunk("f.traces.arrow", "", 2, 0, 2, 0, [])
    job.spooled.add(chunk)
    job.spooled.add(chunk)
    assert not job.full()
    job.spooled.add(chunk)
    assert job.full()
    job.spooled = SpoolBatch()
    job.batch.add_trace(_rich(1), source="x")
    assert not job.full()
    job.batch.add_trace(_rich(2), source="x")
    assert job.full()


def test_a_batch_is_read_as_one_chunk_in_the_order_of_its_files(tmp_path: Path) -> None:
    """What DuckDB inserts: one contiguous table (no piece smaller than a row group that the
    insert would merge in one thread), the rows in the order of the files as given (not of
    their names), each with its position, by which the first of repeated keys is kept."""
    import pyarrow as pa

    files = []
    for i, n in enumerate((2, 1, 3, 1)):
        f = tmp_path / f"{6 - i}.arrow"
        _spool._write(pa.table({"x": [10 * i + k for k in range(n)]}), str(f))
        files.append(str(f))
    table = _spool._batch_table(files)
    assert [b.num_rows for b in table.to_batches()] == [7]
    assert table.column("x").to_pylist() == [0, 1, 10, 20, 21, 22, 30]
    assert table.column("_spool_position").to_pylist() == list(range(7))
    assert not list(tmp_path.glob("*.part"))  # written under another name, then renamed


def test_a_batch_whose_store_cannot_be_opened_leaves_no_files(tmp_path: Path) -> None:
    log = _write(tmp_path / "t.jsonl", [_rich(i).to_json() for i in range(3)])
    (chunk,) = [c for c in split_log(log) if isinstance(c, Chunk)]
    batch = SpoolBatch()
    batch.add(spool_chunk(dataclasses.replace(chunk, spool=str(tmp_path / "x"))))
    assert list(tmp_path.glob("x*"))
    store = WritableStore(tmp_path / "s.duckdb")
    with (
        mock.patch.object(WritableStore, "writing", side_effect=RuntimeError("cannot open")),
        pytest.raises(RuntimeError, match="cannot open"),
    ):
        insert_spooled(store, batch, [])
    assert list(tmp_path.glob("x*")) == []


def test_workers_run_this_sweep_from_a_folder_holding_another(tmp_path: Path, decoy_cwd: Path) -> None:
    """A worker of ``python -m`` would import the working folder's ``sweep`` first."""
    root = _logs(tmp_path)
    here, there = WritableStore.memory(), WritableStore.memory()
    a = ingest_into(here, [root], workers=1)
    b = ingest_into(there, [root], workers=2, chunk_bytes=2048, batch_rows=30)
    assert _fields(b) == _fields(a)
    assert _stored(there) == _stored(here)
