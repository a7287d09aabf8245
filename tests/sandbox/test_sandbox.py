"""The supervisor and its sandbox process, without Ray.

The real engine evaluates the fault solutions of ``tests/data/cluster/faults``; a stand-in
backend (``fake_backend``) covers what the real engine never does on purpose: raising
instead of returning a trace, hanging in its build step, failing to start.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.config import Timeouts
from sweep.plan.dataset import load_dataset
from sweep.sandbox import Sandbox, SandboxSpec, SandboxStartError
from sweep.sandbox.packing import Envelope
from sweep.schema import Provenance, Status
from sweep.schema.task import Task

from ..cluster.conftest import DATA, FAKE_BACKEND, toy_tasks
from ..conftest import quick_settings


@pytest.fixture(scope="module")
def fake() -> Iterator[Sandbox]:
    with Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=()), Provenance(run_id="r", gpu_id="7")) as sb:
        yield sb


@pytest.fixture(scope="module")
def engine() -> Iterator[Sandbox]:
    spec = SandboxSpec(backend="sweep.engine", preload=("torch", "sweep.engine._evaluate"))
    with Sandbox(spec) as sb:
        yield sb


def _fault_task(solution: str, *, log_limit: int = 16384) -> Task:
    ds = load_dataset([str(DATA / "faults")])
    settings = quick_settings(
        min_iterations=1,
        max_iterations=2,
        timeouts=Timeouts(compile_s=10, run_s=10),
        log_limit_bytes=log_limit,
    )
    wl = ds.workloads["fault_add"][0]
    return Task.make(
        ds.definitions["fault_add"],
        ds.solutions[solution],
        wl,
        settings,
        "CPU",
        dataset_root=str(DATA / "faults"),
    )


def test_every_task_runs_in_a_process_of_its_own_and_is_stamped(fake: Sandbox) -> None:
    a, b = toy_tasks(["ok"], n_workloads=2)
    ta, tb = fake.run(a), fake.run(b, attempt=1)
    assert ta.evaluation is not None and ta.evaluation.status is Status.PASSED
    pa, pb = ta.provenance, tb.provenance
    assert pa is not None and pb is not None
    assert pa.worker_pid != pb.worker_pid
    assert (pa.task_id, pa.run_id, pa.gpu_id, pa.attempt) == (a.task_id, "r", "7", 0)
    assert pb.attempt == 1 and pa.started_at and pa.finished_at and pa.started_at <= pa.finished_at
    assert pa.settings_hash == a.settings.settings_hash() and pa.solution_hash == a.solution.content_hash


def test_engine_that_raises_gives_runtime_error_and_a_new_process(fake: Sandbox) -> None:
    before = fake.run(toy_tasks(["ok"])[0]).provenance
    (task,) = toy_tasks(["raise"], body="    pass  # raise\n")
    trace = fake.run(task)
    assert trace.evaluation is not None and trace.evaluation.status is Status.RUNTIME_ERROR
    assert "the engine raised instead of returning a trace" in trace.evaluation.log
    assert "RuntimeError: engine bug" in trace.evaluation.log
    after = fake.run(toy_tasks(["ok"])[0]).provenance
    assert before is not None and after is not None and before.worker_pid != after.worker_pid


def test_hang_in_build_is_a_compile_timeout_with_the_stack(fake: Sandbox) -> None:
    (task,) = toy_tasks(["hang_build"], compile_s=1, run_s=30, body="    pass  # hang\n")
    trace = fake.run(task)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.TIMEOUT
    assert ev.log.startswith("TIMEOUT: the build phase (import, compile) exceeded timeouts.compile_s=1 s")
    assert 'fake_backend.py", line' in ev.log and "in build_step" in ev.log
    assert not ev.flags  # the solution's own timeout
    assert fake.run(toy_tasks(["ok"])[0]).evaluation.status is Status.PASSED  # type: ignore[union-attr]


def test_a_reference_that_hangs_is_the_references_failure_not_the_solutions(fake: Sandbox) -> None:
    (task,) = toy_tasks(["hang_reference"], compile_s=30, run_s=1, body="    pass  # hang\n")
    ev = fake.run(task).evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR
    assert ev.flags == ["reference_failed"]
    assert "the reference's side (before the solution was imported) exceeded timeouts.run_s=1 s" in ev.log
    assert "in reference_step" in ev.log


def test_a_crash_before_the_solutions_build_is_the_references(fake: Sandbox) -> None:
    (task,) = toy_tasks(["segv_reference"], body="    pass  # crash\n")
    ev = fake.run(task).evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR and ev.flags == ["reference_failed"]
    assert "SIGSEGV" in ev.log and "while running the reference" in ev.log
    (task,) = toy_tasks(["segv_build"], body="    pass  # crash\n")
    ev = fake.run(task).evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR and not ev.flags
    assert "while building/importing the solution" in ev.log


def test_nothing_a_task_leaves_in_its_folder_or_process_reaches_the_next(fake: Sandbox) -> None:
    first, second = (fake.run(t) for t in toy_tasks(["litter"], n_workloads=2))
    for trace in (first, second):
        assert trace.evaluation is not None and trace.evaluation.status is Status.PASSED
        assert trace.solution == "litter"  # not "polluted": no environment variable came along
    libs = [t.evaluation.environment.libs for t in (first, second)]  # type: ignore[union-attr]
    assert libs[0]["cwd"] != libs[1]["cwd"] and libs[1]["found"] == ""  # a fresh, empty folder
    assert libs[0]["tmp"] == libs[0]["cwd"]  # temporary files go there too
    assert not Path(libs[0]["cwd"]).exists()  # removed once its task was done


def test_sticky_cuda_error_replaces_the_process_after_its_trace(fake: Sandbox) -> None:
    (task,) = toy_tasks(["broken"], body="    pass  # broken\n")
    first = fake.run(task)
    assert first.evaluation is not None and first.evaluation.status is Status.RUNTIME_ERROR
    assert "illegal memory access" in first.evaluation.log  # the engine's own trace, kept
    replaced = fake.stats.replaced_broken
    nxt = fake.run(toy_tasks(["ok"])[0])
    assert replaced >= 1
    assert first.provenance is not None and nxt.provenance is not None
    assert first.provenance.worker_pid != nxt.provenance.worker_pid


def test_backend_that_cannot_start_is_an_infrastructure_error(tmp_path: Path) -> None:
    spec = SandboxSpec(backend="no_such_backend_module", preload=(), start_timeout_s=120)
    with Sandbox(spec) as sb, pytest.raises(SandboxStartError) as err:
        sb.start()
    msg = str(err.value)
    assert "failed to start: exited with code 3" in msg, msg
    assert "No module named 'no_such_backend_module'" in msg, msg


def test_real_engine_segfault_then_healthy_task_in_a_fresh_process(engine: Sandbox) -> None:
    crash = engine.run(_fault_task("fault_add_segfault"))
    ev = crash.evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR
    assert "killed by signal 11 (SIGSEGV) while running" in ev.log
    assert ev.environment.hardware == "CPU" and ev.environment.libs.get("torch")
    ok = engine.run(_fault_task("fault_add_ok"))
    assert ok.evaluation is not None and ok.evaluation.status is Status.PASSED
    assert crash.provenance is not None and ok.provenance is not None
    assert crash.provenance.worker_pid != ok.provenance.worker_pid
    assert crash.definition == "fault_add" and crash.solution == "fault_add_segfault"


def test_real_engine_crash_log_is_clipped_to_the_limit(engine: Sandbox) -> None:
    trace = engine.run(_fault_task("fault_add_segfault", log_limit=300))
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR
    assert len(ev.log.encode()) <= 300
    assert ev.log.startswith("RUNTIME_ERROR: sandbox process") and "SIGSEGV" in ev.log
    assert "[... clipped ...]" in ev.log
    exit_trace = engine.run(_fault_task("fault_add_exit"))
    assert exit_trace.evaluation is not None and "exited with code 3" in exit_trace.evaluation.log


@pytest.mark.parametrize(
    ("name", "status", "needle"),
    [
        ("segv_on_w1", Status.RUNTIME_ERROR, "about to crash"),
        ("hang_on_w1", Status.TIMEOUT, "fake_backend.py"),
    ],
)
def test_batch_with_a_task_that_fails(fake: Sandbox, name: str, status: Status, needle: str) -> None:
    """In a batch, the next task's process starts while a task runs. When a task crashes or
    hangs, it still gets its own trace and its own crash report, and the tasks after it run,
    once each, every one in a process of its own."""
    tasks = toy_tasks([name], n_workloads=4, run_s=2.0)
    envs = [Envelope.of(t) for t in tasks]
    traces = [done.trace(t) for done, t in zip(fake.run_batch(envs), tasks, strict=True)]
    assert [t.provenance.task_id for t in traces] == [t.task_id for t in tasks]
    statuses = [t.evaluation.status for t in traces]
    assert statuses == [Status.PASSED, status, Status.PASSED, Status.PASSED], statuses
    assert needle in traces[1].evaluation.log
    pids = [t.provenance.worker_pid for t in traces]
    assert len(set(pids)) == 4


def test_without_prefork_each_task_still_gets_a_fresh_process() -> None:
    spec = SandboxSpec(backend=FAKE_BACKEND, preload=(), prefork=False)
    with Sandbox(spec) as sb:
        traces = [sb.run(t) for t in toy_tasks(["ok"], n_workloads=3)]
        assert sb.stats.started == 3
    assert len({t.provenance.worker_pid for t in traces}) == 3  # type: ignore[union-attr]


def test_a_result_sent_just_before_the_sandbox_exited_is_read_not_called_a_crash(tmp_path: Path) -> None:
    """The race behind a gang rank reported 'exited with code 0 while running' on 4 GPUs: the
    supervisor's poll times out, the sandbox sends its result and exits, and only then does the
    (shared, busy) zygote answer that the process is gone. The result must win."""
    import multiprocessing

    from sweep.sandbox._zygote import ExitState
    from sweep.sandbox.supervisor import _Child

    ours, theirs = multiprocessing.Pipe()

    class _LateZygote:
        """Answers 'exited with code 0' after the sandbox's message is in the socket."""

        def wait(self, pid: int, timeout: float) -> ExitState:
            theirs.send("the result")  # sent while the supervisor waited for this answer
            theirs.close()
            return ExitState(running=False, code=0)

        def alive(self) -> bool:
            return True

    class _PollMissesOnce:
        """The supervisor's end, whose first poll times out just before the message comes."""

        def __init__(self) -> None:
            self.missed = False

        def poll(self, timeout: float) -> bool:
            if not self.missed:
                self.missed = True
                return False
            return ours.poll(timeout)

        def recv(self) -> object:
            return ours.recv()

    sb = Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=(), workdir=str(tmp_path)))
    sb._zygote = _LateZygote()  # type: ignore[assignment]
    child = _Child(pid=1, conn=_PollMissesOnce(), log=tmp_path / "log", folder=tmp_path / "task")  # type: ignore[arg-type]
    msg, state = sb._receive(child, deadline=time.monotonic() + 30)
    assert (msg, state) == ("the result", None)


