"""The statistics of ``sweep compare``: how sure one side's latency is, the ratio of two, and
the verdict. Pure Python, deterministic (no resampling, so no seed).

Every side's latency is a median with a noise: the half-width of a 95% confidence interval
of that median on the log scale (``0.05`` is about 5%), from the best evidence it has:

* ``samples``: the timed samples of the newest passing trace. The interval is the
  distribution-free one of order statistics (the ranks ``n/2 -+ z*sqrt(n)/2``), which needs
  no assumption about the shape of GPU timing distributions (skewed, often bimodal).
* ``runs``: no samples, but two or more runs; the same interval over the runs' p50s (with
  fewer than six runs it is their whole range: the spread across runs).
* ``rel_error``/``cv``: one number, with the timer's own relative standard error of the
  median (``z * rel_error``), else its coefficient of variation over ``iterations`` samples
  (``z * 1.2533 * cv / sqrt(n)``, the standard error of a median of normal samples).
* ``none``: one bare number (an upstream trace). Its noise is unknown, and the verdict rests
  on the threshold alone (see :func:`verdict`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Z95",
    "Basis",
    "Estimate",
    "Verdict",
    "estimate_from_runs",
    "estimate_from_samples",
    "estimate_single",
    "ratio_interval",
    "verdict",
]

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054
# Standard error of a median over that of a mean, for normal samples: sqrt(pi / 2).
_MEDIAN_SE = math.sqrt(math.pi / 2)

Basis = Literal["samples", "runs", "rel_error", "cv", "none"]
Verdict = Literal["faster", "slower", "same", "noisy", "failed"]


@dataclass(frozen=True)
class Estimate:
    """One side's latency of one task.

    Attributes:
        latency_ms: The median (of the samples, of the runs' p50s, or the one p50).
        noise: Half-width of the 95% interval of the median on the log scale; ``None`` when
            nothing says how noisy the number is.
        basis: Where the noise comes from (module docstring).
        n: Samples or runs behind it (1 for a single number).
    """

    latency_ms: float
    noise: float | None
    basis: Basis
    n: int


def _median(sorted_values: Sequence[float]) -> float:
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2


def _median_interval(values: Sequence[float], basis: Basis) -> Estimate | None:
    xs = sorted(v for v in values if v > 0 and math.isfinite(v))
    n = len(xs)
    if n < 2:
        return None
    m = _median(xs)
    half = Z95 * math.sqrt(n) / 2
    lo = max(1, math.floor(n / 2 - half))  # 1-based ranks of the order-statistic interval
    hi = min(n, math.ceil(1 + n / 2 + half))
    noise = max(math.log(m / xs[lo - 1]), math.log(xs[hi - 1] / m))
    return Estimate(m, noise, basis, n)


def estimate_from_samples(samples_ms: Sequence[float]) -> Estimate | None:
    """The median of timed samples and its order-statistic interval; ``None`` under two
    usable (positive, finite) samples."""
    return _median_interval(samples_ms, "samples")


def estimate_from_runs(p50s_ms: Sequence[float]) -> Estimate | None:
    """The median of repeated runs' latencies and their spread; ``None`` under two runs."""
    return _median_interval(p50s_ms, "runs")


def estimate_single(
    latency_ms: float,
    *,
    rel_error: float | None = None,
    cv: float | None = None,
    iterations: int | None = None,
) -> Estimate:
    """One latency, its noise from the trace's own ``rel_error``, else ``cv`` over
    ``iterations``, else unknown."""
    if rel_error is not None and math.isfinite(rel_error) and rel_error >= 0:
        return Estimate(latency_ms, Z95 * rel_error, "rel_error", 1)
    if cv is not None and math.isfinite(cv) and cv >= 0 and iterations is not None and iterations >= 2:
        return Estimate(latency_ms, Z95 * _MEDIAN_SE * cv / math.sqrt(iterations), "cv", 1)
    return Estimate(latency_ms, None, "none", 1)


def _combined(a: Estimate, b: Estimate) -> float | None:
    # The sides are measured independently: their log-scale errors add in quadrature.
    if a.noise is None or b.noise is None:
        return None
    return math.hypot(a.noise, b.noise)


def ratio_interval(a: Estimate, b: Estimate) -> tuple[float, float | None, float | None]:
    """``(ratio, low, high)``: B's latency over A's (under 1: B is faster) and its 95%
    interval (``None`` when a side's noise is unknown)."""
    ratio = b.latency_ms / a.latency_ms
    c = _combined(a, b)
    if c is None:
        return ratio, None, None
    return ratio, ratio * math.exp(-c), ratio * math.exp(c)


def verdict(a: Estimate, b: Estimate, threshold: float) -> Verdict:
    """Faster, slower, same or too noisy to say, for B against A.

    The rule, after nvbench's ``nvbench_compare``:

    1. ``same`` when the ratio is within the threshold (``1/(1+t) <= ratio <= 1+t``): a
       change smaller than that is not worth a verdict, however sure it is.
    2. ``noisy`` when the change is bigger but the ratio's 95% interval reaches 1: the
       difference does not exceed the noise of the two sides together. That noise,
       ``sqrt(noise_a^2 + noise_b^2)``, is at least the larger side's, so what passes here
       passes nvbench's rule (a difference counts when it exceeds the noise of both sides).
    3. ``faster``/``slower`` otherwise. With a side of unknown noise (one bare number) step 2
       is skipped: the threshold is the only noise floor there is.

    Args:
        a: Side A (the baseline).
        b: Side B (the change).
        threshold: Relative change below which the answer is ``same`` (``0.05`` = 5%).
    """
    d = math.log(b.latency_ms / a.latency_ms)
    if abs(d) <= math.log1p(threshold):
        return "same"
    c = _combined(a, b)
    if c is not None and abs(d) <= c:
        return "noisy"
    return "slower" if d > 0 else "faster"
