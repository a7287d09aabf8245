"""Parameter spaces: declared on a solution, checked at load, expanded, sampled."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sweep.schema import Solution
from sweep.schema.params import (
    MAX_GRID_POINTS,
    constraint_name_problems,
    default_point,
    grid_points,
    grid_size,
    params_json,
    point_violation,
    sample_points,
)
from sweep.schema.task import task_id
from sweep.schema.trace import Trace

from .conftest import SOLUTION

#: The suite's valid solution, its ``run`` taking a parameter.
BASE: dict[str, Any] = {
    **SOLUTION,
    "sources": [{"path": "main.py", "content": "def run(x, BLOCK=1):\n    return x\n"}],
}


def _sol(**extra: Any) -> Solution:
    return Solution.model_validate({**BASE, **extra})


def test_params_declared_and_round_trip() -> None:
    s = _sol(
        params={"BLOCK": [64, 128], "MODE": ["a", "b"], "F": [True], "X": [0.5]},
        params_constraints=["BLOCK <= n"],
    )
    assert s.param_space == {"BLOCK": [64, 128], "MODE": ["a", "b"], "F": [True], "X": [0.5]}
    assert json.loads(s.to_json())["params"]["F"] == [True]
    assert Solution.model_validate_json(s.to_json()) == s


def test_no_params_unchanged() -> None:
    s = _sol()
    assert "params" not in s.to_json_obj() and s.param_space == {}


def test_hash_covers_params_and_is_stable_without() -> None:
    plain = _sol()
    assert plain.content_hash == _sol(description="x").content_hash
    a = _sol(params={"BLOCK": [64, 128]})
    b = _sol(params={"BLOCK": [64, 256]})
    c = _sol(params={"BLOCK": [64, 128]}, params_constraints=["BLOCK <= 64"])
    assert len({plain.content_hash, a.content_hash, b.content_hash, c.content_hash}) == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"params": {"not a name": [1]}}, "not a parameter name"),
        ({"params": {"B": []}}, "empty"),
        ({"params": {"B": [1, 1]}}, "listed twice"),
        ({"params": {"B": [[1]]}}, "params.B"),
        ({"params": {"B": [float("nan")]}}, "finite"),
        ({"params": {f"P{i}": list(range(10)) for i in range(6)}}, f"more than {MAX_GRID_POINTS}"),
        ({"params": {"B": [1]}, "params_constraints": ["B <="]}, "not a Python expression"),
        ({"params": {"B": [1]}, "params_constraints": ["open(B)"]}, "params_constraints[0]"),
        ({"params_constraints": ["B < 1"]}, "without params"),
    ],
)
def test_bad_spaces_refused(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("(", r"\(")):
        _sol(**extra)


def test_constraint_names_did_you_mean() -> None:
    problems = constraint_name_problems(["BLOCK_M"], ["BLOCK_N <= M"], ["M", "N"])
    assert problems and "did you mean 'BLOCK_M'" in problems[0]
    assert constraint_name_problems(["BLOCK_M"], ["BLOCK_M <= M"], ["M"]) == []


def test_task_id_stable_without_params() -> None:
    before = task_id("d", "h", "w", "s", "CPU")
    assert task_id("d", "h", "w", "s", "CPU", None) == before
    assert task_id("d", "h", "w", "s", "CPU", {"B": 1}) != before
    assert task_id("d", "h", "w", "s", "CPU", {"B": 1}) != task_id("d", "h", "w", "s", "CPU", {"B": 2})
    # canonical: key order does not matter
    assert task_id("d", "h", "w", "s", "CPU", {"A": 1, "B": 2}) == task_id(
        "d", "h", "w", "s", "CPU", {"B": 2, "A": 1}
    )


def test_trace_solution_params_round_trip() -> None:
    line = {
        "definition": "d",
        "workload": {"uuid": "u", "axes": {}, "inputs": {}},
        "solution": "s",
        "evaluation": None,
    }
    plain = Trace.model_validate(line)
    assert "solution_params" not in plain.to_json_obj()
    t = Trace.model_validate({**line, "solution_params": {"B": 64, "F": True}})
    assert t.to_json_obj()["solution_params"] == {"B": 64, "F": True}


def test_default_point_and_order() -> None:
    space = {"A": [1, 2], "B": ["x", "y", "z"]}
    points = list(grid_points(space))
    assert points[0] == default_point(space) == {"A": 1, "B": "x"}
    assert len(points) == grid_size(space) == 6


def test_violation_names_the_constraint() -> None:
    assert point_violation({"B": 64}, ["B <= M"], {"M": 32}) == "violates B <= M"
    assert point_violation({"B": 16}, ["B <= M"], {"M": 32}) is None
    assert point_violation({"B": "x"}, ["B <= M"], {"M": 32}).startswith("cannot evaluate")  # type: ignore[union-attr]


spaces = st.dictionaries(
    st.sampled_from(["A", "B", "C", "D"]),
    st.lists(st.integers(1, 64), min_size=1, max_size=5, unique=True),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(space=spaces, limit=st.integers(1, 200))
def test_grid_and_constraint_property(space: dict[str, list[int]], limit: int) -> None:
    names = list(space)
    constraint = " * ".join(names) + f" <= {limit}"
    points = list(grid_points(space))
    assert len(points) == grid_size(space)
    assert len({params_json(p) for p in points}) == len(points)
    for p in points:
        product = 1
        for n in names:
            product *= p[n]  # type: ignore[operator]
        ok = point_violation(p, [constraint], {}) is None
        assert ok == (product <= limit)


@settings(max_examples=60, deadline=None)
@given(space=spaces, max_points=st.integers(1, 50), seed=st.integers(0, 2**32))
def test_sampler_property(space: dict[str, list[int]], max_points: int, seed: int) -> None:
    points = list(grid_points(space))
    valid = [p for p in points if point_violation(p, ["A * 1 >= 0"] if "A" in p else [], {}) is None]
    a = sample_points(valid, max_points, seed)
    assert a == sample_points(valid, max_points, seed)  # reproducible
    assert len(a) == min(max_points, len(valid))
    assert all(p in valid for p in a)
    keys = [params_json(p) for p in a]
    assert keys == sorted(keys, key=[params_json(p) for p in valid].index)  # grid order kept


# ---- the fast grid against the definition: point_violation of every point ----

_NAMES = ["a", "b", "c", "n"]  # "n" is also an axis: a parameter of that name hides it
_OPERANDS = [*_NAMES, "m", "q", "0", "2", "-1", "True", "'s'", "(a % 2)", "(1 / (b - 1))", "max(a, c)"]
_OPS = ["<", "<=", "==", "!=", " % ", " / ", " ** ", " and ", " or ", " < 3 <= "]
_VALUES = st.one_of(st.integers(-3, 5), st.booleans(), st.sampled_from(["x", 0.5, 2.0]))


@st.composite
def _spaces(draw: st.DrawFn) -> tuple[dict[str, list[object]], list[str], dict[str, int]]:
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4, unique=True))
    params: dict[str, list[object]] = {}
    for name in names:
        values = draw(st.lists(_VALUES, min_size=1, max_size=4, unique_by=lambda v: (type(v), repr(v))))
        params[name] = values
    made = st.builds(
        lambda x, op, y, neg: f"{'not ' if neg else ''}{x}{op}{y}",
        st.sampled_from(_OPERANDS),
        st.sampled_from(_OPS),
        st.sampled_from(_OPERANDS),
        st.booleans(),
    )
    odd = st.sampled_from(
        ["(", "a.real > 1", "a ** 100 > 1", "min(a) < 1", "q > 1 or a > 1", "a > 1 or q > 1"]
    )
    constraints = draw(st.lists(st.one_of(made, made, odd), max_size=6))
    axes = {"n": draw(st.integers(0, 4)), "m": draw(st.integers(-2, 4))}
    return params, constraints, axes


@settings(max_examples=400, deadline=None, derandomize=True)
@given(space=_spaces())
def test_grid_violations_answers_as_point_violation_for_every_point(
    space: tuple[dict[str, list[object]], list[str], dict[str, int]],
) -> None:
    from sweep.schema.params import grid_violations

    params, constraints, axes = space
    fast = list(grid_violations(params, constraints, axes))  # type: ignore[arg-type]
    slow = [(p, point_violation(p, constraints, axes)) for p in grid_points(params)]  # type: ignore[arg-type]
    assert [(json.dumps(p), w) for p, w in fast] == [(json.dumps(p), w) for p, w in slow]
