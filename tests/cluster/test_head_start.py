"""The head start (``sweep.cluster.head_start``): lanes of the driver evaluate tasks on lent
zygotes until closed, each task once, and give the zygotes to their workers only once every
lane is idle."""

from __future__ import annotations

import itertools
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

from ..conftest import wait_until
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


def _taken_after(head: HeadStart, evaluated: int) -> Counter[str]:
    """What the lanes took, closed once they evaluated ``evaluated`` tasks and left to end."""
    try:
        assert wait_until(lambda: head.evaluated >= evaluated)
        taken = head.close()
        head.finish(60)
    finally:
        head.abort()
    return taken


def _takes_nothing(head: HeadStart) -> None:
    try:
        assert wait_until(lambda: head.targets == {CPU})  # its lanes are ready and looked
        assert not head.close()
        assert head.finish(60) == []
    finally:
        head.abort()


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
        assert wait_until(lambda: head.evaluated >= 3)
        taken = head.close("node-a")
        got = head.traces() + head.finish(60)
    finally:
        head.abort()
    assert 3 <= sum(taken.values()) < len(tasks)  # closed well before the 40 were done
    assert sorted(_ids(got)) == sorted(
        i for i, _ in taken.elements()
    )  # every task taken has its one trace, none twice
    assert all(t.evaluation.status is Status.PASSED for t in got)  # type: ignore[union-attr]
    assert {(t.provenance.run_id, t.provenance.node_id) for t in got} == {("run-h", "node-a")}  # type: ignore[union-attr]
    assert head.targets == {CPU}
    assert head.first_ready_at is not None


def test_lanes_take_the_shortest_tasks_first(offers: ZygoteOffers) -> None:
    tasks = toy_tasks(["ok"], n_workloads=6, hardware=CPU)
    # The scheduler runs the longest first: the lanes take from the other end.
    estimates = {t.task_id: float(i) for i, t in enumerate(tasks)}
    head = _head(offers, tasks, estimates)
    taken = _taken_after(head, 2)
    by_time = sorted(tasks, key=lambda t: estimates[t.task_id])
    assert {i for i, _ in taken} == {t.task_id for t in by_time[: len(taken)]}
    assert head.left(tasks, taken) == [t for t in tasks if (t.task_id, t.solution.name) not in taken]


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
        assert wait_until(lambda: gate.is_dir() and any(gate.iterdir()))  # the gate task runs
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
    assert wait_until(lambda: gate.is_dir() and len(list(gate.iterdir())) >= 1)
    t0 = time.monotonic()
    head.abort()
    assert time.monotonic() - t0 < 30  # not the gate's 150 s
    assert head.traces() == [] or all(t.evaluation.status is not Status.PASSED for t in head.traces())  # type: ignore[union-attr]


def test_lanes_of_another_target_take_nothing(offers: ZygoteOffers) -> None:
    tasks = toy_tasks(["ok"], n_workloads=3, hardware="H100")
    lanes = offers.lanes()
    _takes_nothing(HeadStart(lambda hw: [t for t in tasks if t.hardware == hw], SPEC, "run-h", lanes, dict))


def test_a_plan_that_fails_gives_the_lanes_nothing(offers: ZygoteOffers) -> None:
    def broken(hardware: str) -> list[Task]:
        raise ValueError("no plan")

    _takes_nothing(HeadStart(broken, SPEC, "run-h", offers.lanes(), dict))


def test_tasks_of_the_same_code_are_taken_and_left_apart(offers: ZygoteOffers) -> None:
    # Two solutions of one code make tasks of one id: taking one of them leaves the other.
    # Their traces differ by the solution's name: the one left is the one not taken.
    (a,), (b,) = toy_tasks(["ok"], hardware=CPU), toy_tasks(["ok2"], hardware=CPU)
    assert a.task_id == b.task_id
    head = _head(offers, [b])
    taken = _taken_after(head, 1)
    assert taken == Counter({(b.task_id, "ok2"): 1})
    assert head.left([a, b], taken) == [a]


@pytest.mark.gpu
def test_on_a_gpu_no_lane_task_overlaps_a_workers_task(tmp_path: Path) -> None:
    """An embedded launch with ``hardware: auto`` on this host's GPUs: lanes and workers both
    run tasks, every task once, and on each GPU no two evaluations overlap in time."""
    from collections import defaultdict
    from datetime import datetime

    from .conftest import held_launch, read_traces, write_config, write_dataset

    sols = {f"add_{k}": f"# {k}\ndef run(x):\n    return x + 1\n" for k in "ab"}
    data = write_dataset(tmp_path / "data", sols, n_workloads=20)
    results = tmp_path / "results"
    cfg = write_config(
        tmp_path / "c.yaml", [data], results, hardware="auto", extra="ray: {compile_workers: 0}\n"
    )
    row = held_launch(cfg, results, 3)
    assert row["statuses"] == {"PASSED": 40} and 3 <= row["head"] < 40, row
    traces = read_traces(results)
    assert len({(t["solution"], t["workload"]["uuid"]) for t in traces}) == 40  # type: ignore[index]
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for t in traces:
        prov = t["provenance"]
        assert (
            prov["gpu_id"] is not None
            and "cpu" not in str(t["evaluation"]["environment"]["hardware"]).lower()
        )  # type: ignore[index]
        start, end = (datetime.fromisoformat(prov[k]).timestamp() for k in ("started_at", "finished_at"))  # type: ignore[index]
        spans[str(prov["gpu_id"])].append((start, end))  # type: ignore[index]
    for gpu, times in spans.items():
        times.sort()
        for (_, end), (start, _) in itertools.pairwise(times):
            assert start >= end, (gpu, end, start)


def test_close_can_hold_until_every_lane_has_taken_a_task(offers: ZygoteOffers, tmp_path: Path) -> None:
    # Gated tasks: the first lane ready holds its first one, so it cannot take them all (quick
    # tasks could all go to one lane before the other is ready, which then takes none).
    gate = tmp_path / "gate"
    tasks = toy_tasks(["gate"], n_workloads=4, hardware=CPU, body=f"    pass\n# gate {gate}\n", run_s=120)
    head = _head(offers, tasks)
    try:
        # Asked at once (Ray up before any lane is ready): held until both lanes took one.
        taken = head.close("node-a", hold_s=60)
        assert sum(taken.values()) == 2
        gate.mkdir(exist_ok=True)  # a lane may not have started its task yet
        (gate / "open").touch()
        head.finish(60)
    finally:
        gate.mkdir(exist_ok=True)
        (gate / "open").touch()
        head.abort()
    assert all(state.evaluated == 1 for state in head._lanes)


def test_close_without_a_hold_takes_nothing_from_lanes_not_ready(offers: ZygoteOffers) -> None:
    head = _head(offers, toy_tasks(["ok"], n_workloads=4, hardware=CPU))
    try:
        assert not head.close("node-a")
        assert head.finish(60) == []
    finally:
        head.abort()
