"""Inputs: seeded and machine-independent, every dtype, scalars, safetensors, memory budget."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from sweep.config import EvalSettings, Tolerance
from sweep.engine.io._inputs import InputError, base_seed, make_inputs, memory_plan, random_tensor
from sweep.schema import Definition, SafetensorsInput, Workload

CPU = torch.device("cpu")


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]


def test_seed_depends_on_sweep_seed_and_uuid_only() -> None:
    assert base_seed(0, "w1") == base_seed(0, "w1")
    assert base_seed(0, "w1") != base_seed(1, "w1")
    assert base_seed(0, "w1") != base_seed(0, "w2")
    assert 0 <= base_seed(123, "x") < 2**63


def test_random_values_are_pinned_by_the_seed() -> None:
    # Frozen bytes: a change in generation (numpy, torch, or this code) would break
    # reproducibility across machines, and must be deliberate.
    t = random_tensor((5,), "float32", 42)
    assert t.tolist() == random_tensor((5,), "float32", 42).tolist()
    raw = np.random.PCG64(42).random_raw(5)
    want = [((int(r) >> 40) / 2**23) - 1.0 for r in raw]
    assert t.tolist() == want


@pytest.mark.parametrize(
    "dtype",
    [
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float64",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
        "complex64",
        "complex128",
    ],
)
def test_every_dtype_is_generated_deterministically_and_in_range(dtype) -> None:
    t = random_tensor((64, 33), dtype, 7)
    assert str(t.dtype) == f"torch.{dtype}"
    assert tuple(t.shape) == (64, 33)
    assert _digest(t) == _digest(random_tensor((64, 33), dtype, 7))
    assert _digest(t) != _digest(random_tensor((64, 33), dtype, 8))
    if t.is_complex():
        parts = torch.view_as_real(t)
        assert parts.abs().max() <= 1.0
    elif t.is_floating_point():
        f = t.float()
        assert f.min() >= -1.0 and f.max() <= 1.0 and f.abs().max() > 0.5  # not zeros
    elif dtype != "bool":
        assert t.min() >= 0 and t.max() < 16 and len(t.unique()) > 8
    else:
        assert 0.3 < t.float().mean() < 0.7


def test_unsupported_dtype_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="float4_e2m1 is not supported"):
        random_tensor((4,), "float4_e2m1", 1)


def test_inputs_differ_per_set_and_per_name_and_repeat_exactly(kit, vadd, vadd_wl) -> None:
    seed = base_seed(0, vadd_wl.uuid)
    a0 = make_inputs(vadd, vadd_wl, seed, 0, CPU, None).values
    a0b = make_inputs(vadd, vadd_wl, seed, 0, CPU, None).values
    a1 = make_inputs(vadd, vadd_wl, seed, 1, CPU, None).values
    assert torch.equal(a0["x"], a0b["x"]) and torch.equal(a0["y"], a0b["y"])
    assert not torch.equal(a0["x"], a1["x"])
    assert not torch.equal(a0["x"], a0["y"])


def test_same_config_gives_identical_errors_and_seed(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return (x + y) * 1.0001\n")
    settings = kit.fast.model_copy(update={"tolerance": Tolerance(atol=1.0)})
    t1 = kit.run(vadd, sol, vadd_wl, settings)
    t2 = kit.run(vadd, sol, vadd_wl, settings)
    e1, e2 = t1.evaluation, t2.evaluation
    assert e1.status.value == e2.status.value == "PASSED"
    assert e1.seed == e2.seed == base_seed(0, vadd_wl.uuid)
    assert e1.correctness == e2.correctness and e1.correctness.max_absolute_error > 0
    t3 = kit.run(vadd, sol, vadd_wl, settings.model_copy(update={"seed": 5}))
    assert t3.evaluation.seed != e1.seed
    assert t3.evaluation.correctness.max_absolute_error != e1.correctness.max_absolute_error


def test_scalar_inputs_come_from_the_workload(kit) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = kit.workloads("csr/csr_rowsum.jsonl")[0]
    values = make_inputs(defn, wl, 1, 0, CPU, str(kit.data)).values
    assert values["scale"] == 0.5


def test_safetensors_inputs_are_loaded_from_the_dataset_root(kit) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = kit.workloads("csr/csr_rowsum.jsonl")[0]
    values = make_inputs(defn, wl, 1, 0, CPU, str(kit.data)).values
    assert values["indptr"].tolist() == [0, 3, 3, 7, 12]
    src = "import torch\n\ndef run(indptr, values, scale):\n    return torch.stack([values[a:b].sum() for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]) * scale\n"
    trace = kit.run(defn, kit.solution("csr_rowsum", src), wl, root=str(kit.data))
    assert kit.status(trace) == "PASSED", kit.log(trace)


def _csr_record(values_key: str = "values") -> Workload:
    """A workload of ``csr/csr_rowsum`` reading its tensors from ``csr_small.safetensors``."""
    return Workload.model_validate(
        {
            "uuid": "csr-x",
            "axes": {"B": 4, "B1": 5, "NNZ": 12},
            "inputs": {
                "indptr": {
                    "type": "safetensors",
                    "path": "blob/csr/csr_small.safetensors",
                    "tensor_key": "indptr",
                },
                "values": {
                    "type": "safetensors",
                    "path": "blob/csr/csr_small.safetensors",
                    "tensor_key": values_key,
                },
                "scale": {"type": "scalar", "value": 1.0},
            },
        }
    )


def _csr_wl(path: str, key: str = "indptr") -> Workload:
    wl = _csr_record()
    # A workload record refuses a path that leaves the root (absolute, '..'); the engine
    # checks again when it opens the file, which is what these cases test, so the path is set
    # without validation.
    indptr = SafetensorsInput.model_construct(type="safetensors", path=path, tensor_key=key)
    return wl.model_copy(update={"inputs": {**wl.inputs, "indptr": indptr}})


@pytest.mark.parametrize(
    ("path", "key", "root", "expected"),
    [
        ("../engine/../csr_small.safetensors", "indptr", True, "escapes the dataset root"),
        ("/etc/passwd", "indptr", True, "escapes the dataset root"),
        ("blob/csr/missing.safetensors", "indptr", True, "does not exist"),
        ("blob/csr/csr_small.safetensors", "nope", True, "has no tensor 'nope' (it has: indptr, values"),
        (
            "blob/csr/csr_small.safetensors",
            "values",
            True,
            "has shape [12], the definition and workload axes give [5]",
        ),
        ("blob/csr/csr_small.safetensors", "indptr", False, "no dataset root"),
    ],
)
def test_bad_safetensors_inputs_are_refused_with_a_reason(kit, path, key, root, expected) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = _csr_wl(path, key)
    with pytest.raises(
        InputError, match=expected.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
    ):
        make_inputs(defn, wl, 1, 0, CPU, str(kit.data) if root else None)
    trace = kit.run(
        defn,
        kit.solution("csr_rowsum", "def run(a, b, c):\n    return b\n"),
        wl,
        root=str(kit.data) if root else None,
    )
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert expected.split(" (")[0] in kit.log(trace)


def test_safetensors_dtype_mismatch_is_refused(kit) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = _csr_record("values_f64")
    with pytest.raises(InputError, match="has dtype float64, the definition says float32"):
        make_inputs(defn, wl, 1, 0, CPU, str(kit.data))


def test_memory_plan_counts_sets_outputs_and_flush_buffer(vadd, vadd_wl) -> None:
    plan = memory_plan(vadd, vadd_wl, input_sets=4, flush_bytes=100)
    assert plan.input_bytes == 2 * 1000 * 4 and plan.output_bytes == 1000 * 4
    # slots, one set in the making, a checked call's copies (inputs before and after,
    # outputs), the flush buffer
    assert plan.total == 4 * (8000 + 2 * 4000) + (2 * 8000 + 4000) + (2 * 8000 + 4000) + 100


def test_task_over_the_memory_budget_fails_before_allocating(kit, vadd) -> None:
    huge = Workload.model_validate(
        {
            "uuid": "huge",
            "axes": {"N": 50_000_000_000},
            "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
        }
    )
    sol = kit.solution("vadd_f32", "def run(x, y):\n    raise AssertionError('must not run')\n")
    trace = kit.run(vadd, sol, huge)  # default budget: 80% of available RAM
    assert kit.status(trace) == "RUNTIME_ERROR"
    text = kit.log(trace)
    assert (
        "over the memory budget" in text
        and "80% of available RAM" in text
        and "nothing was allocated" in text
    )
    small = kit.fast.model_copy(update={"memory_budget_gb": 1e-6})
    wl = kit.workloads("vadd/vadd_f32.jsonl")[0]
    trace = kit.run(vadd, sol, wl, small)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "settings.memory_budget_gb = 1e-06" in kit.log(trace)


def test_a_size_past_a_floats_range_is_over_the_budget_not_a_crash(kit) -> None:
    # Twenty axes near 2**62: the byte count does not fit a float (it raised OverflowError).
    axes = {f"a{i}": {"type": "var"} for i in range(20)}
    defn = Definition.model_validate(
        {
            "name": "many_dims",
            "op_type": "t",
            "axes": axes,
            "inputs": {"x": {"shape": list(axes), "dtype": "float32"}},
            "outputs": {"y": {"shape": ["a0"], "dtype": "float32"}},
            "reference": "def run(x):\n    raise AssertionError('must not run')\n",
        }
    )
    wl = Workload.model_validate(
        {"uuid": "w", "axes": dict.fromkeys(axes, 2**62), "inputs": {"x": {"type": "random"}}}
    )
    sol = kit.solution("many_dims", "def run(x):\n    raise AssertionError('must not run')\n")
    trace = kit.run(defn, sol, wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "over the memory budget" in kit.log(trace) and "nothing was allocated" in kit.log(trace)


def test_default_settings_budget_is_documented() -> None:
    assert EvalSettings().memory_budget_gb is None


def test_inputs_generated_for_a_definition_with_every_dtype(kit) -> None:
    dtypes = ["float32", "float16", "bfloat16", "float8_e4m3fn", "int32", "int8", "bool", "uint8", "float64"]
    defn = Definition.model_validate(
        {
            "name": "all_dtypes",
            "op_type": "cast",
            "axes": {"N": {"type": "var"}},
            "inputs": {f"x_{d}": {"shape": ["N"], "dtype": d} for d in dtypes},
            "outputs": {"y": {"shape": ["N"], "dtype": "float32"}},
            "reference": "import torch\n\ndef run(*xs):\n    return sum(x.float() for x in xs)\n",
        }
    )
    wl = Workload.model_validate(
        {"uuid": "d", "axes": {"N": 100}, "inputs": {f"x_{d}": {"type": "random"} for d in dtypes}}
    )
    sol = kit.solution(
        "all_dtypes",
        "def run(*xs):\n    out = xs[0].float()\n    for x in xs[1:]:\n        out = out + x.float()\n    return out\n",
    )
    trace = kit.run(defn, sol, wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_element_sizes_of_the_records_are_torchs_for_every_dtype() -> None:
    # The schema's table (sweep.schema.sizes) sizes memory plans and work counts without torch.
    from sweep.engine.io import element_bytes, torch_dtype
    from sweep.schema import DType

    for dtype in DType:
        want = 0.5 if dtype is DType.float4_e2m1 else torch_dtype(dtype.value).itemsize
        assert element_bytes(dtype.value) == want, dtype
