"""What an evaluation ends with: a :class:`Result`, or a :class:`Stop` raised by a phase;
plus the checks and helpers every evaluation path shares."""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import torch

from sweep.errors import exception_chain
from sweep.schema import FLAG_REFERENCE_FAILED, Clocks, Correctness, Energy, Performance, Status, TimingStats

__all__ = [
    "Result",
    "Stop",
    "bits",
    "compile_failure",
    "nbytes",
    "reference_stop",
    "source_line",
    "traceback_text",
    "triton_mode_problem",
]


#: Triton's exceptions for a kernel that cannot be compiled for, or loaded on, this GPU: a
#: front-end or ptxas error, or more shared memory, tensor memory or threads than it has. They
#: surface at the kernel's first call (Triton compiles then), but they are the configuration's
#: fault, not the run's, so they are a COMPILE_ERROR.
_TRITON_COMPILE_ERRORS = frozenset(
    {
        "CompilationError",
        "CompileTimeAssertionFailure",
        "UnsupportedLanguageConstruct",
        "PTXASError",
        "OutOfResources",
    }
)
#: CUDA's words for a launch that asks for more registers or threads per block than the GPU has
#: (cudaErrorLaunchOutOfResources): a CUDA kernel's configuration exceeds it.
_CUDA_OUT_OF_RESOURCES = "too many resources requested for launch"


def compile_failure(e: BaseException) -> bool:
    """Whether the solution call that raised ``e`` failed to compile its kernel for this GPU or
    asked for more of its resources (shared memory, registers, threads) than it has."""
    for cls in type(e).__mro__:
        if cls.__module__.startswith("triton") and cls.__name__ in _TRITON_COMPILE_ERRORS:
            return True
    return _CUDA_OUT_OF_RESOURCES in str(e)


def triton_mode_problem(device: torch.device) -> str | None:
    """Why Triton kernels cannot run on ``device`` in this process, or ``None``.

    Triton fixes at the first import of ``triton.language`` whether its library functions
    (``tl.zeros``, ``tl.sum``...) are interpreted or compiled: a process that imported it
    under ``TRITON_INTERPRET=1`` cannot compile kernels for a GPU, and one that imported it
    without cannot interpret kernels on the CPU. Workers keep to one device kind.
    """
    tl = sys.modules.get("triton.language")
    zeros = getattr(tl, "zeros", None) if tl is not None else None
    if zeros is None:
        return None
    interpreted = type(zeros).__name__ == "InterpretedFunction"
    if device.type == "cpu" and not interpreted:
        return (
            "triton was imported in this process before TRITON_INTERPRET=1 was set, so Triton "
            "kernels cannot run on the CPU here: call sweep.engine.prepare_process('cpu') before "
            "anything imports triton (one device kind per process)"
        )
    if device.type == "cuda" and interpreted:
        return (
            "triton was imported in this process under TRITON_INTERPRET=1 (a CPU evaluation), so "
            "Triton kernels cannot be compiled for the GPU here: evaluate GPU tasks in a process "
            "that never evaluated on the CPU (one device kind per process)"
        )
    return None


@dataclass
class Result:
    """How an evaluation ended: its status, log lines and measurements."""

    status: Status
    messages: list[str] = field(default_factory=list)
    correctness: Correctness | None = None
    performance: Performance | None = None
    timing: TimingStats | None = None
    reference_timing: TimingStats | None = None
    clocks: Clocks | None = None
    energy: Energy | None = None
    flags: list[str] | None = None


class Stop(Exception):
    """Ends an evaluation early with a status and a message; ``flags`` say whose failure it is
    (``reference_failed``, ``tampered``: the schema's ``FLAG_*``)."""

    def __init__(
        self,
        status: Status,
        message: str,
        detail: str = "",
        correctness: Correctness | None = None,
        flags: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.detail = detail
        self.correctness = correctness
        self.flags = list(flags)

    def flag(self, name: str) -> Stop:
        """Add the flag ``name`` (once) and return this stop."""
        if name not in self.flags:
            self.flags.append(name)
        return self


def reference_stop(status: Status, message: str, detail: str = "") -> Stop:
    """A stop for a failure of the reference or of the task's inputs: never the solution's."""
    return Stop(status, message, detail, flags=(FLAG_REFERENCE_FAILED,))


def traceback_text(e: BaseException) -> str:
    """The formatted traceback of ``e``, for logs."""
    return "".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip()


def source_line(e: BaseException, folder: Path) -> str | None:
    """Where in the files under ``folder`` (a solution's sources) ``e`` was raised, as
    ``"kernel.py:12 (in _rowsum)"``: the deepest frame there, across the exceptions it came
    from (a Triton interpreter error is raised from the kernel's own); ``None`` when no frame is."""
    root = str(folder.resolve()) + os.sep
    found: str | None = None
    chain = exception_chain(e)
    # The innermost exception first: the kernel's line, not the wrapper's that re-raised it.
    for exc in reversed(chain):
        for frame in traceback.extract_tb(exc.__traceback__):
            path = os.path.realpath(frame.filename)
            if path.startswith(root):
                found = f"{path[len(root) :]}:{frame.lineno} (in {frame.name})"
        if found is not None:
            return found
    return None


def nbytes(tensors: list[torch.Tensor]) -> int:
    """Bytes held by the elements of ``tensors``."""
    return sum(t.numel() * t.element_size() for t in tensors)


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor (so NaN equals NaN when comparing for mutation)."""
    flat = t.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat
