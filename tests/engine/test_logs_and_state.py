"""What an evaluation prints lands in its log (capped); global state survives it."""

from __future__ import annotations

import os
import sys

import torch

from sweep.engine.timing._capture import capture_output


def test_python_fd_and_c_level_output_are_captured(kit, vadd, vadd_wl) -> None:
    src = (
        "import ctypes, os, sys\n"
        "print('hello from import')\n\n"
        "def run(x, y):\n"
        "    print('python stdout line')\n"
        "    print('python stderr line', file=sys.stderr)\n"
        "    os.write(1, b'raw fd 1 line\\n')\n"
        "    os.write(2, b'raw fd 2 line\\n')\n"
        "    ctypes.CDLL(None).printf(b'C printf line\\n')\n"
        "    return x + y\n"
    )
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    text = kit.log(trace)
    assert kit.status(trace) == "PASSED"
    assert "--- output of the evaluation ---" in text
    for line in (
        "hello from import",
        "python stdout line",
        "python stderr line",
        "raw fd 1 line",
        "raw fd 2 line",
        "C printf line",
    ):
        assert line in text, line


def test_output_of_a_failing_solution_is_kept_with_the_reason_first(kit, vadd, vadd_wl) -> None:
    src = "def run(x, y):\n    print('about to fail')\n    raise KeyError('k')\n"
    text = kit.log(kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl))
    assert text.startswith("RUNTIME_ERROR: the solution raised KeyError")
    assert text.index("Traceback") < text.index("about to fail")


def test_log_is_capped_keeping_head_and_tail(kit, vadd, vadd_wl) -> None:
    src = "def run(x, y):\n    print('A' * 5000)\n    print('TAIL-MARK')\n    return x + y\n"
    settings = kit.fast.model_copy(update={"log_limit_bytes": 1024})
    text = kit.log(kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, settings))
    assert len(text.encode()) <= 1024
    assert text.startswith("PASSED:") and text.rstrip().endswith("TAIL-MARK")
    assert "bytes cut] ..." in text


def test_capture_restores_descriptors_when_the_block_raises() -> None:
    before = (os.fstat(1).st_ino, os.fstat(2).st_ino, sys.stdout, sys.stderr)
    try:
        with capture_output() as cap:
            print("inside")
            raise ValueError("boom")
    except ValueError:
        pass
    assert "inside" in cap.text
    assert (os.fstat(1).st_ino, os.fstat(2).st_ino, sys.stdout, sys.stderr) == before


def test_global_state_is_restored_after_a_meddling_solution(kit, vadd, vadd_wl, tmp_path) -> None:
    src = (
        "import os, sys, torch\n"
        f"os.chdir({str(tmp_path)!r})\n"
        "sys.path.insert(0, '/meddled')\n"
        "os.environ['SWEEP_MEDDLED'] = '1'\n"
        "os.environ.pop('SWEEP_KEEP_ME', None)\n"
        "torch.set_default_dtype(torch.float64)\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "torch.set_float32_matmul_precision('medium')\n\n"
        "def run(x, y):\n"
        "    torch.set_grad_enabled(True)\n"
        "    return x + y\n"
    )
    os.environ["SWEEP_KEEP_ME"] = "yes"
    cwd, path = os.getcwd(), list(sys.path)
    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    tf32, precision = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    try:
        trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
        assert kit.status(trace) == "PASSED", kit.log(trace)
        assert os.getcwd() == cwd and sys.path == path
        assert "SWEEP_MEDDLED" not in os.environ and os.environ["SWEEP_KEEP_ME"] == "yes"
        assert torch.get_default_dtype() == dtype and torch.is_grad_enabled() == grad
        assert torch.backends.cuda.matmul.allow_tf32 == tf32
        assert torch.get_float32_matmul_precision() == precision
    finally:
        os.environ.pop("SWEEP_KEEP_ME", None)


def test_reference_runs_with_the_process_settings_not_the_solutions(kit, vadd, vadd_wl) -> None:
    # The solution switches the default dtype at import; the reference must not see it.
    reference = (
        "import torch\n\ndef run(x, y):\n"
        "    assert torch.get_default_dtype() == torch.float32, 'reference saw the solution\\'s dtype'\n"
        "    return x + y\n"
    )

    src = "import torch\ntorch.set_default_dtype(torch.float64)\n\ndef run(x, y):\n    return x + y\n"
    trace = kit.run(kit.with_reference(vadd, reference), kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
