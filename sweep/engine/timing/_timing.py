"""Timing a callable: four timers over one warm-up and one stopping rule.

- ``events`` (GPU): CUDA events around each call, the L2 flush buffer zeroed before it;
- ``cudagraph`` (GPU): replays of captured CUDA graphs, the flush and the input rotation
  inside them, the time of what is not the call subtracted (``_graph_timer.py``);
- ``cupti`` (GPU, with cupti-python): the device time of the kernels, copies and sets each
  call launched, from CUPTI's activity records; the flush and the fresh values before the
  call are launched outside its window and not counted (``_cupti_timer.py``);
- ``host`` (CPU): ``time.perf_counter_ns`` around each call.

Every timer warms up for ``warmup_ms`` (at least one call: :func:`warm_up`), then takes
samples in batches until the rule of ``_stopping.py`` says stop (``rep_ms`` and
``min_iterations`` at least, ``target_rel_error`` reached, ``max_ms`` and ``max_iterations``
at most); on a GPU the samples of a batch during which NVML saw the clock throttled are
discarded. Call ``i`` uses input set ``i % sets``; the caller's ``before`` gives its inputs
fresh values first, and ``rechecks`` checks a random sample of the calls (``_fresh.py``). The latency reported is the median of the kept samples;
every kept sample is stored in the stats (``TimingStats.samples``).

``auto`` (:func:`choose_timer`) picks graphs when the warm-up says a call is short: under
:data:`AUTO_GRAPH_BELOW_MS`, launch gaps and the events' own overhead are a visible part of
the time, and capture is cheap; above it they are well under 1%, and events cost half the
GPU time of graphs (which replay the flushes twice) and cannot fail to capture.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from sweep.engine.timing._clocks import elapsed as _elapsed
from sweep.engine.timing._clocks import now as _now
from sweep.engine.timing._clocks import now_ns as _now_ns
from sweep.engine.timing._clocks import record as _record
from sweep.engine.timing._clocks import wait as _wait
from sweep.engine.timing._cupti_timer import CuptiSession
from sweep.engine.timing._fresh import Freshener, Rechecks
from sweep.engine.timing._graph_timer import GraphTimer
from sweep.engine.timing._stopping import ClockWatch, Sampled, Stopper, StopRule, percentile
from sweep.schema import EvalSettings, TimingStats

__all__ = [
    "AUTO_GRAPH_BELOW_MS",
    "BATCH_MS",
    "FLUSH_MIN_BYTES",
    "WarmUp",
    "choose_timer",
    "flush_bytes",
    "stats_of",
    "time_calls",
    "warm_up",
]

FLUSH_MIN_BYTES = 256 << 20
#: ``timer: auto`` uses CUDA graphs for calls shorter than this (milliseconds, by the warm-up).
AUTO_GRAPH_BELOW_MS = 0.1
#: About how long one batch of samples runs between two checks of the stopping rule (and two
#: NVML readings): long enough that a check costs nothing per sample, short enough that the
#: rule does not overshoot its minimums by much.
BATCH_MS = 5.0


def flush_bytes(device: torch.device) -> int:
    """Size of the L2 flush buffer: at least twice the L2 (and at least 256 MiB); 0 on CPU."""
    if device.type != "cuda":
        return 0
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return max(2 * l2, FLUSH_MIN_BYTES)


def graph_flush(flush: torch.Tensor | None, device: torch.device) -> torch.Tensor | None:
    """The part of the flush buffer the graph timer zeroes: twice the L2, enough to evict it.

    The graph timer subtracts a graph of flushes alone from one of flushes and calls, so the
    noise of the flushes is the noise of its samples; zeroing 256 MB (the events timer's
    buffer, as ``triton.testing.do_bench``) where 2 x L2 suffices only adds noise (H100: 50 MB
    of L2, so 100 MB instead of 256 MB).
    """
    if flush is None:
        return None
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return flush[: 2 * l2] if 0 < 2 * l2 < flush.numel() else flush


def stats_of(
    samples_ms: Sequence[float], clock: str, timer: str | None = None, sampled: Sampled | None = None
) -> TimingStats:
    """Distribution summary of per-call times; with ``sampled``, the samples themselves and how
    the stopping rule ended."""
    s = sorted(samples_ms)
    mean = statistics.fmean(s)
    cv = statistics.pstdev(s) / mean if mean > 0 and len(s) > 1 else 0.0
    extra: dict[str, object] = {}
    if sampled is not None:
        extra = {
            "samples": TimingStats.encode_samples(samples_ms),
            "rel_error": sampled.rel_error,
            "target_rel_error": sampled.target,
            "target_met": sampled.target_met,
            "discarded": sampled.discarded,
            "threads": torch.get_num_threads(),
        }
    return TimingStats.model_validate(
        {
            "clock": clock,
            "iterations": len(s),
            "p10_ms": percentile(s, 0.1),
            "p50_ms": percentile(s, 0.5),
            "p90_ms": percentile(s, 0.9),
            "mean_ms": mean,
            "cv": cv,
            "timer": timer,
            **extra,
        }
    )


@dataclass(frozen=True)
class WarmUp:
    """What the warm-up measured: medians per call (milliseconds)."""

    calls: int
    call_ms: float  # the call alone (events on a GPU, the host clock on a CPU)
    flush_ms: float  # the L2 flush (0 without one)
    iteration_ms: float  # wall time of one warm-up iteration: restore, flush, call, wait


def choose_timer(requested: str, device: torch.device, call_ms: float) -> str:
    """The timer to run: ``host`` off a GPU; for ``auto``, ``cudagraph`` when a call takes
    under :data:`AUTO_GRAPH_BELOW_MS` by the warm-up, else ``events``; otherwise the one
    requested (``events``, ``cudagraph``, ``cupti``)."""
    if device.type != "cuda":
        return "host"
    if requested == "auto":
        return "cudagraph" if call_ms < AUTO_GRAPH_BELOW_MS else "events"
    return requested


def _nothing(slot: int) -> None:
    pass


def _event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


def warm_up(
    call: Callable[[int], object],
    sets: int,
    settings: EvalSettings,
    device: torch.device,
    flush: torch.Tensor | None,
    before: Callable[[int], None] | None = None,
    last: list[object] | None = None,
) -> WarmUp:
    """Call ``call`` for ``warmup_ms`` (at least once), rotating over the sets as timed calls
    do, and measure it. On a GPU the call is measured with events (not the host clock), so a
    launch-bound kernel is not overcounted by the synchronization each iteration needs."""
    prep = before or _nothing
    calls: list[float] = []
    flushes: list[float] = []
    start = _now()
    while True:
        k = len(calls) % sets
        prep(k)
        if device.type == "cuda":
            marks = [_event() for _ in range(3)]
            _record(marks[0])
            if flush is not None:
                flush.zero_()
            _record(marks[1])
            out = call(k)
            _record(marks[2])
            _wait(marks[2])
            flushes.append(_elapsed(marks[0], marks[1]) if flush is not None else 0.0)
            calls.append(_elapsed(marks[1], marks[2]))
        else:
            t0 = _now_ns()
            out = call(k)
            calls.append((_now_ns() - t0) / 1e6)
            flushes.append(0.0)
        if last is not None:
            last[k] = out
        elapsed_ms = (_now() - start) * 1e3
        if elapsed_ms >= settings.warmup_ms:
            break
    return WarmUp(len(calls), statistics.median(calls), statistics.median(flushes), elapsed_ms / len(calls))


def time_calls(
    call: Callable[[int], object],
    sets: int,
    settings: EvalSettings,
    device: torch.device,
    flush: torch.Tensor | None,
    before: Callable[[int], None] | None = None,
    *,
    timer: str = "events",
    warm: WarmUp | None = None,
    watch: ClockWatch | None = None,
    rechecks: Rechecks | None = None,
    fresh: Freshener | None = None,
    between: Callable[[], None] | None = None,
) -> tuple[TimingStats, list[object]]:
    """Time ``call(set_index)``; return the stats and the last result of each set.

    Args:
        call: Runs the kernel on input set ``i`` and returns its outputs.
        sets: How many input sets to rotate over.
        flush: On CUDA, a buffer of at least twice the L2, zeroed before every timed call.
        before: Runs before each call, outside the timed window (restoring inputs).
        timer: ``events``, ``cudagraph`` or ``cupti`` on a GPU (``host`` is used off one,
            whatever this says). ``cudagraph`` raises ``CaptureFailed`` when the call cannot
            be captured, before any sample is taken; ``cupti`` raises ``CuptiUnavailable``
            when CUPTI cannot be imported or initialised, or records nothing.
        warm: The warm-up already done (:func:`warm_up`); warms up here when ``None``.
        watch: NVML readings between batches (samples of throttled batches are discarded).
        rechecks: Checks of a random sample of the timed calls, run as they happen,
            outside the timed window (``_fresh.Rechecks``).
        fresh: The generator ``before`` draws fresh values from, registered with the CUDA
            graphs (``_fresh.Freshener``).
        between: Runs after every batch of samples, outside the timed window (a check that
            raises ``Stop`` ends the timing).
    """
    last: list[object] = [None] * sets
    prep = before or _nothing
    if warm is None:
        warm = warm_up(call, sets, settings, device, flush, before, last)
    if device.type != "cuda":
        rule = StopRule.of(settings, min_samples=sets, pursue=False)
        host = _Calls(call, sets, prep, None, last, rechecks)  # no flush off a GPU
        sampled = _sample(lambda n: _host_batch(host, n), 1, rule, None, between)
        return stats_of(sampled.samples, "host", "host", sampled), last
    if timer == "cudagraph":
        graphs = GraphTimer(
            call, sets, graph_flush(flush, device), prep, last, warm.call_ms + warm.flush_ms, rechecks, fresh
        )
        pair_ms = 2 * graphs.calls * (warm.call_ms + warm.flush_ms)
        batch = max(1, math.ceil(BATCH_MS / max(pair_ms, 1e-6)))
        sampled = _sample(graphs.batch, batch, StopRule.of(settings), watch, between)
        return stats_of(sampled.samples, "cuda_event", "cudagraph", sampled), last
    batch = max(sets, math.ceil(BATCH_MS / max(warm.iteration_ms, 1e-6)))
    calls = _Calls(call, sets, prep, flush, last, rechecks)
    if timer == "cupti":
        with CuptiSession() as session:
            sampled = _sample(
                lambda n: _cupti_batch(session, calls, n),
                batch,
                StopRule.of(settings, min_samples=sets),
                watch,
                between,
            )
        return stats_of(sampled.samples, "cupti", "cupti", sampled), last
    sampled = _sample(
        lambda n: _events_batch(calls, n),
        batch,
        StopRule.of(settings, min_samples=sets),
        watch,
        between,
    )
    return stats_of(sampled.samples, "cuda_event", "events", sampled), last


def _sample(
    batch: Callable[[int], list[float]],
    size: int,
    rule: StopRule,
    watch: ClockWatch | None,
    between: Callable[[], None] | None = None,
) -> Sampled:
    """Take batches of ``size`` samples until ``rule`` says stop. A batch is kept when the
    readings of ``watch`` right before and right after it both show an unthrottled GPU."""
    stopper = Stopper(rule)
    ok_before = watch.ok() if watch is not None else True
    start = _now()
    while True:
        values = batch(stopper.room(size))
        if between is not None:
            between()
        ok_after = watch.ok() if watch is not None else True
        stopper.add(values, keep=ok_before and ok_after)
        ok_before = ok_after
        if stopper.done((_now() - start) * 1e3):
            return stopper.result()


class _Calls:
    """The timed calls of one timing, carried across batches: which input set is next (the
    rotation), what runs before each call outside its window (fresh values, the L2 flush), the
    last result of each set and the rechecks of the calls sampled."""

    def __init__(
        self,
        call: Callable[[int], object],
        sets: int,
        prep: Callable[[int], None],
        flush: torch.Tensor | None,
        last: list[object],
        rechecks: Rechecks | None,
    ) -> None:
        self.call = call
        self.sets = sets
        self.prep = prep
        self.flush = flush
        self.last = last
        self.rechecks = rechecks
        self.index = 0

    def next(self) -> int:
        """The input set of the next call, its fresh values and the flush launched."""
        k = self.index % self.sets
        self.index += 1
        self.prep(k)
        if self.flush is not None:
            self.flush.zero_()
        return k

    def checked(self, k: int) -> None:
        """Hand the call just made on set ``k`` to the rechecks (outside its window)."""
        if self.rechecks is not None:
            self.rechecks.after_call(self.index, k, self.last[k])

    def settle(self) -> None:
        """Wait for the rechecks' copies and check them."""
        if self.rechecks is not None:
            self.rechecks.settle()


