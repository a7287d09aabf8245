"""``input_bytes``: a workload's input bytes from the records alone, what a first sweep orders
its tasks by (largest first). Tensor specs at the workload's axes, BackendBench calls by their
tensors, and a record it cannot read counted 0, never an error."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.schema import Definition, Workload
from sweep.schema.call_args import ITEMSIZE
from sweep.schema.sizes import MAX_BYTES, input_bytes


def _definition(inputs: dict[str, Any], axes: dict[str, Any] | None = None) -> Definition:
    return Definition.model_validate(
        {
            "name": "d",
            "op_type": "t",
            "axes": axes or {"m": {"type": "var"}, "n": {"type": "var"}, "k": {"type": "const", "value": 3}},
            "inputs": inputs,
            "outputs": {"y": {"shape": ["m"], "dtype": "float32"}},
            "reference": "def run(**kw):\n    return None\n",
        }
    )


def _workload(axes: dict[str, int], inputs: dict[str, Any] | None = None) -> Workload:
    return Workload.model_validate({"uuid": "w", "axes": axes, "inputs": inputs or {}})


def _call(args: list[Any], kwargs: dict[str, Any] | None = None) -> Workload:
    call = {"type": "backendbench_args", "args": args, "kwargs": kwargs or {}}
    return Workload.model_validate({"uuid": "w", "axes": {}, "inputs": {"call": call}})


def test_tensor_specs_count_shape_times_element_size_and_scalars_nothing() -> None:
    d = _definition(
        {
            "a": {"shape": ["m", "n"], "dtype": "float16"},
            "b": {"shape": ["n", "k"], "dtype": "int64"},
            "s": {"shape": None, "dtype": "float32"},
        }
    )
    assert input_bytes(d, _workload({"m": 5, "n": 7})) == 5 * 7 * 2 + 7 * 3 * 8


def test_float4_counts_half_a_byte_rounded_up() -> None:
    d = _definition({"a": {"shape": ["m"], "dtype": "float4_e2m1"}})
    assert input_bytes(d, _workload({"m": 5, "n": 1})) == 3


def test_a_missing_axis_counts_zero_not_an_error() -> None:
    d = _definition({"a": {"shape": ["m", "n"], "dtype": "float32"}})
    assert input_bytes(d, _workload({"m": 5})) == 0


def test_a_backendbench_call_counts_every_tensor_nested_and_keyword() -> None:
    t = {"type": "tensor", "shape": [4, 8], "dtype": "bfloat16"}
    strided = {"type": "tensor", "shape": [2, 3], "dtype": "float32", "stride": [10, 1]}
    w = _call([t, [{"type": "tuple", "items": [t, 2]}], 1.5], {"out": strided})
    d = _definition({})
    # Two 4x8 bf16 tensors, and a strided one reaching 1 + 1*10 + 2*1 = 13 elements.
    assert input_bytes(d, w) == 2 * 4 * 8 * 2 + 13 * 4


def test_a_call_without_tensors_counts_zero() -> None:
    assert input_bytes(_definition({}), _call([1, 2.0])) == 0


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 64), max_size=4), st.sampled_from(sorted(ITEMSIZE))),
        max_size=6,
    )
)
def test_a_call_counts_the_sum_of_its_tensors(tensors: list[tuple[list[int], str]]) -> None:
    args = [{"type": "tensor", "shape": shape, "dtype": dtype} for shape, dtype in tensors]
    want = sum(math.prod(shape) * ITEMSIZE[dtype] for shape, dtype in tensors)
    assert input_bytes(_definition({}), _call(args)) == want


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 1 << 20), st.integers(1, 1 << 20))
def test_larger_axes_never_count_fewer_bytes(m: int, n: int) -> None:
    d = _definition({"a": {"shape": ["m", "n"], "dtype": "float32"}})
    assert input_bytes(d, _workload({"m": m, "n": n})) <= input_bytes(d, _workload({"m": m + 1, "n": n}))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 2**63 - 1), st.sampled_from(["float32", "float4_e2m1", "int64"]))
def test_a_size_past_a_floats_range_saturates_and_never_raises(dims: int, axis: int, dtype: str) -> None:
    # A hostile record: many dimensions of axes near 2**63. An order of a first sweep reads every
    # task's size before anything runs, so this must count, not raise (it once raised OverflowError).
    axes = {f"a{i}": {"type": "var"} for i in range(dims)}
    d = _definition({"x": {"shape": list(axes), "dtype": dtype}}, {**axes, "m": {"type": "var"}})
    got = input_bytes(d, _workload({**dict.fromkeys(axes, axis), "m": 1}))
    halves = axis**dims * (1 if dtype == "float4_e2m1" else 2 * ITEMSIZE[dtype])  # exact, in half bytes
    exact = (halves + 1) // 2
    assert 0 < got <= MAX_BYTES
    if exact < 2**52:  # within a float's exact integers: the count itself
        assert got == exact
    else:
        assert got >= min(MAX_BYTES, 2**52)
