"""The real engine on a node that poses as the GPU type it advertises.

The session cluster's logical GPUs have no device behind them: the engine runs its CPU path
and records ``environment.hardware = CPU``, so every trace of a mixed launch would look alike
to the store. Each node of the cluster fixture sets ``SWEEP_TEST_NODE_GPU`` to the
accelerator type it advertises (``H100``, ``H200``); this backend evaluates with the real
engine, then writes that node's type into the trace's environment, as a real GPU's device
name would be. The label comes from the node the worker was placed on, never from the task,
so a task placed on the wrong node is recorded with the wrong hardware.
"""

from __future__ import annotations

import os
from typing import Any

from sweep.engine import EngineCache, build, cuda_problem, prepare_process
from sweep.engine import evaluate as engine_evaluate
from sweep.schema import Trace
from sweep.schema.hardware import record_name
from sweep.schema.task import Task

__all__ = ["NODE_GPU_ENV", "EngineCache", "build", "cuda_problem", "evaluate", "prepare_process"]

#: The environment variable each fixture node sets to the GPU type it advertises.
NODE_GPU_ENV = "SWEEP_TEST_NODE_GPU"


def evaluate(task: Task, *, device: str, cache: Any) -> Trace:
    """The engine's trace of ``task``, its environment naming this node's GPU type."""
    trace = engine_evaluate(task, device=device, cache=cache)
    label = os.environ.get(NODE_GPU_ENV)
    ev = trace.evaluation
    if label is None or ev is None:
        return trace
    env = ev.environment.model_copy(update={"hardware": record_name(label), "device_name": f"NVIDIA {label}"})
    return trace.model_copy(update={"evaluation": ev.model_copy(update={"environment": env})})
