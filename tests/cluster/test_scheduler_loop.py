"""The driver loop without Ray: ``run_tasks`` drives a stand-in (``fake_ray``) on a virtual
clock: the order tasks start in, what the loop waits on, how traces are handed over, how
calls grow with many workers, and lost workers; every task ends with exactly one trace."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.cluster._order import longest_first
from sweep.cluster.connect import Pool
from sweep.cluster.scheduler import SchedulerOptions, SchedulerStats, run_tasks
from sweep.cluster.workers import FreshWorkers
from sweep.errors import StoreError
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import Language, Status, Trace
from sweep.schema.task import Task

from .conftest import toy_tasks
from .fake_ray import FakeRay

SPEC = SandboxSpec(backend="unused", preload=())


def _tasks(names: list[str], n_workloads: int = 1) -> list[Task]:
    """Tasks of distinct solutions (a task id names a solution by content, not by name)."""
    out: list[Task] = []
    for name in names:
        out += toy_tasks([name], n_workloads=n_workloads, body=f"    y.copy_(x + 1)  # {name}\n")
    return out


def _run(
    tasks: list[Task],
    workers: int,
    ray: FakeRay,
    options: SchedulerOptions | None = None,
    estimated_s: dict[str, float] | None = None,
) -> tuple[SchedulerStats, list[list[Trace]]]:
    deliveries: list[list[Trace]] = []

    def on_traces(traces: Sequence[Trace]) -> None:
        deliveries.append(list(traces))

    pool = Pool(target="H100", size=workers, num_gpus=1, num_cpus=0)
    stats = run_tasks(
        tasks,
        [pool],
        SPEC,
        run_id="r",
        on_traces=on_traces,
        options=options,
        ray_api=ray,
        estimated_s=estimated_s,
    )
    return stats, deliveries


def _one_each(tasks: list[Task], deliveries: list[list[Trace]]) -> list[Trace]:
    traces = [t for group in deliveries for t in group]
    ids = Counter(t.provenance.task_id for t in traces if t.provenance is not None)
    assert set(ids) == {t.task_id for t in tasks} and set(ids.values()) == {1}, ids
    return traces


def test_the_queue_starts_with_unknown_tasks_then_the_longest() -> None:
    tasks = _tasks([f"s{i}" for i in range(6)], n_workloads=2)
    est = {t.task_id: float(i % 5) for i, t in enumerate(tasks) if i % 4}  # every 4th unknown
    ray = FakeRay()
    _, deliveries = _run(tasks, 1, ray, SchedulerOptions(max_batch=1), estimated_s=est)
    _one_each(tasks, deliveries)
    order = [tid for _, call in ray.started for tid in call]
    unknown = [t for t in tasks if t.task_id not in est]
    # The largest inputs first (workload w1 has n = 17, w0 n = 16), ties in plan order.
    by_size = sorted(unknown, key=lambda t: -t.workload.axes["n"])
    assert order[: len(unknown)] == [t.task_id for t in by_size]
    seconds = [est[tid] for tid in order[len(unknown) :]]
    assert seconds == sorted(seconds, reverse=True)


def test_longest_first_with_no_estimate_starts_the_largest_inputs_then_keeps_the_plan_order() -> None:
    tasks = _tasks(["a", "b", "c"], n_workloads=3)  # workloads w0, w1, w2: n = 16, 17, 18
    want = [t for i in (2, 1, 0) for t in tasks if t.workload.uuid == f"w{i}"]
    assert [t.workload.uuid for t in want] == ["w2"] * 3 + ["w1"] * 3 + ["w0"] * 3
    assert longest_first(tasks, {}) == want  # each size's solutions in plan order: a, b, c
    ray = FakeRay()
    _run(tasks, 1, ray, SchedulerOptions(max_batch=1))
    assert [tid for _, call in ray.started for tid in call] == [t.task_id for t in want]


def test_longest_first_with_equal_inputs_keeps_the_plan_order() -> None:
    tasks = _tasks(["a", "b", "c", "d"])
    assert longest_first(tasks, {}) == tasks


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1e6)), min_size=0, max_size=30))
def test_longest_first_is_a_permutation_unknown_first_then_non_increasing(values: list[float | None]) -> None:
    tasks = _tasks([f"s{i}" for i in range(len(values))])
    est = {t.task_id: v for t, v in zip(tasks, values, strict=True) if v is not None}
    out = longest_first(tasks, est)
    assert sorted(t.task_id for t in out) == sorted(t.task_id for t in tasks)
    n_unknown = len(tasks) - len(est)
    assert out[:n_unknown] == [t for t in tasks if t.task_id not in est]  # one size: plan order
    known = [est[t.task_id] for t in out[n_unknown:]]
    assert known == sorted(known, reverse=True)


def test_while_workers_start_the_first_one_up_does_not_queue_the_two_longest() -> None:
    tasks = _tasks([f"s{i}" for i in range(12)])
    est = {t.task_id: float(100 - i) for i, t in enumerate(tasks)}  # plan order is longest first
    ray = FakeRay(durations={"s0": 50.0, "s1": 40.0}, start_s=[1.0, 5.0, 5.0, 9.0])
    _, deliveries = _run(tasks, 4, ray, SchedulerOptions(depth=2, max_batch=1), estimated_s=est)
    _one_each(tasks, deliveries)
    where = {tid: worker for worker, call in ray.started for tid in call}
    assert where[tasks[0].task_id] == 0 and where[tasks[1].task_id] != 0
    # worker 3 was still starting until the queue ran dry: one call in flight each, all along
    assert set(ray.max_inflight.values()) == {1}, ray.max_inflight


def test_the_loop_waits_on_one_call_per_worker_and_hands_traces_over_in_groups() -> None:
    tasks = _tasks([f"s{i}" for i in range(40)], n_workloads=10)  # 400 tasks
    ray = FakeRay()
    stats, deliveries = _run(tasks, 50, ray, SchedulerOptions(depth=2, max_batch=1))
    _one_each(tasks, deliveries)
    # depth 2: two calls in flight per worker, but only the oldest of each is waited on
    assert stats.calls == 400 and max(ray.waited) <= 50, max(ray.waited)
    assert set(ray.max_inflight.values()) == {2}  # all up: depth 2 on every worker
    # calls that finish together are handed over together: fewer deliveries than calls
    assert len(deliveries) < stats.calls / 4, len(deliveries)
    assert max(len(d) for d in deliveries) <= 32 + 1


def test_with_many_workers_calls_grow_to_keep_the_call_rate_down() -> None:
    tasks = _tasks([f"s{i}" for i in range(40)], n_workloads=50)  # 2,000 tasks of 0.1 s
    few = _run(tasks, 20, FakeRay(), SchedulerOptions())[0]
    capped = _run(tasks, 20, FakeRay(), SchedulerOptions(max_calls_per_s=20.0))[0]
    # batch_target_s 0.25 s: ~2 tasks of 0.1 s a call; at most 20 calls a second from 20
    # workers: calls of >= 1 s, ~10 tasks
    assert few.submitted / few.calls < 3
    assert capped.submitted / capped.calls > 5
    assert few.traces == capped.traces == 2000


def test_a_task_that_kills_its_worker_is_retried_then_given_up_and_others_pass() -> None:
    tasks = _tasks(["ok"], n_workloads=12) + _tasks(["kills_worker"], n_workloads=1)
    ray = FakeRay()
    stats, deliveries = _run(tasks, 3, ray, SchedulerOptions(max_attempts=3))
    traces = _one_each(tasks, deliveries)
    lost = [t for t in traces if t.solution == "kills_worker"]
    assert len(lost) == 1 and lost[0].evaluation is not None
    assert lost[0].evaluation.status is Status.RUNTIME_ERROR
    assert "lost 3 time(s)" in (lost[0].evaluation.log or "")
    assert all(
        t.evaluation is not None and t.evaluation.status is Status.PASSED for t in traces if t != lost[0]
    )
    assert stats.lost == 1 and stats.retried == 2 and stats.workers_died == 3


@settings(max_examples=40, deadline=None)
@given(
    workers=st.integers(1, 6),
    depth=st.integers(1, 3),
    n_ok=st.integers(0, 24),
    n_kill=st.integers(0, 3),
    max_batch=st.integers(1, 5),
    starts=st.lists(st.floats(0.0, 3.0), max_size=6),
    with_estimates=st.booleans(),
)
def test_every_task_ends_with_one_trace_whatever_the_workers_and_losses(
    workers: int,
    depth: int,
    n_ok: int,
    n_kill: int,
    max_batch: int,
    starts: list[float],
    with_estimates: bool,
) -> None:
    tasks = _tasks(["ok"], n_workloads=n_ok) + _tasks(["kills_worker"], n_workloads=n_kill)
    if not tasks:
        return
    est = {t.task_id: float(i % 3) for i, t in enumerate(tasks)} if with_estimates else None
    ray = FakeRay(start_s=starts)
    opts = SchedulerOptions(depth=depth, max_batch=max_batch, batch_target_s=0.3)
    stats, deliveries = _run(tasks, workers, ray, opts, estimated_s=est)
    traces = _one_each(tasks, deliveries)
    for t in traces:
        assert t.evaluation is not None
        want = Status.RUNTIME_ERROR if t.solution == "kills_worker" else Status.PASSED
        assert t.evaluation.status is want, t.evaluation.log
    assert stats.lost == n_kill and stats.traces == len(tasks)
    assert max(ray.max_inflight.values(), default=0) <= depth


def test_estimates_given_late_are_read_once_the_workers_are_asked_for_before_any_task() -> None:
    # A launch reads the estimates (and opens its store) while its workers are claimed.
    tasks = _tasks([f"s{i}" for i in range(4)])
    est = {t.task_id: float(i) for i, t in enumerate(tasks)}
    ray = FakeRay()
    seen: list[tuple[int, int]] = []

    def late() -> dict[str, float]:
        seen.append((len(ray.actors), len(ray.started)))
        return est

    pool = Pool(target="H100", size=2, num_gpus=1, num_cpus=0)
    deliveries: list[list[Trace]] = []
    run_tasks(tasks, [pool], SPEC, run_id="r", on_traces=deliveries.append, ray_api=ray, estimated_s=late)
    assert seen == [(2, 0)]  # once: both workers asked for, no task sent yet
    _one_each(tasks, deliveries)
    order = [tid for _, call in ray.started for tid in call]
    assert [est[tid] for tid in order] == sorted(est.values(), reverse=True)


def test_when_late_estimates_fail_the_workers_asked_for_are_handed_back_and_nothing_runs() -> None:
    tasks = _tasks(["a", "b"])
    ray = FakeRay()
    handed_back: list[int] = []

    class Source(FreshWorkers):
        def finish(self, workers: Sequence[tuple[Any, bool]]) -> None:
            handed_back.append(len(workers))
            super().finish(workers)

    def broken() -> dict[str, float]:
        raise StoreError("another sweep is writing to the results folder")

    pool = Pool(target="H100", size=2, num_gpus=1, num_cpus=0)
    with pytest.raises(StoreError, match="another sweep"):
        run_tasks(
            tasks,
            [pool],
            SPEC,
            run_id="r",
            on_traces=lambda _: None,
            ray_api=ray,
            estimated_s=broken,
            workers=Source("r", ray),
        )
    assert handed_back == [2] and ray.started == []
    assert all(a.dead for a in ray.actors)


def _compiled(task: Task) -> Task:
    """``task`` with its solution in Triton: worth compiling ahead (``worth_compiling``)."""
    sol = task.solution
    triton = sol.model_copy(update={"spec": sol.spec.model_copy(update={"language": Language.triton})})
    return Task.make(task.definition, triton, task.workload, task.settings, task.hardware, sweep="tests")


def test_workers_with_compile_pools_share_out_the_longest_tasks_of_a_sweep_with_nothing_to_compile() -> None:
    # A reservation is a block of the queue: with the queue longest first, the first worker up
    # would hold every long task and run them one after the other.
    names = [f"long{i}" for i in range(4)] + [f"short{i}" for i in range(36)]
    tasks = _tasks(names)
    est = {t.task_id: 10.0 if t.solution.name.startswith("long") else 1.0 for t in tasks}
    ray = FakeRay(durations={n: 10.0 if n.startswith("long") else 1.0 for n in names}, compile_workers=8)
    _run(tasks, 4, ray, SchedulerOptions(max_batch=1), estimated_s=est)
    longs = {t.task_id for t in tasks if t.solution.name.startswith("long")}
    assert len({w for w, ids in ray.started for tid in ids if tid in longs}) == 4  # one long task each
    assert not [tid for _, ids in ray.reserved for tid in ids]  # nothing to compile, nothing reserved
    assert ray.now <= 1.0 + (4 * 10 + 36) / 4 + 1.0  # the balanced end, after the workers' 1 s start


def test_only_tasks_worth_compiling_are_reserved_for_a_compile_pool() -> None:
    plain = _tasks([f"p{i}" for i in range(8)])
    compiled = [_compiled(t) for t in _tasks([f"c{i}" for i in range(8)])]
    mixed = [t for pair in zip(plain, compiled, strict=True) for t in pair]
    ray = FakeRay(compile_workers=2)
    _, deliveries = _run(mixed, 2, ray, SchedulerOptions(max_batch=1))
    _one_each(mixed, deliveries)
    reserved = [tid for _, ids in ray.reserved for tid in ids]
    assert reserved and set(reserved) <= {t.task_id for t in compiled}
    assert len(reserved) == len(set(reserved))  # each reserved once


def test_reservations_of_tasks_worth_compiling_interleave_the_longest_first_queue() -> None:
    # Every task compiled: each worker reserves every Nth of the queue's next ones, so the 4
    # longest go one to each of 4 workers rather than in one worker's block.
    names = [f"long{i}" for i in range(4)] + [f"short{i}" for i in range(36)]
    tasks = [_compiled(t) for t in _tasks(names)]
    est = {t.task_id: 10.0 if t.solution.name.startswith("long") else 1.0 for t in tasks}
    ray = FakeRay(durations={n: 10.0 if n.startswith("long") else 1.0 for n in names}, compile_workers=8)
    _, deliveries = _run(tasks, 4, ray, SchedulerOptions(max_batch=1), estimated_s=est)
    _one_each(tasks, deliveries)
    longs = {t.task_id for t in tasks if t.solution.name.startswith("long")}
    assert len({w for w, ids in ray.started for tid in ids if tid in longs}) == 4
    assert [tid for _, ids in ray.reserved for tid in ids]  # still reserved for the pools
    assert ray.now <= 1.0 + (4 * 10 + 36) / 4 + 1.0


def test_a_reservation_looks_as_far_as_it_deals() -> None:
    # Two workers with compile pools of 2: each keeps 4 tasks reserved, every 2nd task worth
    # compiling among the queue's next 4 x 2. Plain tasks fill the queue's next 4 but not 8:
    # the first call already reserves the compiled ones behind them (a look at the next 4
    # alone once found nothing and reserved nothing).
    plain = _tasks([f"p{i}" for i in range(5)])
    compiled = [_compiled(t) for t in _tasks([f"c{i}" for i in range(8)])]
    tasks = plain + compiled
    est = {t.task_id: 10.0 for t in plain} | {t.task_id: 1.0 for t in compiled}
    ray = FakeRay(compile_workers=2)
    _, deliveries = _run(tasks, 2, ray, SchedulerOptions(max_batch=1), estimated_s=est)
    _one_each(tasks, deliveries)
    _, first_reserved = ray.reserved[0]
    assert first_reserved and set(first_reserved) <= {t.task_id for t in compiled}
