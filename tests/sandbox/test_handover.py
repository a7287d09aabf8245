"""The zygote hand-over (``sweep.sandbox.handover``): a zygote offered by a driver is adopted
only when it is the one the worker would start, serves exactly one owner, sets the worker's
device variables in each sandbox, and never outlives its driver or its bound unclaimed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sweep.sandbox import Sandbox, SandboxSpec
from sweep.sandbox.handover import OfferedZygote, _parent_of, offer_zygote, zygote_environment
from sweep.schema import Status

from ..cluster.conftest import FAKE_BACKEND, toy_tasks

PER_CHILD = ("CUDA_VISIBLE_DEVICES",)
LOOSE = ("RAY_*",)


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ho-") as d:  # short: a socket path's limit
        yield Path(d)


def _offer(
    folder: Path, env: dict[str, str] | None = None, *, bound_s: float = 120.0, owners: int = 1
) -> OfferedZygote:
    return offer_zygote(
        folder,
        "z0",
        (FAKE_BACKEND, "cpu", ()),
        env if env is not None else zygote_environment(()),
        bound_s=bound_s,
        per_child=PER_CHILD,
        loose=LOOSE,
        owners=owners,
    )


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wait(cond: object, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _spec() -> SandboxSpec:
    return SandboxSpec(backend=FAKE_BACKEND, preload=())


def _seen_device(sb: Sandbox, folder: Path) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` a sandbox of ``sb`` saw ("none": unset)."""
    (task,) = toy_tasks(["barrier"], body=f"    pass\n# barrier {folder} 1\n")
    assert sb.run(task).evaluation.status is Status.PASSED  # type: ignore[union-attr]
    (name,) = os.listdir(folder)
    return name


def test_an_adopted_zygote_forks_working_sandboxes(folder: Path) -> None:
    offered = _offer(folder)
    with Sandbox(_spec(), offer=offered.offer) as sb:
        traces = [sb.run(t) for t in toy_tasks(["ok"], n_workloads=3)]
        assert [t.evaluation.status for t in traces] == [Status.PASSED] * 3  # type: ignore[union-attr]
        assert sb.stats.zygote_adopted and sb.stats.handover_refused is None
        assert sb._zygote is not None and sb._zygote.adopted and sb._zygote.pid == offered.offer.pid
        assert sb.stats.zygote_preloaded_at is not None
        # every sandbox is a child of the adopted zygote, the child of the process offered
        (zygote,) = {t.evaluation.environment.libs["zygote"] for t in traces}  # type: ignore[union-attr]
        assert _parent_of(int(zygote)) == offered.offer.pid
        # A second owner finds nothing to connect to.
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s, pytest.raises(OSError):
            s.connect(offered.offer.socket_path)
    # Its owner closed it: it exits on its own, as a worker's own zygote does.
    offered.close(grace_s=30.0)
    assert offered._proc.returncode == 0


def test_a_second_connection_waiting_beside_the_owner_is_refused(folder: Path) -> None:
    offered = _offer(folder)
    try:
        first = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        second = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        first.connect(offered.offer.socket_path)
        second.connect(offered.offer.socket_path)  # queued before the zygote accepted anyone
        first.settimeout(60)
        second.settimeout(60)
        assert b'"op": "ready"' in first.recv(65536)
        try:
            got = second.recv(65536)
        except ConnectionResetError:
            got = b""
        assert got == b""  # closed unserved
        first.close()
        second.close()
    finally:
        offered.close(grace_s=30.0)


# A worker given no device variable: the driver's one is removed in the sandbox ("none").
@pytest.mark.parametrize(("worker_device", "seen_device"), [("5", "5"), (None, "none")])
def test_the_sandbox_sees_the_workers_device_not_the_drivers(
    folder: Path, monkeypatch: pytest.MonkeyPatch, worker_device: str | None, seen_device: str
) -> None:
    seen = folder / "seen"
    driver_env = {**zygote_environment(()), "CUDA_VISIBLE_DEVICES": "3"}
    offered = _offer(folder, driver_env)
    if worker_device is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", worker_device)  # what Ray gave this worker
    try:
        with Sandbox(_spec(), offer=offered.offer) as sb:
            assert _seen_device(sb, seen) == seen_device
            assert sb.stats.zygote_adopted
    finally:
        offered.close(grace_s=30.0)


