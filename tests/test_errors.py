"""sweep.errors helpers shared across stages."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from sweep.errors import exception_chain


def _raised_from(inner: Exception, outer: Exception, *, cause: bool) -> Exception:
    try:
        try:
            raise inner
        except Exception as e:
            if cause:
                raise outer from e
            raise outer  # the implicit context is what is tested
    except Exception as got:  # noqa: BLE001 - the test keeps whatever was raised
        return got
    raise AssertionError("unreachable")


def test_chain_follows_cause_then_context_outermost_first() -> None:
    a, b, c = ValueError("a"), KeyError("b"), RuntimeError("c")
    middle = _raised_from(a, b, cause=False)
    outer = _raised_from(middle, c, cause=True)
    assert exception_chain(outer) == [c, b, a]


def test_cause_wins_over_context() -> None:
    e = RuntimeError("outer")
    e.__context__ = ValueError("context")
    cause = KeyError("cause")
    e.__cause__ = cause
    assert exception_chain(e) == [e, cause]


def test_a_loop_ends_with_each_exception_once() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__cause__ = b
    b.__cause__ = a
    assert exception_chain(a) == [a, b]


@given(st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=40))
def test_at_most_most(length: int, most: int) -> None:
    errs = [ValueError(str(i)) for i in range(length)]
    for outer, inner in itertools.pairwise(errs):
        outer.__cause__ = inner
    assert exception_chain(errs[0], most=most) == errs[: min(length, most)]
