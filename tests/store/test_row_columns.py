"""The row builder follows the schema's one declaration of each table's columns, by name."""

from __future__ import annotations

import pytest

from sweep.store import RowBatch
from sweep.store.db import arrow_schema, built_columns
from sweep.store.rows._row_batch import _ordered

from .conftest import make_definition, make_solution, make_trace


@pytest.mark.parametrize("table", ["traces", "definitions", "solutions", "workloads"])
def test_arrow_schema_has_the_built_columns_in_order(table: str) -> None:
    assert arrow_schema(table).names == built_columns(table)


def test_each_trace_value_lands_in_its_named_column() -> None:
    # Distinct values per timing field, so two columns swapped in the builder show.
    timing = {"clock": "cupti", "iterations": 11, "p10_ms": 1.0, "p50_ms": 2.0}
    timing |= {"p90_ms": 3.0, "mean_ms": 4.0, "cv": 0.5, "timer": "t", "rel_error": 0.25}
    ref = {"clock": "host", "iterations": 22, "p10_ms": 5.0, "p50_ms": 6.0}
    ref |= {"p90_ms": 7.0, "mean_ms": 8.0, "cv": 0.75, "timer": "r"}
    trace = make_trace(
        latency=0.5,
        reference=3.0,
        log="the log",
        extra_eval={"timing": timing, "reference_timing": ref, "seed": 9},
        provenance={"run_id": "run-1", "task_id": "task-1", "attempt": 3, "worker_pid": 77},
    )
    batch = RowBatch()
    key = batch.add_trace(trace, source="here")
    (row,) = batch.arrow("traces").to_pylist()
    assert list(row) == built_columns("traces")
    expected = {
        "trace_key": key,
        "definition": "vec_add",
        "solution": "s1",
        "workload_uuid": "wl-1",
        "status": "PASSED",
        "max_absolute_error": 2e-3,
        "max_relative_error": 1e-3,
        "latency_ms": 0.5,
        "reference_latency_ms": 3.0,
        "speedup_factor": 6.0,
        "hardware_raw": "NVIDIA_H100",
        "log": "the log",
        "seed": 9,
        "run_id": "run-1",
        "task_id": "task-1",
        "attempt": 3,
        "worker_pid": 77,
        "source": "here",
        "timing_timer": "t",
        "timing_rel_error": 0.25,
        "ref_timing_timer": "r",
        "flags": [],
    }
    for field in ("clock", "iterations", "p10_ms", "p50_ms", "p90_ms", "mean_ms", "cv"):
        expected[f"timing_{field}"] = timing[field]
        expected[f"ref_timing_{field}"] = ref[field]
    assert {c: row[c] for c in expected} == expected


def test_definition_solution_and_workload_rows_by_name() -> None:
    batch = RowBatch()
    defn, sol = make_definition(), make_solution("s1")
    batch.add_definition(defn)
    batch.add_solution(sol)
    batch.add_workload("vec_add", make_trace().workload)
    (d,) = batch.arrow("definitions").to_pylist()
    (s,) = batch.arrow("solutions").to_pylist()
    (w,) = batch.arrow("workloads").to_pylist()
    assert (d["name"], d["op_type"], d["description"]) == (defn.name, defn.op_type, defn.description)
    assert (s["name"], s["definition"], s["solution_hash"]) == (sol.name, sol.definition, sol.content_hash)
    assert (s["entry_point"], s["author"]) == (sol.spec.entry_point, sol.author)
    assert (w["definition"], w["uuid"]) == ("vec_add", "wl-1")


def test_a_row_out_of_step_with_the_schema_is_refused() -> None:
    full = dict.fromkeys(built_columns("workloads"))
    assert _ordered("workloads", full) == (None,) * len(full)
    with pytest.raises(AssertionError, match="no value for column 'uuid'"):
        _ordered("workloads", {k: v for k, v in full.items() if k != "uuid"})
    with pytest.raises(AssertionError, match="lacks: \\['bogus'\\]"):
        _ordered("workloads", {**full, "bogus": 1})
