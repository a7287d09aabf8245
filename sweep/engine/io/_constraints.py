"""Definition constraints checked on real inputs, by a whitelisting AST walker (never ``eval``).

A constraint such as ``num_kv_indices == kv_indptr[-1].item()`` reads tensor values, so it
can only be checked once inputs exist. Allowed: names bound to input tensors, scalar
inputs and axis sizes; number literals; subscripts (indices, slices, tuples of them);
``.shape`` and ``.ndim``; the methods ``item``, ``numel``, ``dim``, ``size``, ``sum``,
``min``, ``max``, ``all``, ``any``; arithmetic, comparisons, ``and``/``or``/``not``; the
functions ``len``, ``min``, ``max``, ``abs``, ``sum``. A comparison of tensors holds when
it holds for every element.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

import torch

from sweep.schema.expr import BINARY_OPERATORS, COMPARISONS, MAX_INT_BITS

__all__ = ["ConstraintError", "constraint_inputs", "evaluate_constraint"]

Value = object


class ConstraintError(ValueError):
    """A constraint uses syntax outside the safe subset, or cannot be evaluated."""


_FUNCS: dict[str, Callable[..., Value]] = {"len": len, "min": min, "max": max, "abs": abs, "sum": sum}
_METHODS = frozenset({"item", "numel", "dim", "size", "sum", "min", "max", "all", "any"})
_ATTRS = frozenset({"shape", "ndim"})
_MAX_POW = 64


def _truth(v: Value) -> bool:
    if isinstance(v, torch.Tensor):
        return bool(v.all().item())
    return bool(v)


def constraint_inputs(text: str, input_names: set[str]) -> set[str]:
    """The input names a constraint reads."""
    tree = ast.parse(text, mode="eval")
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in input_names}


def evaluate_constraint(text: str, names: Mapping[str, Value]) -> bool:
    """Evaluate ``text`` with ``names`` bound (tensors, scalars, axis sizes).

    Raises:
        ConstraintError: Disallowed syntax, an unknown name, or an error while evaluating
            (index out of range, division by zero, ...).
    """
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ConstraintError(f"not a Python expression: {e.msg}") from None
    try:
        return _truth(_eval(tree.body, names))
    except ConstraintError:
        raise
    except (IndexError, ZeroDivisionError, OverflowError, RuntimeError, TypeError, ValueError) as e:
        raise ConstraintError(f"{type(e).__name__}: {e}") from None


def _eval(node: ast.AST, names: Mapping[str, Value]) -> Value:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ConstraintError(f"unknown name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, names) for e in node.elts)
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        lo, hi, st = (None if p is None else _eval(p, names) for p in parts)
        return slice(lo, hi, st)
    if isinstance(node, ast.Subscript):
        return _eval(node.value, names)[_eval(node.slice, names)]  # type: ignore[index]
    if isinstance(node, ast.Attribute):
        if node.attr not in _ATTRS:
            raise ConstraintError(f"attribute .{node.attr} is not allowed (allowed: .shape, .ndim)")
        target = _eval(node.value, names)
        if not isinstance(target, torch.Tensor):
            raise ConstraintError(f".{node.attr} needs a tensor")
        return tuple(target.shape) if node.attr == "shape" else target.ndim
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_OPERATORS:
        left, right = _eval(node.left, names), _eval(node.right, names)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_POW:
            raise ConstraintError("exponent too large")
        if (
            isinstance(node.op, ast.Pow)
            and type(left) is int
            and type(right) is int
            and left.bit_length() * right > MAX_INT_BITS
        ):
            # A tower ((n**64)**64)**64 passes the exponent check at every step.
            raise ConstraintError(f"an integer past {MAX_INT_BITS} bits")
        value = BINARY_OPERATORS[type(node.op)](left, right)
        if type(value) is int and value.bit_length() > MAX_INT_BITS:
            raise ConstraintError(f"an integer past {MAX_INT_BITS} bits")
        return value
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, names)
        if isinstance(node.op, ast.USub):
            return operator.neg(v)  # type: ignore[arg-type]
        if isinstance(node.op, ast.UAdd):
            return operator.pos(v)  # type: ignore[arg-type]
        if isinstance(node.op, ast.Not):
            return not _truth(v)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_truth(_eval(v, names)) for v in node.values)
        return any(_truth(_eval(v, names)) for v in node.values)
    if isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in COMPARISONS:
                raise ConstraintError(f"comparison {type(op).__name__} is not allowed")
        left = _eval(node.left, names)
        if len(node.ops) == 1:  # kept as is, so ``(a >= b).all()`` works on the tensor
            return COMPARISONS[type(node.ops[0])](left, _eval(node.comparators[0], names))
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, names)
            if not _truth(COMPARISONS[type(op)](left, right)):
                return False
            left = right
        return True
    if isinstance(node, ast.Call) and not node.keywords:
        if isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
            return _FUNCS[node.func.id](*[_eval(a, names) for a in node.args])
        if isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS:
            target = _eval(node.func.value, names)
            if not isinstance(target, torch.Tensor):
                raise ConstraintError(f".{node.func.attr}() needs a tensor")
            return getattr(target, node.func.attr)(*[_eval(a, names) for a in node.args])
        raise ConstraintError(f"call of {ast.unparse(node.func)!r} is not allowed")
    raise ConstraintError(f"{type(node).__name__} is not allowed in a constraint")
