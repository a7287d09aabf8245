"""A simulated Ray for ``scheduler_sim.py``: what the driver loop uses of ``ray`` (``remote``,
actor handles with ``.options(...).remote(...)``, ``method.remote(...)``, ``wait``, ``get``,
``kill``), with simulated GPU workers on a virtual clock.

The clock is the driver process's own time: its CPU time (``time.process_time``: every thread
of it, the store writer's included, as if the driver had one core for all of them), plus the
seconds the driver's thread spends blocked in ``os.fsync`` (a JSONL log's group commit, when
the driver's thread waits for it: :meth:`Clock.blocking` wraps it), plus the stretches it skips: when the loop waits and nothing
is due, the clock jumps to the next completion instead of sleeping. So the driver's real cost
is all there is between two jumps, and when the driver cannot keep up, completions pile up,
calls reach workers late, and the workers idle, in virtual time as they would in real time.
Other processes on the machine do not move this clock (wall time would: the bench machine is
shared), and real Ray's own driver-side cost is not in it (see ``sim_cpu_s``).

Real Ray's own CPU on the driver per call (``remote()``: serialising the envelopes and
submitting; ``get()``: fetching and deserialising the results) is not in a stand-in; when
``call_cpu_s`` is given (measured with real Ray in the same run: ``scheduler_sim.py``
``measure_ray``), each ``remote`` and ``get`` of an evaluation call burns that much CPU, so the
loop pays it as it would with Ray.

A simulated worker runs its calls one after the other, in the order they were submitted (as a
Ray actor without concurrency does): a call starts when it has arrived (``rpc_s`` after it was
submitted) and the worker is free, and takes ``call_overhead_s`` plus the drawn durations of its
tasks. It becomes ready ``ready_s`` after it is created (the sandbox start). ``kill_one`` kills
a worker as a lost node would: its calls in flight fail with an actor error.

The simulated Ray's own work (deciding which refs are ready, building each task's trace JSON
from a template, the ``Done`` records) is CPU on the driver that real Ray spends in its C++
core worker and the remote worker instead; it is measured (``sim_cpu_s``, thread CPU time of
the driver's thread inside these methods) so the table can show it apart from the loop's.
"""

from __future__ import annotations

import heapq
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sweep.cluster import WorkerInfo
from sweep.sandbox import Done, Envelope
from sweep.sandbox.failure_traces import now_iso
from sweep.schema import Provenance

__all__ = ["Clock", "SimRay", "TaskPlan"]


