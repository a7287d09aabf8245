"""Constraints over strings and truth values: the evaluator's kinds, and the static check that
no short-circuit hides (issue 33, point 0)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.schema.expr import ConstraintError, ValueRangeError, eval_expression
from sweep.schema.expr_kinds import kind_problems, kinds_of_values
from sweep.schema.params import constraint_kind_problems, grid_violations, point_violation


def test_strings_and_truth_values_compare() -> None:
    values = {"CHUNK": 4, "MODE": "exp", "FAST": True}
    assert eval_expression("CHUNK <= 2 or MODE == 'exp'", values) is True
    assert eval_expression("MODE != 'lin' and FAST == True", values) is True
    assert eval_expression("MODE < 'f'", values) is True  # two strings order
    assert eval_expression("not FAST", values) is False
    assert eval_expression("MODE == 3", values) is False  # different kinds: never equal
    assert eval_expression("FAST == 1", values) is False  # a truth value is no number here


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("MODE < 3", "cannot order"),
        ("MODE * 2 > 1", "needs numbers"),
        ("MODE and CHUNK > 1", "is not a truth value"),
        ("FAST < 2", "cannot order"),
        ("min(MODE, 2) > 0", "needs numbers"),
    ],
)
def test_wrong_kinds_raise_when_reached(text: str, words: str) -> None:
    with pytest.raises(ConstraintError, match=words):
        eval_expression(text, {"CHUNK": 4, "MODE": "exp", "FAST": True})


def test_the_issue_example_keeps_every_admissible_point() -> None:
    space: dict[str, list[bool | int | float | str]] = {"CHUNK": [1, 2, 4, 8], "MODE": ["lin", "exp"]}
    text = "CHUNK <= 2 or MODE == 'exp'"
    assert constraint_kind_problems(space, [text]) == []
    kept = [p for p, why in grid_violations(space, [text], {}) if why is None]
    assert kept == [
        {"CHUNK": 1, "MODE": "lin"},
        {"CHUNK": 1, "MODE": "exp"},
        {"CHUNK": 2, "MODE": "lin"},
        {"CHUNK": 2, "MODE": "exp"},
        {"CHUNK": 4, "MODE": "exp"},
        {"CHUNK": 8, "MODE": "exp"},
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("CHUNK <= 2 or MODE == 3", "never equal"),
        ("CHUNK <= 2 or MODE < 3", "cannot be ordered"),
        ("CHUNK <= 2 or MODE * 2", "needs numbers"),
        ("CHUNK <= 2 or MODE.upper()", "not allowed"),
        ("CHUNK <= 2 or len(MODE) > 1", "not allowed"),
        ("CHUNK <= 2 or MODE in 'abc'", "not allowed"),
        ("CHUNK <= 2 or max(CHUNK) > 1", "at least two arguments"),
        ("MODE", "not a truth value"),
        ("CHUNK <= 2 or MODE", "not a truth value"),
    ],
)
def test_the_static_check_sees_past_short_circuits(text: str, words: str) -> None:
    problems = constraint_kind_problems({"CHUNK": [1, 2, 4], "MODE": ["lin", "exp"]}, [text])
    assert problems and words in problems[0], problems


def test_a_mixed_list_is_judged_at_each_point() -> None:
    space: dict[str, list[bool | int | float | str]] = {"CHUNK": [1, 2, "auto"]}
    good, bad = "CHUNK == 'auto' or CHUNK * 2 <= n", "CHUNK * 2 <= n or CHUNK == 'auto'"
    assert constraint_kind_problems(space, [good]) == constraint_kind_problems(space, [bad]) == []
    assert [why for _, why in grid_violations(space, [good], {"n": 2})] == [None, f"violates {good}", None]
    words = [why for _, why in grid_violations(space, [bad], {"n": 2})]
    assert words[2] is not None and words[2].startswith("cannot evaluate")


# ---- properties: the static check against evaluation ----

_NAMES = ["A", "B", "S", "T", "n"]  # A, B numbers; S strings; T truth values; n an axis
_KINDS = {
    "A": kinds_of_values([1]),
    "B": kinds_of_values([2.5]),
    "S": kinds_of_values(["x"]),
    "T": kinds_of_values([True]),
}
_ATOMS = st.sampled_from([*_NAMES, "0", "3", "'x'", "'y'", "True", "False", "2.5", "None", "1j"])


def _combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    ops = ["+", "*", "%", "//", "**", "<", "<=", "==", "!=", ">", " and ", " or ", " in ", " is "]
    return st.one_of(
        st.tuples(inner, st.sampled_from(ops), inner).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        inner.map(lambda a: f"(not {a})"),
        inner.map(lambda a: f"(-{a})"),
        st.tuples(st.sampled_from(["min", "max", "abs", "len"]), st.lists(inner, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
    )


_EXPRESSIONS = st.recursive(_ATOMS, _combine, max_leaves=12)
_VALUES = st.fixed_dictionaries(
    {
        "A": st.integers(-5, 5),
        "B": st.floats(-4, 4, allow_nan=False),
        "S": st.sampled_from(["x", "y", ""]),
        "T": st.booleans(),
        "n": st.integers(0, 9),
    }
)
# What evaluation may still raise on a statically sound expression: the arithmetic's own.
_VALUE_ERRORS = ("exponent too large", "cannot evaluate: ", "grows past", "complex")


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=_EXPRESSIONS, values=_VALUES)
def test_no_kind_error_escapes_the_static_check(text: str, values: dict[str, object]) -> None:
    """Names of one kind each: an expression the static check passes never raises a kind or
    whitelist error at any values of those kinds, whichever branch a short-circuit takes."""
    try:
        problems = kind_problems(text, _KINDS)
    except (SyntaxError, ConstraintError):
        return
    try:
        eval_expression(text, values)
    except ValueRangeError:
        return
    except ConstraintError as e:
        assert problems or any(w in str(e) for w in _VALUE_ERRORS), (text, str(e))
    except (ZeroDivisionError, OverflowError):
        return


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=_EXPRESSIONS, values=_VALUES)
def test_point_violation_never_raises(text: str, values: dict[str, object]) -> None:
    word = point_violation({k: v for k, v in values.items() if k != "n"}, [text], {"n": values["n"]})  # type: ignore[dict-item]
    assert word is None or word.startswith(("violates ", "cannot evaluate "))
