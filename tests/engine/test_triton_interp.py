"""Triton kernels that loop over a runtime bound run on the CPU under the interpreter with the
pinned Triton and NumPy (Triton 3.6's interpreter under NumPy >= 2.4 needed a patch), and an
interpreter failure of that pair names its cause and fix; a solution's error names its line."""

from __future__ import annotations

import pytest

from sweep.engine.builds._triton_interp import NUMPY_SCALAR_ERRORS, interpreter_hint

# A row sum that walks N in BLOCK steps: ``n`` is a runtime scalar, the loop bound the
# interpreter must turn into a Python int.
LOOP = (
    "import torch\nimport triton\nimport triton.language as tl\n\n"
    "@triton.jit\n"
    "def _add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):\n"
    "    for start in range(0, n, BLOCK):\n"
    "        offs = start + tl.arange(0, BLOCK)\n"
    "        mask = offs < n\n"
    "        x = tl.load(x_ptr + offs, mask=mask)\n"
    "        tl.store(z_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)\n\n"
    "def run(x, y, z):\n"
    "    _add[(1,)](x, y, z, x.numel(), BLOCK=512)\n"
)


def test_a_kernel_looping_over_a_runtime_bound_passes_on_cpu(kit, vadd) -> None:
    wl = kit.workloads("vadd/vadd_f32.jsonl")[1]  # N = 4097: nine steps, a masked tail
    trace = kit.run(vadd, kit.solution("vadd_f32", LOOP, dps=True, language="triton", name="loop"), wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_a_while_loop_and_a_runtime_start_pass_too(kit, vadd) -> None:
    src = LOOP.replace(
        "    for start in range(0, n, BLOCK):\n",
        "    start = tl.program_id(0) * 0\n    while start < n:\n",
    ).replace(
        "        tl.store(z_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)\n",
        "        tl.store(z_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)\n        start += BLOCK\n",
    )
    wl = kit.workloads("vadd/vadd_f32.jsonl")[1]
    trace = kit.run(vadd, kit.solution("vadd_f32", src, dps=True, language="triton", name="while"), wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_a_solution_error_names_the_file_and_line(kit, vadd, vadd_wl) -> None:
    src = "def helper(x):\n    return x.no_such_method()\n\ndef run(x, y):\n    return helper(x)\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src, name="raises"), vadd_wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    first = kit.log(trace).splitlines()[0]
    assert "main.py:2 (in helper)" in first or ".py:2 (in helper)" in first, first


def test_an_error_inside_a_triton_kernel_names_the_kernel_line(kit, vadd, vadd_wl) -> None:
    src = LOOP.replace(
        "        x = tl.load(x_ptr + offs, mask=mask)\n",
        "        x = tl.load(x_ptr + offs, mask=mask) + nope\n",
    )
    sol = kit.solution("vadd_f32", src, dps=True, language="triton", name="kernel_raises")
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) in {"RUNTIME_ERROR", "COMPILE_ERROR"}
    assert ":10 (in _add)" in kit.log(trace).splitlines()[0], kit.log(trace)


class InterpreterError(Exception):
    """Named as Triton's, which is all :func:`interpreter_hint` looks at."""


@pytest.mark.parametrize("words", NUMPY_SCALAR_ERRORS)
def test_the_numpy_scalar_failure_names_cause_and_fix(words: str) -> None:
    try:
        try:
            raise TypeError(words)
        except TypeError as inner:
            raise InterpreterError(repr(inner)) from inner
    except InterpreterError as e:
        hint = interpreter_hint(e)
    assert hint is not None
    assert "NumPy" in hint and "numpy<2.4" in hint and "tl.constexpr" in hint


def test_other_errors_get_no_interpreter_hint() -> None:
    assert interpreter_hint(TypeError(NUMPY_SCALAR_ERRORS[0])) is None  # not the interpreter's
    assert interpreter_hint(InterpreterError("IndexError('out of range')")) is None
