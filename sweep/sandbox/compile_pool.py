"""A GPU worker's compile pool: processes beside it that compile the tasks it runs next.

A parameter sweep runs many variants of one kernel; each new variant is a Triton compile (one
to several seconds of CPU) before its first call. Run in the GPU's own process, every compile
is time the GPU sits idle. The pool compiles ahead instead: the driver sends each worker, with
its calls, the tasks reserved for its next calls (``ahead``); the pool's processes build them
and compile their Triton kernels for this GPU (``sweep.engine.compile_ahead``: the solution
called once with launches turned into compiles), which fills Triton's on-disk cache and the
torch extensions folder on this node. When the GPU reaches the task, its first call finds the
kernel compiled.

Each pool process is a :class:`~sweep.sandbox.supervisor.Sandbox` of its own (forked from its own
zygote, isolated, with the task's deadlines), driven by a thread here. What comes back:

- a COMPILE_ERROR trace: the solution cannot be built, or a kernel cannot be compiled for this
  GPU or exceeds its shared memory, threads or registers. That is the task's trace; the GPU
  never runs it ("costs nothing else");
- anything else (compiled; or the compile process crashed, timed out, or the call failed in a
  way only a real run can judge): the GPU evaluates the task as it would without a pool.

When the GPU reaches a task: one being compiled is waited for; one still waiting in the
pool's queue goes to its front when a pool process is idle (it is the next to compile) and is
taken back otherwise (the GPU compiles it itself rather than wait behind others). The tasks
are queued in the order the GPU will need them, so that is rare once the pool keeps up. While
the pool is still starting (none of its processes up yet), a task waits for the first one, so
a task that cannot compile is the pool's to end from the first task on; a worker starts its
pool once its own sandbox is ready (``sweep.cluster``), so the pool's zygotes do not slow the
GPU's own start, and tasks with nothing to compile never wait for the pool.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from sweep.sandbox._spec import SandboxSpec, SandboxStartError
from sweep.sandbox.packing import Done, Envelope
from sweep.sandbox.supervisor import Sandbox
from sweep.schema import Provenance

__all__ = ["COMPILE_BACKEND", "CompilePool", "PoolStats", "compile_workers_for", "run_with_pool"]

#: The backend module the pool's sandboxes run (compile, run nothing).
COMPILE_BACKEND = "sweep.engine.compile_ahead"
#: Most compile processes one GPU worker starts under ``compile_workers: auto``.
MAX_AUTO_COMPILE_WORKERS = 8


def compile_workers_for(requested: int, device_kind: str, cpus: int, gpus_on_node: int) -> int:
    """How many compile processes a worker starts: ``requested`` when it is 0 or more; for
    ``auto`` (-1) on a GPU, the node's CPUs per GPU less the one the worker uses, at most
    :data:`MAX_AUTO_COMPILE_WORKERS`; none on CPU (Triton is interpreted there: nothing to
    compile)."""
    if requested >= 0:
        return requested
    if device_kind != "cuda":
        return 0
    per_gpu = cpus // max(1, gpus_on_node)
    return max(0, min(MAX_AUTO_COMPILE_WORKERS, per_gpu - 1))


def run_with_pool(
    pool: CompilePool | None, sandbox: Sandbox, envelopes: list[Envelope], ahead: list[Envelope] | None
) -> list[Done]:
    """Run ``envelopes`` in ``sandbox``, one result each, in order. With a pool, they and then
    ``ahead`` (the worker's next tasks) go to the pool first; a task the pool found cannot
    compile gets the pool's COMPILE_ERROR trace and is not run in the sandbox."""
    if pool is None:
        return sandbox.run_batch(envelopes)
    pool.submit([e for e in envelopes if e.compiled] + [e for e in ahead or [] if e.compiled])
    out: list[Done] = []
    run: list[Envelope] = []  # consecutive tasks to run in the sandbox, sent together (pipelined)
    for env in envelopes:
        if pool.pending(env):
            out.extend(sandbox.run_batch(run) if run else [])
            run = []
            failed = pool.outcome(env)
            if failed is not None:
                out.append(failed)
                continue
        run.append(env)
    out.extend(sandbox.run_batch(run) if run else [])
    return out


@dataclass
class PoolStats:
    """What a pool did: tasks compiled ahead, found not to compile, taken back, waited for."""

    submitted: int = 0
    compiled: int = 0
    compile_errors: int = 0
    taken_back: int = 0
    waited_s: float = 0.0
    start_errors: list[str] = field(default_factory=list)


class _Slot:
    """One task in the pool: queued, then being compiled, then done."""

    def __init__(self, env: Envelope) -> None:
        self.env = env
        self.state = "queued"  # -> "running" -> "done", or "taken" (back by the GPU)
        self.done: Done | None = None
        self.finished = threading.Event()


class CompilePool:
    """``size`` compile processes for the GPU worker this runs in (see the module).

    Args:
        spec: The worker's sandbox spec (its device kind, resolved); the pool's sandboxes
            run :data:`COMPILE_BACKEND` with it.
        size: Processes (at least 1).
        stamp: Provenance of the worker, copied into the pool's traces.
    """

    def __init__(self, spec: SandboxSpec, size: int, stamp: Provenance) -> None:
        if size < 1:
            raise ValueError(f"a compile pool needs at least one process (got {size})")
        self.stats = PoolStats()
        self._spec = replace(spec, backend=COMPILE_BACKEND)
        self._stamp = stamp
        self._lock = threading.Condition()
        self._queue: deque[_Slot] = deque()  # in the order the GPU will need them
        self._slots: dict[str, _Slot] = {}
        self._alive = size
        self._idle = 0  # processes started and waiting for a task
        self._starting = size
        self._up = 0  # processes that started
        self._closing = False
        self._threads = [
            threading.Thread(target=self._serve, name=f"compile-pool-{i}", daemon=True) for i in range(size)
        ]
        for t in self._threads:
            t.start()

    @property
    def size(self) -> int:
        """Processes still able to compile."""
        return self._alive

    def submit(self, envs: Sequence[Envelope]) -> None:
        """Compile these tasks ahead, in order (tasks already submitted are skipped)."""
        with self._lock:
            if self._alive == 0:
                return
            for env in envs:
                if env.task_id in self._slots:
                    continue
                slot = _Slot(env)
                self._slots[env.task_id] = slot
                self.stats.submitted += 1
                self._queue.append(slot)
            self._lock.notify_all()

    def wait_started(self, timeout_s: float) -> None:
        """Wait until every process has started (or failed to), at most ``timeout_s``."""
        with self._lock:
            self._lock.wait_for(lambda: self._starting == 0, timeout=timeout_s)

    def pending(self, env: Envelope) -> bool:
        """Whether the pool holds ``env`` (submitted, its outcome not yet asked for)."""
        with self._lock:
            return env.task_id in self._slots

    def outcome(self, env: Envelope) -> Done | None:
        """The task's final result when it cannot compile (a COMPILE_ERROR trace), else ``None``
        (the GPU evaluates it). Waits while the task is being compiled, and while the pool is
        starting with none of its processes up yet; a task not started yet is taken back
        when every process is busy (or none could start)."""
        with self._lock:
            slot = self._slots.pop(env.task_id, None)
            if slot is None:
                return None
            first = False  # waited for the pool's first process: the task is its next
            if slot.state == "queued" and self._up == 0 and self._starting > 0:
                self._lock.wait_for(
                    lambda: self._up > 0 or self._starting == 0 or self._closing or slot.state != "queued",
                    timeout=self._spec.start_timeout_s,
                )
                first = self._up > 0 and not self._closing
            if slot.state == "queued":
                if self._idle == 0 and not first:
                    slot.state = "taken"
                    self._queue.remove(slot)
                    self.stats.taken_back += 1
                    return None
                self._queue.remove(slot)  # next, for the idle (or first) process
                self._queue.appendleft(slot)
                self._lock.notify_all()
        t0 = time.monotonic()
        slot.finished.wait()
        self.stats.waited_s += time.monotonic() - t0
        return slot.done

    def close(self) -> None:
        """Stop the pool's processes (tasks still queued are dropped)."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        for t in self._threads:
            t.join(timeout=5)  # one mid-compile is killed with its process when the worker exits

    def _serve(self) -> None:
        sandbox = Sandbox(self._spec, self._stamp)
        try:
            try:  # start now (its zygote imports torch) rather than at the first task
                sandbox.start()
            except SandboxStartError as e:
                with self._lock:
                    self.stats.start_errors.append(str(e)[:2000])
                    self._alive -= 1
                    self._starting -= 1
                    self._lock.notify_all()
                return
            with self._lock:
                self._starting -= 1
                self._up += 1
                self._lock.notify_all()
            while True:
                with self._lock:
                    self._idle += 1
                    self._lock.wait_for(lambda: bool(self._queue) or self._closing)
                    self._idle -= 1
                    if self._closing:
                        return
                    slot = self._queue.popleft()
                    slot.state = "running"
                try:
                    done = sandbox.run_batch([slot.env])[0]
                except SandboxStartError as e:
                    # This process cannot start again: the pool shrinks, the GPU compiles for itself.
                    with self._lock:
                        self.stats.start_errors.append(str(e)[:2000])
                        self._alive -= 1
                        if self._alive == 0:  # nobody left to take what is queued
                            for queued in self._queue:
                                queued.state = "taken"
                                queued.finished.set()
                            self._queue.clear()
                    slot.state = "done"
                    slot.finished.set()
                    return
                slot.done = done if _compile_error(done) else None
                with self._lock:
                    if slot.done is not None:
                        self.stats.compile_errors += 1
                    else:
                        self.stats.compiled += 1
                slot.state = "done"
                slot.finished.set()
        finally:
            with contextlib.suppress(Exception):
                sandbox.close()


def _compile_error(done: Done) -> bool:
    """Whether the pool's result is a COMPILE_ERROR trace (the only result the GPU takes)."""
    try:
        data = json.loads(done.trace_json)
    except ValueError:
        return False
    evaluation = data.get("evaluation") if isinstance(data, dict) else None
    return isinstance(evaluation, dict) and evaluation.get("status") == "COMPILE_ERROR"
