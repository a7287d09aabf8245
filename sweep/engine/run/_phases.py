"""The phases of one evaluation, on one device, in this process.

Phases, each of which can end the evaluation with a status (see :class:`Stop`). The reference
and everything it computes come first, before the solution's module is imported, so that no
code of the solution can change the reference's results or its timing:

0. a task whose solution the plan found broken (``Task.broken``) is a COMPILE_ERROR before
   anything is done: nothing of it is built or run;
1. setup: the workload must match the definition; the memory the task needs is counted
   and compared with the budget before anything is allocated;
2. the reference: built; its result on the input set of every correctness trial (kept), the
   work of a call, and its timing on the timing sets (``TimingPhase.time_reference``);
   any failure here is the task's, not the solution's (flag ``reference_failed``);
3. build: the solution (COMPILE_ERROR on failure) and its signature; then a check that its
   import replaced nothing the harness uses (``_integrity``: ``tampered`` otherwise);
4. correctness: ``settings.trials`` trials, each on its input set, the solution on its own
   copy held in fixed "slot" buffers that are refilled in place between trials;
5. timing: the slots are refilled with the timing sets, whose random inputs get new values
   before every timed call; the solution is timed with the reference's timer; a random
   sample of the timed calls and the last one on each slot are checked against the
   reference on their own inputs (computed then, after a check of the harness), so a kernel
   that serves stale results (cached by input address, by call count or by content) fails;
6. a last check of the harness: what a solution replaced, pushed or left running is never
   PASSED.

A supervisor is told when the solution's build begins and when its run begins
(``RunState.on_phase``), to give each its deadline and to know whose a timeout is, and when
nothing is timed any more (``"timed"``: another process may use the GPU from then on).

:class:`EvalRun` holds the state every evaluation shares and runs the phases; what depends
on the kind of workload (making inputs, calling, checking) is its :class:`CallPath`, which
:func:`new_run` picks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

from sweep.engine.aten import is_backendbench
from sweep.engine.builds import (
    BuildError,
    Built,
    build_solution,
    interpreter_mode,
    params_problem,
    reference_solution,
    with_params,
)
from sweep.engine.guard import TorchFlags
from sweep.engine.io import Result, Stop, reference_stop, triton_mode_problem
from sweep.engine.run._aten_call import AtenCall
from sweep.engine.run._cache import EngineCache
from sweep.engine.run._callpath import CallPath
from sweep.engine.run._clock import mark
from sweep.engine.run._energy_phase import energy_words, measure_energy
from sweep.engine.run._named_inputs import NamedInputs
from sweep.engine.run._roofline import assess, work_of
from sweep.engine.run._run_state import RunState
from sweep.engine.run._timing_phase import TimingPhase, timing_words
from sweep.engine.timing import Nvml
from sweep.schema import (
    FLAG_REFERENCE_FAILED,
    Clocks,
    Performance,
    Solution,
    Status,
    TimingStats,
    check_workload,
)
from sweep.schema.task import Task

__all__ = ["EvalRun", "new_run"]


def new_run(task: Task, device: torch.device, cache: EngineCache, flags: TorchFlags) -> EvalRun:
    """The evaluation of ``task``: the BackendBench path (:class:`AtenCall`) for a
    ``backendbench_args`` workload, the normal path (:class:`NamedInputs`) otherwise."""
    path = AtenCall if is_backendbench(task.definition, task.workload) else NamedInputs
    return EvalRun(task, device, cache, flags, path)


class EvalRun(RunState):
    """The phases of one evaluation over the shared state; what depends on the kind of
    workload (making inputs, calling, checking) is its ``path``."""

    def __init__(
        self,
        task: Task,
        device: torch.device,
        cache: EngineCache,
        flags: TorchFlags,
        path: Callable[[RunState], CallPath],
    ) -> None:
        super().__init__(task, device, cache, flags)
        self.path = path(self)
        self.timed_checks = 0
        self.timing_phase: TimingPhase | None = None

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

    def _refuse_broken(self) -> None:
        """A solution the plan found broken (``Task.broken``: its file is no valid record, or
        the checks of ``sweep validate`` failed) is a COMPILE_ERROR before anything of it is
        built, imported or allocated for."""
        if self.task.broken is not None:
            raise Stop(Status.COMPILE_ERROR, self.task.broken)

    def setup(self) -> None:
        self._preflight()
        self.path.setup()

    def build(self) -> None:
        """The reference, then the solution and its checks (no trial, no timing)."""
        self._refuse_broken()
        self.build_reference()
        self.build_solution()

    def build_reference(self) -> None:
        self.reference = self._built(reference_solution(self.defn), is_reference=True)

    def build_solution(self) -> None:
        """Import (or compile) the solution and check its entry point and parameter point."""
        if self.sol.spec.language.value == "triton":
            problem = triton_mode_problem(self.device)
            if problem:
                raise Stop(Status.RUNTIME_ERROR, f"cannot evaluate a Triton solution here: {problem}")
        if self.sol.spec.language.value == "cuda" and self.device.type != "cuda":
            raise Stop(
                Status.COMPILE_ERROR,
                f"solution {self.sol.name!r} is written in CUDA and needs a CUDA device; "
                f"this evaluation runs on {self.device.type}",
            )
        self.solution_loaded = True  # from here on, its code may have run
        self.solution = self._built(self.sol, is_reference=False)
        self.check_integrity("after the solution's import")
        problem = self.path.check_entry_point(self.solution.fn)
        if problem:
            raise Stop(Status.COMPILE_ERROR, f"entry point {self.sol.spec.entry_point!r}: {problem}")
        if self.task.params is not None:
            problem = params_problem(self.solution.fn, self.task.params)
            if problem:
                raise Stop(Status.COMPILE_ERROR, f"entry point {self.sol.spec.entry_point!r}: {problem}")
            self.solution = with_params(self.solution, self.task.params)
        if self.solution.note:
            self.notes.append(self.solution.note)

    def _built(self, sol: Solution, *, is_reference: bool) -> Built:
        key = ("ref:" if is_reference else "sol:") + sol.content_hash + ":" + interpreter_mode()
        hit = self.cache.solutions.get(key)
        fresh = hit is None
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
            raise self._build_stop(hit, is_reference, cached=not fresh)
        return hit

    def _build_stop(self, e: BuildError, is_reference: bool, *, cached: bool) -> Stop:
        again = " (this build failed earlier in this process and is not retried)" if cached else ""
        if is_reference:
            return reference_stop(
                Status.RUNTIME_ERROR,
                f"the reference of definition {self.defn.name!r} cannot be loaded: {e}{again}",
                e.log,
            )
        return Stop(Status.COMPILE_ERROR, f"{e}{again}", e.log)

    # ---- the reference's side ----------------------------------------------------------

    def reference_side(self, nvml: Nvml) -> None:
        """Everything of the reference that does not need the solution: its result on every
        trial's input set, the work of a call, and its timing. Whatever fails here is the
        task's own problem, never the solution's."""
        for trial in range(self.settings.trials):
            self.path.reference_trial(trial)
        mark("reference trials (inputs, reference calls)")
        # Counted now, before the solution's import, from the reference's own calls; a failure
        # here is said by the assessment after the timing.
        with contextlib.suppress(Exception):
            work_of(self)
        mark("work of a call")
        self.timing_phase = TimingPhase(self, self.path, nvml)
        mark("timing set-up (flush buffer, NVML)")
        self.timing_phase.time_reference()

    # ---- the solution's side -----------------------------------------------------------

    def correctness(self) -> None:
        for trial in range(self.settings.trials):
            self.path.trial(trial)

    def timing(self) -> tuple[TimingStats, TimingStats, Clocks | None]:
        """Time the solution on fresh input sets with the reference's timer
        (``_timing_phase.py``): the solution's stats, the reference's, the clocks."""
        assert self.timing_phase is not None
        timed = self.timing_phase.time_solution()
        self.timed_checks = self.timing_phase.checked
        return timed

    # ---- all of it ---------------------------------------------------------------------

    def run_phases(self, nvml: Nvml) -> Result:
        """The reference's side, then the solution's build, trials and timing; the PASSED
        result (a phase raises ``Stop``)."""
        self._refuse_broken()
        try:
            self.setup()
            mark("setup (workload check, memory)")
            self.build_reference()
            mark("reference build")
            self.reference_side(nvml)
            self.check_integrity("after the reference's side")
            mark("integrity check")
        except Stop as stop:
            raise stop.flag(FLAG_REFERENCE_FAILED) from None
        self.phase("build")
        self.build_solution()
        mark("solution build and import check")
        self.phase("run")
        self.correctness()
        mark("solution trials and comparison")
        self.check_integrity("after the solution's trials")
        mark("integrity check")
        stats, ref_stats, clocks = self.timing()
        assert self.timing_phase is not None
        timer = self.timing_phase.timer
        energy = measure_energy(self, self.path, nvml, timer, (ref_stats.p50_ms, stats.p50_ms))
        mark("energy")
        self.phase("timed")  # nothing is timed from here on
        self.check_integrity("after the solution's timed calls")
        mark("integrity check")
        latency = stats.p50_ms
        ref_latency = ref_stats.p50_ms
        speedup = ref_latency / latency if latency > 0 else 0.0
        summary = (
            f"PASSED: {self.settings.trials} trial(s) and {self.timed_checks} timed call(s) on fresh inputs "
            f"({self.settings.input_sets} input set(s)) match the reference (max abs err {self.stats.max_abs:.3g}, max rel err {self.stats.max_rel:.3g}); "
            f"latency {latency:.4f} ms ({timing_words(stats)}), reference "
            f"{ref_latency:.4f} ms, speedup {speedup:.3f}x"
        )
        perf = Performance(latency_ms=latency, reference_latency_ms=ref_latency, speedup_factor=speedup)
        roof = assess(self, perf)  # work, rates, floor and flags (_roofline)
        mark("result and roofline")
        return Result(
            status=Status.PASSED,
            messages=[summary, *energy_words(energy), *self.notes, *roof.notes],
            correctness=self.correctness_record(),
            performance=roof.performance,
            timing=stats,
            reference_timing=ref_stats,
            clocks=clocks,
            energy=energy,
            flags=roof.flags,
        )

    def release(self) -> None:
        """Drop every buffer this evaluation holds."""
        self.path.release()
