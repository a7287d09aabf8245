"""Parameter spaces of solutions: declaring, checking, expanding and sampling them.

A solution may carry the extension fields ``params`` (parameter name -> list of values, JSON
scalars) and ``params_constraints`` (expressions over the parameter names and the workload's
axes, evaluated by :mod:`sweep.schema.expr`). A *point* is one value per parameter; the entry
point receives it as keyword arguments. The *default point* is the first value of every list.

The grid is the product of the lists in declaration order (the last name varies fastest),
bounded by :data:`MAX_GRID_POINTS`; a point is valid for a workload when every constraint is
true with the point's values and the workload's axes.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Annotated

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from sweep.errors import did_you_mean, listing, shown
from sweep.schema.expr import ConstraintError, constraint_names, eval_expression, expression_problem
from sweep.schema.limits import INT64_MAX, INT64_MIN

__all__ = [
    "MAX_GRID_POINTS",
    "MAX_PARAM_CONSTRAINTS",
    "MAX_PARAM_NAMES",
    "MAX_PARAM_VALUES",
    "ParamValue",
    "Point",
    "constraint_name_problems",
    "default_point",
    "grid_points",
    "grid_size",
    "params_json",
    "point_violation",
    "sample_points",
    "space_problems",
]

#: The most parameters one solution may declare.
MAX_PARAM_NAMES = 32
#: The most values one parameter may list.
MAX_PARAM_VALUES = 1000
#: The most constraints of one parameter space.
MAX_PARAM_CONSTRAINTS = 64
#: The most points a space (the product of its lists) may have.
MAX_GRID_POINTS = 100_000
#: The longest string value of a parameter.
MAX_PARAM_STR = 200

#: One value of a parameter: a JSON scalar (booleans stay booleans, integers stay integers).
ParamValue = StrictBool | StrictInt | StrictFloat | Annotated[StrictStr, Field(max_length=MAX_PARAM_STR)]
#: One point of a space: a value per parameter name.
Point = dict[str, bool | int | float | str]


def grid_size(params: Mapping[str, Sequence[object]]) -> int:
    """How many points the product of the lists has (1 for no parameters)."""
    return math.prod(len(v) for v in params.values())


def space_problems(params: Mapping[str, Sequence[object]], constraints: Sequence[str]) -> list[str]:
    """What is wrong with a declared space, as messages naming the field (empty: nothing).

    Names must be identifiers, lists non-empty, of scalars, without repeats and bounded; the
    grid at most :data:`MAX_GRID_POINTS`; every constraint an expression of the safe evaluator.
    Which names a constraint may use depends on the definition (:func:`constraint_name_problems`).
    """
    problems: list[str] = []
    if len(params) > MAX_PARAM_NAMES:
        problems.append(f"params: at most {MAX_PARAM_NAMES} parameters, got {len(params)}")
    for name, values in params.items():
        if not name.isidentifier() or name.startswith("__"):
            problems.append(f"params: {shown(name)} is not a parameter name (a Python identifier)")
        if not values:
            problems.append(f"params.{name}: the list of values is empty (give at least one)")
        elif len(values) > MAX_PARAM_VALUES:
            problems.append(f"params.{name}: at most {MAX_PARAM_VALUES} values, got {len(values)}")
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX:
                problems.append(f"params.{name}: {shown(v)} is outside the 64-bit integer range")
            if isinstance(v, float) and not math.isfinite(v):
                problems.append(f"params.{name}: {shown(v)} is not a finite number")
        keys = [(type(v).__name__, repr(v)) for v in values]
        if len(set(keys)) != len(keys):
            problems.append(f"params.{name}: a value is listed twice")
    size = grid_size(params)
    if size > MAX_GRID_POINTS:
        sizes = " x ".join(str(len(v)) for v in params.values())
        problems.append(
            f"params: the grid has {size} points ({sizes}), more than {MAX_GRID_POINTS}; "
            "list fewer values or split the solution"
        )
    if len(constraints) > MAX_PARAM_CONSTRAINTS:
        problems.append(f"params_constraints: at most {MAX_PARAM_CONSTRAINTS}, got {len(constraints)}")
    for i, text in enumerate(constraints):
        problem = expression_problem(text, set(constraint_names_or_empty(text)) | set(params))
        if problem:
            problems.append(f"params_constraints[{i}]: {problem}")
    return problems


def constraint_names_or_empty(text: str) -> set[str]:
    """The names of an expression, or none when it does not parse (reported elsewhere)."""
    try:
        return constraint_names(text)
    except (SyntaxError, ConstraintError):
        return set()


def constraint_name_problems(
    params: Collection[str], constraints: Sequence[str], axes: Collection[str]
) -> list[str]:
    """Constraints naming something that is neither a parameter nor an axis of the definition
    (each with a "did you mean")."""
    known = sorted({*params, *axes})
    problems = []
    for i, text in enumerate(constraints):
        for name in sorted(constraint_names_or_empty(text) - set(known)):
            problems.append(
                f"params_constraints[{i}]: {shown(name)} in {shown(text)} is neither a parameter nor an "
                f"axis{did_you_mean(name, known)}; known: {listing(known)}"
            )
    return problems


def grid_points(params: Mapping[str, Sequence[bool | int | float | str]]) -> Iterator[Point]:
    """Every point of the grid, in order: the first point is the default point."""
    names = list(params)
    for values in itertools.product(*(params[n] for n in names)):
        yield dict(zip(names, values))


def default_point(params: Mapping[str, Sequence[bool | int | float | str]]) -> Point:
    """The first value of every list."""
    return {name: values[0] for name, values in params.items()}


def point_violation(
    point: Mapping[str, object], constraints: Sequence[str], axes: Mapping[str, int]
) -> str | None:
    """The first constraint ``point`` violates with ``axes``, as ``"violates <text>"`` (or
    ``"cannot evaluate <text>: ..."``); ``None`` when it satisfies them all."""
    values = {**axes, **point}
    for text in constraints:
        try:
            ok = eval_expression(text, values)  # type: ignore[arg-type]
        except (ConstraintError, SyntaxError, ZeroDivisionError, OverflowError, TypeError) as e:
            return f"cannot evaluate {text}: {e}"
        if not ok:
            return f"violates {text}"
    return None


def sample_points(points: Sequence[Point], max_points: int, seed: int | str) -> list[Point]:
    """A reproducible subset of at most ``max_points`` of ``points``, in their original order
    (all of them when there are no more); the same inputs always give the same subset."""
    if len(points) <= max_points:
        return list(points)
    chosen = sorted(random.Random(seed).sample(range(len(points)), max_points))
    return [points[i] for i in chosen]


def params_json(point: Mapping[str, object]) -> str:
    """A point as canonical JSON text: sorted keys, no spaces (a store column, an id part)."""
    return json.dumps(dict(point), sort_keys=True, separators=(",", ":"), allow_nan=False)
