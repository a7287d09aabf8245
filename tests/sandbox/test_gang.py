"""Distributed tasks on the CPU: N rank sandboxes over gloo, one trace; the failing rank named.

Every gang of this module forks its ranks from one zygote (the module's ``zygote``: torch is
imported once for all of them, not once per rank and test), with the shortest settings. The
shipped collectives (definitions/collective/) run at their smallest size, each solution on 2
ranks. A whole launch of gangs beside single-GPU tasks is in tests/cluster/test_gang_launch.py.
"""

from __future__ import annotations

import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.sandbox._gang_merge import merge_ranks, secondary
from sweep.sandbox.gang import GangZygote, meeting_file, run_gang
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import EvalSettings, Status, Timeouts, Trace
from sweep.schema.task import Task
from tests.data.distributed.allreduce import definition, solution, workload

from ..conftest import quick_settings


def _settings(run_s: float = 30) -> EvalSettings:
    return quick_settings(timeouts=Timeouts(compile_s=30, run_s=run_s))


_SPEC = SandboxSpec(device_kind="cpu")


@pytest.fixture(scope="module")
def zygote() -> Iterator[GangZygote]:
    with GangZygote(_SPEC) as z:
        yield z


def _run(task: Task, tmp_path: Path, zygote: GangZygote) -> Trace:
    spec = SandboxSpec(device_kind="cpu", workdir=str(tmp_path))
    return run_gang(task, spec, grace_s=2.0, zygote=zygote)


def _gang(kind: str, tmp_path: Path, zygote: GangZygote, *, world: int = 2, run_s: float = 30) -> Trace:
    task = Task.make(definition(None), solution(kind), workload(64, world), _settings(run_s), "CPU")
    return _run(task, tmp_path, zygote)


def _dist(trace: Trace):  # type: ignore[no-untyped-def]
    assert trace.evaluation is not None and trace.evaluation.distributed is not None
    return trace.evaluation.distributed


def test_four_ranks_pass_each_with_its_figures(tmp_path: Path, zygote: GangZygote) -> None:
    trace = _gang("good", tmp_path, zygote, world=4)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.PASSED, ev.log if ev else None
    d = _dist(trace)
    assert d.world_size == 4 and d.backend == "gloo" and [r.rank for r in d.ranks] == [0, 1, 2, 3]
    assert all(r.status == "PASSED" and r.latency_ms is not None for r in d.ranks)
    slowest = max(d.ranks, key=lambda r: r.latency_ms or 0.0)
    assert d.straggler_rank == slowest.rank and ev.performance is not None
    assert ev.performance.latency_ms == slowest.latency_ms  # the task's latency is the slowest rank's
    assert len({r.pid for r in d.ranks}) == 4  # a process of its own each
    assert d.collective == "all_reduce" and d.message_bytes == 64 * 4
    assert d.busbw_gbps == pytest.approx(d.algbw_gbps * 2 * 3 / 4)


@pytest.mark.parametrize(
    ("kind", "status", "words"),
    [
        ("wrong_on_1", Status.INCORRECT_NUMERICAL, "rank 1"),
        ("crash_on_1", Status.RUNTIME_ERROR, "exited with code 3"),
    ],
)
def test_one_failing_rank_is_named(
    kind: str, status: Status, words: str, tmp_path: Path, zygote: GangZygote
) -> None:
    trace = _gang(kind, tmp_path, zygote)
    ev = trace.evaluation
    assert ev is not None and ev.status is status, ev.log if ev else None
    assert ev.log.startswith(f"{status.value}: rank 1 of 2 failed") and words in ev.log
    d = _dist(trace)
    assert d.failed_rank == 1 and d.straggler_rank is None
    assert d.ranks[1].log and Path(d.ranks[1].log).is_file()  # the failing rank's log, kept and named


def test_a_rank_writes_only_where_its_task_and_its_gang_need(tmp_path: Path, zygote: GangZygote) -> None:
    # Each rank narrows its writes as a single task does once it has arrived, the folder its
    # gang meets in kept: rank 1's file in /tmp is refused, and the ranks still met there.
    from sweep.sandbox import _confine_files

    if why := _confine_files.unavailable():
        pytest.skip(f"needs Landlock: {why}")
    trace = _gang("write_tmp_on_1", tmp_path, zygote)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR, ev.log if ev else None
    assert ev.log.startswith("RUNTIME_ERROR: rank 1 of 2 failed") and "PermissionError" in ev.log, ev.log
    assert not list(Path("/tmp").glob("sweep-rank-plant-*"))


def test_a_hung_rank_takes_the_task_down_in_its_timeout(tmp_path: Path, zygote: GangZygote) -> None:
    trace = _gang("hang_on_1", tmp_path, zygote, run_s=4)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.TIMEOUT, ev.log if ev else None
    assert _dist(trace).failed_rank == 1  # rank 0 waited in a collective: not its fault
    assert "time.sleep" not in ev.log or "main.py" in ev.log


