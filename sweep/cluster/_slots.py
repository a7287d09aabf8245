"""What the driver loop visits each turn, kept up to date as workers start, finish calls and die,
so that a turn costs what changed in it, not the number of workers.

With a thousand workers, the loop's turn used to walk every worker (to fill free slots, to
count the live ones for each call's share and for the stall check) and to hand ``ray.wait``
every reference in flight (``depth`` per worker). Here:

- the ready workers with a free slot wait in a queue per pool target (``hungry_worker``), so
  filling visits only those, one call each, round-robin; until every worker of a target has
  started once (or died), the ready ones get one call in flight, not ``depth``: with the
  longest tasks first, the first worker up would otherwise queue the two longest one after
  the other (measured: a sweep 1.5x longer than in plan order). Workers that replace lost
  ones later do not hold the others back (one may wait for a GPU that never comes);
- live and ready workers are counted per target (``live``, ``ready``), so a call's share of the
  queue and the stall check are O(1);
- only the oldest call in flight of each worker is waited on (``watch``), with the ready
  calls of workers still starting: an actor runs its calls in submission order, so the
  oldest one finishes first (a later one that finished early is seen right after it);
  ``ray.wait`` gets one reference per worker, not ``depth``;
- the calls in flight are counted (``calls``), so "anything left?" is O(1);
- once a call is back, a turn gathers what else finishes for a moment (``gather_s``), in
  proportion to the references waited on: a wait costs ~0.2-0.5 us per reference in Ray
  (measured on the CPU bench machine), so the turns of a thousand workers are ~10 ms apart
  and waiting costs a few percent of a core at any worker count. Once all are up, no GPU
  waits for it: each has its next call queued (the loop's ``depth``).
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any, Generic, Protocol, TypeVar

from sweep.cluster.connect import Pool

__all__ = ["Slots"]

_GATHER_S_PER_REF = 10e-6
_GATHER_MAX_S = 0.02


class _WorkerLike(Protocol):
    pool: Pool
    ready_ref: Any | None
    inflight: dict[Any, Any]


W = TypeVar("W", bound=_WorkerLike)


class Slots(Generic[W]):
    """Workers with free slots, live and ready counts, and the refs worth waiting on."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.watch: dict[Any, None] = {}  # an ordered set: ready refs and each worker's oldest call
        # Ready workers with a free slot, first come first served; an entry whose worker is
        # no longer in ``_hungry`` (dead) is dropped when it comes to the front.
        self._queues: dict[str, deque[W]] = {}
        self._hungry: set[W] = set()
        self._ready: dict[str, dict[W, None]] = {}  # per target, the live ready workers
        self._up: set[str] = set()  # targets whose first workers have all started (or died)
        self.live: Counter[str] = Counter()
        self.ready: Counter[str] = Counter()
        self.calls = 0

    def gather_s(self) -> float:
        """How long to wait for more calls once one is back (see the module docstring)."""
        n = len(self.watch)
        return min(_GATHER_MAX_S, n * _GATHER_S_PER_REF) if n > 1 else 0.0

    def started(self, w: W) -> None:
        """``w`` was created; its ready call is in flight."""
        self.live[w.pool.target] += 1
        if w.ready_ref is not None:
            self.watch[w.ready_ref] = None

    def seen(self, ref: Any) -> None:
        """``ref`` came back from ``ray.wait``: no longer waited on."""
        self.watch.pop(ref, None)

    def _depth(self, target: str) -> int:
        return self.depth if target in self._up else 1

    def _offer(self, w: W) -> None:
        if w not in self._hungry and len(w.inflight) < self._depth(w.pool.target):
            self._hungry.add(w)
            self._queues.setdefault(w.pool.target, deque()).append(w)

    def _all_ready(self, target: str) -> None:
        """The last of the first workers of ``target`` is up (or gone): all may take ``depth``."""
        if target not in self._up and self.ready[target] >= self.live[target]:
            self._up.add(target)
            for w in self._ready.get(target, {}):
                self._offer(w)

    def hungry_worker(self, target: str) -> W | None:
        """The first ready worker of ``target`` with a free slot, taken out of the queue (give
        it one call: :meth:`submitted` puts it back at the end while it has a free slot), or
        ``None``. So slots fill round-robin: every worker's first call before anyone's second
        (longest first, the two longest tasks do not queue on one GPU, one after the other)."""
        queue = self._queues.get(target)
        while queue:
            w = queue.popleft()
            if w in self._hungry:
                self._hungry.discard(w)
                if len(w.inflight) < self._depth(target):
                    return w
        return None

    def offer(self, w: W) -> None:
        """``w`` was taken by :meth:`hungry_worker` but given no call: it waits again."""
        self._offer(w)

    def became_ready(self, w: W) -> None:
        """``w`` answered its ready call: it can take calls."""
        self.ready[w.pool.target] += 1
        self._ready.setdefault(w.pool.target, {})[w] = None
        self._offer(w)
        self._all_ready(w.pool.target)

    def submitted(self, w: W, ref: Any) -> None:
        """A call ``ref`` went to ``w`` (already in ``w.inflight``)."""
        self.calls += 1
        if len(w.inflight) == 1:  # the only one: it is the oldest
            self.watch[ref] = None
        self._offer(w)  # at the end of the queue, while it has a free slot

    def finished(self, w: W) -> None:
        """One of ``w``'s calls returned and left ``w.inflight``: wait on the next oldest."""
        self.calls -= 1
        head = next(iter(w.inflight), None)
        if head is not None:
            self.watch[head] = None
        self._offer(w)

    def retired(self, w: W, refs: list[Any], was_ready: bool) -> None:
        """``w`` is dead; ``refs`` were its calls in flight."""
        target = w.pool.target
        self.live[target] -= 1
        if was_ready:
            self.ready[target] -= 1
        self._ready.get(target, {}).pop(w, None)
        self._hungry.discard(w)
        self.calls -= len(refs)
        for ref in refs:
            self.watch.pop(ref, None)
        if w.ready_ref is not None:
            self.watch.pop(w.ready_ref, None)
        self._all_ready(target)  # a worker that died starting held the others at one call
