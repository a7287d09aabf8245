"""The one formatter of figures shown to people (summaries, eval tables)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from sweep.store.render import format_number as number
from sweep.store.render import percent, ratio


def test_examples() -> None:
    assert ratio(4.1e-3) == "0.0041x"
    assert ratio(2.0) == "2x"
    assert ratio(None) == "-"
    assert percent(1.0) == "100%"
    assert percent(0.995) == "99.5%"
    assert number(0) == "0"
    assert number(1.2e9) == "1.2e+09"


@given(st.floats(min_value=-1e300, max_value=1e300).filter(lambda v: v == 0 or abs(v) > 1e-300))
def test_number_reads_back_close(value: float) -> None:
    # Two significant digits at least: within 5% (and the rounding of the last digit).
    assert math.isclose(float(number(value)), value, rel_tol=0.051)


@given(st.floats(min_value=1e-4, max_value=999_000) | st.floats(min_value=-999_000, max_value=-1e-4))
def test_no_exponent_in_the_usual_range(value: float) -> None:
    text = number(value)
    assert "e" not in text
    assert len(text.lstrip("-").split(".")[0]) <= 7


@given(st.floats())
def test_never_raises(value: float) -> None:
    assert isinstance(ratio(value), str) and isinstance(percent(value), str)


@given(st.floats(min_value=0, max_value=1))
def test_percent_of_a_fraction(value: float) -> None:
    text = percent(value)
    assert text.endswith("%") and not text.endswith(".0%")
    assert abs(float(text[:-1]) - value * 100) <= 0.05 + 1e-9
