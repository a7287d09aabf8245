"""When to stop timing, and which samples to keep (pure Python: tested with synthetic streams).

The rule is nvbench's kind: samples arrive in batches; after each batch, timing stops once

- at least ``min_samples`` samples are kept and ``min_ms`` (``rep_ms``) of wall time has been
  spent timing, and the relative standard error of the median of the kept samples is at most
  ``target`` (``target_rel_error``); or
- ``max_samples`` (``max_iterations``) samples were taken, or ``max_ms`` of wall time spent,
  whatever the error (``target_met`` then says whether the target was reached); but never
  before ``floor`` samples (one per input set: every set's last result is checked after
  timing, so each set must have had a timed call, however slow the call or its checks).

The standard error of the median is estimated without assuming a distribution: the number of
samples below the true median is Binomial(n, 1/2), whose standard deviation is sqrt(n)/2
ranks, so the order statistics at ranks n/2 +- sqrt(n)/2 bracket the median by about one
standard error on each side, and half their distance estimates it. Unlike
``1.2533 * stdev / sqrt(n)`` (exact for normal data only), it is not inflated by the few very
slow samples a preempted or interrupted call gives, and it follows skewed distributions.

Samples are discarded, batch by batch, when an NVML reading just before or just after the
batch shows the SM clock under 75% of its maximum (nvbench's throttle threshold) or a
slowdown reason (thermal, hardware, power brake): :class:`ClockWatch`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sweep.engine.timing._nvml import ClockReading
from sweep.schema import EvalSettings

__all__ = [
    "SLOWDOWN_REASONS",
    "THROTTLE_CLOCK_FRACTION",
    "ClockWatch",
    "Sampled",
    "StopRule",
    "Stopper",
    "median_rel_error",
    "percentile",
]

#: A sample is discarded when the SM clock is under this fraction of its maximum (nvbench's).
THROTTLE_CLOCK_FRACTION = 0.75
#: NVML reasons that mean the GPU slowed itself down. ``sw_power_cap`` is left out on purpose:
#: it is how boost clocks hold the power limit on any busy data-center GPU (a large GEMM
#: shows it on every reading); when it cuts deep, the clock rule above catches it.
SLOWDOWN_REASONS = frozenset(
    {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, interpolating linearly between ranks."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = min(max(q, 0.0), 1.0) * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_rel_error(values: Sequence[float]) -> float | None:
    """The relative standard error of the median of ``values`` (see the module's docstring);
    ``None`` when it cannot be told (fewer than two values, or a median of zero)."""
    n = len(values)
    if n < 2:
        return None
    s = sorted(values)
    median = percentile(s, 0.5)
    if median <= 0:
        return None
    half = 0.5 / math.sqrt(n)
    se = (percentile(s, 0.5 + half) - percentile(s, 0.5 - half)) / 2
    return se / median


@dataclass(frozen=True)
class StopRule:
    """The bounds of one timing loop (see the module's docstring).

    ``pursue=False`` stops as soon as the minimums are met, as the host clock does: a CPU's
    timings are indicative only (CI checks correctness there), and chasing 0.5% on a shared
    CPU would run every CPU evaluation to ``max_ms``.
    """

    min_samples: int
    max_samples: int
    min_ms: float
    max_ms: float
    target: float
    pursue: bool = True
    #: Samples taken before even ``max_ms`` ends the loop (one per input set).
    floor: int = 1

    @classmethod
    def of(cls, settings: EvalSettings, *, min_samples: int = 1, pursue: bool = True) -> StopRule:
        """The rule ``settings`` ask for; ``min_samples`` raises their minimum (one sample per
        input set, so every set's last result exists); ``max_ms`` is at least ``rep_ms``."""
        low = max(settings.min_iterations, min_samples)
        return cls(
            min_samples=low,
            max_samples=max(settings.max_iterations, low),
            min_ms=settings.rep_ms,
            max_ms=max(settings.max_ms, settings.rep_ms),
            target=settings.target_rel_error,
            pursue=pursue,
            floor=min_samples,
        )


@dataclass(frozen=True)
class Sampled:
    """What one timing loop kept: the samples in the order taken, and how it ended."""

    samples: list[float]
    discarded: int
    rel_error: float | None
    target: float
    target_met: bool


@dataclass
class Stopper:
    """Applies a :class:`StopRule` to batches of samples as they arrive."""

    rule: StopRule
    kept: list[float] = field(default_factory=list)
    dropped: list[float] = field(default_factory=list)

    @property
    def taken(self) -> int:
        """Samples taken so far, kept or discarded."""
        return len(self.kept) + len(self.dropped)

    def room(self, batch: int) -> int:
        """How many samples the next batch may take (never past ``max_samples``)."""
        return max(1, min(batch, self.rule.max_samples - self.taken))

    def add(self, values: Sequence[float], *, keep: bool = True) -> None:
        """One batch of samples; ``keep=False`` discards them (the clock was throttled)."""
        (self.kept if keep else self.dropped).extend(values)

    def done(self, elapsed_ms: float) -> bool:
        """Whether to stop after ``elapsed_ms`` of wall time spent timing."""
        rule = self.rule
        if self.taken >= rule.max_samples or (elapsed_ms >= rule.max_ms and self.taken >= rule.floor):
            return True
        if len(self.kept) < rule.min_samples or elapsed_ms < rule.min_ms:
            return False
        if not rule.pursue:
            return True
        error = median_rel_error(self.kept)
        return error is not None and error <= rule.target

    def result(self) -> Sampled:
        """The kept samples and the error reached. When every sample was discarded, they are
        all kept (a throttled measurement, flagged as such by the clocks, beats none)."""
        kept, dropped = (self.kept, len(self.dropped)) if self.kept else (self.dropped, 0)
        error = median_rel_error(kept)
        met = error is not None and error <= self.rule.target
        return Sampled(list(kept), dropped, error, self.rule.target, met)


class ClockWatch:
    """NVML readings taken between batches: whether the GPU ran at full speed, the lowest SM
    clock seen and whether it was ever throttled. Inert (always fine) without a reader."""

    def __init__(self, read: Callable[[], ClockReading] | None, max_mhz: int | None) -> None:
        self._read = read
        self._max_mhz = max_mhz
        self.min_mhz: int | None = None
        self.throttled = False
        self.readings = 0
        #: SM clocks (MHz) and memory clocks read, for their means and the memory's least.
        self.sm_mhz: list[int] = []
        self.mem_mhz: list[int] = []

    @property
    def active(self) -> bool:
        """Whether readings are taken (NVML answered for this device)."""
        return self._read is not None

    def note(self, reading: ClockReading) -> bool:
        """Record one reading; whether it shows the GPU at full speed."""
        self.readings += 1
        mhz = reading.sm_clock_mhz
        if mhz is not None:
            self.min_mhz = mhz if self.min_mhz is None else min(self.min_mhz, mhz)
            self.sm_mhz.append(mhz)
        if reading.mem_clock_mhz is not None:
            self.mem_mhz.append(reading.mem_clock_mhz)
        slow = (
            mhz is not None and bool(self._max_mhz) and mhz < THROTTLE_CLOCK_FRACTION * (self._max_mhz or 0)
        )
        bad = slow or bool(SLOWDOWN_REASONS.intersection(reading.reasons))
        self.throttled = self.throttled or bad
        return not bad

    def ok(self) -> bool:
        """Read NVML now; whether the GPU runs at full speed (always true when inert)."""
        if self._read is None:
            return True
        return self.note(self._read())
