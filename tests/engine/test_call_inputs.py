"""The materializer the engine calls: policy, seeding, strides, budget, clones, mutation lookup."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sweep.backendbench import build_records, parse_trace, parse_trace_file
from sweep.engine.aten._call_inputs import (
    CallSpec,
    InputTooLarge,
    call_input,
    check_budget,
    clone_call,
    describe_call,
    is_backendbench,
    materialize,
    mutated_values,
)
from sweep.errors import EngineError
from sweep.schema import Definition, Workload
from sweep.schema.call_args import DeviceArg, DTypeArg, TensorArg
from sweep.schema.op_tags import MutatedArg


def _spec(text: str, op: str = "aten.x.default") -> CallSpec:
    (item,) = build_records(parse_trace(f"Operator: {op}\ncnt: 1, {text}\n"), source_file="t")
    return describe_call(item.definition, item.workloads[0])


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_describe_call_reads_the_workload() -> None:
    spec = _spec("((T([2, 3], f16), [T([4], i64)], 1e-07), {'dtype': torch.bool})", "aten.add_.Tensor")
    assert spec.op == "aten.add_.Tensor"
    assert spec.args[0] == TensorArg((2, 3), "float16")
    assert spec.kwargs == {"dtype": DTypeArg("bool")}
    assert spec.mutates == (MutatedArg("self", 0),)
    assert [t.shape for t in spec.tensors()] == [(2, 3), (4,)]
    assert spec.nbytes == 2 * 3 * 2 + 4 * 8


def test_seeded_and_deterministic() -> None:
    spec = _spec("((T([64, 8], f32), T([16], i32), T([5], b8)), {})")
    a1, _ = materialize(spec, _gen(7))
    a2, _ = materialize(spec, _gen(7))
    a3, _ = materialize(spec, _gen(8))
    for x, y in zip(a1, a2):
        assert torch.equal(x, y)
    assert not torch.equal(a1[0], a3[0])


@pytest.mark.parametrize(
    ("abbr", "low", "high"),
    [("f16", 0, 1), ("bf16", 0, 1), ("f32", 0, 1), ("f64", 0, 1), ("i8", -9, 9), ("i16", -9, 9),
     ("i32", -9, 9), ("i64", -9, 9), ("u8", 0, 9)],
)  # fmt: skip
def test_policy_ranges(abbr: str, low: int, high: int) -> None:
    (x,), _ = materialize(_spec(f"((T([4096], {abbr}),), {{}})"), _gen())
    assert x.shape == (4096,)
    if x.is_floating_point():
        assert float(x.min()) >= 0 and float(x.max()) < 1
        assert float(x.float().std()) > 0.2  # actually spread, not a constant
    else:
        assert int(x.min()) == low and int(x.max()) == high  # 4096 draws hit both ends


def test_bool_and_complex_policy() -> None:
    (b, c32, c64, c128), _ = materialize(
        _spec("((T([4096], b8), T([512], c32), T([512], c64), T([512], c128)), {})"), _gen()
    )
    assert b.dtype == torch.bool and 0.4 < b.float().mean() < 0.6
    assert (c32.dtype, c64.dtype, c128.dtype) == (torch.complex32, torch.complex64, torch.complex128)
    for z in (c64, c128):
        assert -9 <= float(z.real.min()) and float(z.real.max()) < 9
        assert -9 <= float(z.imag.min()) and float(z.imag.max()) < 9
        assert float(z.imag.std()) > 1


def test_strides_including_zero_and_0d() -> None:
    spec = _spec(
        "((T([64, 50, 768], f16, stride=(768, 49152, 1)), T([100, 1], f32, stride=(0, 0)), "
        "T([6, 352, 352], i64, stride=(0, 352, 1)), T([], f32), T([0, 3], f32, stride=(3, 1))), {})"
    )
    (a, b, c, d, e), _ = materialize(spec, _gen())
    assert a.shape == (64, 50, 768) and a.stride() == (768, 49152, 1)
    assert a.untyped_storage().nbytes() == spec.tensors()[0].nbytes  # exactly the extent
    assert b.stride() == (0, 0) and b.untyped_storage().nbytes() == 4 and bool((b == b[0, 0]).all())
    assert c.stride() == (0, 352, 1) and torch.equal(c[0], c[5])
    assert d.dim() == 0 and d.dtype == torch.float32
    assert e.shape == (0, 3)


def test_lists_tuples_and_plain_values() -> None:
    spec = _spec(
        "((T([64, 50, 256], f16), [T([3072, 256], f16), T([3072], f16)], 4, None, True, 0.0, [], (1, 2), "
        "torch.sparse_coo, -inf), {'dtype': f16, 'layout': torch.strided, 'device': 'cuda', 'memory_format': torch.channels_last})"
    )
    args, kwargs = materialize(spec, _gen(), "cpu")
    assert isinstance(args[1], list) and [t.shape for t in args[1]] == [(3072, 256), (3072,)]
    assert args[2:7] == [4, None, True, 0.0, []]
    assert args[7] == (1, 2) and isinstance(args[7], tuple)
    assert args[8] is torch.sparse_coo and args[9] == float("-inf")
    assert kwargs == {
        "dtype": torch.float16,
        "layout": torch.strided,
        "device": torch.device("cpu"),  # 'cuda' means the evaluation device
        "memory_format": torch.channels_last,
    }


def test_device_strings_map_to_the_evaluation_device_except_cpu() -> None:
    spec = CallSpec(
        None,
        (
            TensorArg((2,), "float32", device=DeviceArg("cpu")),
            DeviceArg("cuda"),
            DeviceArg("cpu", call_form=True),
        ),
        {},
    )
    args, _ = materialize(spec, _gen(), "meta")
    assert args[0].device.type == "cpu"  # the trace pinned this tensor to the host
    assert args[1] == torch.device("meta") and args[2] == torch.device("cpu")


def test_budget_refuses_the_huge_synthetic_row_without_allocating(
    local_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = parse_trace_file(local_data / "huge_synthetic.trace.txt")
    (item,) = build_records(rows, source_file="huge", include_synthetic=True)
    huge = describe_call(item.definition, item.workloads[1])
    assert huge.nbytes == 497 * 3976 * 23856 * 2  # ~94 GB

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("allocated")

    for name in ("rand", "randint", "empty", "empty_strided"):
        monkeypatch.setattr(torch, name, boom)
    with pytest.raises(InputTooLarge, match=r"inputs need 87\.\d GiB, over the memory budget of 16\.0 GiB"):
        materialize(huge, _gen(), max_bytes=16 * 2**30)
    with pytest.raises(InputTooLarge):
        check_budget(huge, 2**30)
    check_budget(huge, None)  # no budget: the caller's responsibility
    small = describe_call(item.definition, item.workloads[0])
    check_budget(small, 16 * 2**30)


def test_clone_call_keeps_layout_and_is_independent() -> None:
    spec = _spec(
        "((T([4, 3], f32, stride=(0, 1)), T([3, 4], f32, stride=(1, 3)), [T([2], i64)], 5), {'k': None})"
    )
    args, kwargs = materialize(spec, _gen())
    cloned, ckw = clone_call(args, kwargs)
    assert cloned[0].stride() == (0, 1) and cloned[1].stride() == (1, 3)
    assert cloned[0].untyped_storage().data_ptr() != args[0].untyped_storage().data_ptr()
    assert all(torch.equal(x, y) for x, y in zip(cloned[:2], args[:2]))
    cloned[1].add_(1)
    assert not torch.equal(cloned[1], args[1])
    assert torch.equal(cloned[2][0], args[2][0]) and cloned[2] is not args[2]
    assert cloned[3] == 5 and ckw == {"k": None}


def test_mutated_values_by_keyword_then_position() -> None:
    spec = CallSpec(
        "aten.x.out", (), {}, (MutatedArg("self", 0), MutatedArg("out", None), MutatedArg("running_var", 4))
    )
    a, b = torch.zeros(1), torch.ones(1)
    found = mutated_values(spec, [a], {"out": b})
    assert [p for p, _ in found] == ["args[0]", "kwargs['out']"]  # running_var not passed
    assert found[0][1] is a and found[1][1] is b


def test_engine_entry_points_on_a_definition() -> None:
    (item,) = build_records(
        parse_trace("Operator: aten.relu.default\ncnt: 1, ((T([2], f16),), {})\n"), source_file="t"
    )
    w = item.workloads[0]
    assert is_backendbench(item.definition) and is_backendbench(item.definition, w)
    assert call_input(w) is not None
    plain = Workload(uuid="u", axes={}, inputs={})
    assert call_input(plain) is None
    with pytest.raises(EngineError, match="has no 'backendbench_args' input"):
        describe_call(item.definition, plain)
    other = Definition(
        name="d", op_type="x", axes={}, inputs={}, outputs={}, reference="def run():\n    pass\n"
    )
    assert not is_backendbench(other)


def test_every_real_row_materializes_within_budget_or_is_refused(bb_files: list[Path]) -> None:
    """Every real row is described; the small ones are allocated with the right layout, the
    ones over the budget are refused."""
    budget = 8 * 2**30
    refused = made = 0
    for path in bb_files:
        for item in build_records(parse_trace_file(path), source_file=path.name, include_synthetic=True):
            for w in item.workloads:
                spec = describe_call(item.definition, w)
                if spec.nbytes > budget:
                    with pytest.raises(InputTooLarge):
                        check_budget(spec, budget)
                    refused += 1
                elif spec.nbytes < 2**20:
                    args, kwargs = materialize(spec, _gen(), "cpu", max_bytes=budget)
                    got = [x for x in [*args, *kwargs.values()] for x in (x if isinstance(x, list) else [x])]
                    tensors = [x for x in got if isinstance(x, torch.Tensor)]
                    want = spec.tensors()
                    assert [tuple(t.shape) for t in tensors] == [t.shape for t in want]
                    assert [t.stride() for t, d in zip(tensors, want) if d.stride is not None] == [
                        d.stride for d in want if d.stride is not None
                    ]
                    made += 1
    assert refused > 0 and made > 100
