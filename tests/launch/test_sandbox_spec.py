"""``sweep.launch.driver.sandbox_spec``: what a launch's workers start their sandboxes with;
``evaluation.cuda_max_connections`` reaching the process a solution runs in, and the engine
refusing a process started without it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sweep.config import SweepConfig
from sweep.config.models import RaySettings
from sweep.launch.driver import LaunchOptions, sandbox_spec
from sweep.plan.dataset import load_dataset
from sweep.sandbox import Sandbox
from sweep.schema import EvalSettings, Solution, Status
from sweep.schema.task import Task
from tests.cluster.conftest import DATA, fault_add_task
from tests.conftest import quick_settings

VAR = "CUDA_DEVICE_MAX_CONNECTIONS"

# Passes only where the variable is "1" in the process that runs it.
CHECKS_THE_VARIABLE = f"""import os

import torch


def run(x):
    seen = os.environ.get({VAR!r})
    if seen != "1":
        raise RuntimeError(f"{VAR} is {{seen!r}} in the solution's process")
    return torch.add(x, 1.0)
"""


def _config(queues: int | None = None, compile_workers: int | str = "auto") -> SweepConfig:
    return SweepConfig(
        name="x",
        dataset=["."],
        ray=RaySettings.model_validate({"compile_workers": compile_workers}),
        evaluation=EvalSettings(cuda_max_connections=queues),
    )


def test_the_spec_carries_the_config() -> None:
    opts = LaunchOptions()
    plain = sandbox_spec(_config(), opts)
    assert plain.env == () and plain.compile_workers == -1 and plain.device_kind == "auto"
    assert plain.backend == opts.backend and plain.preload == opts.preload
    one = sandbox_spec(_config(1, compile_workers=3), opts)
    assert one.env == ((VAR, "1"),) and one.compile_workers == 3


def _task(queues: int | None) -> Task:
    ds = load_dataset([str(DATA / "faults")])
    ok = ds.solutions["fault_add_ok_torch_add"]
    sources = [ok.sources[0].model_copy(update={"content": CHECKS_THE_VARIABLE})]
    solution = Solution.model_validate({**ok.model_dump(), "name": "fault_add_env", "sources": sources})
    settings = quick_settings(min_iterations=1, max_iterations=2).model_copy(
        update={"cuda_max_connections": queues}
    )
    return fault_add_task(settings, "CPU", solution)


@pytest.mark.parametrize("started_with", [None, 1])
def test_the_setting_reaches_the_solutions_process_or_the_task_is_refused(
    started_with: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VAR, raising=False)  # the zygote's environment starts from this process's
    spec = replace(sandbox_spec(_config(started_with), LaunchOptions()), device_kind="cpu")
    with Sandbox(spec) as sandbox:
        trace = sandbox.run(_task(1))
    ev = trace.evaluation
    assert ev is not None
    if started_with == 1:
        assert ev.status is Status.PASSED, ev.log
    else:  # a process started without it would time under other conditions than its trace says
        assert ev.status is Status.RUNTIME_ERROR, ev.log
        assert f"this process has {VAR}=None but the evaluation settings ask for '1'" in ev.log, ev.log
