"""A parameter sweep end to end on the CPU: ``sweep launch configs/params-cpu.yaml`` (an
embedded Ray, the Triton interpreter), then ``best_params`` and ``sweep export-tuning``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sweep.store import query
from sweep.tuning import lookup

from .conftest import REPO, run_fresh


@pytest.mark.slow
def test_params_cpu_sweep_end_to_end(tmp_path: Path) -> None:
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "sweep.cli", "launch", str(REPO / "configs" / "params-cpu.yaml")]
    out = run_fresh([*cmd, "--results-dir", str(results)])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "7 ran (PASSED 7)" in out.stdout
    store = results / "sweep.duckdb"
    rows = query(store, "SELECT count(*), count(DISTINCT solution_params) FROM traces").rows
    assert rows == [(7, 4)]
    best = query(store, "SELECT solution, best_params FROM best_params ORDER BY ALL").rows
    assert len(best) == 4 and all(p is not None for _, p in best)
    table = tmp_path / "tuning.json"
    cmd = [sys.executable, "-m", "sweep.cli", "export-tuning", "--store", str(store), "--out", str(table)]
    done = run_fresh(cmd, timeout_s=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(table.read_text())["format"] == "kernel-sweep-tuning"
    point = lookup(table, "gemm_n512_k512", "gemm_n512_k512_triton", "CPU", {"M": 8})
    assert point["BLOCK_M"] == 32


def test_a_failure_trace_carries_the_point() -> None:
    from sweep.config import EvalSettings
    from sweep.plan.dataset import load_dataset
    from sweep.sandbox.failure_traces import failure_trace
    from sweep.schema import Status
    from sweep.schema.task import Task
    from sweep.schema.trace import Provenance

    ds = load_dataset([REPO])
    sol = ds.solutions["softmax_f32_triton"]
    task = Task.make(
        ds.definitions["softmax_f32"],
        sol,
        ds.workloads["softmax_f32"][0],
        EvalSettings(),
        "CPU",
        params={"BLOCK": 0, "num_warps": 4},
    )
    trace = failure_trace(task, Status.TIMEOUT, "too slow", Provenance(run_id="r"))
    assert trace.solution_params == {"BLOCK": 0, "num_warps": 4}
    assert trace.to_json_obj()["solution_params"] == {"BLOCK": 0, "num_warps": 4}
