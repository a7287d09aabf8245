"""Clocks in ``sweep compare``: a warning when the two sides ran at SM clocks more than 10%
apart, and the comparison in clock-normalised time (SM cycles) that nvbench's compare offers.

A latency measured at a lower SM clock is longer for a reason that is not the code: a GPU
held by its power limit or temperature, or clocks locked by ``nvidia-smi -lgc`` on one side.
The clock of a trace is the mean of the SM clocks NVML read between its timed batches
(``clocks.sm_clock_mhz_mean``), else the mean of the readings before and after the
solution's timed calls (traces written before the mean was recorded). In cycles, a latency
is ``latency_ms * sm_clock_mhz`` thousands of cycles: the same code at another clock takes
about the same number of cycles while it is compute bound (memory-bound code does not
scale with the SM clock, so cycles over-correct it: the note says so).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

from sweep.store.comparison._compare_rows import TraceRow

__all__ = ["CLOCK_GAP", "clock_gap_note", "in_cycles"]

#: Two sides whose SM clocks differ by more than this fraction draw the warning.
CLOCK_GAP = 0.10


def in_cycles(rows: Sequence[TraceRow]) -> tuple[list[TraceRow], int]:
    """``rows`` with latencies and samples in thousands of SM cycles (``latency_ms * MHz``);
    rows without a clock are left out, and counted."""
    kept = [
        dataclasses.replace(r, latency_ms=r.latency_ms * r.sm_clock_mhz, scale=r.sm_clock_mhz)
        if r.latency_ms is not None
        else dataclasses.replace(r, scale=r.sm_clock_mhz)
        for r in rows
        if r.sm_clock_mhz is not None and r.sm_clock_mhz > 0
    ]
    return kept, len(rows) - len(kept)


def clock_gap_note(pairs: Sequence[tuple[str, float | None, float | None]]) -> str | None:
    """The warning for tasks (``(label, clock A, clock B)``) whose sides' SM clocks differ by
    more than :data:`CLOCK_GAP` of the higher; ``None`` when none do."""
    apart = [
        (label, a, b)
        for label, a, b in pairs
        if a is not None and b is not None and max(a, b) > 0 and abs(a - b) > CLOCK_GAP * max(a, b)
    ]
    if not apart:
        return None
    label, a, b = apart[0]
    med_a = statistics.median(x[1] for x in apart)
    med_b = statistics.median(x[2] for x in apart)
    return (
        f"{len(apart)} of {len(pairs)} tasks ran at SM clocks more than {CLOCK_GAP:.0%} apart (median "
        f"{med_a:.0f} MHz on A, {med_b:.0f} MHz on B; e.g. {label}: {a:.0f} against {b:.0f} MHz): their "
        "latency ratios mix the clocks with the code. --cycles compares clock-normalised time (SM "
        "cycles), which suits compute-bound kernels (memory-bound ones do not scale with the SM clock)"
    )
