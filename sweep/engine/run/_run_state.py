"""The state one evaluation's phases and its call path share.

:class:`RunState` holds the task, the device, the cache, the seed, the tolerance, the error
statistics, the notes and the built reference and solution, and the helpers a call path
uses to call them. The phases (``_phases.EvalRun``) extend it; a call path
(``_callpath.CallPath``) is given it and needs nothing else of the engine's driver.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from typing import TypeVar

import torch

from sweep.engine.builds import Built, interpreter_hint
from sweep.engine.guard import Guard, TorchFlags, pinned_flags
from sweep.engine.io import (
    ErrorStats,
    Stop,
    base_seed,
    compile_failure,
    hash_int,
    reference_stop,
    source_line,
    traceback_text,
)
from sweep.engine.run._cache import EngineCache
from sweep.schema import (
    FLAG_REFERENCE_FAILED,
    FLAG_TAMPERED,
    Correctness,
    Definition,
    EvalSettings,
    Solution,
    Status,
    Workload,
)
from sweep.schema.task import Task
from sweep.schema.trace_log import sticky_cuda_error

__all__ = ["RunState"]

_BUILD_FAILED_AT_CALL = "Error building extension"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_T = TypeVar("_T")


class RunState:
    """The state of one evaluation that every phase and both call paths share, and the
    helpers the paths call (reference and solution calls that turn failures into statuses)."""

    def __init__(self, task: Task, device: torch.device, cache: EngineCache, flags: TorchFlags) -> None:
        self.task = task
        self.defn: Definition = task.definition
        self.sol: Solution = task.solution
        self.wl: Workload = task.workload
        self.settings: EvalSettings = task.settings
        self.device = device
        self.cache = cache
        self.flags = flags
        self.seed = base_seed(self.settings.seed, self.wl.uuid, task.secret_salt)
        # The timed calls' fresh values and which of them are checked: drawn anew in each
        # evaluation, unlike the input sets. A later task of the same workload (another
        # parameter point of the solution, another launch) never sees them again, so a cache
        # of outputs kept outside the process, in a file, never hits on a timed call.
        self.fresh_seed = hash_int("kernel-sweep-fresh", self.seed, secrets.token_hex(16))
        self.dps = self.sol.spec.destination_passing_style
        self.tol = self.settings.tolerance_for(self.defn.name, self.defn.op_type)
        self.def_key = _key(self.defn.to_json())
        self.wl_key = _key(self.wl.to_json())
        self.stats = ErrorStats()
        self.notes: list[str] = []
        self.solution: Built | None = None
        self.reference: Built | None = None
        #: Inputs (named inputs, or argument paths of a call) the reference writes into:
        #: restored after each timed reference call.
        self.ref_mutated: list[str] = list(cache.mutating_references.get(self.def_key, []))
        #: What the solution could replace, captured before its code ran (``_integrity``);
        #: ``None`` checks nothing (the evaluation sets it).
        self.guard: Guard | None = None
        #: The solution's module is imported: from here on its code may have run.
        self.solution_loaded = False
        #: Told the name of each phase as it begins (``"build"``, ``"run"``): a supervisor
        #: gives each its deadline, and knows whose a timeout or a crash is.
        self.on_phase: Callable[[str], None] | None = None

    # ---- the harness's integrity ------------------------------------------------------

    def phase(self, name: str) -> None:
        """Say that phase ``name`` begins (see :attr:`on_phase`)."""
        if self.on_phase is not None:
            self.on_phase(name)

    def check_integrity(self, where: str) -> None:
        """Stop with a ``tampered`` RUNTIME_ERROR when anything the harness uses was replaced
        or a thread the solution started is still running (``where``: the moment checked)."""
        if self.guard is None:
            return
        changes = self.guard.changes()
        busy = self.guard.busy_threads()
        if busy:
            changes.append(f"{len(busy)} thread(s) left running: {', '.join(busy[:3])}")
        if not changes:
            return
        whose = "the solution" if self.solution_loaded else "the reference phase"
        shown = "; ".join(changes[:8]) + (f"; and {len(changes) - 8} more" if len(changes) > 8 else "")
        flag = FLAG_TAMPERED if self.solution_loaded else FLAG_REFERENCE_FAILED
        raise Stop(
            Status.RUNTIME_ERROR,
            f"TAMPERED: {whose} changed what the harness times and checks with ({where}): {shown}. "
            "A result is never PASSED after that",
            flags=(flag,),
        )

    def check_threads(self, where: str) -> None:
        """The cheap part of :meth:`check_integrity`: no thread of the solution left running."""
        if self.guard is None or not self.solution_loaded:
            return
        busy = self.guard.busy_threads()
        if busy:
            raise Stop(
                Status.RUNTIME_ERROR,
                f"TAMPERED: the solution left {len(busy)} thread(s) running ({where}): "
                f"{', '.join(busy[:3])}; a thread that goes on after the call returns could write "
                "its outputs outside the timed window. A result is never PASSED after that",
                flags=(FLAG_TAMPERED,),
            )

    # ---- helpers of the call paths ---------------------------------------------------

    def sync(self) -> None:
        """Wait for the device (CUDA) to finish what was queued."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def reference_value(self, index: int, *args: object, **kwargs: object) -> object:
        """The reference's value on input set ``index`` (synchronized); its failure is a
        RUNTIME_ERROR that names the definition and the input set."""
        assert self.reference is not None
        if self.solution_loaded:
            # The reference's result for a timed call is computed after the solution's import:
            # only in a process where nothing it uses was replaced.
            self.check_integrity(f"before the reference's call on input set {index}")
        try:
            with pinned_flags(self.flags), torch.no_grad():
                value = self.reference.fn(*args, **kwargs)
                self.sync()
        except Exception as e:  # noqa: BLE001 - any failure of the reference is reported
            raise self.reference_failed(
                e, f"the reference of {self.defn.name!r} raised {type(e).__name__} on input set {index}: {e}"
            ) from None
        return value

    def input_set_key(self, index: int) -> tuple[str, str, int, int, str]:
        """Where input set ``index`` of this task is kept in the process's cache."""
        return (self.def_key, self.wl_key, self.seed, index, str(self.device))

    def cached_input_set(self, index: int, kind: type[_T]) -> _T | None:
        """Input set ``index`` if this process made it already (as a ``kind``), counted as a hit."""
        hit = self.cache.input_sets.get(self.input_set_key(index))
        if not isinstance(hit, kind):
            return None
        self.cache.hits["input_set"] += 1
        return hit

    def reference_wrote(self, name: str) -> None:
        """Record that the reference writes into input ``name`` (kept per definition in the cache)."""
        self.ref_mutated.append(name)
        self.cache.mutating_references[self.def_key] = list(self.ref_mutated)

    def call_solution(self, call: Callable[[int], object], slot: int, where: str) -> object:
        """The solution's value on slot ``slot`` (``call(slot)``: the path's own call,
        synchronized); any exception it raises ends the evaluation with its status (``where``
        names the call)."""
        try:
            with torch.no_grad():
                got = call(slot)
                self.sync()
        except Exception as e:  # noqa: BLE001 - any failure of the kernel is a status
            raise self.solution_failed(e, where) from None
        self.check_threads(f"after {where}")
        return got

    def correctness_record(self) -> Correctness:
        """The largest errors seen so far, for the trace."""
        return Correctness(max_absolute_error=self.stats.max_abs, max_relative_error=self.stats.max_rel)

    def reference_failed(self, e: BaseException, message: str) -> Stop:
        """The status of a reference call that raised ``e``: RUNTIME_ERROR flagged as the
        reference's failure, with ``message`` and the traceback; notes a sticky CUDA error."""
        self.note_sticky(e)
        return reference_stop(Status.RUNTIME_ERROR, message, traceback_text(e))

    def solution_failed(self, e: BaseException, where: str) -> Stop:
        """The status of a solution call that raised ``e`` (COMPILE_ERROR when its extension
        failed to build at the call, or its kernel cannot be compiled for this GPU or exceeds
        its resources: :func:`compile_failure`; else RUNTIME_ERROR); notes a sticky CUDA error."""
        self.note_sticky(e)
        text = str(e)
        if _BUILD_FAILED_AT_CALL in text:
            return Stop(
                Status.COMPILE_ERROR, f"the solution's extension failed to build ({where})", traceback_text(e)
            )
        if compile_failure(e):
            return Stop(
                Status.COMPILE_ERROR,
                f"the solution's kernel cannot be compiled for or run on this device ({where}): "
                f"{type(e).__name__}: {text}",
                traceback_text(e),
            )
        line = source_line(e, self.solution.folder) if self.solution is not None else None
        at = f" at {line}" if line else ""
        hint = interpreter_hint(e)
        return Stop(
            Status.RUNTIME_ERROR,
            f"the solution raised {type(e).__name__}{at} ({where}): {text}" + (f"; {hint}" if hint else ""),
            traceback_text(e),
        )

    def note_sticky(self, e: BaseException) -> None:
        """After a sticky CUDA error, mark the cache: this process must not evaluate again."""
        if self.device.type != "cuda":
            return
        if sticky_cuda_error(str(e)) is not None:
            self.cache.fatal_error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
