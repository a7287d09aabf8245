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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Annotated

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from sweep.errors import did_you_mean, listing, shown
from sweep.schema.expr import (
    ConstraintError,
    compile_expression,
    constraint_names,
    eval_expression,
)
from sweep.schema.expr_kinds import kinds_of_values, static_problem
from sweep.schema.limits import INT64_MAX, INT64_MIN

__all__ = [
    "CANNOT_EVALUATE",
    "MAX_GRID_POINTS",
    "MAX_PARAM_CONSTRAINTS",
    "MAX_PARAM_NAMES",
    "MAX_PARAM_VALUES",
    "ParamValue",
    "Point",
    "constraint_kind_problems",
    "constraint_name_problems",
    "default_point",
    "grid_points",
    "grid_size",
    "grid_violations",
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
#: How the word of a point whose constraint cannot be evaluated starts (never a violation:
#: the plan refuses such a point rather than leave it out).
CANNOT_EVALUATE = "cannot evaluate "
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
    problems.extend(constraint_kind_problems(params, constraints))
    return problems


def constraint_kind_problems(params: Mapping[str, Sequence[object]], constraints: Sequence[str]) -> list[str]:
    """Each constraint that does not parse, uses syntax outside the whitelist anywhere (no
    short-circuit hides a branch), or does what no value of the kinds each parameter lists
    could evaluate (a string in arithmetic, a string ordered against a number, two sides of
    ``==`` that are never equal): :func:`~sweep.schema.expr_kinds.static_problem`. Names that
    are no parameter are axes, numbers."""
    kinds = {name: kinds_of_values(values) for name, values in params.items()}
    problems = []
    for i, text in enumerate(constraints):
        problem = static_problem(text, kinds)
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
            ok = eval_expression(text, values)
        except (ConstraintError, SyntaxError, ZeroDivisionError, OverflowError, TypeError) as e:
            return f"{CANNOT_EVALUATE}{text}: {e}"
        if not ok:
            return f"violates {text}"
    return None


_EVAL_ERRORS = (ConstraintError, SyntaxError, ZeroDivisionError, OverflowError, TypeError)


def _judge(text: str) -> Callable[[Mapping[str, object]], str | None]:
    """``text`` as a function of the values: :func:`point_violation`'s word for one constraint
    (``None``, ``"violates ..."`` or ``"cannot evaluate ...: ..."``), the text compiled once."""
    try:
        run = compile_expression(text)
    except (ConstraintError, SyntaxError) as e:
        word = f"{CANNOT_EVALUATE}{text}: {e}"
        return lambda values: word

    def judge(values: Mapping[str, object]) -> str | None:
        try:
            ok = run(values)
        except TypeError as e:  # as eval_expression words it
            return f"{CANNOT_EVALUATE}{text}: cannot evaluate: {e}"
        except _EVAL_ERRORS as e:
            return f"{CANNOT_EVALUATE}{text}: {e}"
        return None if ok else f"violates {text}"

    return judge


#: The most answers remembered per constraint (one per combination of the values it reads).
_MEMO_ENTRIES = 1 << 16
_Judged = tuple[int, str] | None


def _remembered(
    judge: Callable[[Mapping[str, object]], str | None],
    values: Mapping[str, object],
    at: Sequence[int],
    read: Sequence[int],
    sizes: Sequence[int],
) -> Callable[[], str | None]:
    """``judge`` of the current ``values``, its answer remembered by which value of each
    parameter it reads is bound (their indices, ``at[k]`` for ``k`` in ``read``) where that
    saves evaluations: a constraint on the last parameter alone is then evaluated once per
    value of it, not once per point. ``sizes``: the length of every parameter's list."""
    combos = math.prod(sizes[k] for k in read)
    prefixes = math.prod(sizes[: read[-1] + 1]) if read else 1  # evaluations without a memory
    if combos >= prefixes or combos > _MEMO_ENTRIES:
        return lambda: judge(values)
    memo: dict[tuple[int, ...], str | None] = {}

    def answer() -> str | None:
        key = tuple([at[k] for k in read])
        if key not in memo:
            memo[key] = judge(values)
        return memo[key]

    return answer


def grid_violations(
    params: Mapping[str, Sequence[bool | int | float | str]],
    constraints: Sequence[str],
    axes: Mapping[str, int],
) -> Iterator[tuple[Point, str | None]]:
    """Every point of the grid in order (:func:`grid_points`) with :func:`point_violation`'s
    answer for it (the first constraint it breaks, or ``None``), fast.

    Each constraint is compiled once and evaluated as soon as the parameters it reads are
    bound (in declaration order): once per distinct prefix of the grid, or once per
    combination of the values it reads when there are fewer, rather than once per point.
    Once a prefix breaks a constraint, only constraints listed before that one are still
    evaluated below it, and where none are left the points under it take its word
    unevaluated. The answers are :func:`point_violation`'s, point for point.
    """
    names = list(params)
    sizes = [len(params[n]) for n in names]
    position = {n: i for i, n in enumerate(names)}
    values: dict[str, object] = dict(axes)
    at: list[int] = []  # the index in its list of each bound parameter's value
    chosen: list[bool | int | float | str] = []
    # levels[k]: the constraints whose last parameter read is names[k - 1] (level 0: none read,
    # axes only or not parsed: one word for every point), in the order listed.
    levels: list[list[tuple[int, Callable[[], str | None]]]] = [[] for _ in range(len(names) + 1)]
    for i, text in enumerate(constraints):
        read = sorted({position[n] for n in constraint_names_or_empty(text) if n in position})
        levels[read[-1] + 1 if read else 0].append((i, _remembered(_judge(text), values, at, read, sizes)))
    # first_from[k]: the first constraint listed of those of levels k and after.
    first_from = [
        min((i for lv in levels[k:] for i, _ in lv), default=len(constraints)) for k in range(len(names) + 2)
    ]

    def judged(level: int, broken: _Judged) -> _Judged:
        for i, judge in levels[level]:
            if broken is not None and i > broken[0]:
                break  # listed after the constraint already broken: cannot come first
            word = judge()
            if word is not None:
                return (i, word)
        return broken

    def walk(depth: int, broken: _Judged) -> Iterator[tuple[Point, str | None]]:
        if depth == len(names):
            yield dict(zip(names, chosen)), (broken[1] if broken is not None else None)
            return
        if first_from[depth + 1] > (broken[0] if broken is not None else len(constraints)):
            # No constraint below can come before the one broken here (or, none broken, there
            # is none below): every point under this prefix has the same answer.
            word = broken[1] if broken is not None else None
            for rest in itertools.product(*(params[n] for n in names[depth:])):
                yield dict(zip(names, (*chosen, *rest))), word
            return
        name = names[depth]
        for index, value in enumerate(params[name]):
            values[name] = value
            chosen.append(value)
            at.append(index)
            yield from walk(depth + 1, judged(depth + 1, broken))
            at.pop()
            chosen.pop()
        if name in axes:  # a parameter named like an axis hid it while bound
            values[name] = axes[name]
        else:
            values.pop(name, None)

    yield from walk(0, judged(0, None))


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
