"""The lease of a warm worker, and the records a launch and a warm worker exchange.

A warm worker (see :mod:`sweep.cluster.warm`) outlives the launch that started it, so two
launches could reach it at once. The :class:`Lease` says which one may use it: a launch
*takes* it (refused while another run holds it), *renews* it while it runs (a thread of the
driver, every few seconds), and *releases* it at its end. A lease that is not renewed
expires: a driver that died (SIGKILL, a lost machine) never releases, and Ray keeps a
detached actor alive after its driver, so the worker becomes free again after
``lease_s`` seconds. Until another run takes it, the run whose lease expired may go on
using it (nothing else touched it meanwhile).

Pure: the clock is injected, and nothing here imports Ray.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Claim", "Lease", "LeaseLost", "Wanted", "WarmState"]


class LeaseLost(RuntimeError):
    """A call reached a warm worker that another run holds now (its own lease expired)."""


@dataclass(frozen=True)
class Wanted:
    """What a launch asks of a warm worker, at its start and at each claim.

    Attributes:
        owner: The run id of the launch (the lease's holder).
        pool: The pool's signature (hardware target and Ray options): which launches'
            pools the worker could serve at all.
        key: Digest of what must be equal for a worker to be reused: the sandbox spec, the
            pool's Ray options and the runtime environment (``_fingerprint.launch_key``).
        code: Digest of the launching driver's ``sweep`` package and backend module.
        lease_s: Seconds the lease lasts unless renewed.
        idle_timeout_s: Seconds the worker waits unleased before it exits by itself.
    """

    owner: str
    pool: str
    key: str
    code: str
    lease_s: float
    idle_timeout_s: float


@dataclass(frozen=True)
class WarmState:
    """A warm worker as it describes itself (what ``sweep workers`` lists).

    ``started_at`` is wall-clock time (epoch seconds), the durations are its own clock's.
    ``changed`` says what changed under it since it started (its code or packages on
    disk, its Python executable): such a worker is stale whoever asks.
    """

    name: str
    node_id: str
    gpu_id: str | None
    pid: int
    hostname: str
    started_at: float
    backend: str
    pool: str
    key: str
    code: str
    owner: str | None
    lease_left_s: float | None
    idle_s: float | None
    busy_s: float | None
    idle_timeout_s: float
    launches: int
    tasks: int
    changed: tuple[str, ...]


@dataclass(frozen=True)
class Claim:
    """A warm worker's answer to a claim.

    ``granted``: the lease is the claimant's now (``refused`` says why not otherwise).
    ``stale``: why this worker may not serve the claimant (its key or code differ, or
    something changed under it); a granted stale worker is the claimant's to stop, and
    nobody else can take it meanwhile.
    """

    granted: bool
    state: WarmState
    refused: str | None = None
    stale: tuple[str, ...] = ()


class Lease:
    """Who holds a worker, until when, and since when it has been free.

    Args:
        clock: Seconds, monotonic (injected by tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.owner: str | None = None  # the last holder, kept after expiry (see ``renew``)
        self.until = 0.0
        self._free_since = clock()

    def holder(self) -> str | None:
        """The run holding the lease now, or ``None`` (free, or expired)."""
        if self.owner is not None and self._clock() < self.until:
            return self.owner
        return None

    def left(self) -> float | None:
        """Seconds until the lease expires unless renewed, or ``None`` when it is free."""
        return self.until - self._clock() if self.holder() is not None else None

    def take(self, owner: str, seconds: float) -> str | None:
        """Give the lease to ``owner`` for ``seconds``; return the run that holds it instead
        (and change nothing), or ``None`` when ``owner`` has it now."""
        holder = self.holder()
        if holder is not None and holder != owner:
            return holder
        self.owner = owner
        self.until = self._clock() + seconds
        return None

    def renew(self, owner: str, seconds: float) -> bool:
        """Extend ``owner``'s lease; ``False`` when another run took it. An expired lease
        that nobody took is still ``owner``'s: it renews."""
        if self.owner != owner:
            return False
        self.until = self._clock() + seconds
        return True

    def release(self, owner: str) -> bool:
        """Free the lease if ``owner`` holds it (or held it last); ``False`` otherwise."""
        if self.owner != owner:
            return False
        self.owner = None
        self._free_since = self._clock()
        return True

    def idle_for(self) -> float | None:
        """Seconds the worker has been free (since its release, or since its lease expired),
        or ``None`` while it is held."""
        if self.holder() is not None:
            return None
        since = self._free_since if self.owner is None else max(self._free_since, self.until)
        return max(0.0, self._clock() - since)
