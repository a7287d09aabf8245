"""Every status the engine gives, each from a solution made to earn it."""

from __future__ import annotations

import pytest

from sweep.config import EvalSettings, Tolerance
from sweep.schema import Workload


def test_correct_solution_passes_with_correctness_and_performance(kit, vadd, vadd_wl) -> None:
    trace = kit.run(
        vadd, kit.solution("vadd_f32", "import torch\n\ndef run(x, y):\n    return x + y\n"), vadd_wl
    )
    ev = trace.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert ev.correctness.max_absolute_error == 0.0
    assert ev.performance.latency_ms > 0 and ev.performance.reference_latency_ms > 0
    assert ev.performance.speedup_factor == pytest.approx(
        ev.performance.reference_latency_ms / ev.performance.latency_ms
    )
    assert ev.log.startswith("PASSED: 2 trial(s)")


def test_destination_passing_solution_passes(kit, vadd, vadd_wl) -> None:
    sol = kit.solution(
        "vadd_f32", "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n", dps=True
    )
    assert kit.status(kit.run(vadd, sol, vadd_wl)) == "PASSED"


def test_wrong_values_are_incorrect_numerical_with_errors_recorded(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y):\n    return x - y\n"), vadd_wl)
    ev = trace.evaluation
    assert ev.status.value == "INCORRECT_NUMERICAL"
    assert ev.performance is None
    assert ev.correctness.max_absolute_error > 0.1
    assert "output 'z' (trial 0)" in ev.log and "elements differ beyond atol=0.0001, rtol=0.0001" in ev.log


def test_wrong_shape_is_incorrect_shape(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y):\n    return (x + y)[:-1]\n"), vadd_wl)
    assert kit.status(trace) == "INCORRECT_SHAPE"
    assert "shape [999], expected [1000]" in kit.log(trace)
    assert trace.evaluation.correctness is None


def test_wrong_dtype_is_incorrect_dtype(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y):\n    return (x + y).double()\n"), vadd_wl)
    assert kit.status(trace) == "INCORRECT_DTYPE"
    assert "dtype float64, expected float32" in kit.log(trace)


def test_shape_is_checked_before_dtype(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return (x + y)[:10].double()\n")
    assert kit.status(kit.run(vadd, sol, vadd_wl)) == "INCORRECT_SHAPE"


def test_returning_none_names_the_calling_convention(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y):\n    pass\n"), vadd_wl)
    assert kit.status(trace) == "INCORRECT_SHAPE"
    assert "destination_passing_style" in kit.log(trace)


def test_exception_is_runtime_error_with_traceback(kit, vadd, vadd_wl) -> None:
    src = "def helper(x):\n    raise ValueError('kernel exploded')\n\ndef run(x, y):\n    return helper(x)\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    text = kit.log(trace)
    assert text.startswith(
        "RUNTIME_ERROR: the solution raised ValueError at main.py:2 (in helper) (trial 0): kernel exploded"
    )
    assert "Traceback (most recent call last)" in text and "in helper" in text


def test_nan_in_solution_output_is_incorrect_numerical(kit, vadd, vadd_wl) -> None:
    src = "import torch\n\ndef run(x, y):\n    z = x + y\n    z[3] = float('nan')\n    return z\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "1 of 1000 elements are NaN/inf" in kit.log(trace) and "first at (3,)" in kit.log(trace)
    assert trace.evaluation.correctness.max_absolute_error == float("inf")


def test_unwritten_destination_output_fails(kit, vadd, vadd_wl) -> None:
    # Output buffers are poisoned with NaN before each call: leaving them alone cannot pass.
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y, z):\n    pass\n", dps=True), vadd_wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"


