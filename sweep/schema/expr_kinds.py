"""A static check of an expression: every node allowed and every operation given values of
kinds it takes, read over the whole tree, so no short-circuit hides a branch.

Evaluation (:mod:`sweep.schema.expr`) raises only on what it reaches: in
``CHUNK <= 2 or MODE == 3`` the right side is never evaluated while ``CHUNK <= 2``. This check
knows the kinds each name may take (a parameter's listed values; an axis is a number) and
refuses what no value could make sense of: a string in arithmetic, a string ordered against a
number, two sides of ``==`` that can never be equal (a string compared with a number), a
function or syntax outside the whitelist. Where a name may take several kinds (a parameter
listing ``[64, "auto"]``) the operation may be fine for some values: evaluation at each point
says which (``sweep validate`` evaluates every point).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping

from sweep.errors import shown
from sweep.schema._value_kinds import kind_of
from sweep.schema.expr import BINARY_OPERATORS, COMPARISONS, ConstraintError, parse_expression

__all__ = ["NUMBER", "STRING", "TRUTH", "kind_problems", "kinds_of_values"]

NUMBER, TRUTH, STRING = "number", "truth value", "string"
_Kinds = frozenset[str]
_FUNCS = {"min", "max", "abs"}


def kinds_of_values(values: Collection[object]) -> _Kinds:
    """The kinds a parameter listing ``values`` may take."""
    return frozenset(kind_of(v) for v in values)


def _words(kinds: _Kinds) -> str:
    return " or ".join(sorted(kinds)) or "nothing"


class _Checker:
    """One walk of a tree, collecting problems (each once) and giving each node's kinds."""

    def __init__(self, kinds: Mapping[str, _Kinds], text: str) -> None:
        self.kinds, self.text, self.problems = kinds, text, list[str]()

    def problem(self, node: ast.AST, what: str) -> None:
        where = ast.get_source_segment(self.text, node) or self.text
        message = f"{what} (in {shown(where)})"
        if message not in self.problems:
            self.problems.append(message)

    def numeric(self, node: ast.expr, what: str) -> None:
        found = self.infer(node)
        if found and not found & {NUMBER, TRUTH}:
            self.problem(node, f"{what} needs numbers, and this is always a {_words(found)}")

    def infer(self, node: ast.expr) -> _Kinds:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)):
                return frozenset({kind_of(node.value)})
            self.problem(
                node, f"the constant {shown(node.value)} is not allowed (numbers, True, False, strings)"
            )
            return frozenset()
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id, frozenset({NUMBER}))
        if isinstance(node, ast.BinOp):
            if type(node.op) not in BINARY_OPERATORS:
                self.problem(node, f"the operator {type(node.op).__name__} is not allowed")
            for side in (node.left, node.right):
                self.numeric(side, f"the operator {type(node.op).__name__}")
            return frozenset({NUMBER})
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BoolOp):
            found: set[str] = set()
            for value in node.values:
                kinds = self.infer(value)
                if kinds == {STRING}:
                    self.problem(value, "a string is not a truth value (compare it: X == 'a')")
                found |= kinds - {STRING}
            return frozenset({TRUTH})
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        self.problem(node, f"{type(node).__name__} is not allowed in an expression")
        return frozenset()

    def _unary(self, node: ast.UnaryOp) -> _Kinds:
        if isinstance(node.op, ast.Not):
            if self.infer(node.operand) == {STRING}:
                self.problem(node, "a string is not a truth value (compare it: X == 'a')")
            return frozenset({TRUTH})
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            self.numeric(node.operand, "a sign")
            return frozenset({NUMBER})
        self.problem(node, f"{type(node.op).__name__} is not allowed in an expression")
        return frozenset()

    def _compare(self, node: ast.Compare) -> _Kinds:
        left_node, left = node.left, self.infer(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.infer(right_node)
            if type(op) not in COMPARISONS:
                self.problem(node, f"comparison {type(op).__name__} not allowed")
            elif left and right:
                pair = f"{shown(ast.get_source_segment(self.text, left_node))} ({_words(left)}) and " + (
                    f"{shown(ast.get_source_segment(self.text, right_node))} ({_words(right)})"
                )
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    if not left & right:
                        self.problem(node, f"{pair} are never equal: values of different kinds")
                elif not ({NUMBER} <= left and {NUMBER} <= right) and not (
                    {STRING} <= left and {STRING} <= right
                ):
                    self.problem(
                        node, f"{pair} cannot be ordered: ordering compares two numbers or two strings"
                    )
            left_node, left = right_node, right
        return frozenset({TRUTH})

    def _call(self, node: ast.Call) -> _Kinds:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _FUNCS or node.keywords:
            self.problem(node, f"the call {shown(ast.get_source_segment(self.text, node))} is not allowed")
            return frozenset()
        if name == "abs" and len(node.args) != 1:
            self.problem(node, f"abs() takes exactly one argument, got {len(node.args)}")
        if name != "abs" and len(node.args) < 2:
            self.problem(node, f"{name}() needs at least two arguments, got {len(node.args)}")
        for arg in node.args:
            self.numeric(arg, f"{name}()")
        return frozenset({NUMBER})


def kind_problems(text: str, kinds: Mapping[str, _Kinds]) -> list[str]:
    """What no value of the given kinds could evaluate in ``text``, each with the part of the
    text it is about (empty: nothing). ``kinds``: the kinds each name may take; a name not in
    it is an axis, a number. Syntax outside the whitelist anywhere in the tree is a problem
    too, as is a whole expression that is always a string (not a truth value).

    Raises:
        SyntaxError, ConstraintError: As for :func:`~sweep.schema.expr.parse_expression`.
    """
    tree = parse_expression(text)
    checker = _Checker(kinds, text)
    if checker.infer(tree.body) == {STRING}:
        checker.problem(tree.body, "gives a string, not a truth value")
    return checker.problems


def static_problem(text: str, kinds: Mapping[str, _Kinds]) -> str | None:
    """The first of :func:`kind_problems`, or a parse error, as one message; ``None``: none."""
    try:
        problems = kind_problems(text, kinds)
    except SyntaxError as e:
        return f"not a Python expression: {shown(text)} ({e.msg})"
    except ConstraintError as e:
        return f"{e}: {shown(text)}"
    return problems[0] if problems else None
