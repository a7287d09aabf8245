"""The kinds of values the expression evaluator holds, and its operations that check them.

Numbers (truth values count, as in Python), truth values and strings: arithmetic and
``min``/``max``/``abs`` take numbers; ordering takes two numbers or two strings; ``==`` and
``!=`` take any two values, and values of different kinds are never equal; ``and``, ``or`` and
``not`` take no string. :mod:`sweep.schema.expr` calls these as it evaluates.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from sweep.errors import shown

__all__ = ["RUN_COMPARISONS", "ConstraintError", "kind_of", "need_number", "need_truth"]


class ConstraintError(ValueError):
    """An expression uses syntax outside the safe subset, a name with no value, or a value of
    the wrong kind (re-exported by :mod:`sweep.schema.expr`, where callers take it from)."""


def kind_of(value: object) -> str:
    """The kind of a value as messages name it: ``number``, ``truth value`` or ``string``."""
    if isinstance(value, bool):
        return "truth value"
    if isinstance(value, str):
        return "string"
    return "number"


def need_number(value: Any, what: str) -> Any:
    """``value`` if it is a number (a truth value counts, as in Python); else ConstraintError."""
    if isinstance(value, str):
        raise ConstraintError(f"{what} needs numbers, got the string {shown(value)}")
    return value


def need_truth(value: Any) -> Any:
    """``value`` if it may stand as a truth value (a number or truth value, not a string)."""
    if isinstance(value, str):
        raise ConstraintError(f"the string {shown(value)} is not a truth value (compare it: X == 'a')")
    return value


def _equal(a: Any, b: Any) -> bool:
    """``==`` of the evaluator: values of different kinds are never equal."""
    return kind_of(a) == kind_of(b) and bool(a == b)


def _ordered(op: Callable[[Any, Any], Any], name: str) -> Callable[[Any, Any], Any]:
    """An ordering comparison over two numbers or two strings, else ConstraintError."""

    def compare(a: Any, b: Any) -> Any:
        ka, kb = kind_of(a), kind_of(b)
        if ka != kb or ka == "truth value":
            raise ConstraintError(
                f"cannot order {shown(a)} ({ka}) against {shown(b)} ({kb}) with {name}: "
                "ordering compares two numbers or two strings"
            )
        return op(a, b)

    return compare


RUN_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: _equal,
    ast.NotEq: lambda a, b: not _equal(a, b),
    ast.Lt: _ordered(operator.lt, "<"),
    ast.LtE: _ordered(operator.le, "<="),
    ast.Gt: _ordered(operator.gt, ">"),
    ast.GtE: _ordered(operator.ge, ">="),
}
