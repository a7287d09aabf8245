"""A safe evaluator of arithmetic over named values: axis constraints, work expressions and
the constraints of parameter spaces.

Definitions carry Python expressions over their axes: ``constraints``
(``num_heads % num_kv_heads == 0``) and the extension fields ``flops`` and ``bytes``
(``2 * M * N * K``). They are evaluated here by walking the AST with a whitelist: numbers,
names, arithmetic, comparisons, ``and``/``or``/``not`` and calls of ``min``/``max``/``abs``;
no ``eval``, no attribute access, nothing else. Values are of three kinds: numbers, truth values
and strings (a parameter may take any). Arithmetic, ``min``/``max``/``abs`` and ordering take
numbers (ordering: two strings too); ``==``/``!=`` compare any two values, values of different
kinds never equal (``True == 1`` is false here); ``and``/``or``/``not`` take no string. What
breaks these rules raises :class:`ConstraintError` when it is reached; a static check of the
kinds a name may take, which no short-circuit hides, is :mod:`sweep.schema.expr_kinds`. A text is parsed and made into nested
functions once (:func:`compile_expression`), then evaluated for as many values as needed.

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
from sweep.schema._value_kinds import RUN_COMPARISONS, ConstraintError, kind_of, need_number, need_truth

__all__ = [
    "BINARY_OPERATORS",
    "COMPARISONS",
    "CONSTRAINT_FUNCTIONS",
    "MAX_EXPRESSION_CHARS",
    "MAX_EXPRESSION_DEPTH",
    "MAX_INT_BITS",
    "Compiled",
    "ConstraintError",
    "ValueRangeError",
    "called_names",
    "compile_expression",
    "constraint_names",
    "eval_expression",
    "eval_number",
    "expression_problem",
    "kind_of",
    "parse_expression",
    "refuse_strings",
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


#: An expression made ready to evaluate: called with the values of its names.
Compiled = Callable[[Mapping[str, Any]], Any]


@functools.lru_cache(maxsize=1024)
def compile_expression(text: str) -> Compiled:
    """:func:`parse_expression`, then the tree made into nested functions once, remembered:
    a parameter sweep evaluates the same few constraints over 100,000 points, and walking the
    tree again for each (a test of its type at every node) was most of the time.

    The function it gives evaluates exactly as the tree is read: the same results, the same
    errors at the same moment (an operation outside the whitelist raises only when it is
    reached: ``and``/``or`` stop early), and a ``TypeError`` of the arithmetic is left to the
    caller (:func:`eval_expression` words it).

    Raises:
        SyntaxError, ConstraintError: As for :func:`parse_expression`.
    """
    return _compile(parse_expression(text).body)


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


def eval_expression(text: str, values: Mapping[str, object]) -> float | bool | str:
    """Evaluate an expression over named values, safely and quickly.

    Raises:
        SyntaxError: Not a Python expression.
        ConstraintError: Anything outside the whitelist, a name with no value, a wrong
            number of arguments to ``min``/``max``/``abs``, an exponent over 64, or a value
            out of range (:class:`ValueRangeError`: complex, or an integer over
            :data:`MAX_INT_BITS` bits); also a text too long or too deep.
        ZeroDivisionError, OverflowError: From the arithmetic itself.
    """
    run = compile_expression(text)
    try:
        result: float | bool | str = run(values)
    except TypeError as e:  # e.g. a value given as a string: not arithmetic
        raise ConstraintError(f"cannot evaluate: {e}") from None
    return result


def refuse_strings(text: str) -> None:
    """Refuse a string constant anywhere in ``text``: axes and work expressions are numbers
    (only a parameter space's constraints compare strings).

    Raises:
        SyntaxError, ConstraintError: As for :func:`parse_expression`; a string constant.
    """
    for node in ast.walk(parse_expression(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            raise ConstraintError(f"the constant {shown(node.value)} is not allowed (axes are numbers)")


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
    if isinstance(value, str):
        raise ConstraintError(f"gives the string {shown(value)}, not a number")
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
        _compile(tree.body)(dict.fromkeys(names, 2))
    except ValueRangeError:
        pass  # depends on the values: evaluation on real ones says so
    except ConstraintError as e:
        return f"{e} (in {shown(text)})"
    except (ZeroDivisionError, OverflowError, ValueError, TypeError):
        pass
    try:
        refuse_strings(text)
    except ConstraintError as e:
        return f"{e} (in {shown(text)})"
    return None


def _checked(value: Any) -> float | bool | str:
    """``value`` if it is a value the evaluator may hold; else :class:`ValueRangeError`."""
    if type(value) is float or type(value) is str:  # the common cases first: called at every node
        return value
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueRangeError(f"a value grows past {MAX_INT_BITS} bits")
    if isinstance(value, complex):
        raise ValueRangeError("gives a complex number (a fractional power of a negative number)")
    result: float | bool | str = value
    return result


def _call(name: str, args: list[float | bool | str]) -> float | bool | str:
    # Python's min/max of one argument iterate over it, and of none raise TypeError.
    if name == "abs" and len(args) != 1:
        raise ConstraintError(f"abs() takes exactly one argument, got {len(args)}")
    if name != "abs" and len(args) < 2:
        raise ConstraintError(f"{name}() needs at least two arguments, got {len(args)}")
    return _checked(_FUNCS[name](*[need_number(a, f"{name}()") for a in args]))


def _raises(error: ConstraintError) -> Compiled:
    """A function that raises (a new) ``error`` when called: what is refused is refused when
    reached. A new one each time: raising one instance again would grow its traceback."""
    kind, message = type(error), str(error)

    def run(values: Mapping[str, Any]) -> Any:
        raise kind(message)

    return run


def _constant(value: object) -> Compiled:
    try:
        checked = _checked(value)
    except ConstraintError as e:  # an integer over MAX_INT_BITS: refused when reached
        return _raises(e)
    return lambda values: checked


def _name(name: str) -> Compiled:
    unknown = f"unknown name {shown(name)}"

    def run(values: Mapping[str, Any]) -> Any:
        if name not in values:
            raise ConstraintError(unknown)
        return _checked(values[name])

    return run


def _binary(node: ast.BinOp) -> Compiled:
    left, right = _compile(node.left), _compile(node.right)
    op = BINARY_OPERATORS[type(node.op)]
    if isinstance(node.op, ast.Pow):

        def power(values: Mapping[str, Any]) -> Any:
            a, b = (
                need_number(left(values), "the operator Pow"),
                need_number(right(values), "the operator Pow"),
            )
            if abs(b) > _MAX_EXPONENT:
                raise ConstraintError("exponent too large")
            return _checked(op(a, b))

        return power
    what = f"the operator {type(node.op).__name__}"
    # Operands hold at most MAX_INT_BITS bits and exponents at most 64, so this one
    # operation is fast whatever it gives; its result is bounded before the next. Strings
    # are refused ('a' * 3 and 'a' + 'b' are no arithmetic).
    return lambda values: _checked(op(need_number(left(values), what), need_number(right(values), what)))


def _unary(node: ast.UnaryOp) -> Compiled:
    operand = _compile(node.operand)
    if isinstance(node.op, ast.USub):
        return lambda values: -need_number(operand(values), "unary -")
    if isinstance(node.op, ast.UAdd):
        return lambda values: +need_number(operand(values), "unary +")
    if isinstance(node.op, ast.Not):
        return lambda values: not need_truth(operand(values))

    def other(values: Mapping[str, Any]) -> Any:
        operand(values)  # evaluated first, as the tree is read
        raise ConstraintError("UnaryOp is not allowed in an expression")

    return other


def _compare(node: ast.Compare) -> Compiled:
    first = _compile(node.left)
    steps: list[tuple[Callable[[Any, Any], Any] | None, Compiled | None, str]] = []
    for op, comp in zip(node.ops, node.comparators):
        allowed = RUN_COMPARISONS.get(type(op))
        # An operator outside the whitelist raises before its right side is evaluated.
        steps.append((allowed, _compile(comp) if allowed is not None else None, type(op).__name__))

    def run(values: Mapping[str, Any]) -> Any:
        left = first(values)
        for allowed, right_of, name in steps:
            if allowed is None or right_of is None:
                raise ConstraintError(f"comparison {name} not allowed")
            right = right_of(values)
            if not allowed(left, right):
                return False
            left = right
        return True

    return run


def _compile(node: ast.AST) -> Compiled:
    """One node of a parsed expression as a function of the values (see
    :func:`compile_expression`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str)):
        return _constant(node.value)
    if isinstance(node, ast.Name):
        return _name(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
        return _binary(node)
    if isinstance(node, ast.UnaryOp):
        return _unary(node)
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda values: all(need_truth(p(values)) for p in parts)
        return lambda values: any(need_truth(p(values)) for p in parts)
    if isinstance(node, ast.Compare):
        return _compare(node)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        args, fname = [_compile(a) for a in node.args], node.func.id
        return lambda values: _call(fname, [a(values) for a in args])
    if isinstance(node, ast.Constant):
        return _raises(
            ConstraintError(
                f"the constant {shown(node.value)} is not allowed (numbers, True, False, strings)"
            )
        )
    return _raises(ConstraintError(f"{type(node).__name__} is not allowed in an expression"))
