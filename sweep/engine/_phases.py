"""The phases of one evaluation, on one device, in this process.

Phases, each of which can end the evaluation with a status (see :class:`Stop`):

1. setup: the workload must match the definition; the memory the task needs is counted
   and compared with the budget before anything is allocated;
2. build: the reference, then the solution (COMPILE_ERROR on failure) and its signature;
3. correctness: ``settings.trials`` trials, each on a fresh input set; the reference runs
   on a clone of the inputs and the solution on its own copy, held in fixed "slot"
   buffers that are refilled in place between trials;
4. timing: the slots are refilled with input sets never seen before; the reference and
   the solution are timed rotating over the slots; the outputs of the last timed call
   on each slot are checked against the reference again, so a kernel that serves stale
   results (cached by input address, or computed once) fails.

:class:`EvalRun` holds the state every evaluation shares and runs the phases; what depends
on the kind of workload (making inputs, calling, checking) is its :class:`CallPath`, which
:func:`new_run` picks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch

from sweep.backendbench import is_backendbench
from sweep.config import EvalSettings
from sweep.engine._aten_call import AtenCall
from sweep.engine._build import BuildError, Built, build_solution, interpreter_mode, reference_solution
from sweep.engine._cache import EngineCache
from sweep.engine._callpath import CallPath
from sweep.engine._compare import ErrorStats
from sweep.engine._inputs import base_seed
from sweep.engine._named_inputs import NamedInputs
from sweep.engine._nvml import Nvml
from sweep.engine._outcome import STICKY_CUDA, Result, Stop, traceback_text, triton_mode_problem
from sweep.engine._state import TorchFlags, pinned_flags
from sweep.engine._timing import flush_bytes, time_calls
from sweep.schema import (
    Clocks,
    Correctness,
    Definition,
    Performance,
    Solution,
    Status,
    TimingStats,
    Workload,
    check_workload,
)
from sweep.task import Task

__all__ = ["EvalRun", "new_run"]

_BUILD_FAILED_AT_CALL = "Error building extension"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def new_run(task: Task, device: torch.device, cache: EngineCache, flags: TorchFlags) -> EvalRun:
    """The evaluation of ``task``: the BackendBench path (:class:`AtenCall`) for a
    ``backendbench_args`` workload, the normal path (:class:`NamedInputs`) otherwise."""
    path = AtenCall if is_backendbench(task.definition, task.workload) else NamedInputs
    return EvalRun(task, device, cache, flags, path)


class EvalRun:
    """The state of one evaluation, and its phases (what differs per workload kind: ``path``)."""

    def __init__(
        self,
        task: Task,
        device: torch.device,
        cache: EngineCache,
        flags: TorchFlags,
        path: Callable[[EvalRun], CallPath],
    ) -> None:
        self.task = task
        self.defn: Definition = task.definition
        self.sol: Solution = task.solution
        self.wl: Workload = task.workload
        self.settings: EvalSettings = task.settings
        self.device = device
        self.cache = cache
        self.flags = flags
        self.seed = base_seed(self.settings.seed, self.wl.uuid)
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
        self.path = path(self)

    # ---- helpers of the call paths ---------------------------------------------------

    def sync(self) -> None:
        """Wait for the device (CUDA) to finish what was queued."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def reference_value(self, index: int, *args: object, **kwargs: object) -> object:
        """The reference's value on input set ``index`` (synchronized); its failure is a
        RUNTIME_ERROR that names the definition and the input set."""
        assert self.reference is not None
        try:
            with pinned_flags(self.flags), torch.no_grad():
                value = self.reference.fn(*args, **kwargs)
                self.sync()
        except Exception as e:  # noqa: BLE001 - any failure of the reference is reported
            self._note_sticky(e)
            raise Stop(
                Status.RUNTIME_ERROR,
                f"the reference of {self.defn.name!r} raised {type(e).__name__} on input set {index}: {e}",
                traceback_text(e),
            ) from None
        return value

    def reference_wrote(self, name: str) -> None:
        """Record that the reference writes into input ``name`` (kept per definition in the cache)."""
        self.ref_mutated.append(name)
        self.cache.mutating_references[self.def_key] = list(self.ref_mutated)

    def call_solution(self, slot: int, where: str) -> object:
        """The solution's value on slot ``slot`` (``path.call_solution``, synchronized); any
        exception it raises ends the evaluation with its status (``where`` names the call)."""
        try:
            with torch.no_grad():
                got = self.path.call_solution(slot)
                self.sync()
        except Exception as e:  # noqa: BLE001 - any failure of the kernel is a status
            raise self._solution_failed(e, where) from None
        return got

    def correctness_record(self) -> Correctness:
        """The largest errors seen so far, for the trace."""
        return Correctness(max_absolute_error=self.stats.max_abs, max_relative_error=self.stats.max_rel)

    def _solution_failed(self, e: BaseException, where: str) -> Stop:
        self._note_sticky(e)
        text = str(e)
        if _BUILD_FAILED_AT_CALL in text:
            return Stop(
                Status.COMPILE_ERROR, f"the solution's extension failed to build ({where})", traceback_text(e)
            )
        return Stop(
            Status.RUNTIME_ERROR,
            f"the solution raised {type(e).__name__} ({where}): {text}",
            traceback_text(e),
        )

    def _note_sticky(self, e: BaseException) -> None:
        if self.device.type != "cuda":
            return
        text = str(e).lower()
        if any(m in text for m in STICKY_CUDA):
            self.cache.fatal_error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"

    # ---- setup and build -------------------------------------------------------------

    def _preflight(self) -> None:
        """The checks every path makes first: a usable device, a matching workload."""
        if self.cache.fatal_error and self.device.type == "cuda":
            raise Stop(
                Status.RUNTIME_ERROR,
                "this process's CUDA context is unusable after an earlier error "
                f"({self.cache.fatal_error}); evaluate in a new process",
            )
        problems = check_workload(self.defn, self.wl)
        if problems:
            raise Stop(
                Status.RUNTIME_ERROR,
                f"workload {self.wl.uuid} does not match definition {self.defn.name!r}: "
                + "; ".join(problems),
            )

    def setup(self) -> None:
        self._preflight()
        self.path.setup()

    def build(self) -> None:
        self._build_reference_and_solution()
        assert self.solution is not None
        problem = self.path.check_entry_point(self.solution.fn)
        if problem:
            raise Stop(Status.COMPILE_ERROR, f"entry point {self.sol.spec.entry_point!r}: {problem}")
        if self.solution.note:
            self.notes.append(self.solution.note)

    def _build_reference_and_solution(self) -> None:
        if self.sol.spec.language.value == "triton":
            problem = triton_mode_problem(self.device)
            if problem:
                raise Stop(Status.RUNTIME_ERROR, f"cannot evaluate a Triton solution here: {problem}")
        self.reference = self._built(reference_solution(self.defn), is_reference=True)
        if self.sol.spec.language.value == "cuda" and self.device.type != "cuda":
            raise Stop(
                Status.COMPILE_ERROR,
                f"solution {self.sol.name!r} is written in CUDA and needs a CUDA device; "
                f"this evaluation runs on {self.device.type}",
            )
        self.solution = self._built(self.sol, is_reference=False)

    def _built(self, sol: Solution, *, is_reference: bool) -> Built:
        key = ("ref:" if is_reference else "sol:") + sol.content_hash + ":" + interpreter_mode()
        hit = self.cache.solutions.get(key)
        if hit is None:
            try:
                hit = build_solution(
                    sol, cuda_ok=self.device.type == "cuda", lock_timeout_s=self.settings.timeouts.compile_s
                )
            except BuildError as e:
                # A compiled build that failed is deterministic and costly: keep the failure.
                # Python imports are cheap and retried every time.
                if sol.spec.entry_file.endswith(".py"):
                    raise self._build_stop(e, is_reference, cached=False) from None
                hit = e
            self.cache.solutions[key] = hit
        else:
            self.cache.hits["solution"] += 1
        if isinstance(hit, BuildError):
            raise self._build_stop(hit, is_reference, cached=True)
        return hit

    def _build_stop(self, e: BuildError, is_reference: bool, *, cached: bool) -> Stop:
        again = " (this build failed earlier in this process and is not retried)" if cached else ""
        if is_reference:
            return Stop(
                Status.RUNTIME_ERROR,
                f"the reference of definition {self.defn.name!r} cannot be loaded: {e}{again}",
                e.log,
            )
        return Stop(Status.COMPILE_ERROR, f"{e}{again}", e.log)

    # ---- correctness -------------------------------------------------------------------

    def correctness(self) -> None:
        for trial in range(self.settings.trials):
            self.path.trial(trial)

    # ---- timing ------------------------------------------------------------------------

    def _flush(self) -> torch.Tensor | None:
        if self.device.type != "cuda":
            return None
        key = str(self.device)
        buf = self.cache.flush_buffers.get(key)
        if buf is None:
            buf = torch.empty(flush_bytes(self.device), dtype=torch.int8, device=self.device)
            self.cache.flush_buffers[key] = buf
        return buf

    def _time_reference(
        self, flush: torch.Tensor | None, restore: Callable[[int], None] | None
    ) -> TimingStats:
        try:
            with pinned_flags(self.flags), torch.no_grad():
                stats, _ = time_calls(
                    self.path.call_reference,
                    self.settings.input_sets,
                    self.settings,
                    self.device,
                    flush,
                    restore,
                )
        except Exception as e:  # noqa: BLE001
            self._note_sticky(e)
            raise Stop(
                Status.RUNTIME_ERROR,
                f"the reference raised {type(e).__name__} while timed: {e}",
                traceback_text(e),
            ) from None
        return stats

    def timing(self, nvml: Nvml) -> tuple[TimingStats, TimingStats, Clocks | None]:
        """Time the reference, then right after it the solution, on the same fresh input sets."""
        path = self.path
        flush = self._flush()
        sets = self.settings.input_sets
        first = self.settings.trials  # timing sets are never the ones the trials used
        expected = path.prepare_timing(first, sets)
        ref_mutates = path.reference_mutates()
        ref_stats = self._time_reference(flush, path.restore if ref_mutates else None)
        if ref_mutates:
            for j in range(sets):
                path.restore(j)
        path.reset_outputs(sets)
        self.sync()
        before = nvml.read()
        try:
            with torch.no_grad():
                stats, last = time_calls(
                    path.call_solution,
                    sets,
                    self.settings,
                    self.device,
                    flush,
                    path.restore if path.solution_mutates() else None,
                )
            self.sync()
        except Exception as e:  # noqa: BLE001
            raise self._solution_failed(e, "while timed") from None
        after = nvml.read()
        clocks = None
        if nvml.available:
            clocks = Clocks(
                sm_clock_mhz_before=before.sm_clock_mhz,
                sm_clock_mhz_after=after.sm_clock_mhz,
                sm_clock_mhz_max=nvml.max_sm_clock(),
                throttle_reasons_before=before.reasons,
                throttle_reasons_after=after.reasons,
            )
        for j in range(sets):
            try:
                path.check_timed(last[j], expected[j], j, f"last timed call on input set {first + j}")
            except Stop as stop:
                if stop.status is Status.INCORRECT_NUMERICAL:
                    stop.message += (
                        "; the outputs of timed calls differ from the reference although the "
                        "correctness trials passed: the solution may reuse results across calls "
                        "(caching by input address, or computing once)"
                    )
                raise
        return stats, ref_stats, clocks

    # ---- all of it ---------------------------------------------------------------------

    def run_phases(self, nvml: Nvml) -> Result:
        """Setup, build, correctness and timing; the PASSED result (a phase raises ``Stop``)."""
        self.setup()
        self.build()
        self.correctness()
        stats, ref_stats, clocks = self.timing(nvml)
        latency = stats.p50_ms
        ref_latency = ref_stats.p50_ms
        speedup = ref_latency / latency if latency > 0 else 0.0
        summary = (
            f"PASSED: {self.settings.trials} trial(s) + {self.settings.input_sets} timed input set(s) match "
            f"the reference (max abs err {self.stats.max_abs:.3g}, max rel err {self.stats.max_rel:.3g}); "
            f"latency {latency:.4f} ms (median of {stats.iterations}, {stats.clock}), reference "
            f"{ref_latency:.4f} ms, speedup {speedup:.3f}x"
        )
        return Result(
            status=Status.PASSED,
            messages=[summary, *self.notes],
            correctness=self.correctness_record(),
            performance=Performance(
                latency_ms=latency, reference_latency_ms=ref_latency, speedup_factor=speedup
            ),
            timing=stats,
            reference_timing=ref_stats,
            clocks=clocks,
        )

    def release(self) -> None:
        """Drop every buffer this evaluation holds."""
        self.path.release()