def test_the_folders_of_dead_supervisors_are_removed_and_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed with SIGKILL leaves its sandbox folder behind; the next supervisor on
    the node removes it, and never one whose process lives, another file, or a link."""
    import subprocess
    import sys
    import tempfile

    from sweep.sandbox.supervisor import _remove_stale_workdirs

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead_pid = int(gone.stdout)
    stale = tmp_path / f"sweep-sandbox-{dead_pid}-abc"
    (stale / "task-1").mkdir(parents=True)
    (stale / "sandbox-1.log").write_text("old")
    live = tmp_path / f"sweep-sandbox-{os.getpid()}-def"
    live.mkdir()
    other = tmp_path / "sweep-sandbox-notapid-x"
    other.mkdir()
    target = tmp_path / "keep-me"
    target.mkdir()
    link = tmp_path / f"sweep-sandbox-{dead_pid}-link"
    link.symlink_to(target)
    assert _remove_stale_workdirs(tmp_path) == 1
    assert not stale.exists()
    assert live.exists() and other.exists() and link.is_symlink() and target.exists()

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (stale / "task-1").mkdir(parents=True)
    sb = Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=()))
    try:
        own = sb._workdir
        assert own.parent == tmp_path and own.name.startswith(f"sweep-sandbox-{os.getpid()}-")
        assert not stale.exists()
    finally:
        sb.close()
    assert not own.exists()


def test_the_zygote_runs_this_sweep_from_a_folder_holding_another(decoy_cwd: Path) -> None:
    with Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=())) as sb:
        trace = sb.run(toy_tasks(["ok"])[0])
    assert trace.evaluation is not None and trace.evaluation.status is Status.PASSED, trace.evaluation
