"""A safe evaluator of arithmetic over named integers: axis constraints and work expressions.

Definitions carry Python expressions over their axes: ``constraints``
(``num_heads % num_kv_heads == 0``) and the extension fields ``flops`` and ``bytes``
(``2 * M * N * K``). They are evaluated here by walking the AST with a whitelist: numbers,
names, arithmetic, comparisons, ``and``/``or``/``not`` and calls of ``min``/``max``/``abs``;
no ``eval``, no attribute access, nothing else.

Every evaluation is fast and raises only the errors documented: an expression is at most
:data:`MAX_EXPRESSION_CHARS` long and :data:`MAX_EXPRESSION_DEPTH` deep (the walk is
recursive), an exponent is at most 64, and no value may grow past :data:`MAX_INT_BITS` bits
(``((d**64)**64)**64`` would otherwise take seconds and gigabytes).
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

from sweep.errors import did_you_mean, listing, shown

__all__ = [
    "BINARY_OPERATORS",
    "COMPARISONS",
    "CONSTRAINT_FUNCTIONS",
    "MAX_EXPRESSION_CHARS",
    "MAX_EXPRESSION_DEPTH",
    "MAX_INT_BITS",
    "ConstraintError",
    "ValueRangeError",
    "called_names",
    "constraint_names",
    "eval_expression",
    "eval_number",
    "expression_problem",
    "parse_expression",
]

#: The longest expression accepted (real constraints and work expressions are a line).
MAX_EXPRESSION_CHARS = 2000
#: The deepest syntax tree accepted: the evaluator and Python's parser recurse.
MAX_EXPRESSION_DEPTH = 100
#: The most bits an integer may have while an expression is evaluated.
MAX_INT_BITS = 512
_MAX_EXPONENT = 64
#: The functions a constraint on tensor values may call (the engine evaluates those).
CONSTRAINT_FUNCTIONS: frozenset[str] = frozenset({"len", "min", "max", "abs", "sum"})


class ConstraintError(ValueError):
    """An expression uses syntax outside the safe subset, or a name with no value."""


class ValueRangeError(ConstraintError):
    """An expression's value leaves the numbers it may compute: a complex number, an integer
    over :data:`MAX_INT_BITS` bits. Depends on the values, not on the syntax."""


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


def _depth(tree: ast.AST) -> int:
    """The depth of a syntax tree, walked iteratively (a deep tree must not recurse here)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def parse_expression(text: str) -> ast.Expression:
    """Parse one expression, refusing what is too long or too deep to handle safely.

    Raises:
        SyntaxError: Not a Python expression.
        ConstraintError: Longer than :data:`MAX_EXPRESSION_CHARS`, or nested deeper than
            :data:`MAX_EXPRESSION_DEPTH` (Python's own parser gives up on deep input with
            RecursionError or MemoryError; both are reported as this).
    """
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ConstraintError(f"longer than {MAX_EXPRESSION_CHARS} characters ({len(text):,})")
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError):
        # MemoryError here is the parser's fixed-size stack, not the machine's memory.
        raise ConstraintError(f"nested more than {MAX_EXPRESSION_DEPTH} levels deep") from None
    except ValueError as e:  # NUL bytes on some Python versions
        raise SyntaxError(str(e)) from None
    if _depth(tree) > MAX_EXPRESSION_DEPTH:
        raise ConstraintError(f"nested more than {MAX_EXPRESSION_DEPTH} levels deep")
    return tree


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> ast.Expression:
    """:func:`parse_expression`, remembered: a parameter sweep evaluates the same few
    constraints over many points (the tree is only read, never changed)."""
    return parse_expression(text)


def constraint_names(text: str) -> set[str]:
    """Every bare name an expression reads (function names of calls excluded).

    Raises:
        SyntaxError, ConstraintError: As for :func:`parse_expression`.
    """
    tree = parse_expression(text)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def called_names(text: str) -> set[str]:
    """The names of the functions an expression calls by name (``len(x)`` gives ``len``).

    Raises:
        SyntaxError, ConstraintError: As for :func:`parse_expression`.
    """
    tree = parse_expression(text)
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def eval_expression(text: str, values: Mapping[str, int]) -> float | bool:
    """Evaluate an expression over named values, safely and quickly.

    Raises:
        SyntaxError: Not a Python expression.
        ConstraintError: Anything outside the whitelist, a name with no value, a wrong
            number of arguments to ``min``/``max``/``abs``, an exponent over 64, or a value
            out of range (:class:`ValueRangeError`: complex, or an integer over
            :data:`MAX_INT_BITS` bits); also a text too long or too deep.
        ZeroDivisionError, OverflowError: From the arithmetic itself.
    """
    tree = _parsed(text)
    try:
        return _eval(tree.body, values)
    except TypeError as e:  # e.g. a value given as a string: not arithmetic
        raise ConstraintError(f"cannot evaluate: {e}") from None


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
        tree = parse_expression(text)
    except SyntaxError as e:
        return f"not a Python expression: {shown(text)} ({e.msg})"
    except ConstraintError as e:
        return f"{e}: {shown(text)}"
    unknown = sorted(constraint_names(text) - set(names))
    if unknown:
        bad = unknown[0]
        hint = did_you_mean(bad, names)
        return f"unknown {what} {shown(bad)} in {shown(text)}{hint}; axes: {listing(names)}"
    try:
        _eval(tree.body, dict.fromkeys(names, 2))
    except ValueRangeError:
        pass  # depends on the values: evaluation on real ones says so
    except ConstraintError as e:
        return f"{e} (in {shown(text)})"
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        pass
    return None


def _checked(value: Any) -> float | bool:
    """``value`` if it is a number the evaluator may hold; else :class:`ValueRangeError`."""
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueRangeError(f"a value grows past {MAX_INT_BITS} bits")
    if isinstance(value, complex):
        raise ValueRangeError("gives a complex number (a fractional power of a negative number)")
    result: float | bool = value
    return result


def _call(name: str, args: list[float | bool]) -> float | bool:
    # Python's min/max of one argument iterate over it, and of none raise TypeError.
    if name == "abs" and len(args) != 1:
        raise ConstraintError(f"abs() takes exactly one argument, got {len(args)}")
    if name != "abs" and len(args) < 2:
        raise ConstraintError(f"{name}() needs at least two arguments, got {len(args)}")
    return _checked(_FUNCS[name](*args))


def _eval(node: ast.AST, values: Mapping[str, int]) -> float | bool:
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
        # Operands hold at most MAX_INT_BITS bits and exponents at most 64, so this one
        # operation is fast whatever it gives; its result is bounded before the next.
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
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        return _call(node.func.id, [_eval(a, values) for a in node.args])
    if isinstance(node, ast.Constant):
        raise ConstraintError(f"the constant {shown(node.value)} is not allowed (only numbers)")
    raise ConstraintError(f"{type(node).__name__} is not allowed in an expression")
