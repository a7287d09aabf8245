"""Which integer arguments of an ATen call are indices, and into what: valid index inputs.

BackendBench's value policy draws integers uniformly in [-9, 10): fine for a shift or a
count, wrong for an index (negative, or past the size it indexes), so index-taking operators
rejected those inputs or, on a GPU, read out of bounds. Here each operator family names its
index arguments by their schema names, and the bound of each comes from the call itself (the
shape of the tensor indexed, an ``int`` argument such as ``num_weights``, a size list):

the rules per family are the functions below (``_along_dim``: gather, scatter, index_select,
...; ``_index_list``: index, index_put; ``_bags``: embedding_bag and its backwards;
``_classes``: nll_loss and the margin losses; ``_sparse``; ``_pool_window``, ``_pool_plane``),
tabulated in docs/backendbench.md ("BackendBench import", *Inputs*). Where writes to one element would
race (scatter.src, index_copy, put and index_put without ``accumulate``), the indices are
distinct, so the result does not depend on the order of the writes.

This module only plans (pure: argument descriptions in, :class:`Fill` rules out); the values
are drawn by ``_index_draw`` from the input set's seeded generator. Floating arguments keep
BackendBench's policy (and get fresh values before timed calls): no family here constrains
one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from sweep.engine.aten._index_types import (
    BagMax,
    BagOf,
    BagSize,
    Bound,
    Distinct,
    Fill,
    Offsets,
    PoolWindow,
    Rows,
    Rule,
    SchemaArg,
    Targets,
)
from sweep.schema.call_args import ArgValue, OpName, TensorArg, TupleArg

__all__ = ["family", "plan_fills"]

_INDEX_DTYPES = frozenset({"int8", "int16", "int32", "int64"})


class _Call:
    """A call's arguments by schema name, with their paths; defaults where not passed."""

    def __init__(
        self, op: OpName, schema: Sequence[SchemaArg], args: Sequence[ArgValue], kwargs: dict[str, ArgValue]
    ):
        self.op = op
        self.names = {a.name for a in schema}
        self.defaults = {a.name: a.default for a in schema}
        self.bound: dict[str, tuple[str, ArgValue]] = {}
        positional = [a for a in schema if not a.kwarg_only]
        for i, value in enumerate(args[: len(positional)]):
            self.bound[positional[i].name] = (f"args[{i}]", value)
        for key, value in kwargs.items():
            self.bound[key] = (f"kwargs[{key!r}]", value)

    def value(self, name: str) -> object:
        return self.bound[name][1] if name in self.bound else self.defaults.get(name)

    def path(self, name: str) -> str:
        return self.bound[name][0] if name in self.bound else ""

    def tensor(self, name: str) -> TensorArg | None:
        v = self.value(name)
        return v if isinstance(v, TensorArg) else None

    def index(self, name: str) -> TensorArg | None:
        """The argument ``name`` when it is a passed integer tensor (an index)."""
        t = self.tensor(name)
        return t if t is not None and t.dtype in _INDEX_DTYPES and name in self.bound else None

    def integer(self, name: str) -> int | None:
        v = self.value(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def ints(self, name: str) -> tuple[int, ...]:
        v = self.value(name)
        items = v.items if isinstance(v, TupleArg) else v
        if not isinstance(items, (list, tuple)):
            return ()
        out = tuple(x for x in items if isinstance(x, int) and not isinstance(x, bool))
        return out if len(out) == len(items) else ()


def _size(t: TensorArg, dim: int) -> int | None:
    """``t.size(dim)`` (a 0-d tensor has one element along dims 0 and -1), or ``None``."""
    rank = max(len(t.shape), 1)
    if not -rank <= dim < rank:
        return None
    return t.shape[dim % rank] if t.shape else 1


def _along_dim(c: _Call) -> list[Fill]:
    """``index`` in [0, self.size(dim)); distinct along ``dim`` where writes race."""
    src, idx, dim = c.tensor("self"), c.index("index"), c.integer("dim")
    if src is None or idx is None or dim is None:
        return []
    high = _size(src, dim)
    if high is None:
        return []
    writes = (
        c.op.packet == "scatter" and "src" in c.names and "reduce" not in c.names
    ) or c.op.packet.startswith("index_copy")
    if writes:
        along = dim % max(len(idx.shape), 1) if idx.shape else None
        return [Fill(c.path("index"), Distinct(high, along))]
    return [Fill(c.path("index"), Bound(high))]


def _broadcast_numel(shapes: list[tuple[int, ...]]) -> int:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate(s):
            j = rank - len(s) + i
            out[j] = n if out[j] == 1 else out[j]
    return math.prod(out)


def _index_list(c: _Call) -> list[Fill]:
    """Each integer tensor of ``indices`` in [0, self.size(d)) for the dimension d it indexes
    (``None`` skips one, a bool/uint8 mask covers its rank); a put without ``accumulate``: one
    index tensor as large as their broadcast shape is distinct."""
    src, indices = c.tensor("self"), c.value("indices")
    if src is None or not isinstance(indices, list):
        return []
    fills: list[Fill] = []
    dim = 0
    base = c.path("indices")
    for k, entry in enumerate(indices):
        if not isinstance(entry, TensorArg):
            dim += 1
            continue
        if entry.dtype not in _INDEX_DTYPES:  # a bool (or uint8) mask covers its own rank
            dim += max(len(entry.shape), 1)
            continue
        high = _size(src, dim)
        if high is not None:
            fills.append(Fill(f"{base}[{k}]", Bound(high)))
        dim += 1
    puts = c.op.packet.rstrip("_").endswith(("index_put", "index_put_impl"))
    if puts and not c.value("accumulate") and fills:
        tensors = {f"{base}[{k}]": e for k, e in enumerate(indices) if isinstance(e, TensorArg)}
        total = _broadcast_numel([t.shape for t in tensors.values()])
        for i, f in enumerate(fills):
            assert isinstance(f.rule, Bound)
            if tensors[f.path].numel == total <= f.rule.high:
                fills[i] = Fill(f.path, Distinct(f.rule.high, None))
                break
    return fills


def _flat(c: _Call) -> list[Fill]:
    """``index`` in [0, self.numel()) (put without ``accumulate``: distinct)."""
    src, idx = c.tensor("self"), c.index("index")
    if src is None or idx is None:
        return []
    distinct = c.op.packet.startswith("put") and not c.value("accumulate")
    return [Fill(c.path("index"), Distinct(src.numel, None) if distinct else Bound(src.numel))]


def _embedding(c: _Call) -> list[Fill]:
    """``indices`` in [0, num_weights), or the rows of ``weight`` (``self`` for renorm)."""
    table = c.tensor("weight") or c.tensor("self")
    high = c.integer("num_weights")
    if high is None and table is not None and table.shape:
        high = table.shape[0]
    if high is None or c.index("indices") is None:
        return []
    return [Fill(c.path("indices"), Bound(high))]


def _bags(c: _Call) -> list[Fill]:
    """``indices`` as embedding's; 1-d: ``offsets`` non-decreasing from 0 to at most the
    index count; backwards: ``offset2bag``, ``bag_size``, ``maximum_indices`` consistent."""
    fills = _embedding(c)
    idx = c.index("indices")
    if idx is None or not fills:
        return []
    total = idx.numel
    offsets = c.index("offsets")
    if offsets is not None and len(idx.shape) == 1:
        fills.append(Fill(c.path("offsets"), Offsets(total, bool(c.value("include_last_offset")))))
    grad = c.tensor("grad")
    o2b = c.index("offset2bag")
    if o2b is None:
        return fills
    if offsets is not None:
        source: str | None = c.path("offsets")
        bags = offsets.numel
    else:
        source, bags = None, grad.shape[0] if grad is not None and grad.shape else 1
    fills.append(Fill(c.path("offset2bag"), BagOf(source, bags)))
    if c.index("bag_size") is not None:
        fills.append(Fill(c.path("bag_size"), BagSize(c.path("offset2bag"))))
    if c.index("maximum_indices") is not None:
        rule: Rule = BagMax(c.path("offset2bag"), c.path("indices")) if c.integer("mode") == 2 else Bound(1)
        fills.append(Fill(c.path("maximum_indices"), rule))
    return fills


def _classes(c: _Call) -> list[Fill]:
    """``target`` a class in [0, C), one in eight ``ignore_index`` where the loss has one."""
    scores, target = c.tensor("self"), c.index("target")
    if scores is None or target is None or not scores.shape:
        return []
    classes = scores.shape[1] if len(scores.shape) >= 2 else scores.shape[0]
    ignore = c.integer("ignore_index")
    if ignore is None or "ignore_index" not in c.names:
        return [Fill(c.path("target"), Bound(classes))]
    return [Fill(c.path("target"), Targets(classes, ignore))]


def _sparse(c: _Call) -> list[Fill]:
    """Row d of COO ``indices`` in [0, size[d]) (no size given: [0, 10))."""
    idx = c.index("indices")
    if idx is None or len(idx.shape) != 2:
        return []
    size = c.ints("size")
    sparse_dim = c.integer("sparse_dim")
    rows = idx.shape[0]
    highs = size[: sparse_dim if sparse_dim is not None else rows] if size else (10,) * rows
    if len(highs) != rows:
        return []
    return [Fill(c.path("indices"), Rows(tuple(highs)))]


def _spatial(values: tuple[int, ...], k: int, default: tuple[int, ...]) -> tuple[int, ...]:
    if not values:
        return default
    return values * k if len(values) == 1 else values


def _pool_window(c: _Call) -> list[Fill]:
    """``indices``: the flat input position of an element of each output's window."""
    src, idx = c.tensor("self"), c.index("indices")
    k = 3 if "3d" in c.op.packet else 2
    if src is None or idx is None or len(src.shape) < k or len(idx.shape) < k:
        return []
    kernel = _spatial(c.ints("kernel_size"), k, ())
    if len(kernel) != k:
        return []
    rule = PoolWindow(
        size=src.shape[-k:],
        kernel=kernel,
        stride=_spatial(c.ints("stride"), k, kernel),
        padding=_spatial(c.ints("padding"), k, (0,) * k),
        dilation=_spatial(c.ints("dilation"), k, (1,) * k),
    )
    if len({len(rule.stride), len(rule.padding), len(rule.dilation), k}) != 1:
        return []
    return [Fill(c.path("indices"), rule)]


def _pool_plane(c: _Call) -> list[Fill]:
    """``indices`` in [0, plane size of the input) (unpool: of ``output_size``)."""
    idx = c.index("indices")
    k = 3 if "3d" in c.op.packet else 2
    if idx is None:
        return []
    out = c.ints("output_size")
    if c.op.packet.startswith("max_unpool"):
        plane = math.prod(out) if len(out) == k else None
    else:
        src = c.tensor("self")
        plane = math.prod(src.shape[-k:]) if src is not None and len(src.shape) >= k else None
    return [Fill(c.path("indices"), Bound(plane))] if plane else []


_FAMILIES: dict[str, Callable[[_Call], list[Fill]]] = {
    name: rule
    for names, rule in (
        ("gather scatter scatter_add scatter_reduce index_select index_add index_copy", _along_dim),
        ("index_fill index_reduce", _along_dim),
        ("index _unsafe_index index_put _index_put_impl _unsafe_index_put", _index_list),
        ("take put", _flat),
        ("embedding embedding_renorm embedding_dense_backward embedding_backward", _embedding),
        ("embedding_sparse_backward", _embedding),
        ("_embedding_bag _embedding_bag_forward_only embedding_bag _embedding_bag_backward", _bags),
        ("_embedding_bag_dense_backward _embedding_bag_sparse_backward", _bags),
        ("_embedding_bag_per_sample_weights_backward", _bags),
        ("nll_loss nll_loss_forward nll_loss_backward nll_loss_nd nll_loss2d nll_loss2d_forward", _classes),
        ("nll_loss2d_backward cross_entropy_loss multi_margin_loss multi_margin_loss_backward", _classes),
        ("multilabel_margin_loss multilabel_margin_loss_forward multilabel_margin_loss_backward", _classes),
        ("_sparse_coo_tensor_with_dims_and_tensors sparse_coo_tensor _sparse_coo_tensor_unsafe", _sparse),
        ("max_pool2d_with_indices_backward max_pool3d_with_indices_backward", _pool_window),
        ("adaptive_max_pool2d_backward adaptive_max_pool3d_backward max_unpool2d max_unpool3d", _pool_plane),
        ("fractional_max_pool2d_backward fractional_max_pool3d_backward", _pool_plane),
    )
    for name in names.split()
}


def family(op: OpName) -> str | None:
    """The family name an operator's packet belongs to (``scatter_add_`` -> ``scatter_add``)."""
    packet = op.packet
    if packet.endswith("_") and not packet.endswith("__"):
        packet = packet[:-1]
    return packet if op.namespace == "aten" and packet in _FAMILIES else None


def plan_fills(
    op: OpName, schema: Sequence[SchemaArg], args: Sequence[ArgValue], kwargs: dict[str, ArgValue]
) -> list[Fill]:
    """The index rules of one call (empty for an operator that takes no indices).

    Args:
        op: The operator.
        schema: Its schema's arguments, in order (names bind the call's arguments).
        args: The call's positional arguments (descriptions: shapes, no values).
        kwargs: Its keyword arguments.
    """
    name = family(op)
    if name is None:
        return []
    return _FAMILIES[name](_Call(op, schema, args, kwargs))
