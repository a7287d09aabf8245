"""Drawing valid index values into a materialized call (the rules: ``_index_rules``).

:func:`constrain` runs after the BackendBench policy filled every tensor of an input set: it
plans the call's index rules from the operator's schema argument names and the call's shapes,
and draws each index tensor again, on the host, from the same seeded generator (so the same
sweep seed gives the same indices on every machine), then copies the values into the tensor
on its device. A tensor whose elements share storage (a zero stride) gets, at each storage
element, the value of the first logical element that reads it. Integer tensors are never
varied before timed calls (``AtenCall.vary``), so the indices stay valid throughout.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

import sweep.engine.aten._index_types as ix
from sweep.engine.aten._aten_ops import resolve_op
from sweep.engine.aten._call_tree import storage_view, tensor_leaves
from sweep.engine.aten._index_rules import plan_fills
from sweep.errors import EngineError
from sweep.schema.call_args import ArgValue, parse_op_name

__all__ = ["constrain", "draw", "index_fills", "schema_args"]

_INT = (torch.int8, torch.int16, torch.int32, torch.int64)
#: Largest ``fibers * high`` for which distinct values are drawn as a sorted random matrix.
_ARGSORT_LIMIT = 1 << 24


@functools.lru_cache(maxsize=1024)
def schema_args(op: str) -> tuple[ix.SchemaArg, ...]:
    """The arguments of ``op``'s torch schema (names, keyword-only, defaults)."""
    overload = resolve_op(op)
    out = []
    for a in overload._schema.arguments:
        default = a.default_value if a.has_default_value() else None
        out.append(ix.SchemaArg(a.name, bool(a.kwarg_only), default))
    return tuple(out)


def index_fills(op: str | None, args: Sequence[ArgValue], kwargs: dict[str, ArgValue]) -> list[ix.Fill]:
    """The index rules of a described call (none for an unknown or index-free operator)."""
    if op is None:
        return []
    try:
        name = parse_op_name(op)
        schema = schema_args(op)
    except (ValueError, EngineError):
        return []
    return plan_fills(name, schema, args, kwargs)


def constrain(
    fills: Sequence[ix.Fill], args: Sequence[Any], kwargs: dict[str, Any], gen: torch.Generator
) -> None:
    """Draw every rule of ``fills`` into its integer tensor of a materialized call, in place."""
    if not fills:
        return
    if gen.device.type != "cpu":  # indices are drawn on the host, from the same seed
        gen = torch.Generator().manual_seed(gen.initial_seed())
    leaves = dict(tensor_leaves(args, kwargs))
    drawn: dict[str, torch.Tensor] = {}
    for fill in fills:
        t = leaves.get(fill.path)
        if t is None or t.layout != torch.strided or t.dtype not in _INT:
            continue
        values = draw(fill.rule, tuple(t.shape), gen, drawn)
        if values is None:
            continue
        info = torch.iinfo(t.dtype)
        values = values.clamp(info.min, info.max)
        if t.numel():
            _write(t, values)
        drawn[fill.path] = values.reshape(t.shape)  # empty ones too: later rules read them


def _write(t: torch.Tensor, values: torch.Tensor) -> None:
    if t.is_contiguous():
        t.copy_(values.reshape(t.shape))
        return
    # Where each logical element lives in the storage (numel positions, never the extent).
    where = torch.zeros((), dtype=torch.int64)
    for d, (n, st) in enumerate(zip(t.shape, t.stride())):
        where = where + (torch.arange(n) * st).view([-1 if i == d else 1 for i in range(t.dim())])
    where = where.reshape(-1)
    flat = values.reshape(-1)
    # The first logical element that reads each storage element gives its value.
    order = torch.argsort(where, stable=True)
    sorted_where = where[order]
    first = torch.ones_like(sorted_where, dtype=torch.bool)
    first[1:] = sorted_where[1:] != sorted_where[:-1]
    target = sorted_where[first].to(t.device)
    storage_view(t).index_copy_(0, target, flat[order[first]].to(t.device, t.dtype))


def draw(
    rule: ix.Rule, shape: tuple[int, ...], gen: torch.Generator, drawn: dict[str, torch.Tensor]
) -> torch.Tensor | None:
    """Host int64 values of ``shape`` for ``rule`` (``None``: the rule cannot be met, leave
    the tensor as drawn); ``drawn`` holds the values of earlier fills, by path."""
    n = 1
    for s in shape:
        n *= s
    if isinstance(rule, ix.Bound):
        if rule.high <= rule.low:
            return None
        return torch.randint(rule.low, rule.high, shape, generator=gen)
    if isinstance(rule, ix.Distinct):
        return _distinct(rule, shape, gen)
    if isinstance(rule, ix.Offsets):
        return _offsets(rule, n, gen)
    if isinstance(rule, ix.BagOf):
        return _bag_of(rule, n, gen, drawn)
    if isinstance(rule, ix.BagSize):
        bags = drawn.get(rule.bags_of)
        if bags is None:
            return None
        return torch.bincount(bags.reshape(-1), minlength=n)[:n]
    if isinstance(rule, ix.BagMax):
        return _bag_max(rule, shape, gen, drawn)
    if isinstance(rule, ix.Targets):
        return _targets(rule, shape, gen)
    if isinstance(rule, ix.Rows):
        if len(shape) != 2 or shape[0] != len(rule.highs) or min(rule.highs, default=1) <= 0:
            return None
        u = torch.rand(shape, generator=gen, dtype=torch.float64)
        highs = torch.tensor(rule.highs, dtype=torch.float64).unsqueeze(1)
        return (u * highs).floor().to(torch.int64)
    return _pool_window(rule, shape, gen)


