"""A stand-in engine for supervisor unit tests: behaviour chosen by the solution's name.

Real-engine behaviour (kernels that segfault, hang, ...) is tested in test_faults.py; this
module exercises the supervisor's protocol paths the real engine never takes on purpose
(an engine that raises, a reference or a build phase that hangs or crashes). Like the engine,
its ``evaluate`` says when the solution's build and run begin (``on_phase``).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from typing import Any

from sweep.schema import Correctness, Environment, Evaluation, Performance, Status, Trace
from sweep.schema.task import Task

PREPARED: list[str] = []


def prepare_process(device_kind: str) -> None:
    PREPARED.append(device_kind)


class EngineCache:
    def __init__(self) -> None:
        self.built: set[str] = set()


def reference_step(task: Task) -> None:
    """What the engine does before the solution's build: the reference's side."""
    name = task.solution.name
    if name == "hang_reference":
        time.sleep(3600)
    if name == "segv_reference":
        ctypes.string_at(0)


def build_step(task: Task, cache: EngineCache) -> None:
    name = task.solution.name
    if name == "hang_build":
        time.sleep(3600)
    if name == "segv_build":
        ctypes.string_at(0)
    cache.built.add(task.task_id)


def _barrier(task: Task) -> None:
    """Block until every GPU of the pool has started a task (the folder and count are in the
    solution's source as ``# barrier <dir> <count>``): only a scheduler that keeps all GPUs
    busy at once lets these tasks finish quickly."""
    line = next(ln for ln in task.solution.sources[0].content.splitlines() if ln.startswith("# barrier "))
    _, _, folder, count = line.split()
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, os.environ.get("CUDA_VISIBLE_DEVICES", "none")), "w").close()
    deadline = time.monotonic() + 60
    while len(os.listdir(folder)) < int(count) and time.monotonic() < deadline:
        time.sleep(0.01)


def task_folders(task: Task) -> list[str]:
    """The test folders a task's hooks write in (``# barrier <dir> <count>``, ``# gate <dir>``),
    made: the sandbox lets a task write nowhere else once it has arrived."""
    out = []
    for line in task.solution.sources[0].content.splitlines():
        if line.startswith(("# barrier ", "# gate ")):
            folder = line.split()[2] if line.startswith("# barrier ") else line.split(maxsplit=2)[2]
            os.makedirs(folder, exist_ok=True)
            out.append(folder)
    return out


def _gate(task: Task) -> None:
    """Say which node runs this (a file named by the pid of the node's raylet, which every Ray
    worker, and so its sandboxes, knows as ``RAY_RAYLET_PID``) in the folder named in the
    solution's source (``# gate <dir>``), then wait until the test opens the gate (a file
    ``open`` there): the test decides when tasks finish, from what runs where, not from time."""
    line = next(ln for ln in task.solution.sources[0].content.splitlines() if ln.startswith("# gate "))
    folder = line.split(maxsplit=2)[2]
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, os.environ.get("RAY_RAYLET_PID", "none")), "w").close()
    deadline = time.monotonic() + 150
    while not os.path.exists(os.path.join(folder, "open")) and time.monotonic() < deadline:
        time.sleep(0.02)


def evaluate(task: Task, *, device: str, cache: Any, on_phase: Callable[[str], None] | None = None) -> Trace:
    reference_step(task)
    if on_phase is not None:
        on_phase("build")
    build_step(task, cache)
    if on_phase is not None:
        on_phase("run")
    name = task.solution.name
    if name.endswith("_on_w1"):  # misbehaves on workload w1 only, like a kernel that fails at one size
        name = name.removesuffix("_on_w1") if task.workload.uuid == "w1" else "ok"
    if name == "segv":
        print("about to crash", flush=True)
        ctypes.string_at(0)
    elif name == "exit":
        print("leaving now", flush=True)
        os._exit(7)
    elif name == "raise":
        raise RuntimeError("engine bug")
    elif name == "hang":
        time.sleep(3600)
    elif name == "sleep":
        time.sleep(0.05)
    elif name == "barrier":
        _barrier(task)
    elif name == "gate":
        _gate(task)
    elif name == "litter":
        # leaves a file in its working folder and a global: neither may reach the next task
        found = sorted(os.listdir("."))
        with open("left_behind.txt", "w") as f:
            f.write("x")
        os.environ["SWEEP_LEFT_BEHIND"] = "1"
        return _passed(
            task, {"cwd": os.getcwd(), "found": ",".join(found), "tmp": os.environ.get("TMPDIR", "")}
        )
    elif name == "kill_zygote":
        os.kill(os.getppid(), 9)  # its zygote: this process dies with it (parent-death signal)
        time.sleep(30)
    elif name == "kill_worker":
        # sandbox -> zygote -> Ray actor: kill the actor, as if its node vanished
        zygote = os.getppid()
        with open(f"/proc/{zygote}/stat") as f:
            actor = int(f.read().rsplit(")", 1)[1].split()[1])
        os.kill(actor, 9)
        time.sleep(30)
    # the process that forked this one: the worker's zygote, which a warm worker keeps
    env = Environment(hardware="CPU", libs={"fake": str(os.getpid()), "zygote": str(os.getppid())})
    if os.environ.get("SWEEP_LEFT_BEHIND"):
        name = "polluted"  # a global another task left: must never happen
    if name == "broken":
        ev = Evaluation(
            status=Status.RUNTIME_ERROR,
            environment=env,
            timestamp="2026-01-01T00:00:00Z",
            log="torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        )
        return Trace(definition=task.definition.name, workload=task.workload, solution=name, evaluation=ev)
    return _passed(task, {"zygote": str(os.getppid())}, solution=name)


def _passed(task: Task, libs: dict[str, str], solution: str | None = None) -> Trace:
    env = Environment(hardware="CPU", libs={"fake": str(os.getpid()), **libs})
    ev = Evaluation(
        status=Status.PASSED,
        environment=env,
        timestamp="2026-01-01T00:00:00Z",
        correctness=Correctness(),
        performance=Performance(latency_ms=1.0, reference_latency_ms=2.0, speedup_factor=2.0),
    )
    return Trace(
        definition=task.definition.name,
        workload=task.workload,
        solution=solution or task.solution.name,
        evaluation=ev,
    )
