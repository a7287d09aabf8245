"""The driver loop's knobs and counters (``scheduler``), in a module of their own."""

from __future__ import annotations

from dataclasses import dataclass, field

from sweep.cluster._worker_actor import WorkerInfo

__all__ = ["SchedulerOptions", "SchedulerStats"]


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
        max_calls_per_s: Most calls a second, all workers together (calls grow to stay under).
    """

    depth: int = 2
    max_attempts: int = 3
    stall_timeout_s: float = 420.0
    replacements_per_worker: int = 2
    batch_target_s: float = 0.25
    max_batch: int = 32
    max_calls_per_s: float = 1000.0


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
    workers_reused: int = 0
    workers_died: int = 0
    workers: list[WorkerInfo] = field(default_factory=list)
    first_ready_s: float | None = None
    loop_s: float = 0.0

    @property
    def steady_s(self) -> float:
        """Seconds from the first worker being ready to the last trace."""
        return self.loop_s - (self.first_ready_s or 0.0)
