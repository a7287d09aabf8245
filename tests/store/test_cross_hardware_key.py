"""``cross_hardware`` over ``traces.pair_key`` (schema 6) gives the rows the view gave when it
partitioned and joined on the four columns themselves (schema 5, kept here as the reference):
for any traces, in a store file, in memory, and in a read session whose traces are partly
still in the logs; and the key follows a solution hash filled in later."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.schema import Trace
from sweep.store import RowBatch, Store, StoreContext, ingest, query

from .conftest import CROSS_HARDWARE_SELECT, make_definition, make_solution, make_trace

# The view of schema 5, verbatim but for its name: the reference.
_REFERENCE = f"""WITH per_hw AS (
    SELECT * FROM traces
    QUALIFY row_number() OVER (
        PARTITION BY definition, coalesce(solution_hash, 'name:' || solution), coalesce(solution_params, ''),
        workload_uuid, hardware ORDER BY timestamp DESC, trace_key DESC) = 1
)
{CROSS_HARDWARE_SELECT}
JOIN per_hw b
  ON a.definition = b.definition
 AND coalesce(a.solution_hash, 'name:' || a.solution) = coalesce(b.solution_hash, 'name:' || b.solution)
 AND coalesce(a.solution_params, '') = coalesce(b.solution_params, '')
 AND a.workload_uuid = b.workload_uuid
 AND a.hardware < b.hardware"""


def _same(store: Path | Store) -> list[tuple[object, ...]]:
    """The view's rows, after checking they are the reference's (as multisets)."""
    with (store if isinstance(store, Store) else Store(store)).session() as s:
        s.require("cross_hardware")
        got = s.con.execute("SELECT * FROM cross_hardware").fetchall()
        want = s.con.execute(_REFERENCE).fetchall()
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    return got


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    prov: dict[str, object] = {}
    hashed = draw(
        st.sampled_from([None, "h1", "h2", "name:s1"])
    )  # 'name:s1': a hash that reads like a name key
    if hashed is not None:
        prov["solution_hash"] = hashed
    extra: dict[str, object] = {}
    t = make_trace(
        draw(st.sampled_from(["s1", "s2", None])),  # None: an evaluation of no named solution
        draw(st.sampled_from(["wl-1", "wl-2"])),
        draw(st.sampled_from(["NVIDIA_H100", "NVIDIA_H200", "NVIDIA_B200"])),
        definition=draw(st.sampled_from(["vec_add", "vec_mul"])),
        status=draw(st.sampled_from(["PASSED", "RUNTIME_ERROR"])),
        latency=draw(st.sampled_from([0.5, 1.0, 2.0])),
        ts=draw(st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"])),
        provenance=prov or None,
        extra_eval=extra or None,
    )
    params = draw(st.sampled_from([None, {"block": 64}, {"block": 128}]))
    if params is not None:
        t = Trace.model_validate({**t.to_json_obj(), "solution_params": params})
    return t


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(traces(), min_size=1, max_size=14), st.integers(min_value=0, max_value=14))
def test_the_view_pairs_what_the_four_columns_paired(items: list[Trace], stored: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        # The first ``stored`` traces in the file; the rest only in a log the file has not
        # caught up with, so the read session adds them (with their keys) as its tail.
        b = RowBatch()
        for t in items[:stored]:
            b.add_trace(t, source="test")
        store = Store(results / "sweep.duckdb")
        store.add(b)
        log = results / "traces" / "vec_add" / "vec_add.jsonl"
        log.parent.mkdir(parents=True)
        log.write_text("".join(t.to_json() + "\n" for t in items[stored:]))
        _same(store)
        mem = Store.memory()
        try:
            everything = RowBatch()
            for t in items:
                everything.add_trace(t, source="test")
            mem.add(everything)
            _same(mem)
        finally:
            mem.close()


def test_a_solution_hash_filled_later_pairs_the_trace(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    sol = make_solution("s1")
    h100 = make_trace("s1", hardware="NVIDIA_H100", provenance={"solution_hash": sol.content_hash})
    h200 = make_trace("s1", hardware="NVIDIA_H200", latency=0.5)  # no hash yet: keyed by name
    b = RowBatch()
    b.add_trace(h100, source="t")
    b.add_trace(h200, source="t")
    Store(db).add(b)
    assert _same(db) == []
    # The solution record arrives: its hash fills the H200 trace's column, and its pair key.
    b = RowBatch()
    b.add_context(StoreContext.of([make_definition()], [sol]))
    Store(db).add(b)
    rows = _same(db)
    assert [(r[6], r[7], r[12]) for r in rows] == [("NVIDIA_H100", "NVIDIA_H200", 0.5)]
    keys = query(db, "SELECT count(DISTINCT pair_key), count(*) FILTER (WHERE pair_key IS NULL) FROM traces")
    assert keys.rows == [(1, 0)]


def test_ingest_and_export_round_trip_keeps_the_pairs(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(
        "".join(
            make_trace(s, w, hw, latency=lat).to_json() + "\n"
            for s in ("s1", "s2")
            for w in ("wl-1", "wl-2")
            for hw, lat in (("NVIDIA_H100", 1.0), ("NVIDIA_H200", 0.5))
        )
    )
    ingest([log], tmp_path / "a.duckdb")
    pairs = _same(tmp_path / "a.duckdb")
    assert len(pairs) == 4
    from sweep.store import export_parquet

    export_parquet(tmp_path / "a.duckdb", tmp_path / "exp")
    ingest([tmp_path / "exp"], tmp_path / "b.duckdb")
    assert sorted(map(repr, _same(tmp_path / "b.duckdb"))) == sorted(map(repr, pairs))


def test_traces_of_no_named_solution_pair_with_none(tmp_path: Path) -> None:
    # Neither a solution name nor a hash: the reference's join never matched NULL keys.
    db = tmp_path / "s.duckdb"
    b = RowBatch()
    for hw in ("NVIDIA_H100", "NVIDIA_H200"):
        b.add_trace(make_trace(None, hardware=hw), source="t")
        b.add_trace(make_trace(None, hardware=hw, provenance={"solution_hash": "h1"}), source="t")
    Store(db).add(b)
    rows = _same(db)
    assert [(r[3], r[6], r[7]) for r in rows] == [("h1", "NVIDIA_H100", "NVIDIA_H200")]
