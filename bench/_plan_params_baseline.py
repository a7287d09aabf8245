"""The parameter-space planning of main before issue 27 (commit ce014b8), kept callable as the
baseline of ``bench/plan_params.py``: every point of the grid checked against every
constraint by walking its syntax tree (the evaluator of ``sweep/schema/expr.py`` then, copied
here unchanged but for names), and every task built by validating a ``Task`` (which ran the
definition's and the solution's own validators again, per task) with its settings hashed
again per task.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sweep.errors import shown
from sweep.schema import Definition, Solution, Task, Workload
from sweep.schema.expr import (
    BINARY_OPERATORS,
    COMPARISONS,
    MAX_INT_BITS,
    ConstraintError,
    ValueRangeError,
    parse_expression,
)
from sweep.schema.params import grid_points, params_json
from sweep.schema.settings import EvalSettings
from sweep.schema.task import task_id

# The evaluator's guards as they were then (frozen here: the baseline must not follow main).
_MAX_EXPONENT = 64
_FUNCS = {"min": min, "max": max, "abs": abs}


def _checked(value: Any) -> float | bool:
    if type(value) is float:
        return value
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueRangeError(f"a value grows past {MAX_INT_BITS} bits")
    if isinstance(value, complex):
        raise ValueRangeError("gives a complex number (a fractional power of a negative number)")
    result: float | bool = value
    return result


def _call(name: str, args: list[float | bool]) -> float | bool:
    if name == "abs" and len(args) != 1:
        raise ConstraintError(f"abs() takes exactly one argument, got {len(args)}")
    if name != "abs" and len(args) < 2:
        raise ConstraintError(f"{name}() needs at least two arguments, got {len(args)}")
    return _checked(_FUNCS[name](*args))


__all__ = ["baseline_tasks"]


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> ast.Expression:
    return parse_expression(text)


def _eval(node: ast.AST, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ConstraintError(f"unknown name {shown(node.id)}")
        return _checked(values[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
        left, right = _eval(node.left, values), _eval(node.right, values)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ConstraintError("exponent too large")
        return _checked(BINARY_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, values)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Not):
            return not v
    if isinstance(node, ast.BoolOp):
        vals = (_eval(v, values) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in COMPARISONS:
                raise ConstraintError(f"comparison {type(op).__name__} not allowed")
            right = _eval(comp, values)
            if not COMPARISONS[type(op)](left, right):
                return False
            left = right
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("min", "max", "abs")
    ):
        return _call(node.func.id, [_eval(a, values) for a in node.args])
    raise ConstraintError(f"{type(node).__name__} is not allowed in an expression")


def _point_violation(
    point: Mapping[str, object], constraints: Sequence[str], axes: Mapping[str, int]
) -> str | None:
    values = {**axes, **point}
    for text in constraints:
        try:
            ok = _eval(_parsed(text).body, values)
        except (ConstraintError, SyntaxError, ZeroDivisionError, OverflowError, TypeError) as e:
            return f"cannot evaluate {text}: {e}"
        if not ok:
            return f"violates {text}"
    return None


def baseline_tasks(
    d: Definition,
    s: Solution,
    w: Workload,
    settings: EvalSettings,
    space: Mapping[str, Sequence[Any]],
    stride: int,
) -> list[tuple[str, str | None]]:
    """Every ``stride``-th point of ``space`` planned as main did: ``(point as JSON, why left
    out or None)``, a task validated for each point kept."""
    out: list[tuple[str, str | None]] = []
    axes = {**d.const_axes(), **w.axes}
    for n, point in enumerate(grid_points(space)):
        if n % stride:
            continue
        why = _point_violation(point, s.params_constraints or [], axes)
        if why is None:
            tid = task_id(d.name, s.content_hash, w.uuid, settings.settings_hash(), "CPU", point)
            Task(
                task_id=tid,
                definition=d,
                solution=s,
                workload=w,
                settings=settings,
                hardware="CPU",
                params=point,
            )
        out.append((params_json(point), why))
    return out
