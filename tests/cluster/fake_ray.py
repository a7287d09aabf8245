"""A stand-in for the ``ray`` module that the driver loop (``run_tasks(..., ray_api=...)``)
can drive without Ray: actors run their calls one after the other on a virtual clock, and a
task whose solution is named ``kills_worker`` kills the actor that runs it (its calls fail
with an actor error, as when a node is lost).

Each task takes ``durations[solution name]`` virtual seconds (0.1 by default). ``wait`` jumps
the clock to the next completion when nothing is ready, so a test runs in milliseconds and
is deterministic: no thread, no real time.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sweep.cluster._worker_actor import WorkerInfo
from sweep.sandbox import Done, Envelope
from sweep.schema import Correctness, Environment, Evaluation, Performance, Provenance, Status, Trace


@dataclass(eq=False)
class Ref:
    actor: Actor
    at: float
    value: Any = None
    error: BaseException | None = None


class _Method:
    def __init__(self, actor: Actor, name: str) -> None:
        self.actor, self.name = actor, name

    def remote(self, *args: Any, ahead: list[Envelope] | None = None) -> Ref:
        if ahead is not None:  # tasks reserved for the worker's compile pool
            self.actor.ray.reserved.append((self.actor.index, [e.task_id for e in ahead]))
        return self.actor.call(self.name, args)


@dataclass(eq=False)
class Actor:
    ray: FakeRay
    index: int
    free_at: float = 0.0
    dies_at: float = math.inf  # when it reaches a kills_worker task
    dead: bool = False
    pending: list[Ref] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ready = _Method(self, "ready")
        self.evaluate_batch = _Method(self, "evaluate_batch")

    def call(self, name: str, args: tuple[Any, ...]) -> Ref:
        ray = self.ray
        start = max(ray.now, self.free_at)
        if self.dead or start >= self.dies_at:  # calls behind the fatal one fail with it
            return Ref(self, max(ray.now, min(start, self.dies_at)), error=RuntimeError("ActorDiedError"))
        if name == "ready":
            info = WorkerInfo(
                f"node-{self.index}",
                "0",
                1000 + self.index,
                "host",
                "cpu",
                None,
                0.0,
                compile_workers=ray.compile_workers,
            )
            ref = Ref(self, start, info)
        else:
            envelopes: list[Envelope] = args[0]
            ray.started.append((self.index, [e.task_id for e in envelopes]))
            out, t = [], start
            for env in envelopes:
                task = env.task()
                if task.solution.name == "kills_worker":  # dies when it reaches this task
                    ref = Ref(
                        self, t, error=RuntimeError("ActorDiedError: the actor died (its node was lost)")
                    )
                    self.dies_at = t
                    break
                t += ray.durations.get(task.solution.name, 0.1)
                out.append(Done(_trace(task.definition.name, task.solution.name, env).encode(), self.stamp()))
            else:
                ref = Ref(self, t, (out, t - start))
            self.free_at = ref.at
        self.pending.append(ref)
        if name != "ready":
            ray.max_inflight[self.index] = max(ray.max_inflight[self.index], len(self.pending))
        return ref

    def stamp(self) -> Provenance:
        return Provenance(run_id="r", node_id=f"node-{self.index}", gpu_id="0", worker_pid=1000 + self.index)

    def die(self) -> None:
        self.dead = True
        for ref in self.pending:
            if ref.error is None:
                ref.error = RuntimeError("ActorDiedError: the actor died")
                ref.at = min(ref.at, self.ray.now)


def _trace(definition: str, solution: str, env: Envelope) -> str:
    task = env.task()
    ev = Evaluation(
        status=Status.PASSED,
        environment=Environment(hardware="CPU"),
        timestamp="2026-01-01T00:00:00Z",
        correctness=Correctness(),
        performance=Performance(latency_ms=1.0, reference_latency_ms=1.0, speedup_factor=1.0),
    )
    return Trace(definition=definition, workload=task.workload, solution=solution, evaluation=ev).to_json()


class _ActorClass:
    def __init__(self, ray: FakeRay) -> None:
        self.ray = ray

    def options(self, **_: Any) -> _ActorClass:
        return self

    def remote(self, *_: Any) -> Actor:
        ray, i = self.ray, len(self.ray.actors)
        start = ray.start_s[i] if isinstance(ray.start_s, list) and i < len(ray.start_s) else ray.start_s
        actor = Actor(ray, i, free_at=ray.now + (start if isinstance(start, float) else 1.0))
        self.ray.actors.append(actor)
        return actor


class FakeRay:
    """The stand-in (see the module docstring); ``start_s``: how long a worker takes to start
    (one for all, or one per worker in creation order, 1 s beyond the list); ``started`` lists
    each call's (worker, task ids) in the order the calls were submitted, ``reserved`` the tasks
    sent ahead with them (workers with ``compile_workers``), ``waited`` the number of refs of
    each ``wait``, ``max_inflight`` the most calls each worker had."""

    def __init__(
        self,
        durations: dict[str, float] | None = None,
        start_s: float | list[float] = 1.0,
        compile_workers: int = 0,
    ) -> None:
        self.now = 0.0
        self.compile_workers = compile_workers  # each worker's compile pool, as its WorkerInfo says
        self.reserved: list[tuple[int, list[str]]] = []  # (worker, task ids) sent ahead with a call
        self.durations = durations or {}
        self.start_s = start_s
        self.actors: list[Actor] = []
        self.started: list[tuple[int, list[str]]] = []
        self.waited: list[int] = []
        self.max_inflight: Counter[int] = Counter()

    def remote(self, _cls: type) -> _ActorClass:
        return _ActorClass(self)

    def wait(
        self, refs: list[Any], *, num_returns: int = 1, timeout: float | None = None
    ) -> tuple[list[Any], list[Any]]:
        self.waited.append(len(refs))
        ready = [r for r in refs if r.at <= self.now]
        if len(ready) < num_returns and timeout != 0:
            due = sorted(r.at for r in refs if r.at > self.now)
            need = num_returns - len(ready)
            at = due[need - 1] if len(due) >= need else math.inf
            limit = self.now + (timeout if timeout is not None else math.inf)
            self.now = max(self.now, min(at, limit))
            ready = [r for r in refs if r.at <= self.now]
        ready = ready[:num_returns]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref: Ref) -> Any:
        if ref in ref.actor.pending:
            ref.actor.pending.remove(ref)
        if ref.error is not None:
            raise ref.error
        return ref.value

    def kill(self, actor: Actor) -> None:
        actor.die()
