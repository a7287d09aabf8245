"""The stopping rule and the discarding of throttled samples, on synthetic sample streams.

Time is simulated: each sample "takes" its own value in milliseconds, so nothing here
depends on how fast this machine is.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterator

import pytest

from sweep.config import EvalSettings
from sweep.engine.timing._nvml import ClockReading
from sweep.engine.timing._stopping import ClockWatch, Sampled, Stopper, StopRule, median_rel_error

RULE = StopRule(min_samples=10, max_samples=100_000, min_ms=50.0, max_ms=2_000.0, target=0.005)


def _stream(noise: float, seed: int = 0, mean: float = 0.1) -> Iterator[float]:
    rng = random.Random(seed)
    while True:
        yield max(1e-6, rng.gauss(mean, noise * mean))


def _run(
    stream: Iterator[float], rule: StopRule, batch: int = 10, keep: Callable[[int], bool] | None = None
) -> tuple[Sampled, float, int]:
    """Feed batches to a Stopper until it stops; (result, simulated ms, batches)."""
    stopper = Stopper(rule)
    elapsed = 0.0
    batches = 0
    while True:
        values = [next(stream) for _ in range(stopper.room(batch))]
        elapsed += sum(values)
        stopper.add(values, keep=keep(batches) if keep else True)
        batches += 1
        if stopper.done(elapsed):
            return stopper.result(), elapsed, batches


def test_rel_error_of_the_median() -> None:
    assert median_rel_error([]) is None and median_rel_error([1.0]) is None
    assert median_rel_error([0.0, 0.0, 0.0]) is None  # a median of zero: unknown
    assert median_rel_error([2.0] * 50) == 0.0
    rng = random.Random(1)
    values = [rng.gauss(10.0, 1.0) for _ in range(4000)]
    normal_se = 1.2533 * statistics.stdev(values) / len(values) ** 0.5
    assert median_rel_error(values) == pytest.approx(normal_se / statistics.median(values), rel=0.25)


def test_rel_error_ignores_a_few_outliers() -> None:
    rng = random.Random(2)
    values = [rng.gauss(10.0, 0.1) for _ in range(400)]
    clean = median_rel_error(values)
    spiky = median_rel_error([*values[:-4], 500.0, 800.0, 1000.0, 2000.0])
    assert clean is not None and spiky is not None
    assert spiky < 1.2 * clean  # a stdev-based estimate would grow about thirtyfold


def test_a_noisy_stream_stops_later_than_a_quiet_one() -> None:
    rule = StopRule(min_samples=10, max_samples=100_000, min_ms=1.0, max_ms=2_000.0, target=0.005)
    quiet, quiet_ms, _ = _run(_stream(0.01), rule)
    noisy, noisy_ms, _ = _run(_stream(0.2), rule)
    assert quiet.target_met and noisy.target_met
    assert len(noisy.samples) > 5 * len(quiet.samples)
    assert noisy_ms > quiet_ms
    assert quiet.rel_error is not None and quiet.rel_error <= rule.target
    assert noisy.rel_error is not None and noisy.rel_error <= rule.target


def test_the_minimums_hold_for_a_quiet_stream() -> None:
    result, elapsed, _ = _run(iter(lambda: 0.1, None), RULE)  # constant: error 0 at once
    assert result.target_met and result.rel_error == 0.0
    assert elapsed >= RULE.min_ms and len(result.samples) >= RULE.min_samples
    assert elapsed < RULE.min_ms + 10 * 0.1 + 1e-9  # stopped at the first check past min_ms


def test_max_ms_bounds_a_stream_that_never_meets_the_target() -> None:
    result, elapsed, _ = _run(_stream(3.0), RULE)  # huge noise
    assert not result.target_met
    assert result.rel_error is not None and result.rel_error > RULE.target
    assert RULE.max_ms <= elapsed < RULE.max_ms + 10 * 2.0  # within one batch of the bound


def test_max_samples_is_a_hard_cap() -> None:
    rule = StopRule(min_samples=3, max_samples=25, min_ms=0.0, max_ms=1e9, target=1e-9)
    result, _, _ = _run(_stream(0.5), rule, batch=10)
    assert len(result.samples) == 25  # batches shrink to fit: 10 + 10 + 5
    assert not result.target_met


def test_without_pursuit_the_minimums_are_enough() -> None:
    rule = StopRule(min_samples=3, max_samples=7, min_ms=1e-6, max_ms=1e9, target=1e-9, pursue=False)
    result, _, _ = _run(_stream(0.5), rule, batch=1)
    assert len(result.samples) == 3  # the host clock's rule: as before the stopping rule
    rule = StopRule(min_samples=3, max_samples=7, min_ms=1e9, max_ms=1e12, target=1e-9, pursue=False)
    assert len(_run(_stream(0.5), rule, batch=1)[0].samples) == 7


def test_rule_from_settings() -> None:
    s = EvalSettings(min_iterations=5, max_iterations=3, rep_ms=2000, max_ms=1000, target_rel_error=0.01)
    rule = StopRule.of(s, min_samples=8)
    assert (rule.min_samples, rule.max_samples) == (8, 8)  # one per input set, whatever the cap
    assert (rule.min_ms, rule.max_ms, rule.target, rule.pursue) == (2000, 2000, 0.01, True)
    default = StopRule.of(EvalSettings())
    assert (default.min_samples, default.max_samples, default.min_ms, default.max_ms) == (10, 1000, 100, 1000)
    assert default.target == 0.005


def test_discarded_batches_are_counted_and_left_out() -> None:
    stream = iter([1.0] * 20 + [9.0] * 10 + [1.0] * 200)  # the slow batch is the throttled one
    rule = StopRule(min_samples=30, max_samples=60, min_ms=0.0, max_ms=1e9, target=0.005)
    result, _, _ = _run(stream, rule, keep=lambda b: b != 2)
    assert result.discarded == 10
    assert 9.0 not in result.samples and len(result.samples) == 30


def test_when_every_sample_is_throttled_they_are_all_kept() -> None:
    rule = StopRule(min_samples=10, max_samples=30, min_ms=0.0, max_ms=1e9, target=0.005)
    result, _, _ = _run(_stream(0.01), rule, keep=lambda b: False)
    assert len(result.samples) == 30 and result.discarded == 0


def test_clock_watch_flags_low_clocks_and_slowdown_reasons() -> None:
    readings = iter(
        [
            ClockReading(1980, []),
            ClockReading(1600, ["sw_power_cap"]),  # the power cap alone is a busy GPU's normal
            ClockReading(1400, []),  # under 75% of 1980
            ClockReading(1980, ["hw_thermal_slowdown"]),
            ClockReading(None, []),
        ]
    )
    watch = ClockWatch(lambda: next(readings), 1980)
    assert [watch.ok() for _ in range(5)] == [True, True, False, False, True]
    assert watch.min_mhz == 1400 and watch.throttled and watch.readings == 5
    inert = ClockWatch(None, None)
    assert inert.ok() and not inert.active and inert.min_mhz is None and not inert.throttled


def test_max_ms_never_stops_before_every_input_set_had_a_call() -> None:
    # A call (or its checks) slower than max_ms: the host loop takes one sample per batch; the
    # loop still calls each of the 4 input sets once, so each set's last result exists to check.
    s = EvalSettings(min_iterations=2, max_iterations=6, rep_ms=1, max_ms=1000, input_sets=4)
    rule = StopRule.of(s, min_samples=4, pursue=False)
    assert rule.floor == 4
    result, elapsed, _ = _run(_stream(0.1, mean=5000.0), rule, batch=1)
    assert len(result.samples) == 4 and elapsed > rule.max_ms
    # Without that floor (a rule made by hand) max_ms stops it at once, as before.
    bare = StopRule(min_samples=4, max_samples=6, min_ms=1.0, max_ms=1000.0, target=0.005, pursue=False)
    assert len(_run(_stream(0.1, mean=5000.0), bare, batch=1)[0].samples) == 1
