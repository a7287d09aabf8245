"""The process an evaluation runs in: made ready for a device kind, its snapshot taken before
any solution runs, the device an evaluation asked for resolved. Light: torch is imported only
by the functions that need it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sweep.schema.task import Task

__all__ = [
    "cuda_problem",
    "device_of",
    "env_problem",
    "gpu_problem",
    "phase_marks",
    "preload",
    "prepare_process",
    "start_process",
    "task_folders",
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
    from sweep.engine.guard import _integrity

    _integrity.baseline()


def start_process(device_kind: str) -> None:
    """In a task's fresh process, before it says it is ready (a sandbox forks it while the
    previous task runs): on a GPU, make the CUDA context, the allocator's first block, the
    cuBLAS handle and the kernels every evaluation launches (random values, fills, copies,
    reductions) ready, so the task's own time does not include them. (The face's
    ``start_process``, ``_api.py``, also makes the process's cache ready.)"""
    if not device_kind.startswith("cuda"):
        return
    import torch

    x = torch.rand(4096, device="cuda")
    y = torch.empty_like(x).fill_(float("nan"))
    y.copy_(x)
    torch.softmax(x.view(64, 64), dim=-1).sum().item()
    torch.cuda.current_blas_handle()  # type: ignore[no-untyped-call]
    torch.cuda.synchronize()


def task_folders(task: Task) -> list[str]:
    """The folders ``task``'s evaluation writes in besides its task folder, made ready (its
    sandbox then lets it write nowhere else), for this process, which evaluates only ``task``:

    - the compilers' caches of its solution alone (``$SWEEP_CACHE_DIR/compilers/<content
      hash>/``), which this process's environment now names (``TRITON_CACHE_DIR`` and the
      others of ``COMPILER_CACHE_VARIABLES``). A cache shared by every solution would let one
      plant compiled kernels, or a launcher's shared library, that another solution (or the
      next process) loads;
    - the build folder of a solution compiled from C++/CUDA sources, in the shared cache, with
      the record's sources written there first. Python entry points are written to the
      task's own folder (``_build.private_sources``)."""
    if task.broken is not None:
        return []
    from sweep.engine.builds._built import compiler_caches

    folders: list[str] = []
    for var, folder in compiler_caches(task.solution.content_hash).items():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue  # the compiler says why it cannot write there
        os.environ[var] = str(folder)
        folders.append(str(folder))
    if task.solution.spec.entry_file.endswith(".py"):
        return folders
    from sweep.engine.builds._build import write_sources

    try:
        return [*folders, str(write_sources(task.solution.content_hash, task.solution.sources))]
    except OSError:
        return folders  # the build tries again, and says why it cannot


def device_of(device: str | None) -> str:
    """The device an evaluation asked for as ``device`` runs on, as ``"cpu"`` or
    ``"cuda:N"`` (``None``: CUDA when torch sees a GPU, else the CPU).

    Raises:
        EngineError: an unknown device, or CUDA where torch sees none.
    """
    from sweep.engine.timing._envinfo import resolve_device

    return str(resolve_device(device))


def cuda_problem(device: str) -> str | None:
    """Why this process's CUDA context on ``device`` is unusable (after a sticky error), or
    ``None`` when it still computes correctly. The cluster asks this after a failed evaluation."""
    from sweep.engine.timing import _envinfo

    return _envinfo.cuda_problem(device)


def env_problem(wanted: Sequence[tuple[str, str]]) -> str | None:
    """Why this process cannot evaluate under settings that ask ``wanted`` of its environment
    (``EvalSettings.process_env``), or ``None``: CUDA read those variables when the context was
    made, so a process started without them would time under other conditions than its trace
    would say."""
    for name, value in wanted:
        have = os.environ.get(name)
        if have != value:
            return (
                f"this process has {name}={have!r} but the evaluation settings ask for {value!r}; "
                "it must be set before CUDA starts: sweep launch and sweep eval set it in each "
                f"sandbox, and a caller of sweep.engine.evaluate must start its process with {name}={value}"
            )
    return None


def gpu_problem() -> str | None:
    """Why this process cannot profile: no CUDA GPU visible (``None`` when one is)."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible to torch on this machine"
    return None


def phase_marks() -> list[tuple[str, float]]:
    """The phase clock's marks of this process's last evaluation: ``(phase, time.monotonic()
    when it ended)``, the first ``("evaluate", start)`` (``run/_clock.py``)."""
    from sweep.engine.run import _clock

    return _clock.marks()
