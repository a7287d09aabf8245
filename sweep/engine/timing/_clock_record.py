"""The clocks a result was measured at, as the trace records them (``Clocks``).

NVML is read between batches of timed samples (``_stopping.ClockWatch``), right before and
after the solution's timed calls, and once at the start of timing for the power limit, the
temperature and whether the clocks were held (``Nvml.conditions``). Nothing here sets a clock
or a power limit: kernel-sweep reads them only.
"""

from __future__ import annotations

from sweep.engine.timing._nvml import ClockReading, Conditions, Nvml
from sweep.engine.timing._stopping import ClockWatch
from sweep.schema import Clocks

__all__ = ["clocks_record"]


def _mean(values: list[int]) -> float | None:
    return sum(values) / len(values) if values else None


def clocks_record(
    nvml: Nvml, watch: ClockWatch, readings: tuple[ClockReading, ClockReading], start: Conditions
) -> Clocks | None:
    """The trace's ``clocks``: the SM clock before and after the solution's timed calls and its
    maximum, the throttle reasons then, the SM and memory clocks over both sides' timed
    batches (mean and least), whether any batch was throttled, and the conditions at the
    start; ``None`` without NVML (a CPU, a host without the driver's library)."""
    if not nvml.available:
        return None
    before, after = readings
    for reading in readings:
        watch.note(reading)
    return Clocks(
        sm_clock_mhz_before=before.sm_clock_mhz,
        sm_clock_mhz_after=after.sm_clock_mhz,
        sm_clock_mhz_max=nvml.max_sm_clock(),
        throttle_reasons_before=before.reasons,
        throttle_reasons_after=after.reasons,
        sm_clock_mhz_min=watch.min_mhz,
        throttled=watch.throttled,
        sm_clock_mhz_mean=_mean(watch.sm_mhz),
        mem_clock_mhz_mean=_mean(watch.mem_mhz),
        mem_clock_mhz_min=min(watch.mem_mhz) if watch.mem_mhz else None,
        clocks_locked=start.clocks_locked,
        power_limit_w=start.power_limit_w,
        temperature_c_start=start.temperature_c,
    )