class Clock:
    """Virtual seconds: the process's CPU time since it started, plus blocked and skipped time."""

    def __init__(self) -> None:
        self.t0 = time.process_time()
        self.skipped = 0.0
        self.blocked = 0.0

    def now(self) -> float:
        """The virtual time."""
        return time.process_time() - self.t0 + self.blocked + self.skipped

    def blocking(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn``, with the wall time it spends off the CPU added to the clock when the driver's
        thread (the one that made the clock) calls it: another thread blocked (a store writer's
        syncer) holds up nothing of the loop."""
        driver = threading.get_ident()

        def timed(*args: Any) -> Any:
            if threading.get_ident() != driver:
                return fn(*args)
            w, c = time.monotonic(), time.thread_time()
            try:
                return fn(*args)
            finally:
                self.blocked += max(0.0, (time.monotonic() - w) - (time.thread_time() - c))

        return timed

    def skip_to(self, t: float) -> None:
        """Jump forward to ``t`` (nothing happens in between); never backwards."""
        gap = t - self.now()
        if gap > 0:
            self.skipped += gap


@dataclass(frozen=True)
class TaskPlan:
    """What the simulated workers need to know of a task: how long it takes, and the JSON of
    its trace (built from parts: ``prefix + workload + middle + evaluation + "}"``)."""

    duration_s: float
    prefix: bytes
    workload: bytes


class _Ref:
    __slots__ = ("actor", "done_at", "error", "kind", "payload", "start")

    def __init__(self, actor: _Actor, kind: str, done_at: float, payload: Any = None, start: float = 0.0):
        self.actor = actor
        self.kind = kind
        self.done_at = done_at
        self.payload = payload
        self.start = start
        self.error: BaseException | None = None


class _Method:
    __slots__ = ("actor", "name")

    def __init__(self, actor: _Actor, name: str) -> None:
        self.actor = actor
        self.name = name

    def remote(self, *args: Any, ahead: Any = None) -> _Ref:  # ``ahead``: for a compile pool, none here
        return self.actor.submit(self.name, args)


@dataclass(eq=False)
class _Actor:
    sim: SimRay
    index: int
    created: float
    ready_at: float
    free_at: float
    dead: bool = False
    died_at: float | None = None
    busy_s: float = 0.0
    pending: list[_Ref] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ready = _Method(self, "ready")
        self.evaluate_batch = _Method(self, "evaluate_batch")
        self.stamp = Provenance(
            run_id=self.sim.run_id, node_id=f"node-{self.index // 8:04d}", gpu_id=str(self.index % 8)
        )

    def submit(self, name: str, args: tuple[Any, ...]) -> _Ref:
        t = time.thread_time()
        sim = self.sim
        now = sim.clock.now()
        if name == "ready":
            ref = _Ref(self, "ready", self.ready_at)
        else:
            sim.spun_s += _spin(sim.call_cpu_s[0])
            envelopes: list[Envelope] = args[0]
            start = max(now + sim.rpc_s, self.free_at)
            work = sum(sim.tasks[e.task_id].duration_s for e in envelopes)
            self.free_at = start + sim.call_overhead_s + work
            ref = _Ref(self, "batch", self.free_at, envelopes, start)
        if self.dead:
            ref.error, ref.done_at = sim.died_error(), now
        else:
            self.pending.append(ref)
        sim.sim_cpu_s += time.thread_time() - t
        return ref

    def die(self, now: float) -> None:
        self.dead = True
        self.died_at = now
        for ref in self.pending:
            if ref.done_at > now:
                ref.error, ref.done_at = self.sim.died_error(), now
        self.pending.clear()


class _ActorClass:
    def __init__(self, sim: SimRay) -> None:
        self.sim = sim

    def options(self, **_opts: Any) -> _ActorClass:
        return self

    def remote(self, *_args: Any) -> _Actor:
        sim = self.sim
        now = sim.clock.now()
        ready_at = now + sim.rng.uniform(*sim.ready_s)
        actor = _Actor(sim, len(sim.actors), now, ready_at, ready_at)
        sim.actors.append(actor)
        return actor


class SimRay:
    """The simulated ``ray`` module (see the module docstring).

    Args:
        tasks: By task id, each task's duration and trace parts.
        evaluation_json: The JSON of the ``evaluation`` every trace carries.
        run_id: Stamped on the traces.
        rpc_s: Seconds between a call's submission and its arrival at the worker.
        call_overhead_s: Seconds a worker spends per call besides evaluating.
        ready_s: A worker's start takes a time drawn uniformly from this range.
        call_cpu_s: Driver CPU that real Ray spends per evaluation call in ``remote()`` and
            in ``get()``, burnt here (see the module docstring).
        seed: Of the draws.
        compile_workers: Each worker's compile pool, as its ``WorkerInfo`` says (the driver
            then reserves tasks for it; nothing is compiled here).
    """

    def __init__(
        self,
        tasks: dict[str, TaskPlan],
        evaluation_json: bytes,
        run_id: str,
        *,
        rpc_s: float = 0.0005,
        call_overhead_s: float = 0.002,
        ready_s: tuple[float, float] = (1.0, 3.0),
        call_cpu_s: tuple[float, float] = (0.0, 0.0),
        seed: int = 0,
        compile_workers: int = 0,
    ) -> None:
        self.call_cpu_s = call_cpu_s
        self.compile_workers = compile_workers
        self.clock = Clock()
        self.tasks = tasks
        self.evaluation_tail = b',"evaluation":' + evaluation_json + b"}"
        self.run_id = run_id
        self.rpc_s = rpc_s
        self.call_overhead_s = call_overhead_s
        self.ready_s = ready_s
        self.rng = random.Random(seed)
        self.actors: list[_Actor] = []
        self.sim_cpu_s = 0.0
        self.spun_s = 0.0  # of it, real Ray's per-call cost burnt (``call_cpu_s``)
        self.waits = 0
        self.refs_waited = 0
        self.killed = 0
        self.on_get: Callable[[float], None] | None = None

    # -- the ray surface -----------------------------------------------------------------

    def remote(self, _cls: type) -> _ActorClass:
        return _ActorClass(self)

    def wait(
        self, refs: list[Any], *, num_returns: int = 1, timeout: float | None = None
    ) -> tuple[list[Any], list[Any]]:
        t = time.thread_time()
        self.waits += 1
        self.refs_waited += len(refs)
        now = self.clock.now()
        ready = [r for r in refs if r.done_at <= now]
        if len(ready) < num_returns and timeout != 0:
            # Block until num_returns are ready (the k-th earliest completion) or the timeout.
            k = num_returns - len(ready)
            due = [r.done_at for r in refs if r.done_at > now]
            if k == 1:
                at = min(due, default=math.inf)
            elif k == len(due):
                at = max(due)
            else:
                at = heapq.nsmallest(k, due)[-1] if k < len(due) else math.inf
            limit = now + (timeout if timeout is not None else math.inf)
            self.clock.skip_to(min(at, limit))
            now = self.clock.now()
            ready = [r for r in refs if r.done_at <= now]
        ready = ready[:num_returns]
        taken = {id(r) for r in ready}
        rest = [r for r in refs if id(r) not in taken]
        self.sim_cpu_s += time.thread_time() - t
        return ready, rest

    def get(self, ref: _Ref) -> Any:
        t = time.thread_time()
        try:
            if ref.error is not None:
                raise ref.error
            actor = ref.actor
            if ref.kind == "ready":
                return WorkerInfo(
                    node_id=actor.stamp.node_id or "",
                    gpu_id=actor.stamp.gpu_id,
                    pid=100_000 + actor.index,
                    hostname=f"sim-{actor.index // 8}",
                    device="cuda",
                    device_name="simulated GPU",
                    sandbox_start_s=actor.ready_at - actor.created,
                    compile_workers=self.compile_workers,
                )
            if ref in actor.pending:
                actor.pending.remove(ref)
            self.spun_s += _spin(self.call_cpu_s[1])
            envelopes: list[Envelope] = ref.payload
            stamp = actor.stamp.model_copy(
                update={"started_at": _iso(ref.start), "finished_at": _iso(ref.done_at), "attempt": 0}
            )
            out, busy = [], 0.0
            tail = self.evaluation_tail
            for env in envelopes:
                plan = self.tasks[env.task_id]
                busy += plan.duration_s
                out.append(Done(plan.prefix + plan.workload + tail, stamp))
            actor.busy_s += busy
            if self.on_get is not None:
                self.on_get(ref.done_at)
            return out, busy + self.call_overhead_s
        finally:
            self.sim_cpu_s += time.thread_time() - t

    def kill(self, actor: _Actor) -> None:
        if not actor.dead:
            actor.die(self.clock.now())

    # -- faults and bookkeeping ----------------------------------------------------------

    def died_error(self) -> BaseException:
        """What ``get`` raises for a call of a dead worker (as Ray's ActorDiedError says it)."""
        return RuntimeError(
            "ActorDiedError: The actor died unexpectedly before finishing this task (simulated)"
        )

    def kill_one(self) -> bool:
        """Kill a random live, ready worker that has calls in flight, as a lost node would."""
        now = self.clock.now()
        live = [a for a in self.actors if not a.dead and a.ready_at <= now and a.pending]
        if not live:
            return False
        self.rng.choice(live).die(now)
        self.killed += 1
        return True


def _spin(seconds: float) -> float:
    """Burn ``seconds`` of this thread's CPU (Ray's driver-side work, as measured); how long it did."""
    if seconds <= 0:
        return 0.0
    start = time.thread_time()
    while time.thread_time() < start + seconds:
        pass
    return time.thread_time() - start


_EPOCH = 1_800_000_000.0  # virtual second 0, as a Unix time (the traces need timestamps)


def _iso(t: float) -> str:
    return now_iso(_EPOCH + t)
