"""The evaluation engine: one Task in, one Trace out, in this process.

Importing this package does not import torch (the CLI imports it); torch, triton and the
compilers are loaded by the functions below when they run.

Public API:

- :func:`evaluate`: evaluate one :class:`~sweep.schema.Task`; never raises for what the
  solution does (build failures, exceptions, wrong outputs are statuses).
- :func:`evaluate_pair`: one solution over several workloads (for ``sweep eval``).
- :func:`build`: the build phase alone, for callers that give compilation its own deadline.
- :class:`EngineCache`: builds, reference outputs and reference timings kept across tasks.
- :func:`prepare_process`: call first in a fresh evaluating process (on CPU it sets
  ``TRITON_INTERPRET=1`` before triton is imported); :func:`preload`: in a zygote, import what
  evaluations use and take the harness's snapshot (``_integrity``) before any solution runs;
  :func:`start_process`: in a task's fresh process, make CUDA ready before its task arrives.
- :func:`profile_run`: profile mode, the solution's calls alone inside a CUDA profiler range
  (``python -m sweep.engine.profile_main TASKFILE`` is the process ``sweep profile`` runs under
  ncu or compute-sanitizer); :func:`gpu_problem`: why this machine cannot profile.
- :func:`cuda_problem`: whether this process's CUDA context still works (asked by the cluster);
  :func:`device_of`: the device an evaluation asked for runs on (``cpu`` or ``cuda:N``).
- :func:`calibrate`: measure this node's ceilings (copy bandwidth, dense GEMM rate per dtype)
  for ``sweep calibrate``.
- :func:`resolve_op`, :func:`schema_mutations`: an ATen operator by name and the arguments
  its schema writes (the engine is the one package that imports torch);
  :func:`operator_problem`: why this torch cannot run an imported operator on a target (the
  plan's ``unavailable`` check, passed by the launch stage).

Every evaluation runs the same phases (``_phases.EvalRun``); what depends on the kind of
workload is its call path (the ``_callpath.CallPath`` protocol): ``_aten_call.AtenCall`` for a
workload with a ``backendbench_args`` input (an imported BackendBench operator call),
``_named_inputs.NamedInputs`` for every other one; ``_phases.new_run`` picks it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from sweep.engine._aten_ops import operator_problem, resolve_op, schema_mutations
from sweep.engine._cache import EngineCache

if TYPE_CHECKING:
    from sweep.engine._profile import ProfiledCalls
    from sweep.schema import Ceilings, Definition, EvalSettings, Solution, Task, Trace, Workload

__all__ = [
    "EngineCache",
    "build",
    "calibrate",
    "cuda_problem",
    "device_of",
    "evaluate",
    "evaluate_pair",
    "gpu_problem",
    "operator_problem",
    "preload",
    "prepare_process",
    "profile_run",
    "resolve_op",
    "schema_mutations",
    "start_process",
]


def prepare_process(device_kind: str) -> None:
    """Make this process ready to evaluate on ``device_kind`` (``"cpu"`` or ``"cuda"``).

    On CPU, Triton kernels run under the Triton interpreter, which needs
    ``TRITON_INTERPRET=1`` before ``triton`` is imported: call this first in a fresh
    worker. It imports nothing heavy and creates no CUDA context (safe before a fork).
    """
    if device_kind.startswith("cpu"):
        os.environ["TRITON_INTERPRET"] = "1"


def preload(device_kind: str) -> None:
    """In a process that forks evaluating processes (a sandbox's zygote), after
    :func:`prepare_process`: import what evaluations use, then take the snapshot every
    evaluation in a process forked from here checks what its solution replaced against
    (``_integrity.baseline``). Creates no CUDA context (safe before a fork)."""
    from sweep.engine import _integrity

    _integrity.baseline()


def start_process(device_kind: str) -> None:
    """In a task's fresh process, before it says it is ready (a sandbox forks it while the
    previous task runs): on a GPU, make the CUDA context, the allocator's first block, the
    cuBLAS handle and the kernels every evaluation launches (random values, fills, copies,
    reductions) ready, so the task's own time does not include them."""
    if not device_kind.startswith("cuda"):
        return
    import torch

    x = torch.rand(4096, device="cuda")
    y = torch.empty_like(x).fill_(float("nan"))
    y.copy_(x)
    torch.softmax(x.view(64, 64), dim=-1).sum().item()
    torch.cuda.current_blas_handle()  # type: ignore[no-untyped-call]
    torch.cuda.synchronize()


