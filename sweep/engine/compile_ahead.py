"""The backend module of a node's compile processes: ``evaluate`` compiles, runs nothing.

A sandbox runs a *backend module* (``sweep.engine`` for evaluations). The cluster's compile
pool starts its sandboxes with this one, so a compile process is supervised, isolated and
given deadlines exactly as an evaluating one is, while its ``evaluate`` is
:func:`sweep.engine._precompile.precompile`: build the task's solution and compile its Triton
kernels for this GPU, and return a COMPILE_ERROR trace when that fails, else a trace without an
evaluation.

It makes ready the same folders for a task as ``sweep.engine`` does (``task_folders``: its
solution's build and compilers' caches, which its sandbox then lets it write alone): what it
compiles lands where the task's evaluating process looks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep.engine._process import cuda_problem, prepare_process, task_folders
from sweep.engine.run._cache import EngineCache

if TYPE_CHECKING:
    from sweep.schema import Trace
    from sweep.schema.task import Task

__all__ = ["EngineCache", "cuda_problem", "evaluate", "prepare_process", "task_folders"]


def evaluate(task: Task, *, device: str | None = None, cache: EngineCache | None = None) -> Trace:
    """Compile ``task`` ahead (see :func:`sweep.engine._precompile.precompile`)."""
    from sweep.engine._precompile import precompile

    return precompile(task, device=device, cache=cache)