def test_a_meeting_file_is_new_private_and_removed_even_on_error(tmp_path: Path) -> None:
    seen: list[Path] = []
    with pytest.raises(RuntimeError), meeting_file(str(tmp_path)) as store:
        seen.append(store)
        assert store.is_absolute() and not store.exists() and store.parent.parent == tmp_path
        assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700  # no other user's process writes it
        store.write_text("what a rank left")
        raise RuntimeError("the gang failed")
    assert not seen[0].parent.exists()
    with meeting_file(str(tmp_path)) as a, meeting_file(str(tmp_path)) as b:
        assert a != b  # two gangs at once never share one


def test_gangs_at_once_meet_apart_and_leave_no_meeting_folder(
    tmp_path: Path, zygote: GangZygote, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ranks once met on a TCP port the parent found free; another process could take it
    # first (EADDRINUSE in CI). Gangs now meet on files of their own, in the temporary folder.
    meet = tmp_path / "tmp"
    meet.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(meet))
    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded(**kw: str | None) -> str:
        made.append(mkdtemp(**kw))  # type: ignore[call-overload]
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    kinds = ["good", "good", "crash_on_1"]
    traces: dict[int, Trace] = {}

    def one(i: int) -> None:
        traces[i] = _gang(kinds[i], tmp_path / f"gang{i}", zygote)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(kinds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    statuses = [traces[i].evaluation.status for i in range(len(kinds))]  # type: ignore[union-attr]
    assert statuses == [Status.PASSED, Status.PASSED, Status.RUNTIME_ERROR], [
        traces[i].evaluation.log
        for i in range(len(kinds))  # type: ignore[union-attr]
    ]
    assert len(set(made)) == 3 and all(Path(m).parent == meet for m in made)  # one a gang
    assert list(meet.iterdir()) == []  # every meeting folder went, the crashed gang's too


def _shipped_tasks() -> list[Task]:
    """Every shipped collective solution on its definition's smallest workload of 2 ranks."""
    from sweep.plan.dataset import load_dataset

    root = Path(__file__).resolve().parents[2]
    ds = load_dataset([root])
    tasks = []
    for d in ds.definitions.values():
        if d.distributed is None:
            continue
        wl = min(
            (w for w in ds.workloads[d.name] if w.axes.get("W") == 2),
            key=lambda w: sum(w.axes.values()),
        )
        sols = [s for s in ds.solutions.values() if s.definition == d.name]
        tasks += [Task.make(d, s, wl, _settings(), "CPU") for s in sols]
    return tasks


def test_the_shipped_collectives_pass_on_two_ranks(tmp_path: Path, zygote: GangZygote) -> None:
    tasks = _shipped_tasks()
    assert {t.definition.name for t in tasks} == {"all_reduce_sum_f32", "ag_gemm_bf16", "gemm_rs_bf16"}
    assert len(tasks) >= 6  # a plain torch.distributed solution and a faster one each
    for task in tasks:
        trace = _run(task, tmp_path / task.solution.name, zygote)
        ev = trace.evaluation
        assert ev is not None and ev.status is Status.PASSED, (task.solution.name, ev.log if ev else None)
        d = _dist(trace)
        assert d.world_size == 2 and d.algbw_gbps is not None and d.busbw_gbps is not None
        assert d.collective == task.definition.distributed.collective  # type: ignore[union-attr]


def _rank_trace(status: str, log: str) -> Trace:
    ev: dict[str, object] = {
        "status": status,
        "environment": {"hardware": "CPU"},
        "timestamp": "2026-01-01T00:00:00Z",
        "log": log,
    }
    return Trace.model_validate(
        {"definition": "all_reduce_sum", "workload": workload().model_dump(), "evaluation": ev}
    )


def test_blame_goes_to_the_rank_whose_failure_is_its_own() -> None:
    waiting = _rank_trace(
        "TIMEOUT", 'TIMEOUT: ...\n  File "x/torch/distributed/distributed_c10d.py", line 1 in all_reduce'
    )
    hung = _rank_trace("TIMEOUT", 'TIMEOUT: ...\n  File "main.py", line 9 in run')
    peer = _rank_trace("RUNTIME_ERROR", "RUNTIME_ERROR: rank 0: RuntimeError: Connection closed by peer")
    assert secondary(waiting, False) and not secondary(hung, False) and secondary(peer, False)
    assert secondary(hung, True)  # killed because another failed
    # On GPUs a NCCL call returns at once: the peers wait in a device synchronisation of the
    # harness, and the hung rank's stack runs through the harness too, under its own code.
    gpu_waiting = _rank_trace(
        "TIMEOUT",
        "TIMEOUT: ...\nCurrent thread 0x01 (most recent call first):\n"
        '  File "/usr/lib/torch/cuda/__init__.py", line 9 in synchronize\n'
        '  File "/repo/sweep/engine/_dist_eval.py", line 50 in _trial\n',
    )
    gpu_hung = _rank_trace(
        "TIMEOUT",
        "TIMEOUT: ...\nThread 0x02 (most recent call first):\n"
        '  File "/usr/lib/python3/threading.py", line 1 in wait\n\n'
        "Current thread 0x01 (most recent call first):\n"
        '  File "/tmp/task-1/main.py", line 9 in run\n'
        '  File "/repo/sweep/engine/_dist_timing.py", line 70 in _timed\n',
    )
    assert secondary(gpu_waiting, False) and not secondary(gpu_hung, False)
    four = merge_ranks(
        Task.make(definition(None), solution("good"), workload(64, 4), _settings(), "CPU"),
        [gpu_waiting, gpu_hung, gpu_waiting, gpu_waiting],
        [3, 0, 2, 1],
        set(),
        {},
    )
    assert _dist(four).failed_rank == 1
    task = Task.make(definition(None), solution("good"), workload(64, 2), _settings(), "CPU")
    merged = merge_ranks(task, [waiting, hung], [0, 1], set(), {})
    assert _dist(merged).failed_rank == 1 and merged.evaluation.status is Status.TIMEOUT  # type: ignore[union-attr]
    merged = merge_ranks(task, [peer, hung], [0, 1], set(), {})  # first to arrive, but a victim
    assert _dist(merged).failed_rank == 1


@pytest.mark.gpu
def test_every_visible_gpu_meets_over_nccl_on_the_gang_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    meet = tmp_path / "tmp"
    meet.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(meet))
    world = torch.cuda.device_count()  # one rank a GPU; a host of one GPU still meets over NCCL
    task = Task.make(definition(None), solution("good"), workload(1 << 20, world), _settings(), "GPU")
    spec = SandboxSpec(device_kind="cuda", workdir=str(tmp_path / "work"))
    trace = run_gang(task, spec, grace_s=5.0)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.PASSED, ev.log if ev else None
    d = _dist(trace)
    assert d.backend == "nccl" and d.world_size == world and len({r.pid for r in d.ranks}) == world
    assert list(meet.iterdir()) == []


