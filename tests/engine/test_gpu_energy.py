"""On a CUDA GPU: the clocks every trace records, and energy per call with evaluation.energy
(figures when nvidia-ml-py and the counter are there, else the reason)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

VADD = "import torch\n\ndef run(x, y):\n    return x + y\n"


def test_clocks_of_the_timed_samples_are_recorded(kit, vadd, vadd_wl) -> None:
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", VADD), vadd_wl, device="cuda"))
    c = ev.clocks
    assert c is not None and c.sm_clock_mhz_mean is not None and c.sm_clock_mhz_min is not None
    assert c.sm_clock_mhz_min <= c.sm_clock_mhz_mean <= (c.sm_clock_mhz_max or 10**6)
    assert c.mem_clock_mhz_mean is not None and c.mem_clock_mhz_min is not None
    assert c.power_limit_w is not None and c.power_limit_w > 0
    assert c.temperature_c_start is not None and c.clocks_locked is not None


def test_energy_per_call_or_the_reason(kit, vadd, vadd_wl) -> None:
    settings = kit.fast.model_copy(update={"energy": True})
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", VADD), vadd_wl, device="cuda", settings=settings))
    energy = ev.energy
    assert energy is not None
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert energy.reference is None and "nvidia-ml-py" in (energy.problem or "")
        assert "energy not measured" in ev.log
        return
    for side in (energy.reference, energy.solution):
        assert side is not None and side.window_s is not None and side.window_s >= 1.0, ev.log
        assert side.mean_power_w and side.mean_power_w > 0 and side.idle_power_w and side.idle_power_w > 0
        assert side.calls and side.mean_sm_clock_mhz and side.batching in ("cudagraph", "eager")
        # A small call may cost too little to tell from idle: then the problem says so.
        assert side.joules_per_call is not None or "idle power" in (side.problem or ""), ev.log
    assert "energy: solution" in ev.log
