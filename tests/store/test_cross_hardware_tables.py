"""``cross_hardware`` over the tables every insert keeps (schema 7) gives exactly the rows of
the view of schema 6, which ranked every trace per (definition, pair_key, hardware) at each
query (kept here as the reference, ranking as every view does since schema 8): for traces stored in any number of batches, re-runs with
newer, equal and older timestamps, several hardware, solution and definition records that
arrive later (and move traces to another pair key), through ``Store.add``, ``ingest``, a read
session's log tail, and a migration from a schema-6 store."""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.schema import Trace
from sweep.store import SCHEMA_VERSION, RowBatch, Store, StoreContext, ingest, query
from sweep.store.db._schema import column_names

from .conftest import CROSS_HARDWARE_SELECT, make_definition, make_solution, make_trace

# Newest as every view ranks since schema 8: the claimed time, never later than the stored one.
_NEWEST = (
    "QUALIFY row_number() OVER (PARTITION BY definition, pair_key, hardware "
    "ORDER BY least(timestamp, ingested_at) DESC, trace_key DESC) = 1"
)

# The view of schema 6, verbatim but for its name: the reference.
_REFERENCE = f"""WITH per_hw AS (
    SELECT * FROM traces
    {_NEWEST}
)
{CROSS_HARDWARE_SELECT}
JOIN per_hw b ON a.definition = b.definition AND a.pair_key = b.pair_key AND a.hardware < b.hardware
WHERE a.solution_hash IS NOT NULL OR a.solution IS NOT NULL"""

# (Times as text: Python's time zones need pytz.)
_LATEST_COLS = ", ".join(
    f"{c}::VARCHAR" if c in ("timestamp", "ingested_at") else c for c in column_names("cross_hardware_latest")
)


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    return sorted(map(repr, con.execute(sql).fetchall()))


def _check(con: duckdb.DuckDBPyConnection) -> int:
    """The view's rows are the reference's, and the kept newest traces the ranked ones (also
    of pair keys on one hardware only); returns the number of pairs."""
    got = _rows(con, "SELECT * FROM cross_hardware")
    assert got == _rows(con, _REFERENCE)
    assert _rows(con, f"SELECT {_LATEST_COLS} FROM cross_hardware_latest") == _rows(
        con, f"SELECT {_LATEST_COLS} FROM traces {_NEWEST}"
    )
    return len(got)


def _check_store(store: Store) -> int:
    with store.session() as s:
        s.require("cross_hardware")
        return _check(s.con)


_SOLUTIONS = {(d, s): make_solution(s, definition=d) for d in ("vec_add", "vec_mul") for s in ("s1", "s2")}


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    definition = draw(st.sampled_from(["vec_add", "vec_mul"]))
    solution = draw(st.sampled_from(["s1", "s2", None]))  # None: an evaluation of no named solution
    prov: dict[str, object] = {}
    if solution is not None and draw(st.booleans()):
        prov["solution_hash"] = _SOLUTIONS[definition, solution].content_hash
    t = make_trace(
        solution,
        draw(st.sampled_from(["wl-1", "wl-2"])),
        draw(st.sampled_from(["NVIDIA_H100", "NVIDIA_H200", "NVIDIA_B200"])),
        definition=definition,
        status=draw(st.sampled_from(["PASSED", "PASSED", "RUNTIME_ERROR"])),
        # Re-runs: the same task at an equal (trace_key breaks the tie), newer or older time.
        latency=draw(st.sampled_from([0.5, 1.0, 2.0])),
        ts=draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"])),
        provenance=prov or None,
    )
    if draw(st.integers(0, 3)) == 0:
        t = Trace.model_validate({**t.to_json_obj(), "solution_params": {"block": 64}})
    return t


# A step: traces to store, or the records of a definition and of its solutions (their hashes
# fill stored traces' columns and move them to the pair key of the hash).
_STEP = st.one_of(
    st.lists(traces(), min_size=1, max_size=8),
    st.sampled_from(["vec_add", "vec_mul"]),
)


def _batch(step: list[Trace] | str) -> RowBatch:
    b = RowBatch()
    if isinstance(step, str):
        sols = [s for (d, _), s in _SOLUTIONS.items() if d == step]
        b.add_context(StoreContext.of([make_definition(step)], sols))
    else:
        for t in step:
            b.add_trace(t, source="test")
    return b


_SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@_SETTINGS
@given(st.lists(_STEP, min_size=1, max_size=6))
def test_batches_keep_the_view_of_schema_6(steps: list[list[Trace] | str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "sweep.duckdb")
        for step in steps:
            store.add(_batch(step))
            _check_store(store)
        _in_memory_checked(steps)


def _in_memory_checked(steps: list[list[Trace] | str]) -> None:
    """Store ``steps`` in a new in-memory store, checking the tables after each."""
    mem = Store.memory()
    try:
        for step in steps:
            mem.add(_batch(step))
            _check_store(mem)
    finally:
        mem.close()


@_SETTINGS
@given(st.lists(_STEP, min_size=1, max_size=6))
def test_batches_of_many_pair_keys_keep_the_view_of_schema_6(steps: list[list[Trace] | str]) -> None:
    # Past _FEW_KEYS pair keys a batch is cut in two: the traces of keys the tables hold (their
    # groups' rows replaced) and the rest (appended). With one key the most, most batches are.
    import sweep.store.db._cross_hardware as xh

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(xh, "_FEW_KEYS", 1)
        _in_memory_checked(steps)


@_SETTINGS
@given(st.lists(_STEP, max_size=4), st.lists(traces(), min_size=1, max_size=10))
def test_a_read_session_adds_the_log_tail_as_the_store_would(
    steps: list[list[Trace] | str], tail: list[Trace]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        store = Store(results / "sweep.duckdb")
        store.add(RowBatch())
        for step in steps:
            store.add(_batch(step))
        # Traces the file does not hold yet: the session reads them from the log.
        log = results / "traces" / "vec_add" / "vec_add.jsonl"
        log.parent.mkdir(parents=True)
        log.write_text("".join(t.to_json() + "\n" for t in tail))
        with store.session() as s:
            s.require("cross_hardware")
            in_session = _check(s.con)
        # Stored by ingest, the same pairs.
        ingest([results], store.path)
        assert _check_store(store) == in_session


def test_a_newer_run_replaces_a_pair_and_an_older_or_present_one_does_not(tmp_path: Path) -> None:
    store = Store(tmp_path / "sweep.duckdb")
    day = "2026-01-0{}T00:00:00Z"

    def add(*items: Trace) -> list[tuple[object, ...]]:
        b = RowBatch()
        for t in items:
            b.add_trace(t, source="t")
        store.add(b)
        _check_store(store)
        return query(store.path, "SELECT latency_ms_a, latency_ms_b FROM cross_hardware").rows

    assert add(make_trace("s1", hardware="NVIDIA_H100", ts=day.format(2))) == []
    assert add(make_trace("s1", hardware="NVIDIA_H200", latency=0.5, ts=day.format(2))) == [(1.0, 0.5)]
    assert add(make_trace("s1", hardware="NVIDIA_H200", latency=0.25, ts=day.format(3))) == [(1.0, 0.25)]
    assert add(make_trace("s1", hardware="NVIDIA_H100", latency=2.0, ts=day.format(1))) == [(1.0, 0.25)]
    assert add(make_trace("s1", hardware="NVIDIA_H200", latency=0.5, ts=day.format(2))) == [(1.0, 0.25)]


def _as_schema_6(db: Path) -> None:
    """Turn a store into one of schema 6: no kept tables, the view ranking every trace."""
    con = duckdb.connect(str(db))
    try:
        con.execute(f"CREATE OR REPLACE VIEW cross_hardware AS {_REFERENCE}")
        con.execute("DROP TABLE cross_hardware_latest")
        con.execute("DROP TABLE cross_hardware_pairs")
        con.execute("UPDATE store_meta SET value = '6' WHERE key = 'schema_version'")
    finally:
        con.close()


def test_a_schema_6_store_migrates_with_its_pairs(tmp_path: Path) -> None:
    db = tmp_path / "sweep.duckdb"
    b = RowBatch()
    for s in ("s1", "s2"):
        for w in ("wl-1", "wl-2"):
            for hw, lat in (("NVIDIA_H100", 1.0), ("NVIDIA_H200", 0.5), ("NVIDIA_B200", 0.25)):
                b.add_trace(make_trace(s, w, hw, latency=lat), source="t")
                b.add_trace(make_trace(s, w, hw, latency=4 * lat, ts="2025-12-31T00:00:00Z"), source="t")
    Store(db).add(b)
    with Store(db).session() as s:
        s.require("cross_hardware")
        before = _rows(s.con, "SELECT * FROM cross_hardware")
    assert len(before) == 12
    _as_schema_6(db)
    assert query(db, "SELECT value FROM store_meta WHERE key = 'schema_version'").rows == [
        (str(SCHEMA_VERSION),)
    ]
    with Store(db).session() as s:
        s.require("cross_hardware")
        assert _check(s.con) == 12
        assert _rows(s.con, "SELECT * FROM cross_hardware") == before


def test_batches_of_many_pair_keys_read_their_rows_by_a_join(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past _FEW_KEYS keys a batch's stored rows are found by a join instead of a list of keys.
    import sweep.store.db._cross_hardware as xh

    monkeypatch.setattr(xh, "_FEW_KEYS", 1)
    store = Store(tmp_path / "sweep.duckdb")
    for day, lat in ((2, 1.0), (3, 0.5), (1, 4.0), (3, 0.25)):
        b = RowBatch()
        for s in ("s1", "s2"):
            for w in ("wl-1", "wl-2"):
                for hw in ("NVIDIA_H100", "NVIDIA_H200") if day != 1 else ("NVIDIA_B200",):
                    b.add_trace(make_trace(s, w, hw, latency=lat, ts=f"2026-01-0{day}T00:00:00Z"), source="t")
        store.add(b)
        _check_store(store)
    assert _check_store(store) == 12
