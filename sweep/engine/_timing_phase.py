"""The timing phase of one evaluation: the reference, then the solution, with one timer.

1. the slots are refilled with input sets never seen before (``CallPath.prepare_timing``);
   before every call from here on (outside the timed window) the inputs drawn at random
   get new values and those a callee writes are restored (``CallPath.vary``, ``_fresh.py``);
2. warm-up: the reference, then the solution, each for ``warmup_ms``;
3. the timer (``_timing.choose_timer``): ``host`` on a CPU; on a GPU ``settings.timer``, where
   ``auto`` means graphs when the shorter of the two calls is short by the warm-up. Both are
   timed with the same timer, so the speedup compares like with like; when a capture fails,
   or CUPTI cannot time them (``cupti`` not importable, CUPTI not initialised, nothing
   recorded), both are timed with events and the log says why. ``cupti`` asked for off a GPU
   says so in the log too (the host clock times both);
4. the reference is timed, then right after it the solution (its output buffers poisoned
   first), NVML read between batches (``_stopping.ClockWatch``);
5. a random sample of the solution's timed calls, and the last one on each slot, are checked
   against the reference on their own inputs, so a kernel that serves stale results (cached
   by input address, by call count or by content) fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

from sweep.engine._callpath import CallPath
from sweep.engine._cupti_timer import CuptiUnavailable, cupti_problem
from sweep.engine._fresh import CheckSchedule, Freshener, Rechecks
from sweep.engine._global_state import pinned_flags
from sweep.engine._graph_timer import CaptureFailed
from sweep.engine._nvml import ClockReading, Nvml
from sweep.engine._outcome import Stop, traceback_text
from sweep.engine._run_state import RunState
from sweep.engine._stopping import ClockWatch
from sweep.engine._timing import WarmUp, choose_timer, flush_bytes, time_calls, warm_up
from sweep.schema import Clocks, Status, TimingStats

__all__ = ["TimingPhase", "timing_words"]

_T = TypeVar("_T")
#: The solution's stats, the reference's, and the last result on each input set.
_Measured = tuple[TimingStats, TimingStats, list[object]]


def timing_words(stats: TimingStats) -> str:
    """How a latency was measured, for the summary line: ``median of 412, cudagraph, rel.
    error 0.21%`` (and the target when a GPU timer missed it)."""
    words = f"median of {stats.iterations}, {stats.timer or stats.clock}"
    if stats.rel_error is not None:
        words += f", rel. error {stats.rel_error:.2%}"
        if stats.target_met is False and stats.timer != "host" and stats.target_rel_error:
            words += f" > target {stats.target_rel_error:.2%}"
    if stats.discarded:
        words += f", {stats.discarded} throttled samples discarded"
    return words


def _cache_hint(stop: Stop) -> Stop:
    """A failed check of a timed call, with what it suggests when the trials passed."""
    if stop.status is Status.INCORRECT_NUMERICAL:
        stop.message += (
            "; the outputs of timed calls differ from the reference on their own inputs although "
            "the correctness trials passed: the solution may reuse results across calls (cached "
            "by input address, by call count or by input content)"
        )
    return stop


class TimingPhase:
    """The timing phase of ``run`` over its call ``path`` (see the module's docstring)."""

    def __init__(self, run: RunState, path: CallPath, nvml: Nvml) -> None:
        self.run = run
        self.path = path
        self.nvml = nvml
        self.sets = run.settings.input_sets
        self.flush = self._flush_buffer()
        on_gpu = run.device.type == "cuda" and nvml.available
        self.watch = ClockWatch(nvml.read if on_gpu else None, nvml.max_sm_clock() if on_gpu else None)
        self.timing_who = "reference"
        self.readings: tuple[ClockReading, ClockReading] = (ClockReading(), ClockReading())
        self.rechecks: Rechecks | None = None
        self.shadow: Rechecks | None = None
        self.fresh: dict[str, Freshener] = {}
        self.checked = 0  # timed calls of the solution checked again

    def _flush_buffer(self) -> torch.Tensor | None:
        run = self.run
        if run.device.type != "cuda":
            return None
        key = str(run.device)
        buf = run.cache.flush_buffers.get(key)
        if buf is None:
            buf = torch.empty(flush_bytes(run.device), dtype=torch.int8, device=run.device)
            run.cache.flush_buffers[key] = buf
        return buf

    # ---- failures: the reference's are RUNTIME_ERROR, the solution's get their status ----

    def _reference(self, work: Callable[[], _T]) -> _T:
        try:
            with pinned_flags(self.run.flags), torch.no_grad():
                return work()
        except (CaptureFailed, CuptiUnavailable):
            raise
        except Exception as e:  # noqa: BLE001 - any failure of the reference is reported
            self.run.note_sticky(e)
            raise Stop(
                Status.RUNTIME_ERROR,
                f"the reference raised {type(e).__name__} while timed: {e}",
                traceback_text(e),
            ) from None

    def _solution(self, work: Callable[[], _T]) -> _T:
        try:
            with torch.no_grad():
                out = work()
            self.run.sync()
        except (CaptureFailed, CuptiUnavailable, Stop):
            raise  # Stop: a check of a timed call failed, with its own status
        except Exception as e:  # noqa: BLE001 - any failure of the kernel is a status
            raise self.run.solution_failed(e, "while timed") from None
        return out

    # ---- the phase -------------------------------------------------------------------------

    def _prep(self, side: str) -> Callable[[int], None]:
        """Before a call of ``side`` on slot ``k``: new values from that side's generator."""
        fresh, path = self.fresh[side], self.path

        def prep(k: int) -> None:
            path.vary(k, fresh)

        return prep

    def _restore_all(self, prep: Callable[[int], None] | None) -> None:
        if prep is not None:
            for j in range(self.sets):
                prep(j)

    def run_phase(self) -> tuple[TimingStats, TimingStats, Clocks | None]:
        """Time the reference, then right after it the solution, on the same fresh input sets
        (new values before every call); check a random sample of the solution's timed calls
        and the last one on each set; return the solution's stats, the reference's, the
        clocks."""
        run, path, sets, settings = self.run, self.path, self.sets, self.run.settings
        first = settings.trials  # timing sets are never the ones the trials used
        path.prepare_timing(first, sets)
        if not path.varied():
            run.notes.append(
                "note: no input of this workload is drawn at random free of constraints, so timed "
                "calls repeat the values of their input set: a kernel that caches its results by "
                "input content is not caught here"
            )
        # One generator per side: how many calls the reference's warm-up makes depends on
        # time, and must not shift the values the solution's k-th call sees.
        self.fresh = {side: Freshener(run.device, run.seed, side) for side in ("reference", "solution")}
        prep = self._prep("reference")
        prep_sol = self._prep("solution")

        self.rechecks = Rechecks(CheckSchedule(run.seed), path.snapshot, self._check, first)
        # The reference takes the same copies at the same calls, unchecked (``Rechecks``).
        self.shadow = Rechecks(CheckSchedule(run.seed), path.snapshot, None, first)
        ref_warm = self._reference(
            lambda: warm_up(path.call_reference, sets, settings, run.device, self.flush, prep)
        )
        self._restore_all(prep_sol)
        sol_warm = self._solution(
            lambda: warm_up(path.call_solution, sets, settings, run.device, self.flush, prep_sol)
        )
        self._restore_all(prep)
        timer = choose_timer(settings.timer, run.device, min(ref_warm.call_ms, sol_warm.call_ms))
        if settings.timer == "cupti" and timer == "host":
            run.notes.append(
                f"note: timer cupti: CUPTI times GPU work and the device is {run.device}; the "
                "reference and the solution are timed with the host clock instead"
            )
        # why the timer asked for cannot time this pair: both go to events
        fallback = cupti_problem() if timer == "cupti" else None
        measured: _Measured | None = None
        if fallback is None:
            measured, fallback = self._first_try(timer, ref_warm, sol_warm)
        if measured is None or fallback is not None:
            run.notes.append(
                f"note: timer {settings.timer}: {fallback}; the reference and the solution are "
                "timed with CUDA events instead"
            )
            self._restore_all(prep)
            measured = self._measure("events", ref_warm, sol_warm)
        stats, ref_stats, last = measured
        try:
            for j in range(sets):
                self.rechecks.verify(path.snapshot(j, last[j]), f"last timed call on input set {first + j}")
        except Stop as stop:
            raise _cache_hint(stop) from None
        self.checked = self.rechecks.count
        return stats, ref_stats, self._clocks()

    def _first_try(
        self, timer: str, ref_warm: WarmUp, sol_warm: WarmUp
    ) -> tuple[_Measured | None, str | None]:
        """Time both with ``timer``: what was measured, and why it cannot be used (``None``
        when it can)."""
        try:
            measured = self._measure(timer, ref_warm, sol_warm)
        except CaptureFailed as failed:
            self.run.cache.retire = f"a CUDA-graph capture failed in this process ({failed})"
            return None, f"CUDA graphs cannot time the {self.timing_who} ({failed})"
        except CuptiUnavailable as failed:
            return None, f"{failed}, timing the {self.timing_who}"
        stats, ref_stats, _ = measured
        if timer in ("cudagraph", "cupti") and min(stats.p50_ms, ref_stats.p50_ms) <= 0:
            # A call that launches nothing (an empty tensor), or too little for the two
            # replays to differ, reads 0: no speedup can be told from it.
            who = "solution" if stats.p50_ms <= 0 else "reference"
            if timer == "cupti":
                return (
                    measured,
                    f"the {who} launched no kernel, copy or set on the GPU while timed (median 0)",
                )
            return measured, f"the {who} is too short for CUDA graphs to resolve (median 0)"
        return measured, None

    def _check(self, snap: object, where: str) -> None:
        """Check a timed call. A passing check leaves the trace's error figures as the trials
        made them: how many timed calls are checked depends on timing, and the figures must
        be the same for the same seed."""
        stats = self.run.stats
        before = (stats.max_abs, stats.max_rel)
        self.path.check_snapshot(snap, where)
        stats.max_abs, stats.max_rel = before

    def _time(
        self,
        call: Callable[[int], object],
        timer: str,
        warm: WarmUp,
        side: str,
        rechecks: Rechecks | None,
    ) -> tuple[TimingStats, list[object]]:
        """One side of the pair timed: the same timer, flush, fresh values and clock watch for
        both, each with its own warm-up and checks (the reference's are the shadow's)."""
        run = self.run
        return time_calls(
            call,
            self.sets,
            run.settings,
            run.device,
            self.flush,
            self._prep(side),
            timer=timer,
            warm=warm,
            watch=self.watch,
            rechecks=rechecks,
            fresh=self.fresh[side],
        )

    def _measure(
        self,
        timer: str,
        ref_warm: WarmUp,
        sol_warm: WarmUp,
    ) -> _Measured:
        run, path, sets = self.run, self.path, self.sets
        self.timing_who = "reference"
        ref_stats, _ = self._reference(
            lambda: self._time(path.call_reference, timer, ref_warm, "reference", self.shadow)
        )
        self._restore_all(self._prep("solution"))
        path.reset_outputs(sets)
        run.sync()
        self.timing_who = "solution"
        before = self.nvml.read()
        try:
            stats, last = self._solution(
                lambda: self._time(path.call_solution, timer, sol_warm, "solution", self.rechecks)
            )
        except Stop as stop:
            raise _cache_hint(stop) from None
        self.readings = (before, self.nvml.read())
        return stats, ref_stats, last

    def _clocks(self) -> Clocks | None:
        if not self.nvml.available:
            return None
        before, after = self.readings
        for reading in self.readings:
            self.watch.note(reading)
        return Clocks(
            sm_clock_mhz_before=before.sm_clock_mhz,
            sm_clock_mhz_after=after.sm_clock_mhz,
            sm_clock_mhz_max=self.nvml.max_sm_clock(),
            throttle_reasons_before=before.reasons,
            throttle_reasons_after=after.reasons,
            sm_clock_mhz_min=self.watch.min_mhz,
            throttled=self.watch.throttled,
        )