def _distinct(rule: ix.Distinct, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor | None:
    if rule.high <= 0:
        return None
    dim = rule.dim if rule.dim is not None and shape else None
    k = shape[dim] if dim is not None else max(1, _numel(shape))
    if k > rule.high:
        return torch.randint(0, rule.high, shape, generator=gen)
    if dim is None:
        rows = _distinct_rows(1, k, rule.high, gen)
        return rows.reshape(shape)
    moved = [s for i, s in enumerate(shape) if i != dim]
    fibers = _numel(tuple(moved))
    rows = _distinct_rows(fibers, k, rule.high, gen).reshape(*moved, k)
    return rows.movedim(-1, dim)


def _distinct_rows(rows: int, k: int, high: int, gen: torch.Generator) -> torch.Tensor:
    """``rows`` rows of ``k`` distinct values in [0, high) each (``k <= high``)."""
    if rows * high <= _ARGSORT_LIMIT:
        return torch.rand(rows, high, generator=gen).argsort(dim=1)[:, :k]
    values = torch.randint(0, high, (rows, k), generator=gen)
    for _ in range(64):  # redraw the repeats; with k << high a round or two
        ordered, order = values.sort(dim=1)
        repeat = torch.zeros_like(values, dtype=torch.bool)
        repeat.scatter_(1, order[:, 1:], ordered[:, 1:] == ordered[:, :-1])
        count = int(repeat.sum())
        if count == 0:
            break
        values[repeat] = torch.randint(0, high, (count,), generator=gen)
    return values


def _offsets(rule: ix.Offsets, n: int, gen: torch.Generator) -> torch.Tensor:
    values = torch.randint(0, rule.total + 1, (n,), generator=gen).sort().values
    if n:
        values[0] = 0
    if rule.include_last and n:
        # One offset and include_last_offset: no bag, so no index may exist; [total] makes
        # torch refuse the call cleanly where [0] crashes its CPU kernel (mode max).
        values[-1] = rule.total
    return values


def _bag_of(
    rule: ix.BagOf, n: int, gen: torch.Generator, drawn: dict[str, torch.Tensor]
) -> torch.Tensor | None:
    if rule.offsets is None:
        if rule.bags <= 0:
            return None
        return torch.randint(0, rule.bags, (n,), generator=gen).sort().values
    offsets = drawn.get(rule.offsets)
    if offsets is None:
        return None
    return torch.searchsorted(offsets.reshape(-1), torch.arange(n), right=True) - 1


def _bag_max(
    rule: ix.BagMax, shape: tuple[int, ...], gen: torch.Generator, drawn: dict[str, torch.Tensor]
) -> torch.Tensor | None:
    bags, words = drawn.get(rule.bags_of), drawn.get(rule.indices)
    if bags is None or words is None or not shape:
        return None
    bags, words = bags.reshape(-1), words.reshape(-1)
    count = torch.bincount(bags, minlength=shape[0])[: shape[0]]
    start = torch.searchsorted(bags, torch.arange(shape[0]))
    u = torch.rand(shape, generator=gen, dtype=torch.float64)
    view = (-1,) + (1,) * (len(shape) - 1)
    pick = start.view(view) + (u * count.view(view)).floor().to(torch.int64)
    pick = pick.clamp(0, max(words.numel() - 1, 0))
    chosen = words[pick] if words.numel() else torch.zeros(shape, dtype=torch.int64)
    return torch.where(count.view(view) > 0, chosen, torch.zeros((), dtype=torch.int64))


def _targets(rule: ix.Targets, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor | None:
    if rule.classes <= 0:
        return None
    values = torch.randint(0, rule.classes, shape, generator=gen)
    ignore = torch.randint(0, 8, shape, generator=gen) == 0
    ignore.view(-1)[0] = False
    return torch.where(ignore, torch.full((), rule.ignore_index, dtype=torch.int64), values)


def _pool_window(rule: ix.PoolWindow, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor | None:
    k = len(rule.size)
    if len(shape) < k or min(rule.size, default=1) <= 0:
        return None
    flat = torch.zeros(shape, dtype=torch.int64)
    for i in range(k):
        out = shape[len(shape) - k + i]
        base = torch.arange(out) * rule.stride[i] - rule.padding[i]
        base = base.view((-1,) + (1,) * (k - 1 - i))
        offset = torch.randint(0, max(rule.kernel[i], 1), shape, generator=gen) * rule.dilation[i]
        pos = (base + offset).clamp(0, rule.size[i] - 1)
        flat = flat * rule.size[i] + pos
    return flat


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
