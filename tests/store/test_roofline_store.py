"""Schema version 3: work, rates and flags in the store; impossible traces never ranked;
the 2 -> 3 migration; calibrations; flags in the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from sweep.schema import Ceilings
from sweep.store import (
    SCHEMA_VERSION,
    RowBatch,
    Store,
    StoreContext,
    calibration_for,
    ingest,
    load_calibrations,
    query,
    save_calibration,
)
from sweep.store.db._schema import V3_TRACE_COLUMNS
from sweep.store.render import build_report, render_html, render_text

from .conftest import DATA, batch_of, make_definition, make_solution, make_trace, rows


def _perf(latency: float, reference: float, **work: object) -> dict[str, object]:
    return {
        "latency_ms": latency,
        "reference_latency_ms": reference,
        "speedup_factor": reference / latency,
        **work,
    }


def _flagged(solution: str, latency: float, reference: float, flags: list[str], uuid: str = "wl-1"):
    extra: dict[str, object] = {"performance": _perf(latency, reference, floor_ms=0.01)}
    if flags:
        extra["flags"] = flags
    return make_trace(solution, uuid, latency=latency, reference=reference, extra_eval=extra)


@pytest.fixture
def cheat_store(store: Store) -> Store:
    """On wl-1 'honest' takes 1 ms; 'cheat' 0.001 ms, under the floor (impossible and
    suspicious); 'lucky' 0.1 ms, 20x the reference (suspicious only)."""
    store.add(
        batch_of(
            _flagged("honest", 1.0, 2.0, []),
            _flagged("cheat", 0.001, 2.0, ["impossible", "suspicious"]),
            _flagged("cheat", 0.5, 2.0, [], uuid="wl-2"),
            _flagged("lucky", 0.1, 2.0, ["suspicious"], uuid="wl-2"),
        )
    )
    return store


def test_impossible_traces_keep_their_status_but_are_never_ranked(cheat_store: Store) -> None:
    assert rows(
        cheat_store, "SELECT status, flags FROM latest WHERE solution = 'cheat' ORDER BY workload_uuid"
    ) == [
        ("PASSED", ["impossible", "suspicious"]),
        ("PASSED", []),
    ]
    assert rows(cheat_store, "SELECT workload_uuid, solution, flags FROM best ORDER BY ALL") == [
        ("wl-1", "honest", []),
        ("wl-2", "lucky", ["suspicious"]),  # suspicious is shown, not excluded
    ]
    assert rows(cheat_store, "SELECT solution, traces, passed FROM leaderboard ORDER BY solution") == [
        ("cheat", 1, 1),  # its impossible trace on wl-1 is left out
        ("honest", 1, 1),
        ("lucky", 1, 1),
    ]
    assert rows(cheat_store, "SELECT solution, speedup FROM op_scores") == [("lucky", pytest.approx(20.0))]


def test_suspicious_traces_are_filterable(cheat_store: Store) -> None:
    got = rows(
        cheat_store,
        "SELECT solution, workload_uuid FROM latest WHERE list_contains(flags, 'suspicious') ORDER BY ALL",
    )
    assert got == [("cheat", "wl-1"), ("lucky", "wl-2")]


def test_v3_columns_come_from_the_record(store: Store) -> None:
    extra = {
        "performance": _perf(
            0.5,
            1.0,
            work_flops=2e9,
            work_bytes=4e6,
            work_source="declared",
            tflops=4.0,
            gbps=8.0,
            peak_fraction=0.25,
            floor_ms=0.1,
        ),
        "timing": {
            "clock": "cuda_event",
            "iterations": 3,
            "p10_ms": 0.5,
            "p50_ms": 0.5,
            "p90_ms": 0.5,
            "mean_ms": 0.5,
            "cv": 0.0,
            "timer": "cudagraph",
            "rel_error": 0.001,
            "target_met": False,
        },
        "reference_timing": {
            "clock": "cuda_event",
            "iterations": 3,
            "p10_ms": 1.0,
            "p50_ms": 1.0,
            "p90_ms": 1.0,
            "mean_ms": 1.0,
            "cv": 0.0,
            "timer": "events",
        },
        "clocks": {"throttled": True},
        "flags": ["suspicious"],
    }
    store.add(batch_of(make_trace(extra_eval=extra), make_trace("plain", "wl-2")))
    cols = ", ".join(c for c, _ in V3_TRACE_COLUMNS)
    got = rows(store, f"SELECT solution, {cols} FROM traces ORDER BY solution")
    assert got == [
        ("plain", None, None, None, None, None, None, None, [], None, None, None, None, None),
        (
            "s1",
            2e9,
            4e6,
            "declared",
            4.0,
            8.0,
            0.25,
            0.1,
            ["suspicious"],
            "cudagraph",
            0.001,
            False,
            "events",
            True,
        ),
    ]


# ---- migration 2 -> 3 ---------------------------------------------------------------------


def test_fixture_is_really_version_2(v2_store: Path) -> None:
    con = duckdb.connect(str(v2_store), read_only=True)
    try:
        columns = {
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = 'traces'"
            ).fetchall()
        }
        assert "flags" not in columns and "timing_p50_ms" in columns
    finally:
        con.close()


def test_a_v2_store_migrates_with_its_columns_filled_from_the_records(v2_store: Path, tmp_path: Path) -> None:
    assert query(v2_store, "SELECT value FROM store_meta WHERE key = 'schema_version'").rows == [
        (str(SCHEMA_VERSION),)
    ]
    fresh = tmp_path / "fresh.duckdb"
    ingest([DATA / "v2_traces.jsonl"], fresh)
    cols = ", ".join(c for c, _ in V3_TRACE_COLUMNS)
    sql = f"SELECT trace_key, {cols} FROM traces ORDER BY trace_key"
    migrated = query(v2_store, sql).rows
    assert migrated == query(fresh, sql).rows
    assert [r[8] for r in migrated].count(["impossible", "suspicious"]) == 1
    # Column order as in a new store (the new columns at the end), keys unchanged.
    order = "SELECT column_name FROM duckdb_columns() WHERE table_name = 'traces' ORDER BY column_index"
    with Store(v2_store).writing() as con:
        old_order = [r[0] for r in con.execute(order).fetchall()]
        assert con.execute("SELECT count(*) FROM calibrations").fetchall() == [(0,)]
    with Store(fresh).writing() as con:
        assert old_order == [r[0] for r in con.execute(order).fetchall()]
    r = ingest([DATA / "v2_traces.jsonl"], v2_store)
    assert (r.added.traces, r.added.present) == (0, 4)


def test_a_migrated_store_ranks_without_its_impossible_trace(v2_store: Path) -> None:
    assert query(v2_store, "SELECT solution, hardware FROM best ORDER BY hardware").rows == [
        ("scale_honest", "NVIDIA_H100"),
        ("scale_honest", "NVIDIA_H200"),
    ]
    lb = query(v2_store, "SELECT solution, hardware, traces FROM leaderboard ORDER BY ALL").rows
    assert ("scale_cheat", "NVIDIA_H100", 1) not in lb and ("scale_cheat", "NVIDIA_H200", 1) in lb


def test_a_v1_store_migrates_through_to_version_3(tmp_path: Path) -> None:
    path = tmp_path / "v1.duckdb"
    shutil.copy(DATA / "v1.duckdb", path)
    assert query(path, "SELECT DISTINCT flags, tflops FROM traces").rows == [([], None)]


# ---- calibrations ---------------------------------------------------------------------------


def _ceilings(node: str, when: str, gbps: float) -> Ceilings:
    return Ceilings(
        hardware="NVIDIA_H100",
        source=f"calibrated on {node} at {when}",
        tflops={"float16": 700.0, "tf32": 350.0},
        gbps=gbps,
        device_name="NVIDIA H100 80GB HBM3",
        node=node,
        measured_at=when,
    )


def test_calibrations_go_to_a_file_per_hardware_and_to_the_store(tmp_path: Path) -> None:
    results = tmp_path / "results"
    store = results / "sweep.duckdb"
    first = save_calibration(_ceilings("n1", "2026-03-01T00:00:00+00:00", 3000.0), results, store)
    again = save_calibration(_ceilings("n2", "2026-03-02T00:00:00+00:00", 3100.0), results, store)
    assert first == again == results / "calibration" / "NVIDIA_H100.json"
    assert json.loads(first.read_text())["node"] == "n2"  # the newest measurement
    assert [c.node for c in load_calibrations(results)] == ["n2"]
    found = calibration_for(results, "h100")
    assert found is not None and found.gbps == 3100.0 and found.calibrated
    assert calibration_for(results, "H200") is None and load_calibrations(tmp_path / "none") == []
    got = query(store, "SELECT node, metric, value FROM calibrations ORDER BY node, metric").rows
    assert got == [
        ("n1", "copy_gbps", 3000.0),
        ("n1", "gemm_tflops_float16", 700.0),
        ("n1", "gemm_tflops_tf32", 350.0),
        ("n2", "copy_gbps", 3100.0),
        ("n2", "gemm_tflops_float16", 700.0),
        ("n2", "gemm_tflops_tf32", 350.0),
    ]


# ---- the report -----------------------------------------------------------------------------


def test_report_shows_flags_and_rates(tmp_path: Path) -> None:
    ctx = StoreContext.of(
        [make_definition()],
        [make_solution(s, body=f"out.copy_(x * 2)  # {s}") for s in ("honest", "cheat", "lucky")],
    )
    b = RowBatch()
    b.add_context(ctx)
    rated = {"performance": _perf(1.0, 2.0, work_flops=1e9, tflops=1.0, gbps=2.0, peak_fraction=0.5)}
    for t in [
        make_trace("honest", "wl-1", latency=1.0, reference=2.0, extra_eval=rated),
        _flagged("cheat", 0.001, 2.0, ["impossible", "suspicious"]),
        _flagged("lucky", 0.1, 2.0, ["suspicious"], uuid="wl-2"),
    ]:
        b.add_trace(t, context=ctx)
    path = tmp_path / "sweep.duckdb"
    Store(path).add(b)
    rep = build_report(path)
    assert rep.flagged is not None and rep.rates is not None
    cols = rep.flagged.columns
    assert [(r[cols.index("solution")], r[cols.index("flags")]) for r in rep.flagged.rows] == [
        ("cheat", "impossible, suspicious"),
        ("lucky", "suspicious"),
    ]
    assert rep.rates.rows == [("vec_add", "honest", "NVIDIA_H100", 1, 1.0, 2.0, 0.5, 0.5)]
    text = render_text(rep)
    assert "== Flagged results ==" in text and "== Achieved rates (work over latency) ==" in text
    page = render_html(rep)
    assert page.count('<tr class="impossible">') == 1 and page.count('<tr class="suspicious">') == 1
    assert '<td>honest</td><td>NVIDIA_H100</td><td class="num">1</td>' in page
    assert 'class="num">50%</td>' in page  # fractions of peak as percentages
