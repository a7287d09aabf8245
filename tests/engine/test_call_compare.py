"""Structured output comparison: tensors, tuples, lists, plain values, mutated arguments."""

from __future__ import annotations

import math

import pytest
import torch

from sweep.engine.aten._call_compare import compare_call, compare_values
from sweep.engine.aten._call_inputs import CallSpec, clone_call
from sweep.schema.op_tags import MutatedArg


def cmp(e: object, a: object, atol: float = 1e-2, rtol: float = 1e-2) -> tuple[bool, str, str]:
    r = compare_values(e, a, atol=atol, rtol=rtol)
    return r.ok, r.kind, r.path


def test_tensors_within_and_outside_tolerance() -> None:
    e = torch.tensor([1.0, 2.0, 100.0])
    assert cmp(e, e + 0.005) == (True, "ok", "")
    assert cmp(e, torch.tensor([1.0, 2.0, 100.5])) == (True, "ok", "")  # rel 0.5% passes
    assert cmp(e, torch.tensor([1.5, 2.0, 100.0])) == (False, "value", "output")
    r = compare_values(e, torch.tensor([1.0, 2.0, 101.0]), atol=1e-2, rtol=1e-3)
    assert not r.ok and r.max_abs_error == pytest.approx(1.0) and "1 of 3 elements" in r.detail


def test_shape_dtype_layout_and_type_mismatches() -> None:
    e = torch.zeros(2, 3)
    assert cmp(e, torch.zeros(3, 2)) == (False, "shape", "output")
    assert cmp(e, torch.zeros(2, 3, dtype=torch.float64)) == (False, "dtype", "output")
    assert cmp(e, e.to_sparse()) == (False, "structure", "output")
    assert cmp(e, 0.0) == (False, "structure", "output")
    assert cmp(1.0, torch.tensor(1.0)) == (False, "structure", "output")


def test_nan_and_inf_rules() -> None:
    e = torch.tensor([math.nan, math.inf, -math.inf, 1.0])
    assert cmp(e, e.clone())[0]
    assert cmp(e, torch.tensor([0.0, math.inf, -math.inf, 1.0])) == (False, "value", "output")
    assert cmp(e, torch.tensor([math.nan, 1e30, -math.inf, 1.0])) == (False, "value", "output")
    assert cmp(e, torch.tensor([math.nan, math.inf, -math.inf, math.nan])) == (False, "value", "output")
    assert cmp(torch.tensor([1.0]), torch.tensor([math.inf]))[0] is False


def test_integer_bool_complex_and_half() -> None:
    assert cmp(torch.tensor([1, 2]), torch.tensor([1, 2]))[0]
    assert cmp(torch.tensor([1, 2]), torch.tensor([1, 3])) == (False, "value", "output")
    assert cmp(torch.tensor([True]), torch.tensor([False])) == (False, "value", "output")
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert cmp(z, z + 0.001)[0] and not cmp(z, z + 1j)[0]
    h = torch.rand(64, dtype=torch.float16)
    assert cmp(h, h.clone())[0]
    assert cmp(torch.empty(0, 3), torch.empty(0, 3))[0]


def test_sparse_tensors_compare_densely() -> None:
    d = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert cmp(d.to_sparse(), d.to_sparse())[0]
    assert cmp(d.to_sparse(), (d * 2).to_sparse()) == (False, "value", "output")


def test_tuples_lists_elementwise_with_paths() -> None:
    e = (torch.ones(2), torch.zeros(3))
    assert cmp(e, (torch.ones(2), torch.zeros(3)))[0]
    assert cmp(e, [torch.ones(2), torch.zeros(3)])[0]  # a list may stand for a tuple
    assert cmp(e, (torch.ones(2), torch.ones(3))) == (False, "value", "output[1]")
    assert cmp(e, (torch.ones(2),)) == (False, "structure", "output")
    assert cmp([[torch.ones(1)], 2], [[torch.ones(1)], 3]) == (False, "value", "output[1]")


def test_plain_values_exactly() -> None:
    assert cmp(3, 3)[0] and cmp(None, None)[0] and cmp(math.nan, math.nan)[0]
    assert cmp(torch.float16, torch.float16)[0] and cmp(torch.Size([2, 3]), (2, 3))[0]
    assert not cmp(3, 4)[0] and not cmp(1.0, 1.0000001)[0] and not cmp(True, 1)[0]
    assert not cmp(None, 0)[0] and not cmp("a", "b")[0]


def test_in_place_op_compares_the_mutated_argument() -> None:
    spec = CallSpec("aten.add_.Tensor", (), {}, (MutatedArg("self", 0),))
    x = torch.rand(4)
    y = torch.rand(4)
    ra, rk = clone_call([x, y], {})
    ref_out = torch.ops.aten.add_.Tensor(*ra, **rk)
    assert not torch.equal(ra[0], x)  # the reference wrote into its own clone only

    def lazy(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b  # right value, but does not write into `a`

    sa, sk = clone_call([x, y], {})
    verdict = compare_call(spec, (ref_out, ra, rk), (lazy(*sa), sa, sk), atol=1e-6, rtol=1e-6)
    assert not verdict.ok and verdict.path == "args[0]" and verdict.kind == "value"

    sa, sk = clone_call([x, y], {})
    good = compare_call(spec, (ref_out, ra, rk), (sa[0].add_(sa[1]), sa, sk), atol=1e-6, rtol=1e-6)
    assert good.ok


def test_out_kwarg_is_compared() -> None:
    spec = CallSpec("aten.add.out", (), {}, (MutatedArg("out", None),))
    x, y = torch.rand(3), torch.rand(3)
    ref_kw = {"out": torch.empty(3)}
    torch.ops.aten.add.out(x, y, **ref_kw)
    sol_kw = {"out": torch.zeros(3)}
    verdict = compare_call(
        spec, (ref_kw["out"], [x, y], ref_kw), (x + y, [x, y], sol_kw), atol=1e-6, rtol=1e-6
    )
    assert not verdict.ok and verdict.path == "kwargs['out']"
