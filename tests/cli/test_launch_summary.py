"""The end of ``sweep launch``: this run's table, the whole sweep's state after a resume,
and ``--json`` (no Ray: the result is built by hand)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from sweep._cli.launch import launch_json, render_launch, sweep_state
from sweep.cluster.scheduler import SchedulerStats
from sweep.launch.driver import LaunchResult
from sweep.plan import Exclusion

from ..conftest import launch_result


def _result(tmp_path: Path, *, skipped: int = 6) -> LaunchResult:
    return launch_result(
        run_id="r2",
        hardware="H100",
        planned=10,
        skipped=skipped,
        results_dir=str(tmp_path),
        store_path=str(tmp_path / "sweep.duckdb"),
        excluded=[Exclusion("definition", f"op{i}", "no solution in the dataset") for i in range(3)],
    )


def test_resume_shows_the_whole_sweep(tmp_path: Path) -> None:
    state = {"PASSED": (8, 3), "TIMEOUT": (2, 1)}
    text = render_launch(_result(tmp_path), state=state)
    assert (
        "sweep state (store): 10 tasks with a trace, 4 of them from this run, 6 from earlier runs; "
        "PASSED 8 (3 now), TIMEOUT 2 (1 now); passed 80%"
    ) in text
    assert "left out: 3 (--verbose lists them)\n  3 definitions: no solution in the dataset" in text
    verbose = render_launch(_result(tmp_path), verbose=True)
    assert "    op0\n    op1\n    op2" in verbose


def test_a_first_run_has_no_state_line(tmp_path: Path) -> None:
    text = render_launch(_result(tmp_path, skipped=0), state={"PASSED": (4, 4)})
    assert "sweep state" not in text


def test_state_of_a_missing_store_is_none(tmp_path: Path) -> None:
    assert sweep_state(_result(tmp_path)) is None


def test_launch_json_parses(tmp_path: Path) -> None:
    data = json.loads(launch_json(_result(tmp_path), {"PASSED": (8, 3)}))
    assert data["planned"] == 10 and data["skipped"] == 6
    assert data["sweep_state"] == {"PASSED": {"tasks": 8, "this_run": 3}}
    assert data["left_out"][0] == {
        "kind": "definition",
        "name": "op0",
        "reason": "no solution in the dataset",
    }


def test_a_launch_on_several_targets_counts_each(tmp_path: Path) -> None:
    from dataclasses import replace

    from sweep.launch.driver import HardwareCounts

    per = [HardwareCounts("H100", 5, 5, 0), HardwareCounts("H200", 5, 1, 4)]
    result = replace(_result(tmp_path), hardware="H100, H200", per_hardware=per, ran=4)
    text = render_launch(result)
    assert "sweep 's' on H100, H200: 10 planned, 6 already stored (skipped), 4 ran" in text
    assert "per hardware: H100 5 planned, 5 skipped, 0 ran; H200 5 planned, 1 skipped, 4 ran" in text
    data = json.loads(launch_json(result))
    assert data["hardware"] == "H100, H200"
    assert data["per_hardware"] == [
        {"hardware": "H100", "planned": 5, "skipped": 5, "ran": 0, "unplaced": 0},
        {"hardware": "H200", "planned": 5, "skipped": 1, "ran": 4, "unplaced": 0},
    ]
    # One target: no per-hardware line.
    one = replace(_result(tmp_path), per_hardware=[HardwareCounts("H100", 10, 6, 0)])
    assert "per hardware" not in render_launch(one)


def test_warm_workers_in_the_summary_and_json(tmp_path: Path) -> None:
    result = _result(tmp_path, skipped=0)
    result.ran, result.statuses = 4, Counter({"PASSED": 4})
    result.stats = SchedulerStats(workers_started=3, workers_reused=2, loop_s=1.0, first_ready_s=0.1)
    result.kept_workers = True
    result.replaced = ["sweep-worker-ab (gpu-1 GPU 0): its code (a) is not the launching checkout's (b)"]
    text = render_launch(result)
    assert "warm workers: 2 reused, 1 started; left running for the next launch" in text
    assert "replaced a stale warm worker sweep-worker-ab (gpu-1 GPU 0): its code (a)" in text
    data = json.loads(launch_json(result))
    assert data["workers"] == {"started": 3, "reused": 2, "kept": True, "replaced": result.replaced}
    result.kept_workers = False
    assert "warm workers" not in render_launch(result)


def test_the_summary_says_why_tasks_failed(tmp_path: Path) -> None:
    from sweep.launch.progress import FailureGroup

    result = _result(tmp_path, skipped=0)
    result.ran = 2
    result.statuses = Counter({"RUNTIME_ERROR": 2})
    result.failures = [FailureGroup("RUNTIME_ERROR", "the solution raised KeyError at k.py:4", 2, "abc123")]
    text = render_launch(result)
    assert (
        "failures (2):\n      2  RUNTIME_ERROR: the solution raised KeyError at k.py:4 (e.g. task abc123)"
        in text
    )
    data = json.loads(launch_json(result))
    assert data["failures"] == [
        {
            "status": "RUNTIME_ERROR",
            "reason": "the solution raised KeyError at k.py:4",
            "count": 2,
            "task_id": "abc123",
        }
    ]
