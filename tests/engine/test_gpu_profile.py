"""Profile mode on a CUDA GPU: the solution's calls in a profiler range, in-process and as
the ``sweep.engine.profile_main`` process the tools run (bench/gpu_profile.sh runs these)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweep.engine import profile_run
from sweep.plan.dataset import load_dataset
from sweep.schema import EvalSettings, Workload
from sweep.schema.task import Task

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]


def _task(solution: str) -> Task:
    ds = load_dataset([str(REPO)])
    wl = Workload.model_validate(
        {
            "uuid": "gpu-profile-b64",
            "axes": {"batch_size": 64},
            "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
        }
    )
    return Task.make(
        ds.definitions["rmsnorm_h1024"],
        ds.solutions[solution],
        wl,
        EvalSettings(),
        "GPU",
        dataset_root=str(REPO),
    )


def test_profile_run_calls_the_solution_in_the_range() -> None:
    done = profile_run(_task("rmsnorm_h1024_triton"), "cuda", calls=3)
    assert done.calls == 3 and done.input_set == EvalSettings().trials
    assert done.elapsed_ms > 0
    assert "profiled 3 call(s) of solution 'rmsnorm_h1024_triton'" in done.describe()


def test_profile_main_process(tmp_path: Path) -> None:
    task_file = tmp_path / "task.json"
    task_file.write_text(_task("rmsnorm_h1024_triton").model_dump_json())
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    res = subprocess.run(
        [sys.executable, "-m", "sweep.engine.profile_main", str(task_file), "2"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "profiled 2 call(s)" in res.stdout