def _host_batch(calls: _Calls, n: int) -> list[float]:
    samples: list[float] = []
    for _ in range(n):
        k = calls.next()
        t0 = _now_ns()
        calls.last[k] = calls.call(k)
        samples.append((_now_ns() - t0) / 1e6)
        calls.checked(k)
        calls.settle()
    return samples


def _events_batch(calls: _Calls, n: int) -> list[float]:
    starts = [_event() for _ in range(n)]
    ends = [_event() for _ in range(n)]
    for i in range(n):
        k = calls.next()
        _record(starts[i])
        calls.last[k] = calls.call(k)
        _record(ends[i])
        # After the end event: the copies are outside the window; checked after the batch.
        calls.checked(k)
    _wait(ends[-1])
    calls.settle()
    return [_elapsed(s, e) for s, e in zip(starts, ends)]


def _cupti_batch(session: CuptiSession, calls: _Calls, n: int) -> list[float]:
    """``n`` calls back to back, each in a window of CUPTI's clock that opens after its fresh
    values and flush are launched and closes before the rechecks' copies; then the device
    time of what each window launched (``_cupti_timer.py``)."""
    windows: list[tuple[int, int]] = []
    for _ in range(n):
        k = calls.next()
        start = session.now()
        calls.last[k] = calls.call(k)
        windows.append((start, session.now()))
        calls.checked(k)
    samples = session.collect(windows)  # waits for the device
    calls.settle()
    return samples
