"""Timing one rank of a distributed call, in lockstep with the other ranks.

Every rank must make the same collective calls in the same order, or the group deadlocks: a
rank cannot stop timing on its own rule as a single-GPU evaluation does (``_stopping``). So the
number of timed calls is agreed first: one untimed call per rank measured, the slowest taken
by all (an all-reduce of the maximum), and ``rep_ms`` of calls at that pace, between
``min_iterations`` and ``max_iterations``, timed by every rank.

Each timed call starts aligned: a barrier (and on a GPU a device synchronisation) before it,
outside the timed window, so one rank's lateness is not counted as another's work. On a GPU a
call's time is the device time between two CUDA events on the current stream (which the
distributed calls of that rank run on, or are joined to); on the CPU the host clock. Each rank
keeps its own samples; the task's latency is the slowest rank's median (the gang's business).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from sweep.schema import EvalSettings, TimingStats

__all__ = ["RankTiming", "agree", "time_lockstep"]


@dataclass(frozen=True)
class RankTiming:
    """One rank's samples (milliseconds, in order) and their summary."""

    samples_ms: list[float]
    stats: TimingStats

    @property
    def median_ms(self) -> float:
        """The rank's median call time."""
        return self.stats.p50_ms


def _flag_device(device: torch.device) -> torch.device:
    # NCCL reduces only device tensors; gloo only host ones.
    return device if dist.get_backend() == "nccl" else torch.device("cpu")


def agree(ok: bool, device: torch.device) -> bool:
    """True only when ``ok`` on every rank (an all-reduce of the minimum): the ranks go on
    together or stop together, never one waiting alone in a collective."""
    flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=_flag_device(device))
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def _slowest(value_ms: float, device: torch.device) -> float:
    t = torch.tensor([value_ms], dtype=torch.float64, device=_flag_device(device))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _align(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _one(call: Callable[[int], object], i: int, device: torch.device) -> float:
    """One call's time in ms, its start aligned with the other ranks' (outside the window)."""
    _align(device)
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        call(i)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    t0 = time.perf_counter()
    call(i)
    return (time.perf_counter() - t0) * 1e3


def time_lockstep(call: Callable[[int], object], settings: EvalSettings, device: torch.device) -> RankTiming:
    """Time ``call(i)`` (``i`` the input set's index) the same number of times on every rank.

    Args:
        call: One call of the timed function on input set ``i % input_sets``.
        settings: ``warmup_ms``, ``rep_ms``, ``min_iterations``, ``max_iterations``.
        device: This rank's device.
    """
    sets = max(1, settings.input_sets)
    first = _slowest(_one(call, 0, device), device)
    per_call = max(first, 1e-3)
    warmup = min(settings.max_iterations, int(settings.warmup_ms / per_call))
    for i in range(warmup):
        _one(call, i % sets, device)
    count = int(settings.rep_ms / per_call)
    count = max(settings.min_iterations, min(settings.max_iterations, count), sets)
    samples = [_one(call, i % sets, device) for i in range(count)]
    return RankTiming(samples, summarize(samples, "cuda_event" if device.type == "cuda" else "host"))


def summarize(samples: list[float], clock: str) -> TimingStats:
    """The distribution of a rank's samples as a trace keeps it."""
    ordered = sorted(samples)
    n = len(ordered)
    mean = statistics.fmean(ordered)
    stdev = statistics.pstdev(ordered) if n > 1 else 0.0
    return TimingStats(
        clock=clock,
        timer="events" if clock == "cuda_event" else "host",
        iterations=n,
        p10_ms=ordered[int(0.1 * (n - 1))],
        p50_ms=statistics.median(ordered),
        p90_ms=ordered[int(0.9 * (n - 1))],
        mean_ms=mean,
        cv=stdev / mean if mean > 0 else 0.0,
        samples=TimingStats.encode_samples(samples),
    )
