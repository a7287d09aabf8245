"""The driver loop: long-lived workers, a few tasks in flight each, results as they finish.

Each worker (one Ray actor per GPU) has at most ``depth`` calls in flight (2: one running,
one queued, so a GPU never waits on the driver). Results come back in completion order
(``ray.wait``), and the traces of each finished call go to ``on_traces`` at once, together
(so the driver syncs its log once per call, not once per trace).

A call carries one task, or a few when evaluations are short: the driver keeps a running
estimate of an evaluation's duration per pool and packs calls of about ``batch_target_s`` of
work (at most ``max_batch`` tasks). A Ray call costs a few milliseconds of CPU on the driver
and the worker; for evaluations of ~10 ms that would be most of the work, so it is paid once
per call, not once per task. Evaluations of more than ``batch_target_s`` go one per call.

Faults: a sandbox crash or hang is the supervisor's business and comes back as a trace. A
worker that dies (its process killed, its node lost) fails its in-flight tasks with an actor
error: those go back to the queue with ``attempt + 1`` and run on another worker; after
``max_attempts`` tries the task gets a RUNTIME_ERROR trace saying the worker was lost (only
the call that was running counts an attempt; when it held several tasks, which one broke the
worker is unknown, so they all go back "solo", one per call, without counting one). Dead
workers are replaced: at once when they died running a task (each task can cost at most
``max_attempts`` workers), while a replacement budget lasts otherwise. If no worker can run the remaining
tasks for ``stall_timeout_s``, the loop raises :class:`~sweep.errors.ClusterError`.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from sweep.cluster._failure_traces import failure_trace, now_iso
from sweep.cluster._ray_api import RayApi
from sweep.cluster._worker_actor import SweepWorker, WorkerInfo
from sweep.cluster.connect import Pool
from sweep.cluster.sandbox import SandboxSpec, TaskPacker
from sweep.errors import ClusterError
from sweep.schema import Provenance, Status, Trace
from sweep.schema.task import Task

__all__ = ["RayApi", "SchedulerOptions", "SchedulerStats", "run_tasks"]

_TICK_S = 0.5


@dataclass(frozen=True)
class SchedulerOptions:
    """Knobs of the driver loop.

    Attributes:
        depth: Tasks in flight per worker.
        max_attempts: Tries per task when its worker is lost (1 + 2 retries).
        stall_timeout_s: Give up when no worker can take the remaining tasks this long.
        replacements_per_worker: Dead-worker replacements allowed per initial worker.
        batch_target_s: Seconds of evaluations to pack into one call (short evaluations).
        max_batch: Most tasks in one call (1 disables batching).
    """

    depth: int = 2
    max_attempts: int = 3
    stall_timeout_s: float = 420.0
    replacements_per_worker: int = 2
    batch_target_s: float = 0.25
    max_batch: int = 32


@dataclass
class SchedulerStats:
    """What the loop did.

    ``retried``: tasks that were running on a worker that died, run again (attempt + 1);
    ``requeued``: tasks only queued on it, run again without counting an attempt;
    ``lost``: tasks given up after ``max_attempts`` lost workers (a RUNTIME_ERROR trace each).
    """

    submitted: int = 0
    calls: int = 0
    traces: int = 0
    retried: int = 0
    requeued: int = 0
    lost: int = 0
    workers_started: int = 0
    workers_died: int = 0
    workers: list[WorkerInfo] = field(default_factory=list)
    first_ready_s: float | None = None
    loop_s: float = 0.0

    @property
    def steady_s(self) -> float:
        """Seconds from the first worker being ready to the last trace."""
        return self.loop_s - (self.first_ready_s or 0.0)


@dataclass(eq=False)
class _Worker:
    handle: Any
    pool: Pool
    ready_ref: Any | None
    info: WorkerInfo | None = None
    dead: bool = False
    started: float = field(default_factory=time.monotonic)
    inflight: dict[Any, list[_Item]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Item:
    """A task waiting or in flight: ``solo`` ones go one per call (suspects of a lost worker)."""

    task: Task
    attempt: int = 0
    solo: bool = False


class _Loop:
    def __init__(
        self,
        pools: Sequence[Pool],
        spec: SandboxSpec,
        run_id: str,
        on_traces: Callable[[Sequence[Trace]], None],
        options: SchedulerOptions,
        on_worker: Callable[[WorkerInfo], None] | None,
        on_tick: Callable[[], None] | None = None,
        ray_api: RayApi | None = None,
    ) -> None:
        if ray_api is None:
            import ray

            ray_api = cast(RayApi, ray)
        self.on_tick = on_tick
        self.ray = ray_api
        self.spec = spec
        self.run_id = run_id
        self.on_traces = on_traces
        self.on_worker = on_worker
        self.opt = options
        self.stats = SchedulerStats()
        self.actor_cls: Any = ray_api.remote(SweepWorker)
        self.workers: list[_Worker] = []
        self.owner: dict[Any, _Worker] = {}
        self.pending: dict[str, deque[_Item]] = {}
        self.packer = TaskPacker()
        self.per_eval_s: dict[str, float] = {}  # running estimate of one evaluation, per pool
        self.budget = {id(p): p.size * options.replacements_per_worker for p in pools}
        self.start_errors: list[str] = []
        self.last_progress = self.t0 = time.monotonic()
        for pool in pools:
            self.pending.setdefault(pool.target, deque())
            for _ in range(pool.size):
                self._start(pool)

    # -- workers --------------------------------------------------------------------------

    def _start(self, pool: Pool) -> None:
        spec = self.spec
        if spec.device_kind == "auto" and pool.device_kind != "auto":
            spec = replace(spec, device_kind=pool.device_kind)
        handle = self.actor_cls.options(**pool.options()).remote(spec, self.run_id)
        w = _Worker(handle=handle, pool=pool, ready_ref=handle.ready.remote())
        self.owner[w.ready_ref] = w
        self.workers.append(w)
        self.stats.workers_started += 1

    def _retire(self, w: _Worker, why: str) -> None:
        """Mark ``w`` dead, requeue its tasks, and start a replacement if the budget allows."""
        if w.dead:
            return
        w.dead = True
        self.stats.workers_died += 1
        with contextlib.suppress(Exception):  # it may be gone already
            self.ray.kill(w.handle)
        # An actor runs its calls in submission order: the oldest in flight was running, the
        # others were only queued behind it and are not to blame (no attempt counted).
        calls = list(w.inflight.items())
        w.inflight.clear()
        for ref, _ in calls:
            self.owner.pop(ref, None)
        queue = self.pending[w.pool.target]
        for i, (_, items) in reversed(list(enumerate(calls))):
            if i == 0 and len(items) == 1:
                self._requeue(items[0], w, why)
                continue
            for item in reversed(items):
                self.stats.requeued += 1
                queue.appendleft(_Item(item.task, item.attempt, solo=item.solo or i == 0))
        if w.ready_ref is not None:
            self.owner.pop(w.ready_ref, None)
            w.ready_ref = None
        if not self.pending.get(w.pool.target):
            return
        # A worker lost while it ran a task is replaced at no cost to the budget: the task is
        # to blame (a solution that kills its worker), and it is retried solo at most
        # ``max_attempts`` times, so such losses are bounded. The budget is for workers that
        # die on their own (cannot start, die idle), which could otherwise restart forever.
        if calls:
            self._start(w.pool)
        elif self.budget[id(w.pool)] > 0:
            self.budget[id(w.pool)] -= 1
            self._start(w.pool)

    def _requeue(self, item: _Item, w: _Worker, why: str) -> None:
        """The task of a lost call that held it alone: one more attempt, or a lost trace."""
        task, attempt = item.task, item.attempt
        if attempt + 1 < self.opt.max_attempts:
            self.stats.retried += 1
            self.pending[w.pool.target].appendleft(_Item(task, attempt + 1, solo=True))
            return
        self.stats.lost += 1
        info = w.info
        stamp = Provenance(
            run_id=self.run_id,
            node_id=info.node_id if info else None,
            gpu_id=info.gpu_id if info else None,
            worker_pid=info.pid if info else None,
            finished_at=now_iso(),
            attempt=attempt,
        )
        log = (
            f"the worker running this task was lost {attempt + 1} time(s) (its node died, or its "
            f"process was killed); not retried again. Last error: {why}"
        )
        self._emit([failure_trace(task, Status.RUNTIME_ERROR, log, stamp)])

    def _emit(self, traces: Sequence[Trace]) -> None:
        self.stats.traces += len(traces)
        self.last_progress = time.monotonic()
        self.on_traces(traces)

    # -- the loop -------------------------------------------------------------------------

    def _fill(self) -> None:
        for w in self.workers:
            if w.dead or w.info is None:
                continue
            queue = self.pending[w.pool.target]
            while queue and len(w.inflight) < self.opt.depth:
                items = self._take(queue, w.pool.target)
                ref = w.handle.evaluate_batch.remote([self.packer.pack(i.task, i.attempt) for i in items])
                w.inflight[ref] = items
                self.owner[ref] = w
                self.stats.submitted += len(items)
                self.stats.calls += 1

    def _batch_size(self, target: str) -> int:
        est = self.per_eval_s.get(target)
        if est is None or self.opt.max_batch <= 1:
            return 1  # nothing measured yet: one per call
        return max(1, min(self.opt.max_batch, int(self.opt.batch_target_s / max(est, 1e-6))))

    def _take(self, queue: deque[_Item], target: str) -> list[_Item]:
        """The next call's tasks: one solo task, or up to the batch size of ordinary ones."""
        first = queue.popleft()
        items = [first]
        if first.solo:
            return items
        # Leave work for the other workers: never take more than an equal share.
        live = sum(1 for w in self.workers if not w.dead and w.pool.target == target) or 1
        size = min(self._batch_size(target), max(1, (len(queue) + 1) // live))
        while queue and len(items) < size and not queue[0].solo:
            items.append(queue.popleft())
        return items

    def _handle(self, ref: Any) -> None:
        w = self.owner.pop(ref, None)
        if w is None or w.dead:
            return
        ray = self.ray
        if ref is w.ready_ref:
            w.ready_ref = None
            try:
                w.info = ray.get(ref)
            except Exception as e:  # noqa: BLE001 - a worker that cannot start is retired
                self.start_errors.append(_short_error(e))
                self._retire(w, _short_error(e))
                return
            self.stats.workers.append(w.info)
            if self.stats.first_ready_s is None:
                self.stats.first_ready_s = time.monotonic() - self.t0
            self.last_progress = time.monotonic()
            if self.on_worker is not None:
                self.on_worker(w.info)
            return
        try:
            results, busy_s = ray.get(ref)
        except Exception as e:  # noqa: BLE001 - actor died, a bug, or a sandbox that cannot restart
            self._retire(w, _short_error(e))  # requeues these tasks with the others in flight
            return
        items = w.inflight.pop(ref)
        if results:
            target, one = w.pool.target, busy_s / len(results)
            old = self.per_eval_s.get(target)
            self.per_eval_s[target] = one if old is None else 0.7 * old + 0.3 * one
            self._emit([done.trace(item.task) for done, item in zip(results, items, strict=True)])

    def _check_stall(self) -> None:
        for target, queue in self.pending.items():
            if not queue:
                continue
            live = [w for w in self.workers if not w.dead and w.pool.target == target]
            if any(w.info is not None for w in live):
                continue
            waited = time.monotonic() - self.last_progress
            if live and waited < self.opt.stall_timeout_s:
                continue
            detail = "\n".join(dict.fromkeys(self.start_errors)) or "none started in time"
            raise ClusterError(
                f"no worker can run the remaining {len(queue)} {target} task(s): "
                f"{'all workers were lost or failed to start' if not live else f'none ready after {waited:.0f} s'}."
                f" Completed traces are saved; launch again to resume.\nworker errors:\n{detail}"
            )

    def run(self, tasks: Sequence[Task]) -> SchedulerStats:
        for t in tasks:
            self.pending[t.hardware].append(_Item(t))
        try:
            while any(self.pending.values()) or any(w.inflight for w in self.workers):
                self._fill()
                refs = list(self.owner)
                if not refs:
                    self._check_stall()
                    time.sleep(_TICK_S)
                    continue
                done, _ = self.ray.wait(refs, num_returns=1, timeout=_TICK_S)
                if done:
                    done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
                for ref in done:
                    self._handle(ref)
                self._check_stall()
                if self.on_tick is not None:
                    self.on_tick()
        finally:
            self.stats.loop_s = time.monotonic() - self.t0
            self._shutdown()
        return self.stats

    def _shutdown(self) -> None:
        for w in self.workers:
            if not w.dead:
                with contextlib.suppress(Exception):
                    self.ray.kill(w.handle)


def _short_error(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Ray wraps a remote exception in its traceback; the last line says what happened.
    head = f"{type(e).__name__}: " if not text.startswith(type(e).__name__) else ""
    return head + ("\n".join(lines[-12:]) if lines else repr(e))


def run_tasks(
    tasks: Sequence[Task],
    pools: Sequence[Pool],
    spec: SandboxSpec,
    *,
    run_id: str,
    on_traces: Callable[[Sequence[Trace]], None],
    options: SchedulerOptions | None = None,
    on_worker: Callable[[WorkerInfo], None] | None = None,
    on_tick: Callable[[], None] | None = None,
    ray_api: RayApi | None = None,
) -> SchedulerStats:
    """Run ``tasks`` on workers of ``pools`` (Ray must be initialised); one trace per task.

    Args:
        tasks: What to evaluate; each goes to the pool whose ``target`` is its ``hardware``
            (both are the plan's normalised target).
        pools: Worker pools (see :func:`sweep.cluster.connect.pools_for`).
        spec: How workers start their sandboxes.
        run_id: Stamped on every trace.
        on_traces: Called with the traces of each finished call as soon as they arrive, in
            the order they ran (write them there; one call's traces come together).
        options: Loop knobs.
        on_worker: Called when a worker becomes ready.
        on_tick: Called at least every half second (progress output while nothing finishes).
        ray_api: The ``ray`` module (default), or a stand-in that simulates a cluster.

    Raises:
        ClusterError: No worker can run the remaining tasks.
    """
    if not tasks:
        return SchedulerStats()
    served = {p.target for p in pools}
    for t in tasks:
        if t.hardware not in served:
            raise ClusterError(
                f"task {t.task_id} targets {t.hardware}, which no worker pool serves "
                f"(pools: {', '.join(sorted(served)) or 'none'})"
            )
    loop = _Loop(pools, spec, run_id, on_traces, options or SchedulerOptions(), on_worker, on_tick, ray_api)
    return loop.run(tasks)
