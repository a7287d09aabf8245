"""One function over many items, each call a Ray task of its own on one GPU of the cluster.

For work that is not an evaluation (``sweep profile``): the caller's function runs in a fresh
Ray worker process per item (``num_gpus=1``, ``max_calls=1``), at most as many at once as the
cluster has GPUs, and the results come back in completion order (``ray.wait``). A call whose
worker dies (killed, its node lost) or that runs past its deadline (then cancelled with
``ray.cancel(force=True)``) gives a :class:`GpuTaskFailure` instead of a result; an exception
the function raises is raised again in the driver as it was raised. Where to connect is as for
a launch (:func:`sweep.cluster.connect.connect`: an address, or an embedded local Ray).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sweep.cluster.connect import connect
from sweep.config import SweepConfig
from sweep.errors import ClusterError, clip

__all__ = ["GpuTaskFailure", "NoGpuError", "run_each_on_a_gpu"]

T = TypeVar("T")
R = TypeVar("R")

_TICK_S = 0.5


class NoGpuError(ClusterError):
    """The cluster has no GPU to run the tasks on."""


@dataclass(frozen=True)
class GpuTaskFailure:
    """Why the call for one item gave no result (its worker died, or its deadline passed)."""

    message: str


def _failure(error: BaseException) -> GpuTaskFailure:
    return GpuTaskFailure(f"its Ray worker failed ({type(error).__name__}): {clip(str(error), 300)}")


def run_each_on_a_gpu(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    config: SweepConfig,
    address: str | None,
    timeout_s: float,
) -> Iterator[tuple[int, R | GpuTaskFailure]]:
    """``fn(item)`` for every item, each in a Ray task with one GPU; yields ``(index, result)``
    in completion order. ``fn`` must be importable by the workers (a module-level function).

    Raises:
        NoGpuError: No alive node of the cluster has a GPU.
        ClusterError: Ray cannot be reached or started.
        Exception: What ``fn`` raised on a worker.
    """
    import ray
    from ray.exceptions import GetTimeoutError, RayError, RayTaskError

    conn = connect(config, address)
    inflight: dict[Any, tuple[int, float]] = {}
    try:
        gpus = int(sum(n.gpus for n in conn.info.nodes))
        if gpus < 1:
            raise NoGpuError("the cluster has no GPU")
        remote: Any = ray.remote(num_gpus=1, num_cpus=0, max_calls=1, max_retries=0)(fn)
        pending = deque(enumerate(items))
        while pending or inflight:
            while pending and len(inflight) < gpus:
                index, item = pending.popleft()
                inflight[remote.remote(item)] = (index, time.monotonic() + timeout_s)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=_TICK_S)
            for ref in ready:
                index, _deadline = inflight.pop(ref)
                try:
                    value = ray.get(ref)
                except RayTaskError as e:
                    cause = getattr(e, "cause", None)
                    if isinstance(cause, Exception) and not isinstance(cause, RayError):
                        raise cause from None
                    yield index, _failure(e)
                    continue
                except (RayError, GetTimeoutError) as e:
                    yield index, _failure(e)
                    continue
                yield index, value
            now = time.monotonic()
            for ref, (index, deadline) in list(inflight.items()):
                if now > deadline:
                    del inflight[ref]
                    ray.cancel(ref, force=True)
                    yield index, GpuTaskFailure(f"cancelled after its deadline of {timeout_s:g} s")
    finally:
        for ref in inflight:
            ray.cancel(ref, force=True)
        conn.close()
