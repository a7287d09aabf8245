"""A safe evaluator of arithmetic over named integers: axis constraints and work expressions.

Definitions carry Python expressions over their axes: ``constraints``
(``num_heads % num_kv_heads == 0``) and the extension fields ``flops`` and ``bytes``
(``2 * M * N * K``). They are evaluated here by walking the AST with a whitelist: numbers,
names, arithmetic, comparisons, ``and``/``or``/``not`` and calls of ``min``/``max``/``abs``;
no ``eval``, no attribute access, nothing else.
"""

from __future__ import annotations

import ast
import difflib
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = [
    "BINARY_OPERATORS",
    "COMPARISONS",
    "ConstraintError",
    "constraint_names",
    "eval_expression",
    "eval_number",
    "expression_problem",
]


class ConstraintError(ValueError):
    """An expression uses syntax outside the safe subset, or a name with no value."""


BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCS: dict[str, Callable[..., float]] = {"min": min, "max": max, "abs": abs}


def constraint_names(text: str) -> set[str]:
    """Every bare name an expression reads (function names of calls excluded)."""
    tree = ast.parse(text, mode="eval")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def eval_expression(text: str, values: Mapping[str, int]) -> float | bool:
    """Evaluate an expression over named values, safely.

    Raises:
        SyntaxError: Not a Python expression.
        ConstraintError: Anything outside the whitelist, or a name with no value.
        ZeroDivisionError, OverflowError: From the arithmetic itself.
    """
    return _eval(ast.parse(text, mode="eval").body, values)


def eval_number(text: str, values: Mapping[str, int]) -> float:
    """A work expression's value: a finite number at least 0.

    Raises:
        ConstraintError: Disallowed syntax, an unknown name, or a value that is not a
            non-negative finite number (a comparison's truth value is not one).
        SyntaxError, ZeroDivisionError, OverflowError: As for :func:`eval_expression`.
    """
    value = eval_expression(text, values)
    if isinstance(value, bool):
        raise ConstraintError("gives a truth value, not a number")
    number = float(value)
    if not number >= 0 or number == float("inf"):
        raise ConstraintError(f"gives {number:g}, not a number >= 0")
    return number


def expression_problem(text: str, names: Collection[str], *, what: str = "axis") -> str | None:
    """Why ``text`` is not an arithmetic expression over ``names``, or ``None``.

    For messages at load time: a syntax error, a name that is not one of ``names`` (with a
    "did you mean"), or syntax outside the whitelist (found by evaluating with every name
    set to 2; errors of the arithmetic itself, such as a division by zero, are left to
    evaluation on real values).
    """
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        return f"not a Python expression: {text!r} ({e.msg})"
    unknown = sorted(constraint_names(text) - set(names))
    if unknown:
        bad = unknown[0]
        close = difflib.get_close_matches(bad, list(names), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(names) or "none"
        return f"unknown {what} {bad!r} in {text!r}{hint}; axes: {known}"
    try:
        _eval(tree.body, dict.fromkeys(names, 2))
    except ConstraintError as e:
        return f"{e} (in {text!r})"
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        pass
    return None


def _eval(node: ast.AST, values: Mapping[str, int]) -> float | bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ConstraintError(f"unknown name {node.id!r}")
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
        left, right = _eval(node.left, values), _eval(node.right, values)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ConstraintError("exponent too large")
        result: float = BINARY_OPERATORS[type(node.op)](left, right)
        return result
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
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        return _FUNCS[node.func.id](*(_eval(a, values) for a in node.args))
    raise ConstraintError(f"{type(node).__name__} is not allowed in an expression")
