"""Valid inputs for index-taking operators (``_index_rules``, ``_index_draw``).

- unit: for random shapes (hypothesis), the index arguments of each family are drawn within
  what they index, bag offsets and the backward's bag tensors are consistent, class targets
  are in range or ``ignore_index``, sparse indices are inside the dense shape, pooling
  indices inside their windows; the ATen operator accepts the inputs; the same seed gives
  the same values;
- end to end: ATen-identity solutions over real rows of the sample (and edge-case) trace
  and over hand-written rows of the operators the sample lacks: every row PASSED, timed
  calls included (integer tensors are never varied, so the indices stay valid);
- mutation: a wrong kernel on these inputs still fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.backendbench import build_records, parse_trace_file
from sweep.engine.aten._call_inputs import CallSpec, materialize
from sweep.engine.aten._index_draw import index_fills
from sweep.engine.aten._index_rules import family
from sweep.schema.call_args import ArgValue, DeviceArg, LayoutArg, TensorArg, parse_op_name

Kit = Any
HYP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
sizes = st.integers(1, 6)
shapes = st.lists(sizes, min_size=1, max_size=3).map(tuple)


def _call(op: str, *args: ArgValue, **kwargs: ArgValue) -> tuple[list[Any], dict[str, Any]]:
    """Materialize a described call on the CPU (seed 0) and check the operator accepts it."""
    spec = CallSpec(op, tuple(args), dict(kwargs))
    a, k = materialize(spec, torch.Generator().manual_seed(0), "cpu")
    ns, packet, overload = op.split(".")
    getattr(getattr(getattr(torch.ops, ns), packet), overload)(*a, **k)
    return a, k


def _t(shape: Sequence[int], dtype: str = "float32", stride: Sequence[int] | None = None) -> TensorArg:
    return TensorArg(tuple(shape), dtype, tuple(stride) if stride is not None else None)


def _in(t: torch.Tensor, high: int) -> bool:
    return bool(((t >= 0) & (t < high)).all())


# ---- unit: the rules, over shapes ----------------------------------------------------------


@HYP
@given(shapes, st.data())
def test_gather_and_scatter_index_below_the_size_of_dim(shape: tuple[int, ...], data: st.DataObject) -> None:
    rank = len(shape)
    dim = data.draw(st.integers(-rank, rank - 1))
    along = dim % rank
    ishape = tuple(
        data.draw(st.integers(1, 7)) if i == along else data.draw(st.integers(1, s))
        for i, s in enumerate(shape)
    )
    (_, _, idx), _ = _call("aten.gather.default", _t(shape), dim, _t(ishape, "int64"))
    assert _in(idx, shape[along])
    (_, _, idx, _), _ = _call("aten.scatter_add.default", _t(shape), dim, _t(ishape, "int64"), _t(ishape))
    assert _in(idx, shape[along])
    # scatter.src: writes race unless the indices along dim are distinct in every fiber.
    (_, _, idx, _), _ = _call("aten.scatter.src", _t(shape), dim, _t(ishape, "int64"), _t(ishape))
    assert _in(idx, shape[along])
    if ishape[along] <= shape[along]:
        ordered = idx.movedim(along, -1).sort(dim=-1).values
        assert bool((ordered[..., 1:] != ordered[..., :-1]).all())


@HYP
@given(shapes, st.integers(0, 30), st.data())
def test_index_select_add_copy_and_put(shape: tuple[int, ...], n: int, data: st.DataObject) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    (_, _, idx), _ = _call("aten.index_select.default", _t(shape), dim, _t([n], "int64"))
    assert _in(idx, shape[dim])
    src = tuple(n if i == dim else s for i, s in enumerate(shape))
    (_, _, idx, _), _ = _call("aten.index_add.default", _t(shape), dim, _t([n], "int64"), _t(src))
    assert _in(idx, shape[dim])
    k = min(n, shape[dim])
    ksrc = tuple(k if i == dim else s for i, s in enumerate(shape))
    (_, _, idx, _), _ = _call("aten.index_copy.default", _t(shape), dim, _t([k], "int64"), _t(ksrc))
    assert _in(idx, shape[dim]) and idx.unique().numel() == k
    # index_put without accumulate: distinct rows; the k-th index tensor indexes dim k.
    (_, (rows,), _), _ = _call("aten.index_put.default", _t(shape), [_t([shape[0]], "int64")], _t([1]))
    assert _in(rows, shape[0]) and rows.unique().numel() == shape[0]
    if len(shape) >= 2:
        (_, (none, cols)), _ = _call("aten.index.Tensor", _t(shape), [None, _t([n, 2], "int64")])
        assert none is None and _in(cols, shape[1])


@HYP
@given(st.integers(1, 40), st.integers(1, 5), st.integers(0, 60), st.integers(1, 9), st.booleans(), st.data())
def test_bag_offsets_and_the_backwards_bags_are_consistent(
    rows: int, width: int, n: int, bags: int, last: bool, data: st.DataObject
) -> None:
    mode = data.draw(st.integers(0, 2))
    psw = _t([n]) if mode == 0 and data.draw(st.booleans()) else None
    call = (
        "aten._embedding_bag.default",
        _t([rows, width]),
        _t([n], "int64"),
        _t([bags], "int64"),
        False,
        mode,
        False,
        psw,
        last,
    )
    if last and bags == 1 and n:
        # One offset with include_last_offset is no bag, yet there are indices: no offsets are
        # valid. The draw ([n]) makes torch refuse the call (offsets [0] crash its CPU kernel).
        with pytest.raises(RuntimeError, match="offsets"):
            _call(*call)
        return
    (_, idx, off, *_), _ = _call(*call)
    assert _in(idx, rows)
    assert int(off[0]) == 0 and bool((off[1:] >= off[:-1]).all()) and int(off.max()) <= n
    if last:
        assert int(off[-1]) == n
    grad, maxi = _t([bags, width]), _t([bags, width] if mode == 2 else [bags], "int64")
    a, _ = _call(
        "aten._embedding_bag_backward.default",
        grad,
        _t([n], "int64"),
        _t([bags], "int64"),
        _t([n], "int64"),
        _t([bags], "int64"),
        maxi,
        rows,
        False,
        mode,
        False,
        None,
    )
    _, idx, off, o2b, size, top, *_ = a
    assert _in(idx, rows) and int(off[0]) == 0
    assert torch.equal(o2b, torch.searchsorted(off, torch.arange(n), right=True) - 1)
    assert torch.equal(size, torch.bincount(o2b, minlength=bags)[:bags])
    if mode == 2:
        for b in range(bags):
            members = set(idx[o2b == b].tolist())
            assert set(top[b].tolist()) <= (members or {0})
    a, _ = _call(
        "aten._embedding_bag_per_sample_weights_backward.default",
        _t([bags, width]),
        _t([rows, width]),
        _t([n], "int64"),
        _t([bags], "int64"),
        _t([n], "int64"),
        0,
    )
    assert torch.equal(a[4], torch.searchsorted(a[3], torch.arange(n), right=True) - 1)


@HYP
@given(st.integers(1, 40), st.integers(1, 12), st.sampled_from([-100, 0, 3, 12]), st.booleans())
def test_class_targets_in_range_or_ignored(batch: int, classes: int, ignore: int, one_d: bool) -> None:
    scores, target = (
        (_t([classes]), _t([], "int64")) if one_d else (_t([batch, classes]), _t([batch], "int64"))
    )
    (_, tgt, *_), _ = _call("aten.nll_loss_forward.default", scores, target, None, 1, ignore)
    flat = tgt.reshape(-1)
    assert bool(((flat == ignore) | ((flat >= 0) & (flat < classes))).all())
    assert 0 <= int(flat[0]) < classes or ignore in range(classes)  # the first is never ignored
    (_, _, tgt, *_), _ = _call(
        "aten.nll_loss2d_backward.default",
        _t([]),
        _t([2, classes, 3, 4]),
        _t([2, 3, 4], "int64"),
        None,
        1,
        ignore,
        _t([]),
    )
    assert bool(((tgt == ignore) | ((tgt >= 0) & (tgt < classes))).all())


@HYP
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.integers(0, 40), st.integers(0, 2))
def test_sparse_indices_inside_the_dense_shape(size: list[int], nnz: int, dense: int) -> None:
    sparse_dim = len(size)
    full = [*size, *([3] * dense)]
    kwargs: dict[str, ArgValue] = {"layout": LayoutArg("sparse_coo"), "device": DeviceArg("cpu")}
    (_, _, _, idx, _), _ = _call(
        "aten._sparse_coo_tensor_with_dims_and_tensors.default",
        sparse_dim,
        dense,
        full,
        _t([sparse_dim, nnz], "int64"),
        _t([nnz, *([3] * dense)]),
        **kwargs,
    )
    for d, high in enumerate(size):
        assert _in(idx[d], high)


@HYP
@given(
    st.integers(2, 12), st.integers(2, 12), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.data()
)
def test_pool_indices_inside_their_window(
    h: int, w: int, k: int, s: int, d: int, data: st.DataObject
) -> None:
    p = data.draw(st.integers(0, k // 2))
    oh, ow = ((x + 2 * p - d * (k - 1) - 1) // s + 1 for x in (h, w))
    if min(oh, ow) < 1:
        return
    a, _ = _call(
        "aten.max_pool2d_with_indices_backward.default",
        _t([2, 3, oh, ow]),
        _t([2, 3, h, w]),
        [k, k],
        [s, s],
        [p, p],
        [d, d],
        False,
        _t([2, 3, oh, ow], "int64"),
    )
    idx = a[7]
    rows, cols = idx // w, idx % w
    base_r = (torch.arange(oh) * s - p).view(-1, 1)
    base_c = (torch.arange(ow) * s - p).view(1, -1)
    assert _in(idx, h * w)
    # Inside the window, or clamped into the input where the window hangs over its edge.
    assert bool(((rows >= base_r.clamp(min=0)) & (rows <= (base_r + d * (k - 1)).clamp(max=h - 1))).all())
    assert bool(((cols >= base_c.clamp(min=0)) & (cols <= (base_c + d * (k - 1)).clamp(max=w - 1))).all())


def test_zero_stride_index_gets_one_valid_value_per_storage_element() -> None:
    (_, _, idx, _), _ = _call(
        "aten.scatter_add_.default",
        _t([1, 50, 4], "float16"),
        1,
        _t([1, 60, 4], "int64", [60, 1, 0]),
        _t([1, 60, 4], "float16"),
    )
    assert idx.stride() == (60, 1, 0) and _in(idx, 50)
    # A transposed (non-overlapping) index: every element its own valid value.
    (_, _, idx), _ = _call("aten.gather.default", _t([5, 9]), 1, _t([5, 4], "int64", [1, 5]))
    assert idx.stride() == (1, 5) and _in(idx, 9)
    # Distinct along dim in a strided index too.
    (_, _, idx, _), _ = _call("aten.scatter.src", _t([5, 9]), 1, _t([5, 4], "int64", [1, 5]), _t([5, 4]))
    assert all(len(set(row.tolist())) == 4 for row in idx)


def test_indices_are_seeded_like_every_input() -> None:
    spec = CallSpec("aten.gather.default", (_t([64, 300]), 1, _t([64, 40], "int64")), {})
    one = materialize(spec, torch.Generator().manual_seed(3), "cpu")[0][2]
    again = materialize(spec, torch.Generator().manual_seed(3), "cpu")[0][2]
    other = materialize(spec, torch.Generator().manual_seed(4), "cpu")[0][2]
    assert torch.equal(one, again) and not torch.equal(one, other)


def test_operators_without_indices_keep_the_policy() -> None:
    assert family(parse_op_name("aten.add.Tensor")) is None
    assert index_fills("aten.add.Tensor", (_t([3], "int64"), _t([3], "int64")), {}) == []
    assert family(parse_op_name("aten.scatter_add_.default")) == "scatter_add"
    assert index_fills("aten.no_such_op.default", (), {}) == []


# ---- end to end: ATen-identity solutions pass every row --------------------------------------

#: Index-taking operators of the real traces (sample, then edge cases), rows of at most 40 MiB.
REAL = {
    "sample.trace.txt": [
        "aten._embedding_bag.default",
        "aten._sparse_coo_tensor_with_dims_and_tensors.default",
        "aten.embedding_dense_backward.default",
        "aten.index_add.default",
        "aten.index_put.default",
        "aten.index_select.default",
        "aten.max_pool2d_with_indices_backward.default",
        "aten.nll_loss_forward.default",
        "aten.scatter.src",
        "aten.scatter_add_.default",
    ],
    # (its _embedding_bag_per_sample_weights_backward row views a 98 MB gradient: hand-written
    # rows of that operator are in tests/data/backendbench/index_ops.trace.txt)
    "edge_cases.trace.txt": ["aten._index_put_impl_.default"],
}


def _identity(kit: Kit, folder: str, op: str, body: str | None = None, name: str = "aten") -> Any:
    ns, packet, overload = op.split(".")
    src = (
        body
        or f"import torch\n\ndef IMPL(*args, **kwargs):\n    return torch.ops.{ns}.{packet}.{overload}(*args, **kwargs)\n"
    )
    impl = f"{folder}_kernel_impl"
    return kit.solution(folder, src.replace("IMPL", impl), name=name, entry=f"main.py::{impl}")


def _rows(path: Path, ops: list[str], per_op: int, max_bytes: int) -> list[tuple[Any, Any, str]]:
    from sweep.engine.aten._call_inputs import describe_call

    out = []
    for item in build_records(parse_trace_file(path), source_file=path.name, ops=ops):
        small = [w for w in item.workloads if describe_call(item.definition, w).nbytes <= max_bytes]
        out.extend((item.definition, w, item.op) for w in small[:per_op])
    return out


def test_real_rows_of_index_operators_pass_with_the_aten_identity(kit: Kit, shared_data: Path) -> None:
    seen: dict[str, int] = {}
    for file, ops in REAL.items():
        for defn, wl, op in _rows(shared_data / "backendbench" / file, ops, 2, 40 << 20):
            trace = kit.run(defn, _identity(kit, defn.name, op), wl)
            assert kit.status(trace) == "PASSED", (op, wl.uuid, kit.log(trace))
            seen[op] = seen.get(op, 0) + 1
    assert set(seen) == {op for ops in REAL.values() for op in ops}, seen


def test_hand_written_rows_of_the_other_index_operators_pass(kit: Kit, local_data: Path) -> None:
    path = local_data / "index_ops.trace.txt"
    rows = []
    for item in build_records(parse_trace_file(path), source_file=path.name):
        rows.extend((item.definition, w, item.op) for w in item.workloads)
    assert len(rows) == 39
    for defn, wl, op in rows:
        trace = kit.run(defn, _identity(kit, defn.name, op), wl)
        assert kit.status(trace) == "PASSED", (op, wl.uuid, kit.log(trace))


# ---- mutation: wrong kernels on valid indices still fail -----------------------------------

WRONG = {
    # Reversed index order: the right rows, in the wrong places.
    "aten.index_select.default": "def IMPL(self, dim, index):\n    return self.index_select(dim, index.flip(0))\n",
    # Ignores ignore_index: ignored targets counted as class 0.
    "aten.nll_loss_forward.default": (
        "import torch\n\ndef IMPL(self, target, weight, reduction, ignore_index):\n"
        "    t = torch.where(target == ignore_index, torch.zeros_like(target), target)\n"
        "    return torch.ops.aten.nll_loss_forward.default(self, t, weight, reduction, -12345)\n"
    ),
    # Sums into self instead of overwriting it.
    "aten.scatter.src": "def IMPL(self, dim, index, src):\n    return self.scatter_add(dim, index, src)\n",
    # One bag of everything, whatever the offsets say.
    "aten._embedding_bag.default": (
        "import torch\n\ndef IMPL(weight, indices, offsets, *rest):\n"
        "    zero = torch.zeros_like(offsets)\n"
        "    return torch.ops.aten._embedding_bag.default(weight, indices, zero, *rest)\n"
    ),
}


@pytest.mark.parametrize("op", sorted(WRONG))
def test_a_wrong_kernel_still_fails(kit: Kit, sample_file: Path, op: str) -> None:
    ((defn, wl, _),) = _rows(sample_file, [op], 1, 40 << 20)
    trace = kit.run(defn, _identity(kit, defn.name, op, WRONG[op], name="wrong"), wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)
