"""Extension records: the energy of one call, read from the GPU's cumulative energy counter.

``Evaluation.energy`` is set when ``evaluation.energy`` is on (absent otherwise, and in
upstream FlashInfer-Bench files). Each side (the reference, the solution) is measured over
batched calls lasting at least a second, with the idle power measured just before subtracted
(``docs/energy.md`` says how and why). Where no side could be measured (a CPU, a GPU or driver
without the counter, ``nvidia-ml-py`` missing), both sides are ``None`` and ``problem`` says
why; the trace's log says it too.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sweep.schema._base import Record
from sweep.schema.limits import NonNegInt64

__all__ = ["ENERGY_SOURCE", "Energy", "EnergySide"]

#: Where the joules come from: NVML's ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since the
#: driver loaded; Volta and newer), read through ``nvidia-ml-py``.
ENERGY_SOURCE = "nvml_total_energy"


#: A measured quantity: finite and not negative.
_Measured = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class EnergySide(Record):
    """One side's energy: what the counter read over ``calls`` calls in ``window_s`` seconds.

    ``joules_per_call`` is net of the idle power measured just before (``idle_power_w`` times
    the window, subtracted); ``None`` when that difference is not above zero (the calls cost
    less than the counter and the idle reading can tell apart: ``problem`` says so).
    ``mean_power_w`` is the board's mean power over the window, idle included;
    ``mean_sm_clock_mhz`` the mean of NVML's SM clock read between batches of the window.
    """

    joules_per_call: _Measured | None = None
    mean_power_w: _Measured | None = None
    idle_power_w: _Measured | None = None
    mean_sm_clock_mhz: _Measured | None = None
    calls: NonNegInt64 | None = None
    window_s: _Measured | None = None
    #: ``"cudagraph"`` (replays of a captured graph of calls) or ``"eager"`` (calls launched
    #: one by one: long calls, or calls a graph cannot capture).
    batching: str | None = None
    problem: str | None = None


class Energy(Record):
    """The energy of the reference's calls and the solution's, on the timing sets."""

    source: str = ENERGY_SOURCE
    reference: EnergySide | None = None
    solution: EnergySide | None = None
    #: Why nothing was measured (both sides ``None``), e.g. ``"the device is cpu"``.
    problem: str | None = None

    @property
    def energy_speedup(self) -> float | None:
        """The reference's joules per call over the solution's (above 1: the solution costs
        less energy); ``None`` when a side has no figure."""
        ref = self.reference.joules_per_call if self.reference is not None else None
        sol = self.solution.joules_per_call if self.solution is not None else None
        if ref is None or sol is None or sol <= 0:
            return None
        return ref / sol
