"""How an ingest is cut into inserts, and which statement inserts its traces, change nothing
stored: one insert for every log or one per trace (each log's mark on its own), a plain append
(a first ingest) or the join that fills columns from stored definitions and solutions (the
old way, for every batch), give the same rows in every table and view; a re-ingest adds
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from sweep.store.ingestion._ingest import ingest_into
from sweep.store.rows import LogMark, RowBatch
from sweep.store.rows import _insert as insert_module
from sweep.store.rows._insert import insert_batch
from sweep.store.rows._writable_store import WritableStore

from .conftest import make_definition, make_solution, make_trace

_COMPARED = {
    "traces": "SELECT * EXCLUDE (ingested_at) FROM traces",
    "workloads": "SELECT * FROM workloads",
    "log_progress": "SELECT * FROM log_progress",
    "cross_hardware_latest": "SELECT * EXCLUDE (ingested_at) FROM cross_hardware_latest",
    "cross_hardware_pairs": "SELECT * FROM cross_hardware_pairs",
    "cross_hardware": "SELECT * FROM cross_hardware",
}


def _logs(root: Path) -> list[Path]:
    paths = []
    for i in range(3):
        traces = [
            make_trace(f"s{i % 2}", f"wl-{j}", hw, latency=0.1 * (j + 1) + 0.01 * i)
            for j in range(4)
            for hw in ("NVIDIA_H100", "NVIDIA_H200")
        ]
        path = root / f"log{i}.jsonl"
        path.write_text("".join(t.to_json() + "\n" for t in traces))
        paths.append(path)
    return paths


def _rows(store: WritableStore) -> dict[str, list[str]]:
    assert store._mem is not None
    return {
        t: sorted(repr(tuple(r.values())) for r in store._mem.sql(sql).to_arrow_table().to_pylist())
        for t, sql in _COMPARED.items()
    }


def test_one_insert_and_one_per_trace_store_the_same_rows(tmp_path: Path) -> None:
    paths = _logs(tmp_path)
    whole, single = WritableStore.memory(), WritableStore.memory()
    a = ingest_into(whole, paths, workers=1)
    b = ingest_into(single, paths, workers=1, batch_rows=1)
    assert a.added.traces == b.added.traces == 24
    rows = _rows(whole)
    assert rows == _rows(single)
    assert len(rows["log_progress"]) == 3 and len(rows["cross_hardware"]) > 0
    again = ingest_into(whole, paths, workers=1)
    assert again.added.traces == 0 and again.added.present == 24
    assert _rows(whole) == rows


def test_a_log_marked_twice_in_one_insert_keeps_its_last_mark() -> None:
    store = WritableStore.memory()
    assert store._mem is not None
    marks = [LogMark("/a.jsonl", 10, "h1"), LogMark("/b.jsonl", 5, "hb"), LogMark("/a.jsonl", 20, "h2")]
    insert_batch(store._mem, RowBatch(), marks)
    insert_batch(store._mem, RowBatch(), [LogMark("/b.jsonl", 7, "hb")])
    got = sorted(store._mem.sql("SELECT * FROM log_progress").fetchall())
    assert got == [("/a.jsonl", 20, "h2"), ("/b.jsonl", 7, "hb")]


def _context(root: Path) -> Path:
    """A definition and a solution file: the traces of ``s0`` leave out what these fill."""
    path = root / "context.json"
    objs = [make_definition().to_json_obj(), make_solution("s0").to_json_obj()]
    path.write_text(json.dumps(objs))
    return path


@pytest.mark.parametrize("context", [False, True], ids=["logs-only", "with-definitions-and-solutions"])
@pytest.mark.parametrize("batch_rows", [1, 5, 1000])
def test_plain_append_stores_what_the_join_stores(tmp_path: Path, context: bool, batch_rows: int) -> None:
    paths = _logs(tmp_path)
    if context:
        paths = [_context(tmp_path), *paths]
    new, old = WritableStore.memory(), WritableStore.memory()
    appended: list[bool] = []
    real = insert_module._plain_append

    def spy(con: object, batch: str) -> bool:
        appended.append(real(con, batch))  # type: ignore[arg-type]
        return appended[-1]

    with mock.patch.object(insert_module, "_plain_append", spy):
        a = ingest_into(new, [*paths, *paths], workers=1, batch_rows=batch_rows)
    with mock.patch.object(insert_module, "_plain_append", lambda con, batch: False):
        b = ingest_into(old, [*paths, *paths], workers=1, batch_rows=batch_rows)
    assert (a.added.traces, a.added.present) == (b.added.traces, b.added.present) == (24, 24)
    rows = _rows(new)
    assert rows == _rows(old)
    # Logs alone: the first batch appended (a later one that holds stored traces goes through
    # the join). With the definition stored, every trace names it and leaves op_type to it:
    # every batch through the join.
    assert appended and (not any(appended) if context else appended[0])
    if context:
        assert all("elementwise" in r for r in rows["traces"])
