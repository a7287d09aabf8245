"""The store contract, run on an in-memory and an on-disk store: inserts, keys, columns, views.

The view tests use hand-made traces whose right answers are worked out in the comments.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

import pytest

from sweep.errors import StoreError
from sweep.store import RowBatch, Store, StoreContext
from sweep.store.read._query import run_sql

from .conftest import batch_of, make_definition, make_solution, make_trace, rows


def test_add_counts_and_is_idempotent(store: Store) -> None:
    traces = [make_trace("s1", "wl-1"), make_trace("s1", "wl-2"), make_trace("s2", "wl-1")]
    first = store.add(batch_of(*traces))
    assert (first.traces, first.present, first.workloads) == (3, 0, 2)
    again = store.add(batch_of(*traces))
    assert (again.traces, again.present, again.workloads) == (0, 3, 0)
    assert rows(store, "SELECT count(*), count(DISTINCT trace_key) FROM traces") == [(3, 3)]


def test_repeat_within_one_batch_is_counted_once(store: Store) -> None:
    t = make_trace()
    counts = store.add(batch_of(t, t))
    assert (counts.traces, counts.present) == (1, 1)


def test_workload_only_records_go_to_workloads_not_traces(store: Store) -> None:
    counts = store.add(batch_of(make_trace(uuid="wl-9", batch=7, evaluated=False)))
    assert (counts.traces, counts.workloads) == (0, 1)
    assert rows(store, "SELECT count(*) FROM traces") == [(0,)]
    assert rows(store, "SELECT definition, uuid, axes['batch'] FROM workloads") == [("vec_add", "wl-9", 7)]


def test_every_record_field_has_its_column(store: Store) -> None:
    t = make_trace(
        "s1",
        "wl-1",
        "NVIDIA H100 80GB HBM3",
        latency=0.5,
        reference=2.0,
        batch=3,
        ts="2026-02-03T04:05:06.5",
        provenance={
            "task_id": "t-1",
            "sweep": "nightly",
            "run_id": "r-7",
            "solution_hash": "abc",
            "config_hash": "cfg",
            "settings_hash": "set",
            "node_id": "node-a",
            "gpu_id": "2",
            "worker_pid": 4321,
            "started_at": "2026-02-03T04:05:00+00:00",
            "finished_at": "2026-02-03T04:05:07+00:00",
            "attempt": 1,
        },
        extra_eval={
            "seed": 11,
            "timing": {
                "clock": "cuda_event",
                "iterations": 50,
                "p10_ms": 0.4,
                "p50_ms": 0.5,
                "p90_ms": 0.6,
                "mean_ms": 0.51,
                "cv": 0.02,
            },
            "reference_timing": {
                "clock": "cuda_event",
                "iterations": 20,
                "p10_ms": 1.9,
                "p50_ms": 2.0,
                "p90_ms": 2.1,
                "mean_ms": 2.0,
                "cv": 0.01,
            },
            "clocks": {
                "sm_clock_mhz_before": 1980,
                "sm_clock_mhz_after": 1785,
                "sm_clock_mhz_max": 1980,
                "throttle_reasons_after": ["SW_POWER_CAP"],
            },
            "environment": {
                "hardware": "NVIDIA H100 80GB HBM3",
                "libs": {"torch": "2.9.0"},
                "device_name": "NVIDIA H100 80GB HBM3",
            },
        },
    )
    store.add(batch_of(t))
    with store.session() as s:
        res = run_sql(s, "SELECT * FROM traces")
    row = dict(zip(res.columns, res.rows[0]))
    assert row["definition"] == "vec_add" and row["solution"] == "s1" and row["workload_uuid"] == "wl-1"
    assert row["axes"] == [("batch", 3)]
    assert row["status"] == "PASSED"
    assert (row["max_absolute_error"], row["max_relative_error"]) == (2e-3, 1e-3)
    assert (row["latency_ms"], row["reference_latency_ms"], row["speedup_factor"]) == (0.5, 2.0, 4.0)
    assert row["hardware"] == "NVIDIA_H100"
    assert row["hardware_raw"] == row["device_name"] == "NVIDIA H100 80GB HBM3"
    assert row["libs"] == [("torch", "2.9.0")]
    # A timestamp without a zone is taken as UTC.
    assert row["timestamp"] == datetime(2026, 2, 3, 4, 5, 6, 500000, tzinfo=timezone.utc)
    assert row["seed"] == 11
    assert (row["timing_clock"], row["timing_iterations"], row["timing_p50_ms"], row["timing_cv"]) == (
        "cuda_event",
        50,
        0.5,
        0.02,
    )
    assert (row["ref_timing_p50_ms"], row["ref_timing_iterations"]) == (2.0, 20)
    assert (row["sm_clock_mhz_before"], row["sm_clock_mhz_after"], row["sm_clock_mhz_max"]) == (
        1980,
        1785,
        1980,
    )
    assert (row["throttle_reasons_before"], row["throttle_reasons_after"]) == ([], ["SW_POWER_CAP"])
    assert (row["task_id"], row["sweep"], row["run_id"], row["solution_hash"]) == (
        "t-1",
        "nightly",
        "r-7",
        "abc",
    )
    assert (row["config_hash"], row["settings_hash"], row["node_id"], row["gpu_id"]) == (
        "cfg",
        "set",
        "node-a",
        "2",
    )
    assert (row["worker_pid"], row["attempt"]) == (4321, 1)
    assert row["finished_at"] == datetime(2026, 2, 3, 4, 5, 7, tzinfo=timezone.utc)
    assert row["record"] == t.to_json()


def test_nan_and_infinity_survive(store: Store) -> None:
    # Errors against the reference may be NaN or infinite (an output of NaN, of inf); times,
    # rates and speedups may not (_checks: no measurement gives them).
    t = make_trace(
        extra_eval={"correctness": {"max_relative_error": "NaN", "max_absolute_error": "Infinity"}}
    )
    store.add(batch_of(t))
    ((rel, absolute, rec),) = rows(store, "SELECT max_relative_error, max_absolute_error, record FROM traces")
    assert isinstance(rel, float) and math.isnan(rel)
    assert absolute == math.inf
    assert json.loads(str(rec))["evaluation"]["correctness"]["max_absolute_error"] == "Infinity"


def test_context_fills_op_type_tags_author_language_hash(store: Store) -> None:
    d = make_definition(tags=("demo", "fp32"))
    s = make_solution("s1")
    ctx = StoreContext.of([d], [s])
    b = RowBatch()
    b.add_context(ctx)
    b.add_trace(make_trace("s1"), context=ctx)
    counts = store.add(b)
    assert (counts.definitions, counts.solutions, counts.traces) == (1, 1, 1)
    assert rows(store, "SELECT op_type, tags, author, language, solution_hash FROM traces") == [
        ("elementwise", ["demo", "fp32"], "alice", "triton", s.content_hash)
    ]


def test_definitions_and_solutions_ingested_later_fill_stored_traces(store: Store) -> None:
    store.add(batch_of(make_trace("s1")))
    assert rows(store, "SELECT op_type, author FROM traces") == [(None, None)]
    s = make_solution("s1", author="bob", language="cuda")
    counts = store.add(batch_of(definitions=(make_definition(),), solutions=(s,)))
    assert (counts.definitions, counts.solutions) == (1, 1)
    assert rows(store, "SELECT op_type, author, language, solution_hash FROM traces") == [
        ("elementwise", "bob", "cuda", s.content_hash)
    ]
    # Traces stored after their definition get the columns at insert time.
    store.add(batch_of(make_trace("s1", "wl-2")))
    assert rows(store, "SELECT count(*) FROM traces WHERE op_type = 'elementwise' AND author = 'bob'") == [
        (2,)
    ]


def test_changed_definition_replaces_stored_one(store: Store) -> None:
    store.add(batch_of(definitions=(make_definition(tags=("a",)),)))
    store.add(batch_of(definitions=(make_definition(tags=("b",)),)))
    assert rows(store, "SELECT name, tags FROM definitions") == [("vec_add", ["b"])]


def test_latest_keeps_newest_per_solution_workload_hardware_settings(store: Store) -> None:
    old = make_trace("s1", latency=3.0, ts="2026-01-01T00:00:00+00:00")
    new = make_trace("s1", latency=2.0, ts="2026-01-02T00:00:00+00:00")
    other_hw = make_trace("s1", hardware="NVIDIA_H200", latency=9.0, ts="2025-12-01T00:00:00+00:00")
    other_settings = make_trace(
        "s1", latency=5.0, ts="2025-12-01T00:00:00+00:00", provenance={"settings_hash": "slow-settings"}
    )
    store.add(batch_of(old, new, other_hw, other_settings))
    assert rows(
        store, "SELECT hardware, coalesce(settings_hash, '-'), latency_ms FROM latest ORDER BY ALL"
    ) == [("NVIDIA_H100", "-", 2.0), ("NVIDIA_H100", "slow-settings", 5.0), ("NVIDIA_H200", "-", 9.0)]


def test_latest_groups_by_solution_hash_when_known(store: Store) -> None:
    # Renamed solution, same content hash: one group; the newer name wins.
    a = make_trace(
        "old-name", latency=3.0, ts="2026-01-01T00:00:00+00:00", provenance={"solution_hash": "h1"}
    )
    b = make_trace(
        "new-name", latency=2.0, ts="2026-01-02T00:00:00+00:00", provenance={"solution_hash": "h1"}
    )
    store.add(batch_of(a, b))
    assert rows(store, "SELECT solution, latency_ms FROM latest") == [("new-name", 2.0)]


def test_best_is_fastest_passed_per_definition_workload_hardware(store: Store) -> None:
    store.add(
        batch_of(
            make_trace("slow", "wl-1", latency=2.0),
            make_trace("fast", "wl-1", latency=0.5),
            make_trace("broken", "wl-1", status="RUNTIME_ERROR"),
            make_trace("slow", "wl-2", latency=1.0),
            make_trace("fast", "wl-2", status="INCORRECT_NUMERICAL"),
            make_trace("slow", "wl-1", hardware="NVIDIA_H200", latency=0.25),
        )
    )
    assert rows(store, "SELECT workload_uuid, hardware, solution, latency_ms FROM best ORDER BY ALL") == [
        ("wl-1", "NVIDIA_H100", "fast", 0.5),
        ("wl-1", "NVIDIA_H200", "slow", 0.25),
        ("wl-2", "NVIDIA_H100", "slow", 1.0),  # 'fast' failed there
    ]


def test_cross_hardware_pairs_the_same_solution_and_workload(store: Store) -> None:
    store.add(
        batch_of(
            make_trace("s1", "wl-1", "NVIDIA_H100", latency=2.0, reference=4.0),  # speedup 2
            make_trace("s1", "wl-1", "NVIDIA_H200", latency=1.0, reference=3.0),  # speedup 3
            make_trace("s1", "wl-1", "NVIDIA_B200", latency=0.5, reference=2.0),  # speedup 4
            make_trace("s1", "wl-2", "NVIDIA_H100", latency=1.0),  # no partner
            make_trace("s2", "wl-1", "NVIDIA_H200", latency=1.0),  # no partner
        )
    )
    got = rows(
        store,
        "SELECT hardware_a, hardware_b, latency_ms_a, latency_ms_b, latency_ratio, speedup_ratio "
        "FROM cross_hardware ORDER BY hardware_a, hardware_b",
    )
    assert got == [
        ("NVIDIA_B200", "NVIDIA_H100", 0.5, 2.0, 4.0, 0.5),
        ("NVIDIA_B200", "NVIDIA_H200", 0.5, 1.0, 2.0, 0.75),
        ("NVIDIA_H100", "NVIDIA_H200", 2.0, 1.0, 0.5, 1.5),
    ]


def test_leaderboard_pass_rate_geomean_and_backendbench_scores(store: Store) -> None:
    store.add(
        batch_of(
            make_trace("s1", "wl-1", latency=1.0, reference=2.0),  # speedup 2
            make_trace("s1", "wl-2", latency=1.0, reference=8.0),  # speedup 8
            make_trace("s1", "wl-3", status="RUNTIME_ERROR"),  # counts as 1.0 in op_speedup
            make_trace("s2", "wl-1", latency=1.0, reference=1.5),
            make_trace("s2", "wl-2", latency=1.0, reference=1.5),
        )
    )
    got = rows(
        store,
        "SELECT solution, traces, passed, pass_rate, geomean_speedup, op_correct, op_speedup, "
        "perf_at_1 FROM leaderboard ORDER BY solution",
    )
    s1, s2 = got
    assert s1[:4] == ("s1", 3, 2, pytest.approx(2 / 3))
    assert s1[4] == pytest.approx(4.0)  # sqrt(2 * 8)
    assert s1[5] is False and s1[7] is False
    assert s1[6] == pytest.approx(16 ** (1 / 3))  # (2 * 8 * 1) ** (1/3)
    assert s2 == ("s2", 2, 2, 1.0, pytest.approx(1.5), True, pytest.approx(1.5), True)


def test_backend_scores_and_perf_at(store: Store) -> None:
    ctx = StoreContext.of(
        [make_definition("op_a"), make_definition("op_b")],
        [
            make_solution("a_fast", "op_a"),
            make_solution("a_slow", "op_a", body="out.copy_(x + x)"),
            make_solution("b_bad", "op_b"),
            make_solution("c_b", "op_b", author="carol", body="out.copy_(2 * x)"),
        ],
    )
    b = RowBatch()
    b.add_context(ctx)
    for t in [
        make_trace("a_fast", definition="op_a", latency=1.0, reference=3.0),  # alice op_a: 3x, correct
        make_trace("a_slow", definition="op_a", latency=1.0, reference=1.2),  # worse alice solution
        make_trace("b_bad", definition="op_b", status="INCORRECT_NUMERICAL"),  # alice op_b: wrong
        make_trace("c_b", definition="op_b", latency=1.0, reference=0.5),  # carol: correct, 0.5x
    ]:
        b.add_trace(t, context=ctx)
    store.add(b)
    assert rows(
        store, "SELECT author, definition, solution, correct, speedup FROM op_scores ORDER BY ALL"
    ) == [
        ("alice", "op_a", "a_fast", True, pytest.approx(3.0)),
        ("alice", "op_b", "b_bad", False, pytest.approx(1.0)),
        ("carol", "op_b", "c_b", True, pytest.approx(0.5)),
    ]
    assert rows(
        store,
        "SELECT author, ops, correct_ops, correctness_rate, geomean_speedup, perf_at_1 "
        "FROM backend_scores ORDER BY author",
    ) == [
        ("alice", 2, 1, pytest.approx(0.5), pytest.approx(math.sqrt(3.0)), pytest.approx(0.5)),
        ("carol", 1, 1, pytest.approx(1.0), pytest.approx(0.5), pytest.approx(0.0)),
    ]
    assert rows(store, "SELECT author, perf_at_p FROM perf_at(2.5) ORDER BY author") == [
        ("alice", pytest.approx(0.5)),
        ("carol", pytest.approx(0.0)),
    ]
    assert rows(store, "SELECT author, perf_at_p FROM perf_at(3.5) ORDER BY author") == [
        ("alice", pytest.approx(0.0)),
        ("carol", pytest.approx(0.0)),
    ]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param(
            "SELECT * FROM trace",
            "unknown table 'trace' (did you mean 'traces'?); tables: definitions, log_progress, solutions, "
            "store_meta, traces, workloads; views: backend_scores, best, best_params, compare, cross_hardware, "
            "current_traces, current_versions, definition_gain, energy, energy_pareto, latest, leaderboard, "
            "op_scores, projection, scores_at_p, secret_leaderboard, set_projection, time_share, "
            "workload_times; table macros: perf_at(p)",
            id="unknown-table-lists-what-exists",
        ),
        pytest.param(
            "SELECT solutoin FROM leaderboard",
            "unknown column 'solutoin' (did you mean 'solution'?); columns of leaderboard: definition, op_type, "
            "solution, solution_hash, author, language, hardware, traces, passed, pass_rate, geomean_speedup, "
            "op_correct, op_speedup, perf_at_1, passed_rows, failed_rows, bb_speedup_failures_as_1, rank",
            id="unknown-column-lists-the-columns",
        ),
    ],
)
def test_an_unknown_name_lists_what_there_is(store: Store, sql: str, expected: str) -> None:
    store.add(batch_of(make_trace()))
    with store.session() as s, pytest.raises(StoreError) as e:
        run_sql(s, sql)
    assert str(e.value) == expected


def test_syntax_error_is_a_store_error(store: Store) -> None:
    store.add(batch_of(make_trace()))
    with (
        store.session() as s,
        pytest.raises(StoreError, match=r'^SQL syntax error: syntax error at or near "SELEC"'),
    ):
        run_sql(s, "SELEC 1")
