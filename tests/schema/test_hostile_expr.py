"""The safe evaluator under hostile expressions: only its documented errors, always fast."""

from __future__ import annotations

import ast
import math
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.schema.expr import (
    MAX_EXPRESSION_CHARS,
    MAX_EXPRESSION_DEPTH,
    MAX_INT_BITS,
    ConstraintError,
    ValueRangeError,
    eval_expression,
    eval_number,
    expression_problem,
)

from ..conftest import QUICK_S

pytestmark = pytest.mark.hostile

#: What eval_expression documents it may raise; anything else is a bug.
DOCUMENTED = (SyntaxError, ConstraintError, ZeroDivisionError, OverflowError)


def _refusal(text: str, values: dict[str, int] | None = None) -> BaseException:
    t0 = time.monotonic()
    with pytest.raises(DOCUMENTED) as info:
        eval_expression(text, values if values is not None else {"dim": 7})
    assert time.monotonic() - t0 < QUICK_S, "every evaluation must be fast"
    return info.value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("min()", "min() needs at least two arguments, got 0"),
        ("max(dim)", "max() needs at least two arguments, got 1"),
        ("abs(dim, dim)", "abs() takes exactly one argument, got 2"),
        ("abs()", "abs() takes exactly one argument, got 0"),
        ("min(*dim)", "Starred is not allowed in an expression"),
        ("(-1) ** 0.5 < 2", "gives a complex number (a fractional power of a negative number)"),
        ("dim < 1j", "the constant 1j is not allowed (numbers, True, False, strings)"),
        (
            "'a' < dim",
            "cannot order 'a' (string) against 7 (number) with <: ordering compares two numbers or two strings",
        ),
        ("'a' * dim", "the operator Mult needs numbers, got the string 'a'"),
        ("not 'a'", "the string 'a' is not a truth value (compare it: X == 'a')"),
        ("dim > 1 and 'a'", "the string 'a' is not a truth value (compare it: X == 'a')"),
        (
            "True < dim",
            "cannot order True (truth value) against 7 (number) with <: ordering compares two numbers or two strings",
        ),
        ("dim ** 65", "exponent too large"),
        ("dim.real", "Attribute is not allowed in an expression"),
        ("~dim", "UnaryOp is not allowed in an expression"),
    ],
)
def test_refusals_are_constraint_errors(text: str, message: str) -> None:
    err = _refusal(text)
    assert isinstance(err, ConstraintError)
    assert str(err) == message


@pytest.mark.parametrize("levels", [3, 5, 10, 40])
def test_a_power_tower_is_refused_fast(levels: int) -> None:
    text = "(" * (levels - 1) + "dim" + "**64)" * (levels - 1) + "**64"
    err = _refusal(text)
    assert isinstance(err, ValueRangeError)
    assert str(err) == f"a value grows past {MAX_INT_BITS} bits"


def test_a_product_that_grows_is_refused_fast() -> None:
    assert isinstance(_refusal("*".join(["dim"] * 40), {"dim": 2**62}), ValueRangeError)


@pytest.mark.parametrize(
    "text",
    ["1+" * 100_000 + "1", "dim+" * 600 + "dim", "-" * 1_000 + "1", "(" * 250 + "1" + ")" * 250],
)
def test_long_or_deep_expressions_are_refused(text: str) -> None:
    err = _refusal(text)
    assert isinstance(err, (ConstraintError, SyntaxError))
    assert len(str(err)) < 200
    if len(text) > MAX_EXPRESSION_CHARS:
        assert str(err) == f"longer than {MAX_EXPRESSION_CHARS} characters ({len(text):,})"


def test_deep_expression_message() -> None:
    assert str(_refusal("-" * 500 + "1")) == f"nested more than {MAX_EXPRESSION_DEPTH} levels deep"


def test_load_time_problems_are_clipped() -> None:
    problem = expression_problem("x" * 100_000, ["dim"])
    assert problem is not None
    assert len(problem) < 300
    assert problem.startswith("longer than 2000 characters")


def test_value_range_problems_wait_for_real_values() -> None:
    # With every axis at 2 this is complex; with real values it may not be, so the load-time
    # check leaves it to evaluation.
    assert expression_problem("(dim - 3) ** 0.5", ["dim"]) is None
    assert eval_number("(dim - 3) ** 0.5", {"dim": 7}) == 2.0


def test_real_work_expressions_still_evaluate() -> None:
    assert eval_number("2 * M * N * K", {"M": 4096, "N": 4096, "K": 4096}) == 2 * 4096**3
    assert eval_expression("num_heads % num_kv_heads == 0", {"num_heads": 32, "num_kv_heads": 8}) is True
    assert eval_expression("max(a, b, 3) - min(a, b)", {"a": 5, "b": 9}) == 4


# ---- properties: random expression trees over a whitelist-and-beyond grammar ----

