"""``sweep launch`` as a command: help, errors before anything starts, the final report."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from sweep._cli.launch import render_launch
from sweep.cli import app
from sweep.cluster.scheduler import SchedulerStats
from sweep.plan import Exclusion

from ..conftest import launch_result
from .conftest import write_config, write_dataset

runner = CliRunner()


def test_help_has_an_example() -> None:
    out = runner.invoke(app, ["launch", "--help"])
    assert out.exit_code == 0
    assert "Example: sweep launch configs/local.yaml" in out.stdout
    assert "--address" in out.stdout and "--force" in out.stdout


def test_missing_config_is_an_error_before_ray_starts(tmp_path: Path) -> None:
    out = runner.invoke(app, ["launch", str(tmp_path / "nope.yaml")])
    assert out.exit_code == 1
    assert f"error: config file not found: {tmp_path / 'nope.yaml'}" in out.stderr


def test_unknown_solution_in_config_is_a_plan_error(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data", {"ok": "def run(x):\n    return x + 1\n"})
    cfg = write_config(
        tmp_path / "c.yaml", [data], tmp_path / "r", hardware="cpu", extra="solutions: {names: [okk]}\n"
    )
    out = runner.invoke(app, ["launch", str(cfg)])
    assert out.exit_code == 1
    assert "solutions.names: 'okk' matches nothing in the dataset (did you mean 'ok'?)" in out.stderr


def test_nothing_to_do_when_everything_is_stored(tmp_path: Path) -> None:
    result = launch_result(
        hardware="H100",
        planned=4,
        skipped=4,
        excluded=[Exclusion("solution", "x", "target_hardware [cpu] does not include H100")],
    )
    text = render_launch(result)
    assert "sweep 's' on H100: 4 planned, 4 already stored (skipped), 0 ran (none)" in text
    assert "nothing to do: every task has a stored trace (use --force to run them again)" in text
    assert (
        "left out: 1 (--verbose lists them)\n  1 solution: target_hardware [cpu] does not include H100"
        in text
    )


def test_report_of_a_run_has_the_table_and_timing() -> None:
    stats = SchedulerStats(first_ready_s=2.0, loop_s=12.0, workers_died=1, retried=1, lost=0)
    result = launch_result(
        run_id="r2",
        planned=10,
        ran=10,
        statuses=Counter({"PASSED": 9, "TIMEOUT": 1}),
        wall_s=20.0,
        stats=stats,
    )
    text = render_launch(result)
    assert "10 ran (PASSED 9, TIMEOUT 1)" in text
    assert "wall time 20.0 s: 10.0 s to plan, start Ray and the first worker, 10.0 s of evaluations" in text
    assert "workers lost: 1; tasks re-run elsewhere: 1" in text
    # distributed tasks run before the single workers start: their time is said apart
    gangs = dataclasses.replace(
        result, phases=(("plan", 0.1), ("ray", 2.0), ("scheduler", 2.5), ("gangs", 8.5))
    )
    assert (
        "10.0 s to plan, start Ray and the first worker (6.0 s of them the distributed tasks), 10.0 s"
        in render_launch(gangs)
    )
