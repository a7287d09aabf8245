"""Which tasks ``sweep profile`` plans again: the store's traces say the hardware when the
config does not name it (``auto``, ``all``), spelled as records spell it (``NVIDIA_H100``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.config import ConfigOverrides, load_config
from sweep.launch.profile import _hardware_of, _plan_tasks, choose_task_ids
from sweep.plan import build_plan, select
from sweep.plan.dataset import load_dataset
from sweep.schema import Correctness, Environment, Evaluation, Performance, Status, Trace
from sweep.store import ResultsWriter, StoreContext

GOOD = (Path(__file__).resolve().parents[1] / "data" / "dataset" / "good").resolve()


@pytest.mark.parametrize("hardware", ["auto", "all"])
def test_tasks_stored_on_a_gpu_are_planned_again_for_it(tmp_path: Path, hardware: str) -> None:
    out = tmp_path / "out"
    cfg_path = tmp_path / "sweep.yaml"
    cfg_path.write_text(
        f"name: fixture\ndataset: [{GOOD}]\nhardware: {hardware}\noutput: {{results_dir: {out}}}\n"
    )
    config = load_config(cfg_path)
    dataset = load_dataset(config.dataset)
    stored = [build_plan(select(config, dataset), hw).tasks[0] for hw in ("H100", "H200")]
    traces = [
        Trace(
            definition=task.definition.name,
            workload=task.workload,
            solution=task.solution.name,
            evaluation=Evaluation(
                status=Status.PASSED,
                environment=Environment(hardware=f"NVIDIA_{task.hardware}"),
                timestamp="2026-01-01T00:00:00Z",
                correctness=Correctness(),
                performance=Performance(latency_ms=1.0, reference_latency_ms=2.0, speedup_factor=2.0),
            ),
            provenance=task.provenance(run_id="r1"),
        )
        for task in stored
    ]
    with ResultsWriter(
        out, out / "sweep.duckdb", sweep="fixture", run_id="r1", context=StoreContext.from_dataset(dataset)
    ) as w:
        w.write_many(traces)
    ids = choose_task_ids(out / "sweep.duckdb", out, None, [t.task_id for t in stored])
    hardware_of = _hardware_of(out / "sweep.duckdb", out, ids)
    assert hardware_of == {"H100", "H200"}
    planned = _plan_tasks(config, cfg_path, hardware_of)
    assert {t.task_id for t in stored} <= set(planned)
    assert {planned[t.task_id].hardware for t in stored} == {"H100", "H200"}
    # A named list plans exactly its targets.
    named = load_config(cfg_path, ConfigOverrides(hardware="H200,H100"))
    assert set(_plan_tasks(named, cfg_path, set(named.hardware_choice().targets))) >= {
        t.task_id for t in stored
    }
