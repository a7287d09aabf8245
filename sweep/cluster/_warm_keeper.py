"""The warm side of a worker: its lease, what it was started from, its idle clock.

One :class:`WarmKeeper` per warm :class:`~sweep.cluster._worker_actor.SweepWorker`. Its
methods are called from two threads of the actor: the control methods (claim, renew,
release, describe), which answer at once even while a call evaluates, and the evaluating
thread (:meth:`begin` and :meth:`end` around each call); a lock keeps the lease and the
busy state consistent between them. No Ray here: the actor does the Ray calls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sweep.cluster._fingerprint import WorkerEnv, code_digest, env_changes, worker_env
from sweep.cluster._lease import Claim, Lease, LeaseLost, Wanted, WarmState

__all__ = ["Place", "WarmKeeper"]


@dataclass(frozen=True)
class Place:
    """Where a warm worker runs (its name in the warm namespace, its node and GPU)."""

    name: str
    node_id: str
    gpu_id: str | None
    pid: int
    hostname: str


class WarmKeeper:
    """Lease, digests and idle clock of one warm worker.

    Args:
        wanted: What the launch that starts it asked (it holds the lease at once).
        backend: The sandbox's backend module (part of the code digest).
        place: Where it runs.
        clock: Seconds, monotonic (injected by tests).
    """

    def __init__(
        self,
        wanted: Wanted,
        backend: str,
        place: Place,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._backend = backend
        self.place = place
        self.lease = Lease(clock)
        self.lease.take(wanted.owner, wanted.lease_s)
        self._lease_s = wanted.lease_s
        self.idle_timeout_s = wanted.idle_timeout_s
        self.pool = wanted.pool
        self.key = wanted.key
        self.code = code_digest(backend)
        self.env: WorkerEnv = worker_env()
        self.started_at = time.time()
        self.busy_since: float | None = None
        self.closing = False
        self.launches = 1
        self.tasks = 0

    # -- control thread -------------------------------------------------------------------

    def changed(self) -> tuple[str, ...]:
        """What changed under this worker since it started (its code or environment)."""
        out = []
        now = code_digest(self._backend)
        if now != self.code:
            out.append(f"its code changed on disk since it started ({self.code} -> {now})")
        out.extend(env_changes(self.env, worker_env()))
        return tuple(out)

    def describe(self, changed: tuple[str, ...] | None = None) -> WarmState:
        """The worker as ``sweep workers`` lists it."""
        if changed is None:
            changed = self.changed()
        with self._lock:
            now = self._clock()
            busy = None if self.busy_since is None else now - self.busy_since
            return WarmState(
                name=self.place.name,
                node_id=self.place.node_id,
                gpu_id=self.place.gpu_id,
                pid=self.place.pid,
                hostname=self.place.hostname,
                started_at=self.started_at,
                backend=self._backend,
                pool=self.pool,
                key=self.key,
                code=self.code,
                owner=self.lease.holder(),
                lease_left_s=self.lease.left(),
                idle_s=None if busy is not None else self.lease.idle_for(),
                busy_s=busy,
                idle_timeout_s=self.idle_timeout_s,
                launches=self.launches,
                tasks=self.tasks,
                changed=changed,
            )

    def claim(self, wanted: Wanted) -> Claim:
        """Lease this worker to ``wanted.owner`` unless another run holds it or it is still
        running a call of a run that ended; say whether it may serve that launch."""
        changed = self.changed()  # reads files: outside the lock
        with self._lock:
            refused = None
            holder = self.lease.holder()
            if self.closing:
                refused = "it is exiting (idle timeout)"
            elif holder is not None and holder != wanted.owner:
                refused = f"leased by run {holder}"
            elif self.busy_since is not None and self.lease.owner != wanted.owner:
                refused = f"still running a call of run {self.lease.owner}, whose lease ended"
            else:
                if self.lease.owner != wanted.owner:
                    self.launches += 1
                self.lease.take(wanted.owner, wanted.lease_s)
                self._lease_s = wanted.lease_s
                self.idle_timeout_s = wanted.idle_timeout_s
        state = self.describe(changed)
        if refused is not None:
            return Claim(granted=False, state=state, refused=refused)
        stale = list(changed)
        if wanted.pool != self.pool:
            stale.append(f"it serves another pool ({self.pool}, not {wanted.pool})")
        elif wanted.key != self.key:
            stale.append("it was started with another sandbox spec or runtime environment")
        if wanted.code != self.code:
            stale.append(f"its code ({self.code}) is not the launching checkout's ({wanted.code})")
        return Claim(granted=True, state=state, stale=tuple(stale))

    def renew(self, owner: str) -> bool:
        """Extend ``owner``'s lease; ``False`` when another run holds it now."""
        with self._lock:
            return self.lease.renew(owner, self._lease_s)

    def release(self, owner: str) -> bool:
        """End ``owner``'s lease: the idle clock starts."""
        with self._lock:
            return self.lease.release(owner)

    def should_exit(self) -> bool:
        """Whether the worker has been free and idle for its idle timeout; once ``True`` it
        refuses every claim (it is going away)."""
        with self._lock:
            if self.closing or self.busy_since is not None:
                return self.closing
            idle = self.lease.idle_for()
            if idle is not None and idle >= self.idle_timeout_s:
                self.closing = True
            return self.closing

    # -- evaluating thread ----------------------------------------------------------------

    def begin(self, owner: str | None) -> None:
        """A call of ``owner`` starts.

        Raises:
            LeaseLost: Another run holds this worker (or nobody does): the call is refused.
        """
        with self._lock:
            if owner is None or not self.lease.renew(owner, self._lease_s):
                raise LeaseLost(
                    f"warm worker {self.place.name} is not leased to run {owner} "
                    f"(holder: {self.lease.holder() or 'none'}); the call was refused"
                )
            self.busy_since = self._clock()

    def end(self, tasks: int) -> None:
        """The running call ended after ``tasks`` evaluations. The lease is not renewed: the
        caller may have died meanwhile (its renewals, and its next call, say it lives)."""
        with self._lock:
            self.busy_since = None
            self.tasks += tasks
