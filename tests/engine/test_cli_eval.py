"""``sweep eval`` in-process: table, JSON lines, errors.

The first test's eval starts its own sandbox, as ``sweep eval`` does; the others borrow one
sandbox for the module (``shared_eval_sandbox``): their subject is the command's output and
exit codes, and each of their tasks still runs in a process of its own."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from typer.testing import CliRunner

from sweep.cli import app
from sweep.schema import Trace

if TYPE_CHECKING:
    from ..conftest import SharedSandboxes


def _invoke(kit, *args: str):
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(kit.repo)
    try:
        return runner.invoke(app, list(args))
    finally:
        os.chdir(cwd)


def test_eval_prints_a_table_of_traces(kit) -> None:
    result = _invoke(
        kit, "eval", "vadd_f32", "vadd_f32_torch", "--root", str(kit.data), "--device", "cpu", "--trials", "1"
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("vadd_f32 / vadd_f32_torch on ")
    assert lines[1].split()[:3] == ["workload", "axes", "status"]
    assert len([line for line in lines if " PASSED " in line]) == 2


def test_eval_json_prints_one_trace_per_line_and_failures_in_the_table(
    kit, shared_eval_sandbox: SharedSandboxes
) -> None:
    result = _invoke(
        kit,
        "eval",
        "vadd_f32",
        "vadd_f32_wrong",
        "-r",
        str(kit.data),
        "--device",
        "cpu",
        "--json",
        "-w",
        "68e2d1dc",
        "--seed",
        "3",
        "--no-fail",
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    trace = Trace.model_validate(json.loads(lines[0]))
    assert trace.evaluation.status.value == "INCORRECT_NUMERICAL"
    table = _invoke(kit, "eval", "vadd_f32", "vadd_f32_wrong", "-r", str(kit.data), "--device", "cpu", "-v")
    assert table.exit_code == 1  # a trace did not pass: a script can tell
    assert "INCORRECT_NUMERICAL: output 'z' (trial 0)" in table.output
    assert "--- log of workload " in table.output  # -v: each failing trace's whole log
    assert "traces did not pass (exit 1; --no-fail exits 0)" in table.output


def test_eval_a_kernel_file_directly_writes_nothing(
    kit, tmp_path, shared_eval_sandbox: SharedSandboxes
) -> None:
    before = sorted(p.relative_to(kit.data) for p in kit.data.rglob("*"))
    dps = tmp_path / "my_add.py"
    dps.write_text("def run(x, y, z):\n    z.copy_(x + y)\n")
    ok = _invoke(kit, "eval", "vadd_f32", str(dps), "-r", str(kit.data), "--device", "cpu", "--trials", "1")
    assert ok.exit_code == 0, ok.output
    assert ok.output.splitlines()[0].startswith("vadd_f32 / my_add on ")
    returning = tmp_path / "bad_add.py"
    returning.write_text("def run(x, y):\n    return x - y\n")
    bad = _invoke(
        kit, "eval", "vadd_f32", str(returning), "-r", str(kit.data), "--device", "cpu", "-w", "68e2d1dc"
    )
    assert bad.exit_code == 1 and "INCORRECT_NUMERICAL" in bad.output
    neither = tmp_path / "odd.py"
    neither.write_text("def run(a):\n    return a\n")
    refused = _invoke(kit, "eval", "vadd_f32", str(neither), "-r", str(kit.data), "--device", "cpu")
    assert refused.exit_code == 1 and "fits neither calling style" in refused.output
    assert sorted(p.relative_to(kit.data) for p in kit.data.rglob("*")) == before


def test_eval_default_root_is_the_current_directory(kit, shared_eval_sandbox: SharedSandboxes) -> None:
    result = _invoke(
        kit, "eval", "softmax_f32", "softmax_f32_torch", "--device", "cpu", "-w", "cdde48a5", "--trials", "1"
    )
    assert result.exit_code == 0, result.output
    assert "PASSED" in result.output


def test_eval_unknown_names_fail_with_hints(kit) -> None:
    r = _invoke(kit, "eval", "softmax_f23", "x", "--device", "cpu")
    assert (
        r.exit_code == 1
        and "no definition 'softmax_f23'" in r.output
        and "did you mean 'softmax_f32'" in r.output
    )
    r = _invoke(kit, "eval", "softmax_f32", "softmax_f32_torhc", "--device", "cpu")
    assert r.exit_code == 1 and "did you mean 'softmax_f32_torch'" in r.output
    assert "solutions of 'softmax_f32': softmax_f32_torch, softmax_f32_triton" in r.output
    r = _invoke(kit, "eval", "softmax_f32", "rmsnorm_h1024_torch", "--device", "cpu")
    assert r.exit_code == 1 and "is for definition 'rmsnorm_h1024', not 'softmax_f32'" in r.output
    r = _invoke(kit, "eval", "softmax_f32", "softmax_f32_torch", "-w", "zzzz", "--device", "cpu")
    assert r.exit_code == 1 and "has no workload 'zzzz'" in r.output


def test_eval_refuses_an_unavailable_device(kit) -> None:
    import torch

    if torch.cuda.is_available():
        return
    r = _invoke(kit, "eval", "softmax_f32", "softmax_f32_torch", "--device", "cuda")
    assert r.exit_code == 1 and "torch sees no CUDA GPU here (use --device cpu)" in r.output
    r = _invoke(kit, "eval", "softmax_f32", "softmax_f32_torch", "--device", "tpu")
    assert r.exit_code == 1 and "use 'cpu' or 'cuda'" in r.output


def test_eval_help_has_an_example(kit) -> None:
    r = _invoke(kit, "eval", "--help")
    assert r.exit_code == 0 and "Example: sweep eval" in r.output
