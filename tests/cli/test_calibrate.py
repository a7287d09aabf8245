"""``sweep calibrate`` on the CPU: measures, writes the calibration file and the store rows."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sweep.cli import app
from sweep.schema import Ceilings
from sweep.store import calibration_for, query


def test_calibrate_on_cpu_writes_its_file_and_store_rows(tmp_path: Path) -> None:
    results = tmp_path / "results"
    result = CliRunner().invoke(app, ["calibrate", "--device", "cpu", "--results-dir", str(results)])
    assert result.exit_code == 0, result.output
    path = results / "calibration" / "CPU.json"
    assert (
        f"wrote {path}; added rows to the calibrations table of {results / 'sweep.duckdb'}" in result.output
    )
    assert "copy bandwidth" in result.output and "gemm float32" in result.output
    c = Ceilings.model_validate(json.loads(path.read_text()))
    assert c.hardware == "CPU" and c.calibrated and c.node and c.gbps and c.gbps > 0
    assert set(c.tflops) == {"float16", "bfloat16", "float32"}  # no TF32 on a CPU
    assert all(v > 0 for v in c.tflops.values())
    assert c.model_extra is not None and c.model_extra["sizes"]["gemm_n"] == 512
    assert calibration_for(results, "cpu") == c
    got = query(results / "sweep.duckdb", "SELECT hardware, metric FROM calibrations ORDER BY metric").rows
    assert got == [
        ("CPU", "copy_gbps"),
        ("CPU", "gemm_tflops_bfloat16"),
        ("CPU", "gemm_tflops_float16"),
        ("CPU", "gemm_tflops_float32"),
    ]
