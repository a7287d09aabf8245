"""Where the driver loop gets its workers and where they go after: a :class:`WorkerSource`.

The loop (``scheduler``) asks its source to :meth:`~WorkerSource.start` a worker for a pool,
to :meth:`~WorkerSource.stop` one that died or broke (never to be used again), and at its
end to :meth:`~WorkerSource.finish` the live ones. Two sources:

- :class:`FreshWorkers`: new actors for this launch, killed at its end (an embedded Ray, a
  Ray initialised by the caller, ``keep_workers: false``);
- :class:`~sweep.cluster.warm.WarmWorkers`: warm workers of an existing cluster, reused
  when they match and kept after the launch.

What :meth:`~WorkerSource.start` returns is what the loop calls: ``handle.ready.remote()``
and ``handle.evaluate_batch.remote(envelopes)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sweep.cluster._worker_actor import SweepWorker, actor_class
from sweep.cluster.connect import Pool
from sweep.sandbox.supervisor import SandboxSpec

if TYPE_CHECKING:
    from sweep.cluster.zygote_offers import ZygoteOffers

__all__ = ["FreshWorkers", "Started", "WorkerSource"]


@dataclass(frozen=True)
class Started:
    """A worker for the loop: ``handle`` has ``ready`` and ``evaluate_batch`` to call;
    ``reused``: a warm worker that was already running (its sandbox up)."""

    handle: Any
    reused: bool = False


class WorkerSource(Protocol):
    """Gives the driver loop its workers and takes them back (see the module docstring)."""

    def start(self, pool: Pool, spec: SandboxSpec) -> Started:
        """A worker for ``pool`` whose sandboxes follow ``spec`` (device kind resolved)."""
        ...

    def stop(self, handle: Any) -> None:
        """``handle``'s worker died or broke: end it; it is never used again."""
        ...

    def finish(self, workers: Sequence[tuple[Any, bool]]) -> None:
        """The loop ended; ``workers``: the live ones, and whether each became ready."""
        ...


class FreshWorkers:
    """New actors for one launch, killed when it ends (Ray must be initialised).

    Args:
        run_id: Stamped on every trace.
        ray_api: The ``ray`` module (default), or a stand-in that simulates a cluster.
        offers: Zygotes the driver of an embedded launch started, one offered to each new
            worker while they last (``zygote_offers``).
    """

    def __init__(self, run_id: str, ray_api: Any | None = None, offers: ZygoteOffers | None = None) -> None:
        if ray_api is None:
            import ray

            self._ray: Any = ray
            self._cls: Any = actor_class()
        else:  # a stand-in that simulates a cluster (bench/scheduler_sim.py)
            self._ray = ray_api
            self._cls = ray_api.remote(SweepWorker)
        self._run_id = run_id
        self._offers = offers

    def start(self, pool: Pool, spec: SandboxSpec) -> Started:
        """A new actor with ``pool``'s Ray options (and a zygote offered to it, if any left)."""
        actor = self._cls.options(**pool.options())
        offer = self._offers.take(pool) if self._offers is not None else None
        if offer is None:
            return Started(actor.remote(spec, self._run_id))
        return Started(actor.remote(spec, self._run_id, None, offer))

    def stop(self, handle: Any) -> None:
        """Kill it (it may be gone already)."""
        with contextlib.suppress(Exception):
            self._ray.kill(handle)

    def finish(self, workers: Sequence[tuple[Any, bool]]) -> None:
        """Kill them all."""
        for handle, _ in workers:
            self.stop(handle)
