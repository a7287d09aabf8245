"""Distributed tasks the cluster cannot place, counted in a launch's summary (no Ray): the
shipped quick start on the CPU (``configs/local.yaml``: 90 planned, 36 too large for CPU
ranks), GPU nodes too small, and the summary's counts, one line per cause and ``--verbose``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from sweep._cli.launch import launch_json, render_launch
from sweep.launch._placing import Placing, split_unplaceable
from sweep.launch.driver import HardwareCounts, LaunchResult, plans_for
from sweep.plan import group_excluded
from sweep.schema.task import Task
from tests.data.distributed.allreduce import definition, solution, workload

from ..conftest import launch_result, quick_settings

_REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_start() -> list[Task]:
    from sweep.config import load_config
    from sweep.plan import select
    from sweep.plan.dataset import load_runnable

    config = load_config(_REPO / "configs" / "local.yaml")
    return plans_for(select(config, load_runnable(config.dataset)), ["CPU"], None)[0].tasks


def _result(tasks: list[Task], placing: Placing) -> LaunchResult:
    ran = len(placing.runnable)
    return launch_result(
        sweep="local",
        planned=len(tasks),
        ran=ran,
        statuses=Counter({"PASSED": ran}),
        wall_s=1.0,
        results_dir="/r",
        store_path="/r/sweep.duckdb",
        unplaced=placing.excluded,
        per_hardware=[HardwareCounts("CPU", len(tasks), 0, ran, len(placing.unplaced))],
    )


def test_the_quick_start_on_a_cpu_counts_what_cannot_be_placed(quick_start: list[Task]) -> None:
    from sweep.cluster.gang_sched import RANK_BYTES_LIMIT
    from sweep.sandbox.gang import rank_bytes, world_size

    placing = split_unplaceable(quick_start, [(0.0, ())])  # a CPU-only cluster
    planned, ran, unplaced = len(quick_start), len(placing.runnable), len(placing.unplaced)
    assert planned == ran + unplaced and unplaced >= 36 and ran >= 54  # 36 and 54 when written
    limit = RANK_BYTES_LIMIT["CPU"]
    assert all(world_size(t) > 1 and (rank_bytes(t) or 0) > limit for t in placing.unplaced)
    assert all(world_size(t) == 1 or (rank_bytes(t) or 0) <= limit for t in placing.runnable)
    groups = group_excluded(placing.excluded)
    cause = "each rank holds more than the 16 MiB of inputs and outputs a CPU rank may (sizes for GPUs)"
    assert [(k, why, len(xs)) for k, why, xs in groups] == [("task", f"{cause}; world size 2-4", unplaced)]

    text = render_launch(_result(quick_start, placing))
    assert (
        f"{planned} planned, 0 already stored (skipped), {ran} ran (PASSED {ran}), "
        f"{unplaced} cannot be placed on this cluster"
    ) in text
    assert (
        f"cannot be placed: {unplaced} (--verbose lists them)\n  {unplaced} tasks: {cause}; world size 2-4\n"
        in text
    )
    assert text.count("cannot be placed") == 2 and "ranks holds" not in text  # no line per task
    verbose = render_launch(_result(quick_start, placing), verbose=True)
    listed = [line for line in verbose.splitlines() if line.startswith("    ")]
    assert len(listed) == unplaced and all(" on CPU: each of its " in line for line in listed)

    data = json.loads(launch_json(_result(quick_start, placing)))
    assert (data["planned"], data["ran"], data["skipped"], data["unplaced"]) == (planned, ran, 0, unplaced)
    assert data["per_hardware"][0]["unplaced"] == unplaced and len(data["cannot_be_placed"]) == unplaced
    first = data["cannot_be_placed"][0]
    assert first["cause"] == f"{cause}; world size 2-4"
    assert "a CPU rank may hold at most 16 MiB" in first["reason"]


def _gang(world: int, hardware: str = "H100") -> Task:
    return Task.make(definition(None), solution("good"), workload(64, world), quick_settings(), hardware)


def test_gpu_nodes_too_small_are_one_cause_with_the_world_sizes_left_out() -> None:
    single = [_gang(1)]  # one rank: an ordinary task
    tasks = [_gang(2), _gang(4), _gang(8), _gang(16), *single]
    placing = split_unplaceable(tasks, [(4.0, ("H100",)), (2.0, ("H200",))])
    assert [t.task_id for t in placing.runnable] == [tasks[0].task_id, tasks[1].task_id, single[0].task_id]
    assert [t.task_id for t in placing.unplaced] == [tasks[2].task_id, tasks[3].task_id]
    [(kind, why, xs)] = group_excluded(placing.excluded)
    assert kind == "task"
    assert (
        why
        == "needs more H100 GPUs of one node than there are (the largest H100 node has 4); world size 8-16"
    )
    assert [x.reason.split(";")[0] for x in xs] == [
        "needs 8 H100 GPUs on one node (its ranks share NVLink)",
        "needs 16 H100 GPUs on one node (its ranks share NVLink)",
    ]
    none = split_unplaceable([_gang(2)], [(2.0, ("H200",))])
    assert (
        none.excluded[0].why
        == "needs more H100 GPUs of one node than there are (this cluster has no H100 GPU); world size 2"
    )


def test_nothing_unplaceable_changes_nothing() -> None:
    tasks = [_gang(2), _gang(4)]
    placing = split_unplaceable(tasks, [(8.0, ("H100",))])
    assert placing.runnable == tasks and placing.unplaced == [] and placing.excluded == []
    text = render_launch(_result(tasks, placing))
    assert "cannot be placed" not in text
