"""The bytes of an imported ATen call (``_call_bytes``, through ``count_work``), on ``meta``
tensors: views, aliases and uninitialised results move nothing of their own, an in-place
result is its written argument counted once, a call that moves nothing has no floor.

``N`` below is the bytes of one ``T([64, 32], f32)``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.backendbench import build_records, parse_trace
from sweep.engine.aten._call_bytes import _like_constructor, _schema_views, call_inputs, moved_bytes
from sweep.engine.aten._call_inputs import describe_call, materialize_meta
from sweep.engine.run._work import Work, count_work
from sweep.schema import Definition, Workload
from sweep.schema.peaks import datasheet_ceilings, floor_ms

N = 64 * 32 * 4
T = "T([64, 32], f32)"
NONE = "work: the call moves no data"


def _call(op: str, args: str, kwargs: str = "{}") -> tuple[Definition, Workload]:
    text = f"Operator: {op}\ncnt: 1, (({args}), {kwargs})\n"
    (item,) = build_records(parse_trace(text), source_file="t.txt")
    return item.definition, item.workloads[0]


def _reference(defn: Definition) -> Any:
    namespace: dict[str, Any] = {}
    exec(defn.reference, namespace)  # noqa: S102 - the importer's own reference source
    return namespace["run"]


def _work(op: str, args: str, kwargs: str = "{}", reference: Any = None) -> Work:
    defn, wl = _call(op, args, kwargs)
    return count_work(defn, wl, reference or _reference(defn))


def _no_floor(work: Work) -> bool:
    sheet = datasheet_ceilings("NVIDIA H100 80GB HBM3", hardware="NVIDIA_H100")
    assert sheet is not None
    return floor_ms(work.flops, work.bytes, work.dtypes, sheet) is None


# ---- views: an output in an argument's storage -----------------------------------------------

VIEWS = [
    ("aten.split.Tensor", f"{T}, 16"),
    ("aten.split.Tensor", f"{T}, 5, 1"),
    ("aten.unbind.int", f"{T}, 0"),
    ("aten.split_with_sizes.default", f"{T}, [16, 48]"),
    ("aten.chunk.default", f"{T}, 3, 1"),
    ("aten.tensor_split.sections", f"{T}, 3"),
    ("aten.view.default", f"{T}, [32, 64]"),
    ("aten._unsafe_view.default", f"{T}, [2048]"),  # no alias in its schema: a view all the same
    ("aten._reshape_alias.default", f"{T}, [32, 64], [64, 1]"),
    ("aten.reshape.default", f"{T}, [2, 1024]"),  # contiguous: reshape views
    ("aten.contiguous.default", T),  # already contiguous: returns its argument
    ("aten.transpose.int", f"{T}, 0, 1"),
    ("aten.t.default", T),
    ("aten.permute.default", f"{T}, [1, 0]"),
    ("aten.expand.default", "T([1, 32], f32), [64, 32]"),
    ("aten.expand_as.default", f"T([1, 32], f32), {T}"),
    ("aten.view_as.default", f"{T}, T([2048], f16)"),
    ("aten.select.int", f"{T}, 0, 3"),
    ("aten.slice.Tensor", f"{T}, 0, 2, 10"),
    ("aten.narrow.default", f"{T}, 1, 4, 8"),
    ("aten.as_strided.default", f"{T}, [8, 8], [1, 8]"),
    ("aten.diagonal.default", T),
    ("aten.unsqueeze.default", f"{T}, 0"),
    ("aten.squeeze.dim", "T([64, 1, 32], f32), 1"),
    ("aten.unfold.default", f"{T}, 0, 4, 4"),
    ("aten.detach.default", T),
    ("aten.alias.default", T),
    ("aten.view_as_real.default", "T([64, 32], c64)"),
    ("aten.to.dtype", f"{T}, torch.float32"),  # nothing to convert: its argument
]


@pytest.mark.parametrize(("op", "args"), VIEWS)
def test_a_view_moves_no_bytes_and_has_no_floor(op: str, args: str) -> None:
    work = _work(op, args)
    assert (work.bytes, work.flops) == (0.0, 0.0), work
    assert any(n.startswith(NONE) for n in work.notes)
    assert _no_floor(work)


def test_reshape_and_contiguous_that_copy_move_their_bytes() -> None:
    strided = "T([64, 32], f32, stride=(1, 64))"
    assert _work("aten.reshape.default", f"{strided}, [2048]").bytes == 2 * N
    assert _work("aten.contiguous.default", strided).bytes == 2 * N
    assert _work("aten.to.dtype", f"{T}, torch.float16").bytes == N + N // 2


# ---- uninitialised results and templates -----------------------------------------------------


@pytest.mark.parametrize(
    ("op", "args", "kwargs"),
    [
        ("aten.new_empty.default", f"{T}, [128, 128]", "{}"),
        ("aten.new_empty.default", "T([64, 1, 196, 512], f16), [64, 1, 1, 1]", "{'dtype': f16}"),
        ("aten.new_empty_strided.default", f"{T}, [4, 6], [1, 4]", "{}"),
        ("aten.empty_like.default", f"{T}", "{}"),
        ("aten.empty_strided.default", "[4, 6], [1, 4]", "{'dtype': f32}"),
        ("aten.empty.memory_format", "[8, 3, 4, 4]", "{'dtype': f16}"),
    ],
)
def test_an_uninitialised_result_moves_no_bytes(op: str, args: str, kwargs: str) -> None:
    work = _work(op, args, kwargs)
    assert (work.bytes, work.flops) == (0.0, 0.0)
    assert _no_floor(work)


def test_a_constructors_template_is_not_read() -> None:
    big = "T([1024, 1024], f32)"
    assert _work("aten.new_zeros.default", f"{big}, [4]").bytes == 16
    assert _work("aten.new_full.default", f"{big}, [4], 2.0").bytes == 16
    assert _work("aten.new_ones.default", f"{big}, [2, 2]").bytes == 16
    assert _work("aten.zeros_like.default", T).bytes == N
    assert _work("aten.full_like.default", f"{T}, 3.0").bytes == N
    assert _like_constructor("aten.zeros_like.default") and not _like_constructor("aten.add.Tensor")


# ---- in-place and out= results -----------------------------------------------------------------


def test_an_in_place_result_is_its_written_argument_counted_once() -> None:
    assert _work("aten.add_.Tensor", f"{T}, {T}").bytes == 2 * N  # self and other, not 3
    assert _work("aten.relu_.default", T).bytes == N
    assert _work("aten.fill_.Scalar", f"{T}, 1.0").bytes == N
    assert _work("aten.copy_.default", f"{T}, {T}").bytes == 2 * N
    # out=: the inputs and the written out, once; the returned out adds nothing.
    assert _work("aten.add.out", f"{T}, {T}", f"{{'out': {T}}}").bytes == 3 * N
    # Not in place: inputs and the new output.
    assert _work("aten.add.Tensor", f"{T}, {T}").bytes == 3 * N
    # Writing an empty tensor moves nothing (the fill value is not read for nothing).
    empty = _work("aten.fill_.Tensor", "T([0], f16), T([], f16)")
    assert empty.bytes == 0 and _no_floor(empty)


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("aten.t_.default", T),
        ("aten.transpose_.default", f"{T}, 0, 1"),
        ("aten.as_strided_.default", f"{T}, [8, 8], [1, 8]"),
        ("aten.squeeze_.dim", "T([64, 1, 32], f32), 1"),
        ("aten.unsqueeze_.default", f"{T}, 0"),
        ("aten.resize_.default", f"{T}, [4, 4]"),
        ("aten.detach_.default", T),
    ],
)
def test_an_in_place_view_changes_metadata_only(op: str, args: str) -> None:
    work = _work(op, args)
    assert work.bytes == 0.0 and _no_floor(work)


# ---- new outputs sharing a storage; partly new results -------------------------------------------


def test_outputs_in_one_new_storage_count_it_once() -> None:
    def several_views(x: torch.Tensor, _: int) -> tuple[torch.Tensor, ...]:
        y = x + 1
        return (y, y.view(-1), y.t(), *y.split(16))

    assert _work("aten.add.Scalar", f"{T}, 1", reference=several_views).bytes == 2 * N  # read x, write y

    def head_of_new(x: torch.Tensor, _: int) -> torch.Tensor:
        return (x + 1)[:1]  # a view of part of a new buffer: its elements, not the buffer

    assert _work("aten.add.Scalar", f"{T}, 1", reference=head_of_new).bytes == N + 32 * 4


def test_a_partly_new_result_counts_its_new_part_and_its_inputs() -> None:
    def view_and_new(x: torch.Tensor, _: int) -> tuple[torch.Tensor, torch.Tensor]:
        return x.view(-1), x * 2

    assert _work("aten.mul.Scalar", f"{T}, 2", reference=view_and_new).bytes == 2 * N
    # split's list of views beside one new tensor: only the new one is written.
    assert (
        _work("aten.mul.Scalar", f"{T}, 2", reference=lambda x, _: (*x.split(8), x[0] * 2)).bytes
        == N + 32 * 4
    )


def test_a_sparse_result_made_of_its_arguments_moves_nothing() -> None:
    work = _work(
        "aten._sparse_coo_tensor_with_dims_and_tensors.default",
        "1, 1, [965, 192], T([1, 54760], i64), T([54760, 192], f16)",
        "{'dtype': f16, 'layout': torch.sparse_coo, 'device': 'cuda', 'pin_memory': None}",
    )
    assert work.bytes == 0.0 and _no_floor(work)


# ---- when the reference cannot run on meta tensors ------------------------------------------------


def test_without_a_meta_result_the_schema_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_meta(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("no meta kernel")

    for op, args, expected in [
        ("aten.split.Tensor", f"{T}, 16", 0.0),  # declared views
        ("aten.new_empty.default", f"{T}, [4]", 0.0),  # uninitialised
        ("aten.t_.default", T, 0.0),  # metadata
        ("aten.add.Tensor", f"{T}, {T}", 2.0 * N),  # the arguments, each once
        ("aten.add_.Tensor", f"{T}, {T}", 2.0 * N),
    ]:
        work = _work(op, args, reference=no_meta)
        assert work.flops is None and work.bytes == expected, (op, work)
    assert _schema_views("aten.split.Tensor") and _schema_views("aten.reshape.default")
    assert not _schema_views("aten.add.Tensor") and not _schema_views("aten.add_.Tensor")


def test_inputs_are_measured_before_the_call() -> None:
    # resize_ grows its argument's storage on meta too: the bytes it had are what counts.
    defn, wl = _call("aten.resize_.default", f"{T}, [128, 128]")
    args, kwargs = materialize_meta(describe_call(defn, wl))
    before = call_inputs(args, kwargs)
    assert [x.nbytes for x in before.tensors] == [N]
    _reference(defn)(*args, **kwargs)
    assert moved_bytes(describe_call(defn, wl), before, args, kwargs, args[0]).bytes == 0.0


# ---- any shape: views move nothing, in place counts each storage once ----------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(st.integers(1, 6), min_size=2, max_size=3),
    dtype=st.sampled_from(["f32", "f16", "i64", "b8"]),
    transposed=st.booleans(),
    chunk=st.integers(1, 6),
)
def test_any_tensor_views_move_nothing_and_writes_count_once(
    shape: list[int], dtype: str, transposed: bool, chunk: int
) -> None:
    stride = ", stride=(" + ", ".join(str(s) for s in _column_major(shape)) + ")" if transposed else ""
    x = f"T({shape}, {dtype}{stride})"
    size = {"f32": 4, "f16": 2, "i64": 8, "b8": 1}[dtype]
    n = size * int(torch.tensor(shape).prod())
    for op, args in [
        ("aten.split.Tensor", f"{x}, {chunk}"),
        ("aten.unbind.int", f"{x}, {len(shape) - 1}"),
        ("aten.transpose.int", f"{x}, 0, 1"),
        ("aten.select.int", f"{x}, 0, 0"),
        ("aten.narrow.default", f"{x}, 0, 0, 1"),
        ("aten.expand.default", f"{x}, [2, {', '.join(map(str, shape))}]"),
        ("aten.new_empty.default", f"{x}, [{chunk}, 3]"),
        ("aten.empty_like.default", x),
    ]:
        assert _work(op, args).bytes == 0.0, (op, args)
    assert _work("aten.clone.default", x).bytes == 2 * n
    if dtype != "b8":
        assert _work("aten.add_.Tensor", f"{x}, {x}").bytes == 2 * n
        assert _work("aten.add.Tensor", f"{x}, {x}").bytes == 3 * n


def _column_major(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for s in shape:
        strides.append(step)
        step *= s
    return strides


# ---- end to end: the identity kernels of the operators are not flagged --------------------


def test_identity_views_and_allocations_are_never_impossible(
    kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.backendbench import op_expression, parse_op_name
    from sweep.schema import peaks as peaks_module
    from sweep.schema.peaks import Datasheet

    # An absurd CPU datasheet (1 byte/s, 1 FLOP/s): any work at all makes a floor of ages.
    monkeypatch.setitem(
        peaks_module.DATASHEETS, "CPU", (Datasheet("test CPU", (), {"float32": 1e-12}, 1e-9),)
    )
    rows = [
        ("aten.split.Tensor", f"{T}, 16", "{}"),
        ("aten.unbind.int", f"{T}, 0", "{}"),
        ("aten.split_with_sizes.default", f"{T}, [16, 48]", "{}"),
        ("aten.new_empty.default", f"{T}, [128, 128]", "{'dtype': f32}"),
        ("aten.new_empty_strided.default", f"{T}, [4, 6], [1, 4]", "{}"),
        ("aten.add.Tensor", f"{T}, {T}", "{}"),  # real work: the datasheet does flag it
    ]
    for op, args, kwargs in rows:
        defn, wl = _call(op, args, kwargs)
        body = f"import torch\n\ndef run(*args, **kwargs):\n    return {op_expression(parse_op_name(op))}(*args, **kwargs)\n"
        trace = kit.run(defn, kit.solution(defn.name, body), wl)
        ev = trace.evaluation
        assert ev is not None and ev.status.value == "PASSED", (op, ev and ev.log)
        if op == "aten.add.Tensor":
            assert "impossible" in (ev.flags or []) and ev.performance.work_bytes == 3 * N
            continue
        # (Not ``flags is None``: timing two identical calls may still say ``suspicious``.)
        assert "impossible" not in (ev.flags or []) and ev.performance.floor_ms is None, (op, ev.log)
        assert ev.performance.work_bytes == 0.0 and ev.performance.work_flops == 0.0
        assert "no floor: the call moves no bytes and does no FLOPs" in ev.log
