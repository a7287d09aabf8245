"""Estimated durations of a launch's tasks from earlier runs: the rules of ``_estimates`` and
a store with earlier traces through ``estimated_for``."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.launch._estimates import estimate_durations, estimated_for, workload_size
from sweep.launch.progress import Progress
from sweep.schema import Definition, EvalSettings, Solution, Trace, Workload
from sweep.schema.task import Task
from sweep.store import EarlierRun, ResultsWriter, StoreContext


def _definition(name: str = "gemm") -> Definition:
    return Definition.model_validate(
        {
            "name": name,
            "op_type": "gemm",
            "axes": {"m": {"type": "var"}, "n": {"type": "var"}},
            "inputs": {"x": {"shape": ["m", "n"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["m", "n"], "dtype": "float32"}},
            "reference": "def run(x):\n    return x + 1\n",
        }
    )


def _solution(name: str, definition: str = "gemm") -> Solution:
    return Solution.model_validate(
        {
            "name": name,
            "definition": definition,
            "author": "t",
            "spec": {"language": "python", "target_hardware": ["*"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"def run(x, y):  # {name}\n    y.copy_(x + 1)\n"}],
        }
    )


def _task(solution: str, m: int, n: int = 1, definition: str = "gemm") -> Task:
    wl = Workload.model_validate(
        {"uuid": f"m{m}n{n}", "axes": {"m": m, "n": n}, "inputs": {"x": {"type": "random"}}}
    )
    return Task.make(_definition(definition), _solution(solution, definition), wl, EvalSettings(), "H100")


def _run(solution: str, m: int, seconds: float, n: int = 1, definition: str = "gemm") -> EarlierRun:
    return EarlierRun(definition, solution, f"m{m}n{n}", None, float(m * n), seconds)


def test_the_same_task_gets_its_latest_duration() -> None:
    t = _task("a", 64)
    assert workload_size(t) == 64.0
    assert estimate_durations([t], [_run("a", 64, 7.5), _run("a", 128, 99.0)]) == {t.task_id: 7.5}


def test_other_sizes_of_the_solution_are_read_in_log_size_and_flat_beyond_the_ends() -> None:
    runs = [_run("a", 16, 1.0), _run("a", 256, 3.0)]
    mid, small, big = _task("a", 64), _task("a", 2), _task("a", 4096)
    est = estimate_durations([mid, small, big], runs)
    # 64 is halfway from 16 to 256 in log size
    assert est[mid.task_id] == pytest.approx(2.0)
    assert est[small.task_id] == 1.0 and est[big.task_id] == 3.0


def test_a_new_solution_is_estimated_from_the_definitions_other_solutions_else_unknown() -> None:
    runs = [_run("a", 16, 1.0), _run("b", 16, 3.0), _run("a", 16, 10.0, definition="other")]
    new, stranger = _task("c", 16), _task("c", 16, definition="fresh")
    est = estimate_durations([new, stranger], runs)
    assert est == {new.task_id: 2.0}  # the median of a and b at that size; nothing of "fresh"


def test_parameter_points_are_told_apart() -> None:
    runs = [
        EarlierRun("gemm", "a", "m16n1", '{"block":64}', 16.0, 4.0),
        EarlierRun("gemm", "a", "m16n1", '{"block":128}', 16.0, 1.0),
    ]
    wl = Workload.model_validate(
        {"uuid": "m16n1", "axes": {"m": 16, "n": 1}, "inputs": {"x": {"type": "random"}}}
    )
    t64 = Task.make(_definition(), _solution("a"), wl, EvalSettings(), "H100", params={"block": 64})
    t32 = Task.make(_definition(), _solution("a"), wl, EvalSettings(), "H100", params={"block": 32})
    est = estimate_durations([t64, t32], runs)
    assert est[t64.task_id] == 4.0 and est[t32.task_id] == 2.5  # a new point: the median at its size


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 1 << 20), st.floats(0.001, 1e4)), min_size=1, max_size=8),
    st.integers(1, 1 << 22),
)
def test_an_estimate_lies_within_the_durations_it_comes_from(points: list[tuple[int, float]], m: int) -> None:
    runs = [_run("a", size, seconds) for size, seconds in points]
    t = _task("b", m)  # another solution: the definition's curve
    est = estimate_durations([t], runs)[t.task_id]
    lo, hi = min(s for _, s in points), max(s for _, s in points)
    assert lo - 1e-9 <= est <= hi + 1e-9 and math.isfinite(est)


def test_the_launch_reads_the_estimates_from_the_store(tmp_path: Path) -> None:
    results = tmp_path / "results"
    ran = [_task("a", 16), _task("a", 256)]
    traces = []
    for t, secs in zip(ran, ("01", "09"), strict=True):
        trace = Trace.model_validate(
            {
                "definition": "gemm",
                "workload": t.workload.model_dump(mode="json"),
                "solution": "a",
                "evaluation": {
                    "status": "RUNTIME_ERROR",
                    "environment": {"hardware": "NVIDIA_H100"},
                    "timestamp": "2026-01-01T00:00:00+00:00",
                },
                "provenance": t.provenance(
                    started_at="2026-01-01T00:00:00+00:00", finished_at=f"2026-01-01T00:00:{secs}+00:00"
                ).model_dump(mode="json", exclude_none=True),
            }
        )
        traces.append(trace)
    ctx = StoreContext.of([_definition()], [_solution("a")])
    with ResultsWriter(results, results / "sweep.duckdb", sweep="s", run_id="r", context=ctx) as w:
        w.write_many(traces)
    todo = [_task("a", 64), _task("b", 16), _task("x", 16, definition="fresh")]
    out = io.StringIO()
    est = estimated_for(todo, results, results / "sweep.duckdb", Progress(3, out, interval_s=0.0).note)
    assert est == {todo[0].task_id: pytest.approx(5.0), todo[1].task_id: pytest.approx(1.0)}
    assert "longest first: 2 of 3 task(s) timed by earlier runs" in out.getvalue()