@pytest.fixture
def own_shared() -> Iterator[None]:
    """The process's shared gang zygotes as this test left them: those it started are stopped."""
    from sweep.sandbox import gang

    before = dict(gang._SHARED)
    try:
        yield
    finally:
        for key, entry in list(gang._SHARED.items()):
            if key not in before:
                entry.zygote.close()
        gang._SHARED.clear()
        gang._SHARED.update(before)


def test_gangs_of_one_spec_and_environment_share_a_zygote(
    tmp_path: Path, own_shared: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.sandbox.gang import shared_zygote

    task = Task.make(definition(None), solution("good"), workload(64, 2), _settings(), "CPU")
    pids = []
    for _ in range(2):
        with shared_zygote(_SPEC) as z:
            trace = run_gang(task, _SPEC, zygote=z)
            assert trace.evaluation is not None and trace.evaluation.status is Status.PASSED
            pids.append(z.client().pid)
    assert pids[0] == pids[1]  # torch imported once for both gangs
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # what Ray sets for a task on other GPUs
    with shared_zygote(_SPEC) as z:
        assert z.client().pid != pids[0]  # another environment: a zygote of its own


def test_past_the_limit_the_idle_zygote_used_longest_ago_stops_never_one_in_use(
    own_shared: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.sandbox import gang
    from sweep.sandbox.gang import shared_zygote

    monkeypatch.setattr(gang, "_SHARED_MAX", 1)
    with shared_zygote(_SPEC) as busy:
        busy_pid = busy.client().pid
        monkeypatch.setenv("SWEEP_TEST_ZYGOTE", "a")
        with shared_zygote(_SPEC) as a:
            a_client = a.client()
        monkeypatch.setenv("SWEEP_TEST_ZYGOTE", "b")
        with shared_zygote(_SPEC) as b:
            b.client()
            assert not a_client.alive()  # idle and used longest ago: stopped
            assert busy.client().pid == busy_pid  # in use: kept, though past the limit


def test_no_folder_to_meet_in_is_one_runtime_error_trace_naming_it(
    tmp_path: Path, zygote: GangZygote, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "gone"  # a temporary folder that is not there (or full, or read-only)
    monkeypatch.setattr(tempfile, "tempdir", str(missing))
    trace = _gang("good", tmp_path, zygote)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR
    assert (
        ev.log.startswith("RUNTIME_ERROR: no folder for the ranks to meet in could be made")
        and str(missing) in ev.log
    )
