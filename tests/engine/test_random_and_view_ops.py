"""Operators whose results are not compared element by element (``_op_kinds``, ``_call_random``):
random ones (a statistical test), uninitialised ones (shape, dtype, device, strides), and
in-place view changes (``as_strided_``, ``t_``, ``resize_``...: strides compared, and the
argument restored, shape and strides included, before every timed call).

ATen-identity solutions pass every row (real rows of the sample, hand-written rows of the
operators it lacks: ``tests/data/backendbench/random_view_ops.trace.txt``); wrong kernels fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from sweep.backendbench import build_records, op_expression, parse_op_name, parse_trace_file
from sweep.engine.aten._call_compare import Acc, compare_call
from sweep.engine.aten._call_inputs import CallSpec, clone_call, describe_call
from sweep.engine.aten._call_random import _ks_test, _Law, _law_test, tensor_check
from sweep.engine.aten._call_tree import copy_into
from sweep.engine.aten._op_kinds import op_kind, seeded
from sweep.schema.call_args import TensorArg

Kit = Any


def _identity(kit: Kit, folder: str, op: str, body: str | None = None, name: str = "aten") -> Any:
    src = (
        body
        or f"import torch\n\ndef IMPL(*args, **kwargs):\n    return {op_expression(parse_op_name(op))}(*args, **kwargs)\n"
    )
    impl = f"{folder}_kernel_impl"
    return kit.solution(folder, src.replace("IMPL", impl), name=name, entry=f"main.py::{impl}")


def _rows(path: Path, ops: list[str] | None = None) -> list[tuple[Any, Any, str]]:
    items = build_records(parse_trace_file(path), source_file=path.name, ops=ops)
    return [(item.definition, w, item.op) for item in items for w in item.workloads]


# ---- which kind, from torch's tags and names -------------------------------------------------


@pytest.mark.parametrize(
    ("op", "args", "random", "uninitialized", "view"),
    [
        ("aten.bernoulli.p", (TensorArg((4,), "float32"), 0.5), True, False, False),
        ("aten.uniform_.default", (TensorArg((4,), "float32"),), True, False, False),
        ("aten.randperm.default", (10,), True, False, False),
        # Drawing turned off by the call's own arguments: compared element by element.
        ("aten.native_dropout.default", (TensorArg((4,), "float32"), 0.5, False), False, False, False),
        ("aten.native_dropout.default", (TensorArg((4,), "float32"), 0.0, True), False, False, False),
        ("aten.new_empty.default", (TensorArg((4,), "float32"), [2]), False, True, False),
        ("aten.empty.memory_format", ([2, 3],), False, True, False),
        ("aten.resize_.default", (TensorArg((4,), "float32"), [2]), False, True, True),
        ("aten.as_strided_.default", (TensorArg((4,), "float32"), [2], [1]), False, False, True),
        ("aten.t_.default", (TensorArg((2, 4), "float32"),), False, False, True),
        ("aten.add.Tensor", (TensorArg((4,), "float32"), TensorArg((4,), "float32")), False, False, False),
    ],
)
def test_kind_of_an_operator(
    op: str, args: tuple[Any, ...], random: bool, uninitialized: bool, view: bool
) -> None:
    kind = op_kind(CallSpec(op, args, {}))
    assert (kind.random, kind.uninitialized, kind.inplace_view) == (random, uninitialized, view)


def test_cudnn_rnn_without_dropout_is_deterministic(sample_file: Path) -> None:
    ((defn, wl, _), *_) = _rows(sample_file, ["aten._cudnn_rnn.default"])
    kind = op_kind(describe_call(defn, wl))
    assert not kind.random  # tagged seeded, but dropout is 0.0
    assert kind.opaque == (3,) and kind.note is not None and "output[3]" in kind.note


def test_an_opaque_reserve_space_is_checked_for_structure_only() -> None:
    # cuDNN's reserve space (output 3 of _cudnn_rnn) differs between two correct calls; the
    # other outputs, and the reserve space's shape and dtype, are still checked
    kind = op_kind(CallSpec("aten._cudnn_rnn.default", (), {"train": False}))  # no dropout
    assert not kind.random
    check = tensor_check(kind, (), {})
    assert check is not None
    out = [torch.ones(3), torch.ones(2), torch.ones(2), torch.arange(8, dtype=torch.uint8), torch.ones(1)]

    def compare(actual: list[torch.Tensor]) -> Any:
        return compare_call(CallSpec("aten._cudnn_rnn.default", (), {}), (out, [], {}), (actual, [], {}),
                            atol=0.0, rtol=0.0, check=check)  # fmt: skip

    scratch = [*out[:3], torch.arange(8, 16, dtype=torch.uint8), out[4]]
    assert compare(scratch).ok
    assert compare([*out[:3], torch.arange(9, dtype=torch.uint8), out[4]]).kind == "shape"
    assert compare([*out[:3], torch.arange(8, dtype=torch.int32), out[4]]).kind == "dtype"
    wrong = [out[0] * 2, *out[1:]]
    assert compare(wrong).kind == "value"
    assert op_kind(CallSpec("aten.relu.default", (), {})).opaque == ()


# ---- end to end: the ATen identity passes ------------------------------------------------------


def test_hand_written_rows_pass_with_the_aten_identity(kit: Kit, local_data: Path) -> None:
    rows = _rows(local_data / "random_view_ops.trace.txt")
    assert len(rows) == 33
    for defn, wl, op in rows:
        trace = kit.run(defn, _identity(kit, defn.name, op), wl)
        assert kit.status(trace) == "PASSED", (op, kit.log(trace))
        if op_kind(describe_call(defn, wl)).random:
            assert "checked for shape, dtype and device and by a statistical test" in kit.log(trace)


def test_real_rows_of_new_empty_and_as_strided_pass(kit: Kit, sample_file: Path) -> None:
    rows = _rows(sample_file, ["aten.new_empty.default", "aten.as_strided_.default"])
    assert {op for _, _, op in rows} == {"aten.new_empty.default", "aten.as_strided_.default"}
    settings = kit.fast.model_copy(update={"input_sets": 3, "min_iterations": 6})
    for defn, wl, op in rows:
        trace = kit.run(defn, _identity(kit, defn.name, op), wl, settings)
        assert kit.status(trace) == "PASSED", (op, kit.log(trace))


def test_random_trials_are_seeded_and_reproducible(kit: Kit, local_data: Path) -> None:
    ((defn, wl, op),) = _rows(local_data / "random_view_ops.trace.txt", ["aten.normal.Tensor_Tensor"])
    record = (
        "import torch\n\nSEEN = []\n\ndef IMPL(*a, **k):\n"
        "    out = torch.ops.aten.normal.Tensor_Tensor(*a, **k)\n    SEEN.append(float(out.double().sum()))\n"
        "    return out\n"
    )
    seen = []
    for _ in range(2):
        from sweep.engine import EngineCache

        cache = EngineCache()
        trace = kit.run(defn, _identity(kit, defn.name, op, record), wl, cache=cache)
        assert kit.status(trace) == "PASSED", kit.log(trace)
        fn = next(b.fn for k, b in cache.solutions.items() if k.startswith("sol:"))  # type: ignore[union-attr]
        seen.append(list(fn.__globals__["SEEN"][: kit.fast.trials]))
        fn.__globals__["SEEN"].clear()
    assert seen[0] == seen[1]  # the trials draw the same on every run
    state = torch.get_rng_state()
    with seeded(torch.device("cpu"), 5):
        a = torch.rand(3)
    with seeded(torch.device("cpu"), 5):
        assert torch.equal(a, torch.rand(3))
    assert torch.equal(torch.get_rng_state(), state)  # put back


# ---- mutation: wrong kernels fail ----------------------------------------------------------

WRONG = {
    # (operator, kernel body, status, a piece of the log)
    "bernoulli__default": (
        "aten.bernoulli.default",
        "import torch\n\ndef IMPL(self, generator=None):\n    return torch.full_like(self, 0.5)\n",
        "INCORRECT_NUMERICAL",
        "values other than 0 and 1",
    ),
    "bernoulli__default/mean": (
        "aten.bernoulli.default",
        (
            "import torch\n\ndef IMPL(self, generator=None):\n"
            "    return torch.bernoulli(torch.full_like(self, float(self.float().mean())))\n"
        ),
        "INCORRECT_NUMERICAL",
        "random result fails its test: mean",
    ),
    "bernoulli__p": (
        "aten.bernoulli.p",
        "import torch\n\ndef IMPL(self, p, generator=None):\n    return torch.bernoulli(torch.full_like(self, 1 - p))\n",
        "INCORRECT_NUMERICAL",
        "mean",
    ),
    "normal__Tensor_Tensor": (
        "aten.normal.Tensor_Tensor",
        "import torch\n\ndef IMPL(mean, std, generator=None):\n    return torch.normal(mean, torch.ones_like(std))\n",
        "INCORRECT_NUMERICAL",
        "spread",
    ),
    "uniform___default": (
        "aten.uniform_.default",
        "def IMPL(self, a=0.0, b=1.0, generator=None):\n    return self.uniform_(a, b + 1)\n",
        "INCORRECT_NUMERICAL",
        "random result fails its test",
    ),
    "native_dropout__default": (
        "aten.native_dropout.default",
        "import torch\n\ndef IMPL(input, p, train):\n    mask = torch.rand_like(input) >= p\n    return input * mask, mask\n",
        "INCORRECT_NUMERICAL",
        "neither 0 nor input/(1-p)",
    ),
    "randperm__default": (
        "aten.randperm.default",
        "import torch\n\ndef IMPL(n, **k):\n    return torch.randperm(n, device=k.get('device')).clamp(max=n - 2)\n",
        "INCORRECT_NUMERICAL",
        "not a permutation",
    ),
    "new_empty_strided__default": (
        "aten.new_empty_strided.default",
        "def IMPL(self, size, stride, **k):\n    return self.new_empty(size)\n",
        "INCORRECT_SHAPE",
        "strides [6, 1], expected [1, 4]",
    ),
    "empty__memory_format": (
        "aten.empty.memory_format",
        "import torch\n\ndef IMPL(size, **k):\n    k.pop('memory_format')\n    return torch.empty(size, **k)\n",
        "INCORRECT_SHAPE",
        "strides",
    ),
    "t___default": (
        "aten.t_.default",
        "def IMPL(self):\n    return self.t()\n",
        "INCORRECT_SHAPE",
        "args[0]",
    ),
    "as_strided___default": (
        "aten.as_strided_.default",
        "def IMPL(self, size, stride, storage_offset=None):\n    return self.as_strided_(size, stride)\n",
        "INCORRECT_SHAPE",
        "storage offset 0, expected 4",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_wrong_kernel_fails(kit: Kit, local_data: Path, case: str) -> None:
    op, body, status, text = WRONG[case]
    ((defn, wl, _), *_) = _rows(local_data / "random_view_ops.trace.txt", [op])
    trace = kit.run(defn, _identity(kit, defn.name, op, body, name="wrong"), wl)
    assert kit.status(trace) == status, kit.log(trace)
    assert text in kit.log(trace)


def test_uninitialised_results_are_not_compared_by_value(kit: Kit, sample_file: Path) -> None:
    ((defn, wl, op), *_) = _rows(sample_file, ["aten.new_empty.default"])
    zeros = "import torch\n\ndef IMPL(self, size, **k):\n    return torch.zeros(size, **k)\n"
    trace = kit.run(defn, _identity(kit, defn.name, op, zeros, name="zeros"), wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    assert "returns uninitialised memory" in kit.log(trace)
    wrong = "import torch\n\ndef IMPL(self, size, **k):\n    return torch.zeros(size, device=k['device'])\n"
    trace = kit.run(defn, _identity(kit, defn.name, op, wrong, name="f32"), wl)
    assert kit.status(trace) == "INCORRECT_DTYPE", kit.log(trace)


# ---- the tests themselves: genuine draws pass, restores restore --------------------------------


def test_genuine_draws_pass_the_tests() -> None:
    gen = torch.Generator().manual_seed(0)
    acc = Acc(0.0, 0.0)
    for i in range(100):
        p = torch.rand(1000, generator=gen)
        assert (
            _law_test(
                torch.bernoulli(p, generator=gen), _Law(p.double(), (p * (1 - p)).double(), binary=True)
            )
            is None
        )
        m, s = torch.rand(1000, generator=gen), torch.rand(1000, generator=gen)
        x = torch.normal(m, s, generator=gen).half()
        assert _law_test(x, _Law(m.double(), (s * s).double(), kappa=2.0)) is None, i
        u = torch.empty(777).uniform_(-2, 5, generator=gen)
        assert _law_test(u, _Law(1.5, 49 / 12, low=-2, high=5, kappa=0.8)) is None
        g1, g2 = (torch._standard_gamma(torch.full((500,), 2.0), generator=gen) for _ in range(2))
        assert _ks_test(g1, g2) is None
    assert acc.max_abs == 0.0
    assert _ks_test(torch.rand(500, generator=gen), torch.rand(500, generator=gen) + 0.3) is not None


def test_copy_into_puts_back_shape_strides_and_values() -> None:
    src = ([torch.arange(12.0).view(3, 4)], {})
    dst = clone_call(*src)
    t = dst[0][0]
    ptr = t.data_ptr()
    t.t_()
    t.mul_(0)
    assert copy_into(dst, src)
    assert t.shape == (3, 4) and t.stride() == (4, 1) and torch.equal(t, src[0][0]) and t.data_ptr() == ptr
    t.resize_(5, 5)  # a larger storage: still put back into it
    assert copy_into(dst, src) and t.shape == (3, 4) and torch.equal(t, src[0][0])
    t.set_(torch.empty(2))  # a smaller one: cannot
    assert not copy_into(dst, src)


def test_strides_of_size_one_dimensions_are_not_compared() -> None:
    # as_strided_(x, [32, 1024, 1, 1], [1024, 1, 1024, 1024]) and a clone of its result lay out
    # memory the same way; torch's clone rewrites the unused strides to [1024, 1, 1, 1]
    kind = op_kind(CallSpec("aten.as_strided_.default", (), {}))
    check = tensor_check(kind, (), {})
    assert check is not None
    base = torch.arange(32 * 1024, dtype=torch.float16)
    e = base.as_strided([32, 1024, 1, 1], [1024, 1, 1024, 1024])
    same = base.clone().as_strided([32, 1024, 1, 1], [1024, 1, 1, 1])
    assert check(e, same, "output", Acc(0.0, 0.0)) is None
    moved = base.clone().as_strided([32, 1024, 1, 1], [1, 32, 1, 1])  # a different layout
    bad = check(e, moved, "output", Acc(0.0, 0.0))
    assert bad is not None and bad.kind == "shape" and "strides" in bad.detail
