"""Properties of the report's log-axis scale and number formats (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from sweep.store.render._formats import format_number, format_percent, format_speedup
from sweep.store.render._svg import MAX_DECADES, LogScale

positive = st.floats(min_value=1e-12, max_value=1e12, allow_nan=False, allow_infinity=False)


@given(st.lists(positive, min_size=1, max_size=20), positive, positive)
def test_log_scale_is_monotone_and_inside(values: list[float], a: float, b: float) -> None:
    xs = LogScale.covering(values, 100.0, 900.0, include=[1.0])
    assert xs.lo < xs.hi and math.log10(xs.hi / xs.lo) <= MAX_DECADES + 1e-9
    assert 100.0 <= xs(a) <= 900.0 and 100.0 <= xs(b) <= 900.0
    if a < b:
        assert xs(a) <= xs(b)
    # Every value within the covered range keeps ratios: equal ratios, equal distances.
    if xs.lo <= a and a * 10 <= xs.hi:
        per_decade = 800.0 / math.log10(xs.hi / xs.lo)
        assert math.isclose(xs(a * 10) - xs(a), per_decade, rel_tol=1e-6, abs_tol=1e-6)
    # Ticks are inside the range, increasing, and include 1 when 1 is covered.
    ticks = xs.ticks()
    assert ticks == sorted(ticks) and all(xs.lo * (1 - 1e-9) <= t <= xs.hi * (1 + 1e-9) for t in ticks)


@given(st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=20))
def test_covering_scale_covers_its_values(values: list[float]) -> None:
    xs = LogScale.covering(values, 0.0, 1.0)
    assert all(xs.lo <= v <= xs.hi for v in values)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_number_reads_back_close_and_plain(value: float) -> None:
    text = format_number(value)
    back = float(text)
    if 1e-300 < abs(value) < 1e300 or value == 0:
        assert math.isclose(back, value, rel_tol=6e-3, abs_tol=0.0)
    if 1e-4 <= abs(value) < 1e5:
        assert "e" not in text  # 4.1e-03 is written 0.0041
    assert len(text) <= 12


def test_format_examples() -> None:
    assert format_speedup(4.1e-3) == "0.0041x"
    assert format_speedup(0.0015) == "0.0015x"
    assert format_speedup(1.0) == "1x"
    assert format_speedup(48.49) == "48.5x"
    assert format_percent(1.0) == "100%"
    assert format_percent(2 / 3) == "66.7%"
    assert format_percent(0.0) == "0%"
    assert format_number(1234567.0) == "1.23e+06"
