"""The driver loop: long-lived workers, a few tasks in flight each, results as they finish.

Each worker (one Ray actor per GPU) has at most ``depth`` calls in flight (2: one running,
one queued, so a GPU never waits on the driver). Results come back in completion order
(``ray.wait``); a turn of the loop takes every call that has finished, hands their traces to
``on_traces`` a few dozen at a time (one log sync per group), and costs what changed, not the
number of workers (``_slots``). Queues start with the longest tasks, where estimated (``_order``).

A call carries one task, or a few when evaluations are short: the driver keeps a running
estimate of an evaluation's duration per pool and packs calls of about ``batch_target_s`` of
work (at most ``max_batch`` tasks). A Ray call costs a few milliseconds of CPU on the driver
and the worker; for evaluations of ~10 ms that would be most of the work, so it is paid once
per call, not once per task. Evaluations of more than ``batch_target_s`` go one per call.
With many workers calls grow to come back at most ``max_calls_per_s`` a second in all: Ray's
driver CPU per call (~0.2 ms measured) would be the limit (1,000 workers at 100 ms: 10 a call).

Faults: a sandbox crash or hang is the supervisor's business and comes back as a trace. A
worker that dies (its process killed, its node lost) fails its in-flight tasks with an actor
error: those go back to the queue with ``attempt + 1`` and run on another worker; after
``max_attempts`` tries the task gets a RUNTIME_ERROR trace saying the worker was lost (only
the call that was running counts an attempt; when it held several tasks, which one broke the
worker is unknown, so they all go back "solo", one per call, without counting one). Dead
workers are replaced: at once when they died running a task (each task can cost at most
``max_attempts`` workers), while a replacement budget lasts otherwise. If no worker can run the remaining
tasks for ``stall_timeout_s``, the loop raises :class:`~sweep.errors.ClusterError`.

A worker with a compile pool (``_compile_pool``) gets tasks reserved for its next calls
(``ahead``, twice its pool's size), sent with each call for its pool to compile while the GPU
evaluates; a worker with nothing left takes the last reserved task of another. Only tasks
worth compiling (Triton, CUDA, ...: ``worth_compiling``) are reserved, and only every Nth of
them for a pool of N workers (up to ``_MAX_STRIDE``): a block of a longest-first queue would
give the first worker up its longest tasks, and tasks with nothing to compile gain nothing
from a reservation. Workers come
from a :class:`~sweep.cluster.workers.WorkerSource`: new actors killed at the end, or warm
workers of an existing cluster (:mod:`sweep.cluster.warm`); a dead one goes to its ``stop``.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sweep.cluster._order import longest_first
from sweep.cluster._ray_api import RayApi, real_ray
from sweep.cluster._scheduler_records import SchedulerOptions, SchedulerStats
from sweep.cluster._slots import Slots
from sweep.cluster._worker_actor import WorkerInfo
from sweep.cluster.connect import Pool
from sweep.cluster.workers import FreshWorkers, WorkerSource
from sweep.errors import ClusterError
from sweep.sandbox.failure_traces import lost_worker_trace, short_error
from sweep.sandbox.packing import TaskPacker, worth_compiling
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import Trace
from sweep.schema.task import Task

__all__ = ["RayApi", "SchedulerOptions", "SchedulerStats", "run_tasks"]

_TICK_S = 0.5
#: Most workers a reservation interleaves with: it looks at ``lookahead`` times this many tasks.
_MAX_STRIDE = 8
#: Traces handed over together at most (and at each turn's end): one log sync for many, each alive
#: a moment only (a busy turn's 1,000 held at once cost the garbage collector ~30 us a trace).
_DELIVER_AT = 32


@dataclass(eq=False)
class _Worker:
    handle: Any
    pool: Pool
    ready_ref: Any | None
    info: WorkerInfo | None = None
    dead: bool = False
    started: float = field(default_factory=time.monotonic)
    inflight: dict[Any, list[_Item]] = field(default_factory=dict)
    ahead: deque[_Item] = field(default_factory=deque)  # reserved for its next calls

    @property
    def lookahead(self) -> int:  # tasks kept reserved for its compile pool (0 without one)
        return 2 * self.info.compile_workers if self.info is not None else 0


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
        source: WorkerSource | None = None,
    ) -> None:
        self.on_tick = on_tick
        self.ray = ray_api if ray_api is not None else real_ray()
        self.spec = spec
        self.run_id = run_id
        self.on_traces = on_traces
        self.on_worker = on_worker
        self.opt = options
        self.stats = SchedulerStats()
        self.source: WorkerSource = source if source is not None else FreshWorkers(run_id, ray_api)
        self.reserved = 0  # tasks in the workers' ``ahead``, together
        self.workers: list[_Worker] = []
        self.owner: dict[Any, _Worker] = {}
        self.slots: Slots[_Worker] = Slots(options.depth)
        self.out: list[Trace] = []  # traces of this turn, delivered together
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
        started = self.source.start(pool, spec)
        w = _Worker(handle=started.handle, pool=pool, ready_ref=started.handle.ready.remote())
        self.owner[w.ready_ref] = w
        self.workers.append(w)
        self.slots.started(w)
        self.stats.workers_started += 1
        self.stats.workers_reused += started.reused

    def _retire(self, w: _Worker, why: str) -> None:
        """Mark ``w`` dead, requeue its tasks, and start a replacement if the budget allows."""
        if w.dead:
            return
        w.dead = True
        self.stats.workers_died += 1
        with contextlib.suppress(Exception):  # it may be gone already
            self.source.stop(w.handle)
        # An actor runs its calls in submission order: the oldest in flight was running, the
        # others were only queued behind it and are not to blame (no attempt counted).
        calls = list(w.inflight.items())
        self.slots.retired(w, [ref for ref, _ in calls], was_ready=w.info is not None)
        w.inflight.clear()
        for ref, _ in calls:
            self.owner.pop(ref, None)
        queue = self.pending[w.pool.target]
        queue.extendleft(reversed(w.ahead))  # only reserved: back in front, no attempt counted
        self.reserved -= len(w.ahead)
        w.ahead.clear()
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
        where = (w.info.node_id, w.info.gpu_id, w.info.pid) if w.info else (None, None, None)
        self._emit([lost_worker_trace(task, why, self.run_id, attempt, *where)])

    def _emit(self, traces: Sequence[Trace]) -> None:
        self.stats.traces += len(traces)
        self.last_progress = time.monotonic()
        self.out.extend(traces)
        if len(self.out) >= _DELIVER_AT:
            self._deliver()

    def _deliver(self) -> None:  # the traces gathered, to ``on_traces`` at once (see _DELIVER_AT)
        if self.out:
            out, self.out = self.out, []
            self.on_traces(out)

    # -- the loop -------------------------------------------------------------------------

    def _fill(self) -> None:
        for target, queue in self.pending.items():
            idle: list[_Worker] = []  # hungry, but nothing is left for them this turn
            while (queue or self.reserved) and (w := self.slots.hungry_worker(target)) is not None:
                if w.ahead:
                    items = self._take(w.ahead, target)
                    self.reserved -= len(items)
                elif queue:
                    items = self._take(queue, target)
                elif not (items := self._steal(w)):
                    idle.append(w)
                    continue
                envs = [self.packer.pack(i.task, i.attempt) for i in items]
                if w.lookahead:
                    ref = w.handle.evaluate_batch.remote(envs, ahead=self._reserve(w, queue))
                else:
                    ref = w.handle.evaluate_batch.remote(envs)
                w.inflight[ref] = items
                self.owner[ref] = w
                self.slots.submitted(w, ref)
                self.stats.submitted += len(items)
                self.stats.calls += 1
            for w in idle:
                self.slots.offer(w)

    def _reserve(self, w: _Worker, queue: deque[_Item]) -> list[Any]:
        """Top up ``w``'s reservation with every stride-th task worth compiling among the shared
        queue's next ``lookahead`` x stride (stride: its pool's workers, at most ``_MAX_STRIDE``;
        the others stay, in order); the new ones, packed, for its pool."""
        want = w.lookahead - len(w.ahead)
        new: list[_Item] = []
        kept: list[_Item] = []
        # Every stride-th task worth compiling, the others left for the pool's other workers
        # (each takes its next call from the front): reservations interleave as a
        # longest-first queue deals, not one block of it each.
        stride = max(1, min(w.pool.size, _MAX_STRIDE))
        window = w.lookahead * stride
        # Looked at in place first: a sweep with nothing to compile leaves the queue untouched.
        if want > 0 and any(worth_compiling(i.task) for i in itertools.islice(queue, window)):
            seen = 0
            for _ in range(min(len(queue), window)):
                item = queue.popleft()
                if len(new) < want and worth_compiling(item.task):
                    seen += 1
                    if seen % stride == 0:
                        new.append(item)
                        continue
                kept.append(item)
            queue.extendleft(reversed(kept))
        w.ahead.extend(new)
        self.reserved += len(new)
        return [self.packer.pack(i.task, i.attempt) for i in new]

    def _steal(self, w: _Worker) -> list[_Item]:
        """For an idle ``w``: the last task of the longest reservation of its pool's others."""
        others = [o for o in self.workers if o is not w and not o.dead and o.pool.target == w.pool.target]
        victim = max(others, key=lambda o: len(o.ahead), default=None)
        if victim is None or not victim.ahead:
            return []
        self.reserved -= 1
        return [victim.ahead.pop()]

    def _batch_size(self, target: str) -> int:
        est = self.per_eval_s.get(target)
        if est is None or self.opt.max_batch <= 1:
            return 1  # nothing measured yet: one per call
        target_s = max(self.opt.batch_target_s, self.slots.live[target] / self.opt.max_calls_per_s)
        return max(1, min(self.opt.max_batch, int(target_s / max(est, 1e-6))))

    def _take(self, queue: deque[_Item], target: str) -> list[_Item]:
        """The next call's tasks: one solo task, or up to the batch size of ordinary ones."""
        first = queue.popleft()
        items = [first]
        if first.solo:
            return items
        # Leave work for the other workers: never take more than an equal share.
        live = self.slots.live[target] or 1
        size = min(self._batch_size(target), max(1, (len(queue) + 1) // live))
        while queue and len(items) < size and not queue[0].solo:
            items.append(queue.popleft())
        return items

    def _handle(self, ref: Any) -> None:
        w = self.owner.pop(ref, None)
        self.slots.seen(ref)
        if w is None or w.dead:
            return
        ray = self.ray
        if ref is w.ready_ref:
            w.ready_ref = None
            try:
                w.info = ray.get(ref)
            except Exception as e:  # noqa: BLE001 - a worker that cannot start is retired
                self.start_errors.append(short_error(e))
                self._retire(w, short_error(e))
                return
            self.stats.workers.append(w.info)
            self.slots.became_ready(w)
            if self.stats.first_ready_s is None:
                self.stats.first_ready_s = time.monotonic() - self.t0
            self.last_progress = time.monotonic()
            if self.on_worker is not None:
                self.on_worker(w.info)
            return
        try:
            results, busy_s = ray.get(ref)
        except Exception as e:  # noqa: BLE001 - actor died, a bug, or a sandbox that cannot restart
            self._retire(w, short_error(e))  # requeues these tasks with the others in flight
            return
        items = w.inflight.pop(ref)
        self.slots.finished(w)
        if results:
            target, one = w.pool.target, busy_s / len(results)
            old = self.per_eval_s.get(target)
            self.per_eval_s[target] = one if old is None else 0.7 * old + 0.3 * one
            self._emit([done.trace(item.task) for done, item in zip(results, items, strict=True)])

    def _check_stall(self) -> None:
        for target, queue in self.pending.items():
            if not queue or self.slots.ready[target]:
                continue
            live = self.slots.live[target]
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
            while any(self.pending.values()) or self.slots.calls or self.reserved:
                self._fill()
                refs = list(self.slots.watch)
                if not refs:
                    self._check_stall()
                    time.sleep(_TICK_S)
                    continue
                done, _ = self.ray.wait(refs, num_returns=1, timeout=_TICK_S)
                if done:  # and what else finishes in a moment (``Slots.gather_s``)
                    done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=self.slots.gather_s())
                for ref in done:
                    self._handle(ref)
                self._deliver()
                self._check_stall()
                if self.on_tick is not None:
                    self.on_tick()
        finally:
            self.stats.loop_s = time.monotonic() - self.t0
            try:
                self._deliver()  # what a turn cut short by an error had collected
            finally:
                self.shutdown()
        return self.stats

    def shutdown(self) -> None:
        """Hand the workers back to their source (warm ones released, new ones stopped)."""
        with contextlib.suppress(Exception):  # never hide why the loop ended
            self.source.finish([(w.handle, w.info is not None) for w in self.workers if not w.dead])


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
    estimated_s: Mapping[str, float] | Callable[[], Mapping[str, float]] | None = None,
    workers: WorkerSource | None = None,
) -> SchedulerStats:
    """Run ``tasks`` on workers of ``pools`` (Ray must be initialised); one trace per task.

    Args:
        tasks: What to evaluate; each goes to the pool whose ``target`` is its ``hardware``
            (both are the plan's normalised target).
        pools: Worker pools (see :func:`sweep.cluster.connect.pools_for`).
        spec: How workers start their sandboxes.
        run_id: Stamped on every trace.
        on_traces: Called with the traces of the calls that finished since the last time, as
            soon as the loop has them (write them there; one call's traces are together, in
            the order they ran).
        options: Loop knobs.
        on_worker: Called when a worker becomes ready.
        on_tick: Called at least every half second (progress output while nothing finishes).
        ray_api: The ``ray`` module (default), or a stand-in that simulates a cluster.
        estimated_s: Seconds each task is expected to take, by task id (``_order``), or a
            function giving them, called once the workers are asked for and before the first
            task is sent (a warm worker's claim is a round trip or two: the caller reads the
            estimates, and opens its store, meanwhile).
        workers: Where workers come from and go (new actors, killed at the end, by default).

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
    loop = _Loop(
        pools, spec, run_id, on_traces, options or SchedulerOptions(), on_worker, on_tick, ray_api, workers
    )
    try:
        estimated = estimated_s() if callable(estimated_s) else estimated_s
    except BaseException:
        loop.shutdown()  # the workers it asked for: released, or stopped (run's own end)
        raise
    return loop.run(longest_first(tasks, estimated or {}))