_ATOMS = st.one_of(
    st.sampled_from(["dim", "n", "x", "1j", "'s'", "None", "True", "0", "0.0", "-1", "64", "1e308", "2**63"]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


def _combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(
        inner,
        st.sampled_from(
            ["+", "-", "*", "/", "//", "%", "**", "<", "==", ">=", " and ", " or ", " is ", " in ", "<<", "@"]
        ),
        inner,
    )
    call = st.tuples(
        st.sampled_from(["min", "max", "abs", "len", "sum", "eval"]), st.lists(inner, max_size=3)
    )
    return st.one_of(
        binary.map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        inner.map(lambda a: f"(-{a})"),
        inner.map(lambda a: f"(not {a})"),
        call.map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        inner.map(lambda a: f"{a}.real"),
        inner.map(lambda a: f"[{a}][0]"),
    )


_EXPRESSIONS = st.recursive(_ATOMS, _combine, max_leaves=25)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=_EXPRESSIONS, dim=st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_any_expression_gives_a_number_or_a_documented_error_quickly(text: str, dim: int) -> None:
    t0 = time.monotonic()
    try:
        value = eval_expression(text, {"dim": dim, "n": 3})
    except DOCUMENTED:
        pass
    else:
        assert isinstance(value, (bool, int, float, str))  # a string: a string constant, alone
        assert not isinstance(value, int) or value.bit_length() <= MAX_INT_BITS
    problem = expression_problem(text, ["dim", "n"])
    assert problem is None or len(problem) < 400
    assert time.monotonic() - t0 < QUICK_S


# ---- the compiled evaluator against the tree walker it replaced (issue 27, 9.8) ----


def _walk(node: ast.AST, values: dict[str, object]) -> object:
    """The evaluator before expressions were compiled (sweep.schema.expr._eval, as it was):
    the oracle that the compiled functions must agree with, result for result, error for error."""
    from sweep.errors import shown
    from sweep.schema.expr import _MAX_EXPONENT, BINARY_OPERATORS, COMPARISONS, _call, _checked

    def kind(v: object) -> str:
        return "truth value" if isinstance(v, bool) else "string" if isinstance(v, str) else "number"

    def num(v: object, what: str) -> object:
        if isinstance(v, str):
            raise ConstraintError(f"{what} needs numbers, got the string {shown(v)}")
        return v

    def truth(v: object) -> object:
        if isinstance(v, str):
            raise ConstraintError(f"the string {shown(v)} is not a truth value (compare it: X == 'a')")
        return v

    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool, str)):
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ConstraintError(f"unknown name {shown(node.id)}")
        return _checked(values[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
        what = f"the operator {type(node.op).__name__}"
        left, right = num(_walk(node.left, values), what), num(_walk(node.right, values), what)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:  # type: ignore[arg-type]
            raise ConstraintError("exponent too large")
        return _checked(BINARY_OPERATORS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        v = _walk(node.operand, values)
        if isinstance(node.op, ast.USub):
            return -num(v, "unary -")  # type: ignore[operator]
        if isinstance(node.op, ast.UAdd):
            return +num(v, "unary +")  # type: ignore[operator]
        if isinstance(node.op, ast.Not):
            return not truth(v)
    if isinstance(node, ast.BoolOp):
        vals = (truth(_walk(v, values)) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _walk(node.left, values)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in COMPARISONS:
                raise ConstraintError(f"comparison {type(op).__name__} not allowed")
            right = _walk(comp, values)
            if isinstance(op, (ast.Eq, ast.NotEq)):
                same = kind(left) == kind(right) and left == right
                holds = same if isinstance(op, ast.Eq) else not same
            else:
                if kind(left) != kind(right) or kind(left) == "truth value":
                    sign = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[type(op)]
                    raise ConstraintError(
                        f"cannot order {shown(left)} ({kind(left)}) against {shown(right)} ({kind(right)}) "
                        f"with {sign}: ordering compares two numbers or two strings"
                    )
                holds = COMPARISONS[type(op)](left, right)
            if not holds:
                return False
            left = right
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("min", "max", "abs")
        and not node.keywords
    ):
        return _call(node.func.id, [_walk(a, values) for a in node.args])  # type: ignore[misc]
    if isinstance(node, ast.Constant):
        raise ConstraintError(
            f"the constant {shown(node.value)} is not allowed (numbers, True, False, strings)"
        )
    raise ConstraintError(f"{type(node).__name__} is not allowed in an expression")


def _outcome(fn: Callable[[], object]) -> tuple[str, object]:
    try:
        value = fn()
    except TypeError as e:
        return ("TypeError", str(e))
    except (ConstraintError, ZeroDivisionError, OverflowError, ValueError) as e:
        return (type(e).__name__, str(e))
    if isinstance(value, float) and math.isnan(value):
        return ("nan", None)
    return (type(value).__name__, value)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(
    text=_EXPRESSIONS,
    dim=st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.sampled_from(["a", 0.5, True])),
)
def test_the_compiled_evaluator_agrees_with_the_tree_walker(text: str, dim: object) -> None:
    from sweep.schema.expr import compile_expression, parse_expression

    try:
        tree = parse_expression(text)
    except (SyntaxError, ConstraintError):
        return
    values = {"dim": dim, "n": 3}
    assert _outcome(lambda: compile_expression(text)(values)) == _outcome(lambda: _walk(tree.body, values)), (
        text
    )
