"""The head start (``sweep.cluster.head_start``): lanes of the driver evaluate tasks on lent
zygotes until closed, each task once, and give the zygotes to their workers only once every
lane is idle."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from sweep.cluster.connect import Pool
from sweep.cluster.head_start import HeadStart
from sweep.cluster.zygote_offers import RAY_LOOSE, ZygoteOffers
from sweep.sandbox import Sandbox, SandboxSpec
from sweep.schema import Status, Trace
from sweep.schema.hardware import CPU
from sweep.schema.task import Task

from .conftest import FAKE_BACKEND, toy_tasks

SPEC = SandboxSpec(backend=FAKE_BACKEND, preload=())
CPU_POOL = Pool(target=CPU, size=2, num_gpus=0, num_cpus=1, device_kind="cpu")


@pytest.fixture
def offers(monkeypatch: pytest.MonkeyPatch) -> Iterator[ZygoteOffers]:
    # What Ray gives a worker of one CPU, and so the offered zygotes: a worker of this process
    # then adopts them (its environment is theirs). pytest's own variable says the phase
    # (setup, call), which would differ: it is left out.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr("sweep.cluster.zygote_offers.RAY_LOOSE", (*RAY_LOOSE, "PYTEST_*"))
    made = ZygoteOffers.start(SPEC, 0, 2, lend_cpus=True)
    try:
        yield made
    finally:
        made.close()


def _wait(cond: object, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _head(
    offers: ZygoteOffers, tasks: Sequence[Task], estimates: dict[str, float] | None = None
) -> HeadStart:
    lanes = offers.lanes()
    assert len(lanes) == 2 and all(lane.gpu is None for lane in lanes)
    return HeadStart(
        lambda hw: list(tasks) if hw == CPU else [], SPEC, "run-h", lanes, lambda: estimates or {}
    )


def _ids(traces: Sequence[Trace]) -> list[str]:
    return [t.provenance.task_id or "" for t in traces if t.provenance is not None]


def test_lanes_run_tasks_until_closed_each_once_with_the_node_stamped(offers: ZygoteOffers) -> None:
    tasks = toy_tasks(["sleep"], n_workloads=40, hardware=CPU)
    head = _head(offers, tasks)
    try:
        assert _wait(lambda: head.evaluated >= 3)
        taken = head.close("node-a")
        got = head.traces() + head.finish(60)
    finally:
        head.abort()
    assert 3 <= sum(taken.values()) < len(tasks)  # closed well before the 40 were done
    assert sorted(_ids(got)) == sorted(taken.elements())  # every task taken has its one trace, none twice
    assert all(t.evaluation.status is Status.PASSED for t in got)  # type: ignore[union-attr]
    assert {(t.provenance.run_id, t.provenance.node_id) for t in got} == {("run-h", "node-a")}  # type: ignore[union-attr]
    assert head.targets == {CPU}
    assert head.first_ready_at is not None


def test_lanes_take_the_shortest_tasks_first(offers: ZygoteOffers) -> None:
    tasks = toy_tasks(["ok"], n_workloads=6, hardware=CPU)
    # The scheduler runs the longest first: the lanes take from the other end.
    estimates = {t.task_id: float(i) for i, t in enumerate(tasks)}
    head = _head(offers, tasks, estimates)
    try:
        assert _wait(lambda: head.evaluated >= 2)
        taken = head.close()
        head.finish(60)
    finally:
        head.abort()
    by_time = sorted(tasks, key=lambda t: estimates[t.task_id])
    assert set(taken) == {t.task_id for t in by_time[: len(taken)]}
    assert head.left(tasks, taken) == [t for t in tasks if t.task_id not in taken]


def test_a_worker_gets_its_zygote_only_once_every_lane_is_idle(offers: ZygoteOffers, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    held = toy_tasks(["gate"], hardware=CPU, body=f"    pass\n# gate {gate}\n", run_s=120)
    head = _head(offers, held)  # one lane holds the gate task, the other finds nothing left
    workers: list[Sandbox] = []
    ready: list[float] = []

    def worker() -> None:
        offer = offers.take(CPU_POOL)
        assert offer is not None
        sb = Sandbox(SPEC, offer=offer)
        workers.append(sb)
        sb.start()  # waits for the zygote's lanes to be done
        ready.append(time.monotonic())

    try:
        assert _wait(lambda: gate.is_dir() and any(gate.iterdir()))  # the gate task runs
        head.close()
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for th in threads:
            th.start()
        time.sleep(1.5)
        assert ready == []  # the idle lane's zygote too is held while the other lane works
        opened = time.monotonic()
        (gate / "open").touch()
        traces = head.finish(60)
        for th in threads:
            th.join(60)
        assert len(ready) == 2 and min(ready) >= opened
        assert [t.evaluation.status for t in traces] == [Status.PASSED]  # type: ignore[union-attr]
        # Each worker adopted a lent zygote (no zygote of its own) and evaluates on it.
        for sb in workers:
            assert sb.stats.handover_refused is None and sb.stats.zygote_adopted
        (ok,) = toy_tasks(["ok"], hardware=CPU)
        assert workers[0].run(ok).evaluation.status is Status.PASSED  # type: ignore[union-attr]
    finally:
        (gate / "open").touch()
        head.abort()
        for sb in workers:
            sb.close()


def test_abort_ends_the_lanes_and_drops_their_tasks(offers: ZygoteOffers, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    held = toy_tasks(["gate"], n_workloads=2, hardware=CPU, body=f"    pass\n# gate {gate}\n", run_s=120)
    head = _head(offers, held)
    assert _wait(lambda: gate.is_dir() and len(list(gate.iterdir())) >= 1)
    t0 = time.monotonic()
    head.abort()
    assert time.monotonic() - t0 < 30  # not the gate's 150 s
    assert head.traces() == [] or all(t.evaluation.status is not Status.PASSED for t in head.traces())  # type: ignore[union-attr]


def test_lanes_of_another_target_take_nothing(offers: ZygoteOffers) -> None:
    tasks = toy_tasks(["ok"], n_workloads=3, hardware="H100")
    lanes = offers.lanes()
    head = HeadStart(lambda hw: [t for t in tasks if t.hardware == hw], SPEC, "run-h", lanes, dict)
    try:
        assert _wait(lambda: head.targets == {CPU})
        assert not head.close()
        assert head.finish(60) == []
    finally:
        head.abort()


def test_a_plan_that_fails_gives_the_lanes_nothing(offers: ZygoteOffers) -> None:
    def broken(hardware: str) -> list[Task]:
        raise ValueError("no plan")

    head = HeadStart(broken, SPEC, "run-h", offers.lanes(), dict)
    try:
        assert _wait(lambda: head.targets == {CPU})
        assert not head.close()
        assert head.finish(60) == []
    finally:
        head.abort()


def test_tasks_of_the_same_code_are_taken_and_left_apart(offers: ZygoteOffers) -> None:
    # Two solutions of one code make tasks of one id: taking one of them leaves the other.
    a, b = toy_tasks(["ok"], n_workloads=1, hardware=CPU) * 2
    head = _head(offers, [a])
    try:
        assert _wait(lambda: head.evaluated >= 1)
        taken = head.close()
        head.finish(60)
    finally:
        head.abort()
    assert taken == Counter({a.task_id: 1})
    assert head.left([a, b], taken) == [b]
