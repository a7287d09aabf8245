"""``sweep.launch.driver.sandbox_spec``: what a launch's workers start their sandboxes with,
and ``ray.cuda_max_connections`` reaching the process a solution runs in."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sweep.config import SweepConfig
from sweep.config.models import RaySettings
from sweep.launch.driver import LaunchOptions, sandbox_spec
from sweep.plan.dataset import load_dataset
from sweep.sandbox import Sandbox
from sweep.schema import Solution, Status
from sweep.schema.task import Task
from tests.cluster.conftest import DATA
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


def _config(**ray: object) -> SweepConfig:
    return SweepConfig(name="x", dataset=["."], ray=RaySettings.model_validate(ray))


def test_the_spec_carries_the_config() -> None:
    opts = LaunchOptions()
    plain = sandbox_spec(_config(), opts)
    assert plain.env == () and plain.compile_workers == -1 and plain.device_kind == "auto"
    assert plain.backend == opts.backend and plain.preload == opts.preload
    one = sandbox_spec(_config(cuda_max_connections=1, compile_workers=3), opts)
    assert one.env == ((VAR, "1"),) and one.compile_workers == 3


def _task() -> Task:
    ds = load_dataset([str(DATA / "faults")])
    ok = ds.solutions["fault_add_ok_torch_add"]
    sources = [ok.sources[0].model_copy(update={"content": CHECKS_THE_VARIABLE})]
    solution = Solution.model_validate({**ok.model_dump(), "name": "fault_add_env", "sources": sources})
    wl = ds.workloads["fault_add"][0]
    settings = quick_settings(min_iterations=1, max_iterations=2)
    return Task.make(
        ds.definitions["fault_add"], solution, wl, settings, "CPU", dataset_root=str(DATA / "faults")
    )


@pytest.mark.parametrize("queues", [None, 1])
def test_the_setting_reaches_the_solutions_process(
    queues: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VAR, raising=False)  # the zygote's environment starts from this process's
    spec = replace(sandbox_spec(_config(cuda_max_connections=queues), LaunchOptions()), device_kind="cpu")
    with Sandbox(spec) as sandbox:
        trace = sandbox.run(_task())
    ev = trace.evaluation
    assert ev is not None
    if queues == 1:
        assert ev.status is Status.PASSED, ev.log
    else:
        assert ev.status is Status.RUNTIME_ERROR and f"{VAR} is None" in ev.log, ev.log
