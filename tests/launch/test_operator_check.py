"""An imported ATen operator the installed torch cannot run is refused when the plan is made
(``sweep plan``, ``sweep launch``, ``sweep eval``), with its reason, instead of failing as a
RUNTIME_ERROR at evaluation time.

The real rows come from ``tests/data/real/backendbench/sample.trace.txt``, whose operators
``im2col_backward``, ``upsample_bilinear2d_backward.vec`` and ``upsample_nearest2d_backward.vec``
no longer exist in recent torch, and ``_cudnn_rnn`` has no CPU kernel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from sweep.backendbench import import_backendbench
from sweep.cli import app
from sweep.config import SweepConfig
from sweep.engine import operator_problem
from sweep.errors import EngineError
from sweep.launch import evaluate_from_dataset, launch
from sweep.launch.driver import LaunchOptions, operator_check
from sweep.plan import build_plan, select
from sweep.plan.dataset import load_dataset
from sweep.schema import Definition, Solution

GONE = ["im2col_backward__default", "upsample_bilinear2d_backward__vec", "upsample_nearest2d_backward__vec"]
OPS = ["im2col_backward", "upsample_bilinear2d_backward", "upsample_nearest2d_backward", "_cudnn_rnn", "relu"]


def _identity(defn: Definition) -> Solution:
    tag = next(t for t in defn.tags if t.startswith("aten:"))
    packet, overload = tag.removeprefix("aten:").split(".")
    src = f"import torch\n\ndef impl(*a, **k):\n    return torch.ops.aten.{packet}.{overload}(*a, **k)\n"
    return Solution.model_validate(
        {
            "name": f"{defn.name}_aten",
            "definition": defn.name,
            "author": "aten",
            "spec": {
                "language": "python",
                "target_hardware": ["*"],
                "entry_point": "impl.py::impl",
                "destination_passing_style": False,
            },
            "sources": [{"path": "impl.py", "content": src}],
        }
    )


@pytest.fixture(scope="module")
def root(sample_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's rows of five operators, each with an ATen-identity solution."""
    out = tmp_path_factory.mktemp("bb-ops")
    import_backendbench(sample_file, out, ops=OPS)
    for name, defn in load_dataset([out]).definitions.items():
        path = out / "solutions" / "aten" / "backendbench" / name / f"{name}_aten.json"
        path.parent.mkdir(parents=True)
        path.write_text(_identity(defn).to_json())
    return out


def _cfg(root: Path, tmp: Path, hardware: str = "cpu") -> Path:
    path = tmp / "sweep.yaml"
    path.write_text(
        f"name: ops\ndataset: [{root}]\nhardware: {hardware}\n"
        f"workloads: {{limit_per_definition: 1}}\noutput: {{results_dir: {tmp / 'results'}}}\n"
    )
    return path


def test_the_engine_says_which_operators_this_torch_cannot_run(root: Path) -> None:
    defs = load_dataset([root]).definitions
    for name in GONE:
        for target in ("CPU", "H100", "cpu", "auto"):
            problem = operator_problem(defs[name], target)
            assert problem is not None and f"does not exist in torch {torch.__version__}" in problem
    # _cudnn_rnn exists but has no CPU kernel: refused for the CPU only (a torch without CUDA
    # cannot say whether GPU kernels exist, and plans it for GPUs).
    assert operator_problem(defs["_cudnn_rnn__default"], "CPU") == (
        f"torch {torch.__version__} has no CPU kernel for operator aten._cudnn_rnn.default"
    )
    gpu = operator_problem(defs["_cudnn_rnn__default"], "H100")
    assert gpu is None or not torch.backends.cuda.is_built()  # type: ignore[no-untyped-call]
    assert operator_problem(defs["relu__default"], "CPU") is None
    # A definition that names no operator (a FlashInfer-Bench one) is never refused.
    other = load_dataset([Path(__file__).resolve().parents[2]]).definitions["rmsnorm_h1024"]
    assert operator_problem(other, "CPU") is None


def test_the_plan_leaves_them_out_for_that_hardware_with_the_reason(root: Path, tmp_path: Path) -> None:
    config = SweepConfig.model_validate({"name": "ops", "dataset": [str(root)], "hardware": "cpu"})
    selection = select(config, load_dataset([root]))
    plan = build_plan(selection, "CPU", unavailable=operator_check)
    assert {t.definition.name for t in plan.tasks} == {"relu__default"}
    reasons = {x.name: x.reason for x in plan.excluded}
    assert set(reasons) == {*GONE, "_cudnn_rnn__default"}
    assert reasons["im2col_backward__default"] == (
        f"cannot run on CPU: operator 'aten.im2col_backward.default' does not exist in torch {torch.__version__}"
    )
    assert reasons["_cudnn_rnn__default"].startswith("cannot run on CPU: torch ")
    on_gpu = build_plan(selection, "H100", unavailable=operator_check)
    assert {x.name for x in on_gpu.excluded} >= set(GONE)
    assert all(x.reason.startswith("cannot run on H100: ") for x in on_gpu.excluded)
    # Without the check (a pure plan, as before) everything is planned.
    assert not build_plan(selection, "CPU").excluded


def test_sweep_plan_lists_them_as_left_out(root: Path, tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["plan", str(_cfg(root, tmp_path))])
    assert out.exit_code == 0, out.output
    assert "left out: 4 (--verbose lists them)\n  4 definitions: cannot run on CPU\n" in out.output
    out = CliRunner().invoke(app, ["plan", str(_cfg(root, tmp_path)), "-v"])
    assert (
        "    upsample_nearest2d_backward__vec: cannot run on CPU: operator "
        f"'aten.upsample_nearest2d_backward.vec' does not exist in torch {torch.__version__}"
    ) in out.output
    assert "relu__default  1 tasks" in out.output


def test_a_launch_of_only_such_operators_runs_nothing_and_says_why(root: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "gone.yaml"
    cfg.write_text(
        f"name: gone\ndataset: [{root}]\nhardware: cpu\ndefinitions: {{names: [im2col_backward__default]}}\n"
        f"output: {{results_dir: {tmp_path / 'results'}}}\n"
    )
    # Every task is refused by the plan, so the launch ends before it connects to Ray.
    result = launch(cfg, LaunchOptions(quiet=True))
    assert (result.planned, result.ran) == (0, 0)
    (gone,) = result.excluded
    assert gone.name == "im2col_backward__default" and "does not exist in torch" in gone.reason


def test_sweep_eval_refuses_before_evaluating(root: Path) -> None:
    with pytest.raises(EngineError, match="definition 'im2col_backward__default' cannot be evaluated here: "):
        evaluate_from_dataset(
            [root], "im2col_backward__default", "im2col_backward__default_aten", device="cpu"
        )
    with pytest.raises(EngineError, match="has no CPU kernel"):
        evaluate_from_dataset([root], "_cudnn_rnn__default", "_cudnn_rnn__default_aten", device="cpu")
    out = CliRunner().invoke(
        app,
        [
            "eval",
            "im2col_backward__default",
            "im2col_backward__default_aten",
            "-r",
            str(root),
            "--device",
            "cpu",
        ],
    )
    assert out.exit_code == 1 and "does not exist in torch" in out.output
