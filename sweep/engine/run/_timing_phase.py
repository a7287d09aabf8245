"""The timing phase of one evaluation: the reference, then the solution, with one timer.

The reference's side runs before the solution's module is imported (:meth:`TimingPhase.time_reference`,
called by the reference phase), the solution's after its trials (:meth:`TimingPhase.time_solution`):

1. the slots are filled with input sets never seen before (``CallPath.prepare_timing``, again
   for the solution: its trials used the slots); before every call from here on (outside the
   timed window) the inputs drawn at random get new values and those a callee writes are
   restored (``CallPath.vary``, ``_fresh.py``);
2. the reference's warm-up for ``warmup_ms`` picks the timer (``_timing.choose_timer``): ``host``
   on a CPU; on a GPU ``settings.timer``, where ``auto`` means graphs when the reference's call
   is short by the warm-up. Both sides are timed with that timer, so the speedup compares like
   with like; when a capture fails or CUPTI cannot time a side (``cupti`` not importable, CUPTI
   not initialised, nothing recorded), both are timed with events and the log says why (the
   reference again, after the solution's import, only when the solution's side is the one that
   failed, and only after a check that nothing it uses was replaced). ``cupti`` asked for off a
   GPU says so in the log too (the host clock times both);
3. the persisting part of the L2 is set back to nothing before each side (``timing._l2``); one the
   solution set aside while its calls were timed is tampering;
4. the reference is timed; later, after its warm-up, the solution (its output buffers poisoned
   first), NVML read between batches (``_stopping.ClockWatch``), and between batches the
   solution may have left no thread running;
5. a random sample of the solution's timed calls, and the last one on each slot, are checked
   against the reference on their own inputs, so a kernel that serves stale results (cached
   by input address, by call count or by content) fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

from sweep.engine.guard import pinned_flags
from sweep.engine.io import Stop
from sweep.engine.run._callpath import CallPath
from sweep.engine.run._clock import mark
from sweep.engine.run._run_state import RunState
from sweep.engine.timing import (
    UNJOINED,
    CaptureFailed,
    CheckSchedule,
    ClockReading,
    ClockWatch,
    Conditions,
    CuptiUnavailable,
    Freshener,
    Nvml,
    Rechecks,
    WarmUp,
    choose_timer,
    clocks_record,
    cupti_problem,
    flush_bytes,
    persisting_l2_limit,
    reset_persisting_l2,
    stray_streams,
    time_calls,
    warm_up,
)
from sweep.schema import FLAG_TAMPERED, Clocks, Status, TimingStats

__all__ = ["TimingPhase", "timing_words"]

_T = TypeVar("_T")


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


def _stray_stop(reason: str) -> Stop:
    """The solution returned with work still running on a stream it did not join back."""
    return Stop(
        Status.RUNTIME_ERROR,
        "the solution returns with work still running on another CUDA stream, not joined back to "
        f"the calling stream ({reason}): its outputs are not ready when the call returns (a caller "
        "on that stream would read them too early), and timing on that stream would not see the "
        "work. Make the calling stream wait for it (stream.wait_stream / an event) before returning",
    )


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
        self.start = nvml.conditions() if on_gpu else Conditions()  # temperature at the start
        self.timing_who = "reference"
        self.readings: tuple[ClockReading, ClockReading] = (ClockReading(), ClockReading())
        self.rechecks: Rechecks | None = None
        self.shadow: Rechecks | None = None
        self.fresh: dict[str, Freshener] = {}
        self.checked = 0  # timed calls of the solution checked again
        self.first = run.settings.trials  # timing sets are never the ones the trials used
        self.timer = "events"  # the timer both sides run with, once the reference's is known
        self.ref_warm: WarmUp | None = None
        self.ref_stats: TimingStats | None = None

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
            raise self.run.reference_failed(
                e, f"the reference raised {type(e).__name__} while timed: {e}"
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

    # ---- the phase: the reference's side before the solution's import, then the solution's ----

    def time_reference(self) -> None:
        """Time the reference on the timing sets, before the solution's module is imported: its
        warm-up picks the timer (``auto``: graphs when its call is short), and the timer it ran
        with is the one the solution is timed with. A timer that cannot time the reference
        falls back to events here, with a note."""
        run, path, sets, settings = self.run, self.path, self.sets, self.run.settings
        path.prepare_timing(self.first, sets)
        if not path.varied():
            run.notes.append(
                "note: no input of this workload is drawn at random free of constraints, so timed "
                "calls repeat the values of their input set: a kernel that caches its results by "
                "input content is not caught here"
            )
        # One generator per side: how many calls the reference's warm-up makes depends on
        # time, and must not shift the values the solution's k-th call sees.
        self.fresh = {side: Freshener(run.device, run.fresh_seed, side) for side in ("reference", "solution")}
        prep = self._prep("reference")
        # The reference takes the same copies at the same calls as the solution's checks, unchecked.
        self.shadow = Rechecks(CheckSchedule(run.fresh_seed), path.snapshot, None, self.first)
        self._reset_l2()
        mark("reference timing sets")
        self.ref_warm = self._reference(
            lambda: warm_up(path.call_reference, sets, settings, run.device, self.flush, prep)
        )
        mark("reference warm-up")
        timer = choose_timer(settings.timer, run.device, self.ref_warm.call_ms)
        if settings.timer == "cupti" and timer == "host":
            run.notes.append(
                f"note: timer cupti: CUPTI times GPU work and the device is {run.device}; the "
                "reference and the solution are timed with the host clock instead"
            )
        fallback = cupti_problem() if timer == "cupti" else None
        if fallback is None:
            fallback = self._try_reference(timer)
        if fallback is not None:
            self._fall_back(fallback)
            self._restore_all(prep)
            self.ref_stats = self._time_reference("events")
        else:
            self.timer = timer

    def time_solution(self) -> tuple[TimingStats, TimingStats, Clocks | None]:
        """Time the solution on the timing sets with the reference's timer (new values before
        every call); check a random sample of its timed calls and the last one on each set;
        return its stats, the reference's, the clocks. Where the solution cannot be timed with
        that timer, both are timed with events, the reference again after a check that
        nothing it uses was replaced."""
        run, path, sets, settings = self.run, self.path, self.sets, self.run.settings
        assert self.ref_stats is not None and self.ref_warm is not None
        path.prepare_timing(self.first, sets)  # the trials used the slots since
        prep_sol = self._prep("solution")
        self.rechecks = Rechecks(CheckSchedule(run.fresh_seed), path.snapshot, self._check, self.first)
        self._restore_all(prep_sol)
        mark("solution timing sets")
        sol_warm = self._solution(
            lambda: warm_up(path.call_solution, sets, settings, run.device, self.flush, prep_sol)
        )
        mark("solution warm-up")
        self.run.check_threads("after the solution's warm-up")
        if self.timer == "events":
            self._no_stray_streams()
        self._reset_l2()
        fallback: str | None = None
        try:
            stats, last = self._time_solution(self.timer, sol_warm)
            if self.timer in ("cudagraph", "cupti") and stats.p50_ms <= 0:
                # What the timed calls left must be right before they are timed again: a call
                # that does nothing while it is captured reads 0 here, and served stale results.
                self._verify_last(last)
                fallback = self._zero_median("solution")
        except CaptureFailed as failed:
            if UNJOINED in str(failed):
                raise _stray_stop(str(failed)) from None
            self.run.cache.retire = f"a CUDA-graph capture failed in this process ({failed})"
            fallback = f"CUDA graphs cannot time the solution ({failed})"
        except CuptiUnavailable as failed:
            fallback = f"{failed}, timing the solution"
        if fallback is not None:
            self._fall_back(fallback)
            self._no_stray_streams()
            run.check_integrity("before the reference is timed again, with events")
            self._restore_all(self._prep("reference"))
            self.ref_stats = self._time_reference("events")
            stats, last = self._time_solution("events", sol_warm)
        self._check_l2()
        self._verify_last(last)
        mark("checks of the last timed calls")
        self.checked = self.rechecks.count
        return stats, self.ref_stats, self._clocks()

    def _no_stray_streams(self) -> None:
        """Before the events timer: one call of the solution captured (and thrown away), which
        the driver refuses when the call leaves work running on another stream. Events on the
        calling stream would close its window before that work ends."""
        if self.run.device.type != "cuda":
            return
        path = self.path
        self._prep("solution")(0)
        reason = self._solution(lambda: stray_streams(lambda: path.call_solution(0)))
        if reason is not None:
            raise _stray_stop(reason)

    def _verify_last(self, last: list[object]) -> None:
        """Check the last timed call on each input set against the reference."""
        assert self.rechecks is not None
        try:
            for j in range(self.sets):
                where = f"last timed call on input set {self.first + j}"
                self.rechecks.verify(self.path.snapshot(j, last[j]), where)
        except Stop as stop:
            raise _cache_hint(stop) from None

    def _zero_median(self, who: str) -> str:
        """Why a median of 0 cannot be used: a call that launches nothing (an empty tensor), or
        too little for two replays to differ, reads 0 and no speedup can be told from it."""
        if self.timer == "cupti":
            return f"the {who} launched no kernel, copy or set on the GPU while timed (median 0)"
        return f"the {who} is too short for CUDA graphs to resolve (median 0)"

    def _fall_back(self, why: str) -> None:
        self.timer = "events"
        self.run.notes.append(
            f"note: timer {self.run.settings.timer}: {why}; the reference and the solution are "
            "timed with CUDA events instead"
        )

    def _try_reference(self, timer: str) -> str | None:
        """Time the reference with ``timer``; why that cannot be used (``None``: it can)."""
        try:
            self.ref_stats = self._time_reference(timer)
        except CaptureFailed as failed:
            self.run.cache.retire = f"a CUDA-graph capture failed in this process ({failed})"
            return f"CUDA graphs cannot time the reference ({failed})"
        except CuptiUnavailable as failed:
            return f"{failed}, timing the reference"
        if timer in ("cudagraph", "cupti") and self.ref_stats.p50_ms <= 0:
            self.timer = timer
            return self._zero_median("reference")
        return None

    # ---- the persisting L2 -----------------------------------------------------------------

    def _reset_l2(self) -> None:
        """No persisting L2 while a side is timed; a set-aside found (the solution's, after its
        import or trials) is reset and said."""
        found = reset_persisting_l2(self.run.device)
        if found and self.run.solution_loaded:
            self.run.notes.append(
                f"note: the solution set aside {found} bytes of L2 for persisting accesses; set back "
                "to 0 before its timed calls (data kept in L2 across calls would beat the flush)"
            )

    def _check_l2(self) -> None:
        found = persisting_l2_limit(self.run.device)
        if found:
            raise Stop(
                Status.RUNTIME_ERROR,
                f"TAMPERED: the solution set aside {found} bytes of L2 for persisting accesses while "
                "its calls were timed (its data would stay in L2 across the flush between calls). "
                "A result is never PASSED after that",
                flags=(FLAG_TAMPERED,),
            )

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
            between=self._between if side == "solution" else None,
        )

    def _between(self) -> None:
        self.run.check_threads("between batches of its timed calls")

    def _time_reference(self, timer: str) -> TimingStats:
        warm, shadow = self.ref_warm, self.shadow
        assert warm is not None and shadow is not None
        self.timing_who = "reference"
        mark("reference timer choice")
        stats, _ = self._reference(
            lambda: self._time(self.path.call_reference, timer, warm, "reference", shadow)
        )
        mark("reference timed")
        return stats

    def _time_solution(self, timer: str, warm: WarmUp) -> tuple[TimingStats, list[object]]:
        run, sets = self.run, self.sets
        self._restore_all(self._prep("solution"))
        self.path.reset_outputs(sets)
        run.sync()
        self.timing_who = "solution"
        before = self.nvml.read()
        mark("solution checks before its timed calls")
        try:
            stats, last = self._solution(
                lambda: self._time(self.path.call_solution, timer, warm, "solution", self.rechecks)
            )
        except Stop as stop:
            raise _cache_hint(stop) from None
        mark("solution timed")
        self.readings = (before, self.nvml.read())
        return stats, last

    def _clocks(self) -> Clocks | None:
        return clocks_record(self.nvml, self.watch, self.readings, self.start)
