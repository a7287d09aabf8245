"""``sweep plan`` of parameter sweeps: counts per reason, points in --json, config typos."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sweep.cli import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_plan_counts_points_left_out() -> None:
    r = runner.invoke(app, ["plan", str(REPO / "configs" / "params-cpu.yaml")])
    assert r.exit_code == 0, r.output
    assert "gemm_n512_k512_triton  2 tasks" in r.output
    assert "2 params points: violates BLOCK_M <= 2 * max(M, 16)" in r.output
    assert "total: 7 tasks" in r.output


def test_plan_json_carries_the_point() -> None:
    r = runner.invoke(app, ["plan", str(REPO / "configs" / "params-cpu.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert {
        json.loads(row["solution_params"])["BLOCK"] for row in rows if row["solution"] == "softmax_f32_triton"
    } == {
        0,
        2048,
        4096,
    }


def _config(tmp_path: Path, solutions: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"name: x\ndataset: [{REPO}]\nhardware: cpu\nsolutions:\n{solutions}")
    return path


def test_unknown_parameter_in_config_did_you_mean(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "  params:\n    gemm_n512_k512_triton: {BLOK_M: [32]}\n")
    r = runner.invoke(app, ["plan", str(cfg)])
    assert r.exit_code == 1
    assert "declares no parameter 'BLOK_M' (did you mean 'BLOCK_M'?)" in r.output
    assert f"{cfg}:6:" in r.output


def test_bad_config_values_are_refused(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "  params:\n    '*': {B: []}\n  params_sample: {max_points: 0}\n")
    r = runner.invoke(app, ["plan", str(cfg)])
    assert r.exit_code == 1
    assert "params.B: the list of values is empty" in r.output
    assert "max_points" in r.output
    cfg = _config(tmp_path, "  params_smaple: {max_points: 3}\n")
    r = runner.invoke(app, ["plan", str(cfg)])
    assert r.exit_code == 1 and "did you mean 'params_sample'" in r.output
