"""The engine's public functions, re-exported by its face (``sweep.engine``): each imports
what it runs when called, so importing the engine stays light (no torch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sweep.engine.run._cache import EngineCache

if TYPE_CHECKING:
    from sweep.engine._profile import ProfiledCalls
    from sweep.schema import Ceilings, Definition, EvalSettings, Solution, Task, Trace, Workload

__all__ = ["build", "calibrate", "evaluate", "evaluate_pair", "process_cache", "profile_run", "start_process"]


def _one_process(definition: Definition, workloads: list[Workload], entry: str) -> None:
    """Refuse a distributed definition where one process would evaluate it (its reference
    would call a collective with no process group; its derived axes are the gang's to fill)."""
    if definition.distributed is not None:
        from sweep.schema.distributed import outside_gang

        raise outside_gang(definition.name, definition.distributed, [w.axes for w in workloads], entry)


def calibrate(device: str | None = None) -> Ceilings:
    """Measure this node's ceilings on ``device`` (``None``: CUDA when available): copy
    bandwidth and dense GEMM TFLOP/s per dtype (see ``_calibrate`` for what and how large).

    Raises:
        EngineError: ``device`` is invalid or unavailable.
    """
    from sweep.engine.timing import _calibrate

    return _calibrate.calibrate(device)


def evaluate(
    task: Task,
    *,
    device: str | None = None,
    cache: EngineCache | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> Trace:
    """Evaluate one task in this process and return its Trace.

    Never raises for anything the solution does: build failures, exceptions, wrong
    outputs and setup problems (memory budget, unsatisfiable constraints) are statuses,
    with the reason first in ``evaluation.log``. Global state (cwd, ``sys.path``,
    environment, torch's default dtype, grad mode and precision switches) is restored.
    What the solution replaced of the harness (``_integrity``) is put back before the trace
    is built, and the trace says so (flag ``tampered``).

    Args:
        task: What to evaluate.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; ``None`` picks CUDA when available.
        cache: Builds and reference results to reuse (one per process); ``None`` uses a
            process-wide default.
        on_phase: Told ``"build"`` as the solution's build begins (the reference's side is
            done) and ``"run"`` as its trials begin.

    Raises:
        EngineError: ``device`` is invalid or unavailable, or this process was not started
            with the environment the task's settings ask for (``EvalSettings.process_env``);
            never for a kernel's failure.
        DistributedTaskError: The task's definition is called by several ranks and this is
            not one rank of a gang (``task.rank`` unset): ``sweep launch`` runs it.
    """
    if task.rank is not None:  # one rank of a call made by several (sweep.sandbox.gang)
        from sweep.engine._dist_eval import evaluate_rank

        return evaluate_rank(task, device=device, on_phase=on_phase)
    _one_process(task.definition, [task.workload], "sweep.engine.evaluate")
    from sweep.engine._evaluate import evaluate as evaluate_task

    return evaluate_task(task, device, cache, on_phase)


def build(task: Task, *, device: str | None = None, cache: EngineCache | None = None) -> None:
    """Build the task's reference and solution into ``cache`` and return.

    Never raises for a failed build: the following :func:`evaluate` reports it as
    COMPILE_ERROR without building again (for compiled solutions).

    Raises:
        DistributedTaskError: A distributed definition outside a gang (as :func:`evaluate`).
    """
    if task.rank is None:
        _one_process(task.definition, [task.workload], "sweep.engine.build")
    from sweep.engine._evaluate import build as build_task

    build_task(task, device=device, cache=cache)


def evaluate_pair(
    definition: Definition,
    solution: Solution,
    workloads: list[Workload],
    settings: EvalSettings | None = None,
    *,
    dataset_root: str | None = None,
    device: str | None = None,
    cache: EngineCache | None = None,
    sweep: str = "",
    on_trace: Callable[[Trace], None] | None = None,
    ceilings: list[Ceilings] | None = None,
    broken: str | None = None,
) -> list[Trace]:
    """Evaluate one solution over several workloads in this process (no Ray).

    Args:
        definition: The definition.
        solution: One of its solutions.
        workloads: Workloads of the definition, evaluated in order.
        settings: Evaluation settings; defaults when ``None``.
        dataset_root: Folder that safetensors input paths are relative to.
        device: As for :func:`evaluate`.
        cache: Shared by the workloads; a fresh one when ``None``.
        sweep: Sweep name recorded in provenance.
        on_trace: Called with each trace as soon as it is ready.
        ceilings: Calibrated ceilings (``sweep calibrate``); the newest of this device's
            hardware, if any, goes with every task (for the fraction of peak).
        broken: Why the solution cannot be evaluated (``Task.broken``): every trace is a
            COMPILE_ERROR with this message, nothing of the solution built or run.

    Raises:
        EngineError: ``device`` is invalid or unavailable.
        DistributedTaskError: ``definition`` is called by several ranks (``sweep launch``).
    """
    _one_process(definition, workloads, "sweep.engine.evaluate_pair")
    import torch

    from sweep.engine.timing._envinfo import resolve_device
    from sweep.schema import EvalSettings
    from sweep.schema.hardware import short_name
    from sweep.schema.task import Task

    settings = settings or EvalSettings()
    cache = cache if cache is not None else EngineCache()
    dev = resolve_device(device)
    hardware = short_name("cpu" if dev.type == "cpu" else str(torch.cuda.get_device_name(dev)))
    mine = sorted(
        (c for c in ceilings or [] if short_name(c.hardware) == hardware), key=lambda c: c.measured_at or ""
    )
    traces = []
    for wl in workloads:
        task = Task.make(
            definition,
            solution,
            wl,
            settings,
            hardware,
            dataset_root=dataset_root,
            sweep=sweep,
            ceilings=mine[-1] if mine else None,
            broken=broken,
        )
        trace = evaluate(task, device=str(dev), cache=cache)
        if on_trace is not None:
            on_trace(trace)
        traces.append(trace)
    return traces


def profile_run(task: Task, device: str | None = None, calls: int = 5) -> ProfiledCalls:
    """Build ``task``'s solution, make the inputs of its first timed input set, call it once
    to warm up, then ``calls`` times between ``cudaProfilerStart`` and ``cudaProfilerStop``
    (see ``_profile``).

    Raises:
        EngineError: Not a CUDA device, or the solution cannot be built or called.
        DistributedTaskError: A distributed definition (profile mode runs one process).
    """
    _one_process(task.definition, [task.workload], "profile mode")
    from sweep.engine._profile import profile_run as profile_task

    return profile_task(task, device, calls)


def start_process(device_kind: str) -> None:
    """In a task's fresh process, before its task arrives (a sandbox forks and starts it while
    the previous task runs, once that one's timed calls are over): make the device ready
    (``_process.start_process``: CUDA's context and first kernels on a GPU), then the
    process's cache and the first reads of the harness's snapshot (``_evaluate.warm_process``),
    so the task's own time includes none of them."""
    from sweep.engine._evaluate import warm_process
    from sweep.engine._process import start_process as start_device

    start_device(device_kind)
    warm_process(device_kind)


def process_cache() -> EngineCache:
    """The engine cache of a task's process, made ready by :func:`start_process` (a sandbox
    asks for it after ``start_process``)."""
    from sweep.engine._evaluate import process_cache as cache

    return cache()
