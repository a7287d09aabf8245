"""Profile mode where there is no GPU: clean refusals, in-process and from the process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sweep.engine import profile_run
from sweep.errors import EngineError
from sweep.plan.dataset import load_dataset
from sweep.schema import EvalSettings
from sweep.schema.task import Task

REPO = Path(__file__).resolve().parents[2]


def _task() -> Task:
    ds = load_dataset([str(REPO)])
    defn = ds.definitions["rmsnorm_h1024"]
    wl = ds.workloads["rmsnorm_h1024"][0]
    return Task.make(
        defn, ds.solutions["rmsnorm_h1024_torch"], wl, EvalSettings(), "CPU", dataset_root=str(REPO)
    )


def test_profile_run_refuses_the_cpu() -> None:
    with pytest.raises(EngineError, match="profiling needs a CUDA GPU; this process runs on cpu"):
        profile_run(_task(), "cpu")


def test_profile_run_refuses_no_calls() -> None:
    with pytest.raises(EngineError, match="calls must be at least 1"):
        profile_run(_task(), "cpu", calls=0)


@pytest.mark.parametrize("args", [["/nonexistent/task.json"], ["TASK", "many"], ["TASK", "2", "cpu"]])
def test_profile_main_refuses_cleanly(tmp_path: Path, args: list[str]) -> None:
    task_file = tmp_path / "task.json"
    task_file.write_text(_task().model_dump_json())
    argv = [str(task_file) if a == "TASK" else a for a in args]
    res = subprocess.run(
        [sys.executable, "-m", "sweep.engine.profile_main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith("error: ") and "Traceback" not in res.stderr