@pytest.mark.parametrize("what", ["env", "preload", "device", "env_over"])
def test_a_mismatching_offer_is_refused_and_the_worker_starts_its_own(
    folder: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    env = zygote_environment(())
    spec = _spec()
    if what == "env":
        env = {**env, "SWEEP_HANDOVER_ONLY_IN_DRIVER": "1"}
    elif what == "preload":
        spec = SandboxSpec(backend=FAKE_BACKEND, preload=("json",))
    elif what == "device":
        offered_kind = "cuda"
    elif what == "env_over":
        spec = SandboxSpec(backend=FAKE_BACKEND, preload=(), env=(("SWEEP_X", "1"),))
    if what == "device":
        offered = offer_zygote(folder, "z0", (FAKE_BACKEND, offered_kind, ()), env, bound_s=120.0)
    else:
        offered = _offer(folder, env)
    monkeypatch.setenv("RAY_SOMETHING_OF_RAYS", "differs")  # loose: never a reason to refuse
    try:
        with Sandbox(spec, offer=offered.offer) as sb:
            trace = sb.run(toy_tasks(["ok"])[0])
            assert trace.evaluation.status is Status.PASSED  # type: ignore[union-attr]
            assert not sb.stats.zygote_adopted
            assert sb.stats.handover_refused and "refused" in sb.stats.handover_refused
            if what == "env":
                assert "SWEEP_HANDOVER_ONLY_IN_DRIVER" in sb.stats.handover_refused
                assert "=1" not in sb.stats.handover_refused  # names, never values
            assert sb._zygote is not None and sb._zygote.pid != offered.offer.pid
            # The refused zygote was told to go: it exits without waiting for its bound.
            assert _wait(lambda: not offered.alive(), 30.0)
    finally:
        offered.close()


def test_an_unclaimed_zygote_exits_when_its_bound_passes(folder: Path) -> None:
    offered = _offer(folder, bound_s=0.5)
    try:
        assert _wait(lambda: not offered.alive(), 60.0)
        assert offered._proc.returncode == 3
        assert not os.path.exists(offered.offer.socket_path)
    finally:
        offered.close()


_DRIVER = """
import sys, time
from pathlib import Path
from sweep.sandbox.handover import offer_zygote, zygote_environment
o = offer_zygote(Path(sys.argv[1]), "z0", (sys.argv[2], "cpu", ()), zygote_environment(()), bound_s=600.0)
print(o.offer.pid, flush=True)
time.sleep(1.0)
"""


def test_an_unclaimed_zygote_exits_when_its_driver_dies(folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])}
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(folder), FAKE_BACKEND],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    zygote = int(proc.stdout.split()[0])
    assert _wait(lambda: _gone(zygote), 60.0), "the offered zygote outlived its driver"
    assert not (folder / "z0").exists()


def test_an_adopted_zygote_that_dies_fails_that_task_and_is_replaced(folder: Path) -> None:
    offered = _offer(folder)
    try:
        with Sandbox(_spec(), offer=offered.offer) as sb:
            sb.start()
            os.kill(offered.offer.pid, signal.SIGKILL)
            trace = sb.run(toy_tasks(["ok"])[0])
            ev = trace.evaluation
            assert ev is not None and ev.status is Status.RUNTIME_ERROR
            assert f"parent process {offered.offer.pid}" in (ev.log or ""), ev.log
            after = sb.run(toy_tasks(["ok"])[0])
            assert after.evaluation.status is Status.PASSED  # type: ignore[union-attr]
            assert sb._zygote is not None and not sb._zygote.adopted
    finally:
        offered.close()


def test_a_lent_zygote_serves_this_process_then_its_worker(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offered = _offer(folder, owners=2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")  # what Ray gave the worker
    lent = offered.lend({"CUDA_VISIBLE_DEVICES": "7"})  # the driver's lane, on device 7
    try:
        with Sandbox(_spec(), lent=lent) as lane:
            assert _seen_device(lane, folder / "lane") == "7"
            assert lane.stats.zygote_adopted and lane._zygote is not None
            assert lane._zygote.pid == offered.offer.pid
            spare = lane._spare
            assert spare is not None  # forked for the next task, alive
            # The worker asks now: it waits while the lane holds the zygote.
            worker = Sandbox(_spec(), offer=offered.offer)
            got: list[float] = []
            asking = threading.Thread(target=lambda: got.append(worker.start() and time.monotonic()))
            asking.start()
            time.sleep(1.0)
            assert got == [] and asking.is_alive()
            given_back = time.monotonic()
        asking.join(60)
        # It has the zygote once the lane gave it back, and the lane's processes are reaped.
        assert got and got[0] >= given_back
        assert _gone(spare.pid)
        with worker:
            assert worker.stats.zygote_adopted and worker.stats.handover_refused is None
            assert worker._zygote is not None and worker._zygote.pid == offered.offer.pid
            assert _seen_device(worker, folder / "worker") == "5"
            # The last owner: nobody can connect after it.
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s, pytest.raises(OSError):
                s.connect(offered.offer.socket_path)
        offered.close(grace_s=30.0)
        assert offered._proc.returncode == 0
    finally:
        offered.close()


def test_a_lent_zygote_left_unclaimed_by_its_worker_exits_at_its_bound(folder: Path) -> None:
    offered = _offer(folder, bound_s=3.0, owners=2)
    try:
        with Sandbox(_spec(), lent=offered.lend({})) as lane:
            lane.start()
        # Given back, and no worker comes: gone within the bound, its socket removed.
        assert _wait(lambda: not offered.alive(), 30.0)
        assert offered._proc.returncode == 3
        assert not os.path.exists(offered.offer.socket_path)
    finally:
        offered.close()


def test_a_handed_zygote_killed_by_its_task_is_told_at_once(folder: Path) -> None:
    # Watched through its guardian, which outlives it by a moment: the task must still read as
    # one that killed its zygote (an orphan), never as a plain crash of the sandbox.
    for i in range(6):
        offered = offer_zygote(
            folder,
            f"z{i}",
            (FAKE_BACKEND, "cpu", ()),
            zygote_environment(()),
            bound_s=60.0,
            per_child=PER_CHILD,
        )
        try:
            # Unconfined: with the seccomp filter the kill is refused (``test_confine``).
            with Sandbox(replace(_spec(), confine=False), offer=offered.offer) as sb:
                (task,) = toy_tasks(["kill_zygote"])
                ev = sb.run(task).evaluation
                assert ev.status is Status.RUNTIME_ERROR  # type: ignore[union-attr]
                assert "parent process" in ev.log and "zygote" in ev.log, ev.log[:400]  # type: ignore[union-attr]
        finally:
            offered.close()
