"""A launch hands the engine the ceilings calibrated on its target hardware."""

from __future__ import annotations

import io
from pathlib import Path

from sweep.launch._run import _with_ceilings
from sweep.launch.progress import Progress
from sweep.plan.dataset import load_dataset
from sweep.schema import Ceilings, EvalSettings
from sweep.schema.task import Task
from sweep.store import save_calibration

REPO = Path(__file__).resolve().parents[2]


def _tasks(hardware: str) -> list[Task]:
    ds = load_dataset([REPO])
    defn = ds.definitions["gemm_n512_k512"]
    sol = ds.solutions["gemm_n512_k512_torch"]
    return [Task.make(defn, sol, wl, EvalSettings(), hardware) for wl in ds.workloads[defn.name][:2]]


def test_tasks_carry_the_newest_calibration_of_their_hardware(tmp_path: Path) -> None:
    h100 = Ceilings(
        hardware="NVIDIA_H100",
        source="calibrated on n1 at 2026-03-01T00:00:00+00:00",
        tflops={"float16": 700.0},
        gbps=3000.0,
        node="n1",
        measured_at="2026-03-01T00:00:00+00:00",
    )
    save_calibration(h100, tmp_path, None)
    out = io.StringIO()
    tasks = _with_ceilings(_tasks("H100"), tmp_path, "H100", Progress(2, out, interval_s=0.0))
    assert [t.ceilings for t in tasks] == [h100, h100]
    assert "fractions of peak against the ceilings calibrated on n1" in out.getvalue()
    assert tasks[0].task_id == _tasks("H100")[0].task_id  # not part of the task's identity
    assert all(t.ceilings is None for t in _with_ceilings(_tasks("H200"), tmp_path, "H200", None))
