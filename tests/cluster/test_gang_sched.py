"""Placement of distributed tasks, without Ray: what cannot be placed and why, the queue's order."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.cluster.gang_sched import RANK_BYTES_LIMIT, gang_order, placement_problem
from sweep.plan.dataset import load_dataset
from sweep.sandbox.gang import rank_bytes
from sweep.schema import EvalSettings
from sweep.schema.task import Task
from tests.data.distributed.allreduce import definition, solution, workload

ROOT = Path(__file__).resolve().parents[2]


def _task(n: int, world: int, hardware: str = "CPU") -> Task:
    return Task.make(definition(None), solution("good"), workload(n, world), EvalSettings(), hardware)


def test_rank_bytes_counts_inputs_and_outputs_at_the_world_size() -> None:
    assert rank_bytes(_task(1024, 2)) == 2 * 1024 * 4


@given(n=st.integers(1, 2**28), world=st.integers(2, 8))
@settings(max_examples=60, deadline=None)
def test_a_cpu_rank_over_the_limit_is_left_out_with_the_reason(n: int, world: int) -> None:
    task = _task(n, world)
    problem = placement_problem(task, [64])
    if 2 * n * 4 > RANK_BYTES_LIMIT["CPU"]:
        assert problem is not None and "at most 16 MiB" in problem and f"{world} ranks" in problem
    else:
        assert problem is None
    # The same task on a GPU target is not limited by size, only by the node's GPUs.
    gpu = _task(n, world, "H100")
    assert placement_problem(gpu, [8]) is None
    assert placement_problem(gpu, [world - 1]) is not None
    assert placement_problem(gpu, None) is None  # nodes unknown: size only


def test_limits_can_be_given() -> None:
    task = _task(1024, 2)
    assert placement_problem(task, [2], {"CPU": 100}) is not None
    assert placement_problem(task, [2], {}) is None


@pytest.fixture(scope="module")
def shipped() -> list[Task]:
    ds = load_dataset([ROOT])
    out = []
    for d in ds.definitions.values():
        if d.distributed is None:
            continue
        sol = next(s for s in ds.solutions.values() if s.definition == d.name)
        out += [Task.make(d, sol, w, EvalSettings(), "CPU") for w in ds.workloads[d.name]]
    return out


def test_the_shipped_large_workloads_stay_off_the_cpu(shipped: list[Task]) -> None:
    placed = [t for t in shipped if placement_problem(t, [64]) is None]
    left = [t for t in shipped if placement_problem(t, [64]) is not None]
    sizes = {t.workload.axes["n"] * 4 for t in placed if t.definition.name == "all_reduce_sum_f32"}
    assert sizes == {4 * 1024, 64 * 1024, 1024 * 1024}  # 16 MiB .. 1 GiB are for GPUs
    assert {t.definition.name for t in placed} == {"all_reduce_sum_f32", "ag_gemm_bf16", "gemm_rs_bf16"}
    assert all(t.workload.axes.get("K", 0) <= 512 for t in placed)
    assert any(t.workload.axes.get("n") == 2**28 for t in left)  # the 1 GiB all-reduce
    # On the GPUs of a 2-GPU node every 2-rank workload is placed, the 4-rank ones are not.
    gpu = [t.model_copy(update={"hardware": "H100"}) for t in shipped]
    assert all((placement_problem(t, [2]) is None) == (t.workload.axes["W"] == 2) for t in gpu)


def test_the_largest_gangs_go_first() -> None:
    tasks = [_task(8, 2), _task(8, 4), _task(8, 3)]
    assert [t.workload.axes["W"] for t in gang_order(tasks)] == [4, 3, 2]


def test_a_group_fits_only_when_each_of_its_resources_is_free(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    from sweep.cluster import gang_sched

    free: dict[str, float] = {}
    monkeypatch.setattr(ray, "available_resources", lambda: dict(free))
    cpu, gpu = _task(8, 2), _task(8, 4, hardware="H100")
    assert not gang_sched._fits(cpu)
    free.update({"CPU": 1.0, "GPU": 3.0, "accelerator_type:H100": 0.5})
    assert gang_sched._fits(cpu) and not gang_sched._fits(gpu)  # 3 GPUs free, 4 asked
    free["GPU"] = 4.0
    assert gang_sched._fits(gpu)
    del free["accelerator_type:H100"]  # no H100 free: H200s would not do
    assert not gang_sched._fits(gpu)


def test_the_loop_counts_the_gpus_its_own_groups_hold_by_type(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ray's count of free resources lags behind a reservation; the loop's own does not.
    import ray

    from sweep.cluster import gang_sched

    nodes = [
        {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 4.0, "accelerator_type:H100": 1.0}},
        {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 2.0, "accelerator_type:H200": 1.0}},
        {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 4.0, "accelerator_type:H100": 1.0}},
        {"Alive": False, "Resources": {"CPU": 8.0, "GPU": 8.0, "accelerator_type:H200": 1.0}},  # gone
        {"Alive": True, "Resources": {"CPU": 8.0}},
    ]
    monkeypatch.setattr(ray, "nodes", lambda: nodes)
    capacity = gang_sched._gpu_capacity()
    assert capacity == {"H100": 8.0, "H200": 2.0, "auto": 10.0}
    two, four = _task(8, 2, hardware="H100"), _task(8, 4, hardware="H100")
    h200 = _task(8, 2, hardware="H200")
    assert gang_sched._room(four, [four], capacity)  # 4 of 8 H100s held
    assert not gang_sched._room(two, [four, four], capacity)
    assert gang_sched._room(h200, [four, four], capacity)  # H100 groups leave the H200s free
    assert not gang_sched._room(h200, [h200], capacity)
    assert not gang_sched._room(_task(8, 2, hardware="B200"), [], capacity)  # no such GPU here
    assert gang_sched._room(_task(8, 2), [_task(8, 2)] * 50, capacity)  # CPU ranks: Ray's count alone