def device_of(device: str | None) -> str:
    """The device an evaluation asked for as ``device`` runs on, as ``"cpu"`` or
    ``"cuda:N"`` (``None``: CUDA when torch sees a GPU, else the CPU).

    Raises:
        EngineError: an unknown device, or CUDA where torch sees none.
    """
    from sweep.engine._envinfo import resolve_device

    return str(resolve_device(device))


def cuda_problem(device: str) -> str | None:
    """Why this process's CUDA context on ``device`` is unusable (after a sticky error), or
    ``None`` when it still computes correctly. The cluster asks this after a failed evaluation."""
    from sweep.engine import _envinfo

    return _envinfo.cuda_problem(device)


def calibrate(device: str | None = None) -> Ceilings:
    """Measure this node's ceilings on ``device`` (``None``: CUDA when available): copy
    bandwidth and dense GEMM TFLOP/s per dtype (see ``_calibrate`` for what and how large).

    Raises:
        EngineError: ``device`` is invalid or unavailable.
    """
    from sweep.engine import _calibrate

    return _calibrate.calibrate(device)


def evaluate(
    task: Task,
    *,
    device: str | None = None,
    cache: EngineCache | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> Trace:
    """Evaluate one task in this process and return its Trace (see ``_evaluate.evaluate``).

    Args:
        task: What to evaluate.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; ``None`` picks CUDA when available.
        cache: Reused builds and reference results (one per process); ``None`` uses a
            process-wide default.
        on_phase: Told ``"build"`` as the solution's build begins (the reference's side is
            done) and ``"run"`` as its trials begin.

    Raises:
        EngineError: ``device`` is invalid or unavailable (never for a kernel's failure).
    """
    if task.rank is not None:  # one rank of a call made by several (sweep.cluster.gang)
        from sweep.engine import _dist_eval

        return _dist_eval.evaluate_rank(task, device=device, on_phase=on_phase)
    from sweep.engine import _evaluate

    return _evaluate.evaluate(task, device=device, cache=cache, on_phase=on_phase)


def build(task: Task, *, device: str | None = None, cache: EngineCache | None = None) -> None:
    """Build the task's reference and solution into ``cache`` and return.

    Never raises for a failed build: the following :func:`evaluate` reports it as
    COMPILE_ERROR without building again (for compiled solutions).
    """
    from sweep.engine import _evaluate

    _evaluate.build(task, device=device, cache=cache)


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
        ceilings: Calibrated ceilings (``sweep calibrate``); the one of this device's
            hardware, if any, is used for the fraction of peak.
        broken: Why the solution cannot be evaluated (``Task.broken``): every trace is a
            COMPILE_ERROR with this message, nothing of the solution built or run.

    Raises:
        EngineError: ``device`` is invalid or unavailable.
    """
    from sweep.engine import _evaluate

    return _evaluate.evaluate_pair(
        definition,
        solution,
        workloads,
        settings,
        dataset_root=dataset_root,
        device=device,
        cache=cache,
        sweep=sweep,
        on_trace=on_trace,
        ceilings=ceilings,
        broken=broken,
    )


def profile_run(task: Task, device: str | None = None, calls: int = 5) -> ProfiledCalls:
    """Build ``task``'s solution, make the inputs of its first timed input set, call it once
    to warm up, then ``calls`` times between ``cudaProfilerStart`` and ``cudaProfilerStop``
    (see ``_profile``).

    Raises:
        EngineError: Not a CUDA device, or the solution cannot be built or called.
    """
    from sweep.engine import _profile

    return _profile.profile_run(task, device, calls)


def gpu_problem() -> str | None:
    """Why this process cannot profile: no CUDA GPU visible (``None`` when one is)."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch on this machine"
    return None