def test_nan_in_reference_is_a_runtime_error_not_a_pass(kit, vadd, vadd_wl) -> None:
    reference = "import torch\n\ndef run(x, y):\n    z = x + y\n    z[0] = float('nan')\n    return z\n"
    nan_def = kit.with_reference(vadd, reference)
    same = "import torch\n\ndef run(x, y):\n    z = x + y\n    z[0] = float('nan')\n    return z\n"
    trace = kit.run(nan_def, kit.solution("vadd_f32", same), vadd_wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "reference produced NaN in output 'z' (1 of 1000 elements)" in kit.log(trace)


def test_reference_with_wrong_dtype_blames_the_definition(kit, vadd, vadd_wl) -> None:
    reference = "def run(x, y):\n    return (x + y).double()\n"
    trace = kit.run_with_reference(vadd, reference, vadd_wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "the definition's reference is wrong" in kit.log(trace)


def test_solution_writing_into_its_inputs_is_compared_against_untouched_reference(kit, vadd, vadd_wl) -> None:
    # Adds correctly, then scribbles over its inputs: the reference ran on its own clone.
    src = "def run(x, y):\n    z = x + y\n    x.fill_(7.0)\n    y.zero_()\n    return z\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_solution_reading_inputs_after_reference_mutation_is_unaffected(kit, vadd, vadd_wl) -> None:
    # A reference that writes into its inputs must not change what the solution gets.
    reference = "def run(x, y):\n    z = x + y\n    x.zero_()\n    return z\n"
    trace = kit.run_with_reference(vadd, reference, vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_multiple_outputs_and_exact_integer_comparison(kit) -> None:
    defn = kit.definition("rowmax/rowmax_f32.json")
    wl = kit.workloads("rowmax/rowmax_f32.jsonl")[0]
    good = "import torch\n\ndef run(x, values, indices):\n    v, i = x.max(dim=-1)\n    values.copy_(v)\n    indices.copy_(i)\n"
    assert kit.status(kit.run(defn, kit.solution("rowmax_f32", good, dps=True), wl)) == "PASSED"
    off_by_one = good.replace("indices.copy_(i)", "indices.copy_(i + 1)")
    trace = kit.run(defn, kit.solution("rowmax_f32", off_by_one, dps=True), wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "output 'indices'" in kit.log(trace) and "atol=0, rtol=0" in kit.log(trace)
    swapped = "import torch\n\ndef run(x):\n    v, i = x.max(dim=-1)\n    return i, v\n"
    trace = kit.run(defn, kit.solution("rowmax_f32", swapped), wl)
    assert kit.status(trace) == "INCORRECT_DTYPE"


def test_wrong_number_of_returned_outputs(kit) -> None:
    defn = kit.definition("rowmax/rowmax_f32.json")
    wl = kit.workloads("rowmax/rowmax_f32.jsonl")[0]
    trace = kit.run(defn, kit.solution("rowmax_f32", "def run(x):\n    return x.max(dim=-1).values\n"), wl)
    assert kit.status(trace) == "INCORRECT_SHAPE"
    assert "expected 2 output(s) (values, indices)" in kit.log(trace)


def test_tolerance_override_per_definition_decides(kit, vadd, vadd_wl) -> None:
    off = kit.solution("vadd_f32", "def run(x, y):\n    return x + y + 1e-3\n")
    assert kit.status(kit.run(vadd, off, vadd_wl)) == "INCORRECT_NUMERICAL"  # default float32 atol 1e-4
    loose = kit.fast.model_copy(update={"definition_tolerance": {"vadd_f32": Tolerance(atol=2e-3)}})
    trace = kit.run(vadd, off, vadd_wl, loose)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    assert trace.evaluation.correctness.max_absolute_error == pytest.approx(1e-3, rel=1e-2)
    by_op = kit.fast.model_copy(update={"op_type_tolerance": {"vadd": Tolerance(atol=2e-3)}})
    assert kit.status(kit.run(vadd, off, vadd_wl, by_op)) == "PASSED"


def test_relative_tolerance_alone_does_not_pass_an_element(kit, vadd, vadd_wl) -> None:
    # Fails only when BOTH bounds are exceeded: a huge atol passes whatever rtol says.
    off = kit.solution("vadd_f32", "def run(x, y):\n    return (x + y) * 1.5\n")
    settings = kit.fast.model_copy(update={"tolerance": Tolerance(atol=10.0, rtol=0.0)})
    assert kit.status(kit.run(vadd, off, vadd_wl, settings)) == "PASSED"
    settings = kit.fast.model_copy(update={"tolerance": Tolerance(atol=0.0, rtol=0.6)})
    assert kit.status(kit.run(vadd, off, vadd_wl, settings)) == "PASSED"
    settings = kit.fast.model_copy(update={"tolerance": Tolerance(atol=0.0, rtol=0.4)})
    assert kit.status(kit.run(vadd, off, vadd_wl, settings)) == "INCORRECT_NUMERICAL"


def test_later_trial_failure_is_caught(kit, vadd, vadd_wl) -> None:
    # Right on the first call only: the second trial, with fresh inputs, must catch it.
    src = "calls = [0]\n\ndef run(x, y):\n    calls[0] += 1\n    return x + y if calls[0] == 1 else x * 0\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "(trial 1)" in kit.log(trace)


def test_unknown_workload_axes_are_a_clear_runtime_error(kit, vadd) -> None:
    wl = Workload.model_validate({"uuid": "bad", "axes": {"M": 3}, "inputs": {"x": {"type": "random"}}})
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y):\n    return x + y\n"), wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "does not match definition 'vadd_f32'" in kit.log(trace)


def test_settings_trials_are_honoured(kit, vadd, vadd_wl) -> None:
    settings = EvalSettings(trials=5, warmup_ms=0, rep_ms=1, min_iterations=1, max_iterations=2, input_sets=1)
    src = "calls = [0]\n\ndef run(x, y):\n    calls[0] += 1\n    return x + y if calls[0] < 5 else x\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, settings)
    assert "(trial 4)" in kit.log(trace)


def test_input_mutation_is_noted_and_inputs_restored_for_timed_calls(kit, vadd, vadd_wl) -> None:
    src = "def run(x, y):\n    z = x + y\n    x.fill_(7.0)\n    return z\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "PASSED"
    assert "writes into its input(s) x" in kit.log(trace)
