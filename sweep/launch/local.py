"""``sweep eval``: one solution of one definition over its workloads, here (no Ray).

The in-process path of the launch stage: the plan stage picks the pair, and each workload is
evaluated as a launch's worker evaluates it, in a sandbox process of its own forked from a
zygote (``sweep.sandbox.supervisor``): no task's solution code runs where another's, or this
command, runs; a crash or a hang is a trace; and the evaluation's threads, phases and checks
are a launch's, so both time alike. The caller gets each trace as it is ready.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from sweep.errors import EngineError
from sweep.plan import select_file_pair, select_pair
from sweep.sandbox import Sandbox, SandboxSpec, SandboxStartError
from sweep.schema import Ceilings, EvalSettings, Trace
from sweep.schema.distributed import outside_gang
from sweep.schema.hardware import CPU, short_name
from sweep.schema.task import Task

__all__ = ["evaluate_from_dataset", "sandbox_device"]


def sandbox_device(device: str | None) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The sandbox's device kind for ``--device`` (``cpu``, ``cuda``, ``cuda:N``; ``None``: CUDA
    when torch sees a GPU) and the environment that shows it the GPU asked for.

    Raises:
        EngineError: an unknown device, or CUDA where torch sees none.
    """
    from sweep.engine import device_of

    dev = device_of(device)
    if dev == "cpu":
        return "cpu", ()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v.strip() for v in visible.split(",")] if visible else None
    index = int(dev.partition(":")[2] or 0)
    chosen = ids[index] if ids is not None and index < len(ids) else str(index)
    return "cuda", (("CUDA_VISIBLE_DEVICES", chosen),)


def evaluate_from_dataset(
    roots: Sequence[str | Path],
    definition: str,
    solution: str,
    *,
    workload_ids: Sequence[str] = (),
    settings: EvalSettings | None = None,
    device: str | None = None,
    on_trace: Callable[[Trace], None] | None = None,
    ceilings: list[Ceilings] | None = None,
    on_warning: Callable[[str], None] | None = None,
    files: Sequence[Path] = (),
) -> list[Trace]:
    """Evaluate one solution of one definition over its workloads, each in a sandbox process.

    Safetensors inputs resolve against the root each workload came from; ``ceilings``
    (calibrations, :func:`sweep.store.load_calibrations`) give the fraction of peak on the
    hardware they measured.

    An imported ATen operator that this torch lacks, or has no kernel of for ``device``, is
    refused before anything is evaluated, as a launch leaves it out of its plan.

    The roots load as for a launch: each problem of a record is given to ``on_warning``,
    once, before anything runs, and the rest evaluates; with ``files`` the solution is packed
    from those source files in memory (``solution`` unused, nothing written); a broken solution
    (:mod:`sweep.plan.broken`) gives a COMPILE_ERROR trace per workload, nothing of it run.

    Raises:
        DatasetError: A root cannot be loaded, or nothing of the roots can run.
        EngineError: Unknown names, an invalid/unavailable ``device``, an operator this
            torch cannot run there, or no sandbox process could be started.
        DistributedTaskError: The definition is called by several ranks (``sweep launch``).
    """
    pick = (
        select_file_pair(roots, definition, files, workload_ids)
        if files
        else select_pair(roots, definition, solution, workload_ids)
    )
    for warning in pick.warnings:
        if on_warning is not None:
            on_warning(warning)
    from sweep.engine import operator_problem

    if pick.definition.distributed is not None:
        raise outside_gang(
            pick.definition.name, pick.definition.distributed, [w.axes for w in pick.workloads], "sweep eval"
        )
    problem = operator_problem(pick.definition, device or "auto")
    if problem:
        raise EngineError(f"definition {pick.definition.name!r} cannot be evaluated here: {problem}")
    kind, env = sandbox_device(device)
    settings = settings or EvalSettings()
    env = (*env, *settings.process_env())
    traces: list[Trace] = []
    try:
        with Sandbox(SandboxSpec(device_kind=kind, env=env)) as sandbox:
            info = sandbox.start()
            hardware = short_name(info.device_name) if info.device_name else CPU
            mine = sorted(
                (c for c in ceilings or [] if short_name(c.hardware) == hardware),
                key=lambda c: c.measured_at or "",
            )
            for wl, root in zip(pick.workloads, pick.roots):
                task = Task.make(
                    pick.definition,
                    pick.solution,
                    wl,
                    settings,
                    hardware,
                    dataset_root=str(root),
                    ceilings=mine[-1] if mine else None,
                    broken=pick.broken,
                )
                trace = sandbox.run(task)
                if on_trace is not None:
                    on_trace(trace)
                traces.append(trace)
    except SandboxStartError as e:
        raise EngineError(f"no sandbox process could be started for the evaluation: {e}") from None
    return traces
