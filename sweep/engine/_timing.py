"""Timing a callable: device events with an L2 flush on GPUs, the host clock on CPUs.

Both paths share one shape: warm up for ``warmup_ms`` (at least one call), estimate the
time per call, then run enough timed calls to fill ``rep_ms``, clamped to
``[min_iterations, max_iterations]``. Call ``i`` uses input set ``i % sets`` (rotation,
so a kernel cannot serve every timed call from one cached result). The latency reported
is the median of the per-call samples.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import torch

from sweep.schema import EvalSettings, TimingStats

__all__ = ["FLUSH_MIN_BYTES", "flush_bytes", "stats_of", "time_calls"]

FLUSH_MIN_BYTES = 256 << 20


def flush_bytes(device: torch.device) -> int:
    """Size of the L2 flush buffer: at least twice the L2 (and at least 256 MiB); 0 on CPU."""
    if device.type != "cuda":
        return 0
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return max(2 * l2, FLUSH_MIN_BYTES)


def _percentile(sorted_values: list[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats_of(samples_ms: list[float], clock: str) -> TimingStats:
    """Distribution summary of per-call times."""
    s = sorted(samples_ms)
    mean = statistics.fmean(s)
    cv = statistics.pstdev(s) / mean if mean > 0 and len(s) > 1 else 0.0
    return TimingStats(
        clock=clock,
        iterations=len(s),
        p10_ms=_percentile(s, 0.1),
        p50_ms=_percentile(s, 0.5),
        p90_ms=_percentile(s, 0.9),
        mean_ms=mean,
        cv=cv,
    )


def _iterations(settings: EvalSettings, per_call_ms: float, sets: int) -> int:
    n = settings.max_iterations if per_call_ms <= 0 else math.ceil(settings.rep_ms / per_call_ms)
    n = max(settings.min_iterations, min(settings.max_iterations, n))
    return max(n, sets)  # every input set is timed (and its outputs checked) at least once


def time_calls(
    call: Callable[[int], object],
    sets: int,
    settings: EvalSettings,
    device: torch.device,
    flush: torch.Tensor | None,
    before: Callable[[int], None] | None = None,
) -> tuple[TimingStats, list[object]]:
    """Time ``call(set_index)``; return the stats and the last result of each set.

    Args:
        call: Runs the kernel on input set ``i`` and returns its outputs.
        sets: How many input sets to rotate over.
        flush: On CUDA, a buffer of at least twice the L2, zeroed before every timed call.
        before: Runs before each call, outside the timed window (restoring inputs).
    """
    last: list[object] = [None] * sets
    prep = before or (lambda k: None)
    if device.type == "cuda":
        return _time_cuda(call, sets, settings, flush, last, prep), last
    return _time_host(call, sets, settings, last, prep), last


def _event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


def _time_host(
    call: Callable[[int], object],
    sets: int,
    settings: EvalSettings,
    last: list[object],
    prep: Callable[[int], None],
) -> TimingStats:
    start = time.perf_counter_ns()
    warm = 0
    while True:
        prep(warm % sets)
        last[warm % sets] = call(warm % sets)
        warm += 1
        elapsed_ms = (time.perf_counter_ns() - start) / 1e6
        if elapsed_ms >= settings.warmup_ms:
            break
    n = _iterations(settings, elapsed_ms / warm, sets)
    samples: list[float] = []
    for i in range(n):
        k = i % sets
        prep(k)
        t0 = time.perf_counter_ns()
        last[k] = call(k)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return stats_of(samples, "host")


def _time_cuda(
    call: Callable[[int], object],
    sets: int,
    settings: EvalSettings,
    flush: torch.Tensor | None,
    last: list[object],
    prep: Callable[[int], None],
) -> TimingStats:
    torch.cuda.synchronize()
    # Estimate with events (not the host clock), so launch-bound kernels are not undercounted
    # by the synchronisations the warm-up needs.
    warm = 0
    spent_ms = 0.0
    host_start = time.perf_counter()
    while True:
        prep(warm % sets)
        if flush is not None:
            flush.zero_()
        begin, end = _event(), _event()
        begin.record()
        last[warm % sets] = call(warm % sets)
        end.record()
        end.synchronize()
        spent_ms += begin.elapsed_time(end)
        warm += 1
        if (time.perf_counter() - host_start) * 1e3 >= settings.warmup_ms:
            break
    n = _iterations(settings, spent_ms / warm, sets)
    starts = [_event() for _ in range(n)]
    ends = [_event() for _ in range(n)]
    for i in range(n):
        k = i % sets
        prep(k)
        if flush is not None:
            flush.zero_()
        starts[i].record()
        last[k] = call(k)
        ends[i].record()
    torch.cuda.synchronize()
    return stats_of([s.elapsed_time(e) for s, e in zip(starts, ends)], "cuda_event")
