"""The clocks a trace records: means and least of SM and memory clocks over timed batches, and
the conditions at the start (read, never set)."""

from __future__ import annotations

import ctypes

from sweep.engine.timing._clock_record import clocks_record
from sweep.engine.timing._nvml import ClockReading, Conditions, Nvml
from sweep.engine.timing._stopping import ClockWatch
from sweep.schema import Clocks


class FakeNvml:
    available = True

    def max_sm_clock(self) -> int:
        return 1980


def test_the_clocks_of_the_timed_batches_and_the_start() -> None:
    readings = iter(
        [
            ClockReading(1980, [], 2619),
            ClockReading(1755, ["sw_power_cap"], 2619),
            ClockReading(1410, [], 1593),
        ]
    )
    watch = ClockWatch(lambda: next(readings), 1980)
    assert [watch.ok() for _ in range(3)] == [True, True, False]
    around = (ClockReading(1980, [], 2619), ClockReading(1800, [], 2619))
    start = Conditions(power_limit_w=700.0, temperature_c=41, clocks_locked=False)
    clocks = clocks_record(FakeNvml(), watch, around, start)  # type: ignore[arg-type]
    assert clocks is not None
    assert clocks.sm_clock_mhz_mean == (1980 + 1755 + 1410 + 1980 + 1800) / 5
    assert clocks.sm_clock_mhz_min == 1410 and clocks.mem_clock_mhz_min == 1593
    assert clocks.mem_clock_mhz_mean == (2619 * 4 + 1593) / 5
    assert (clocks.power_limit_w, clocks.temperature_c_start, clocks.clocks_locked) == (700.0, 41, False)
    assert clocks.throttled is True
    assert Clocks.model_validate_json(clocks.to_json()) == clocks


def test_no_nvml_no_clocks() -> None:
    inert = Nvml(enabled=False)
    assert not inert.available and inert.ident is None
    assert inert.conditions() == Conditions() and inert.read() == ClockReading()
    assert (
        clocks_record(inert, ClockWatch(None, None), (ClockReading(), ClockReading()), Conditions()) is None
    )


class _Lib:
    """libnvidia-ml's functions this test answers (out-parameters written through ctypes)."""

    def __init__(self, app: int, default: int, mask: int) -> None:
        self.values = {"app": app, "default": default}
        self.mask = mask

    @staticmethod
    def _put(ref: object, value: int) -> int:
        ctypes.cast(ref, ctypes.POINTER(ctypes.c_uint)).contents.value = value
        return 0

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: object, ref: object) -> int:
        return self._put(ref, 700_000)

    def nvmlDeviceGetTemperature(self, handle: object, kind: object, ref: object) -> int:
        return self._put(ref, 38)

    def nvmlDeviceGetApplicationsClock(self, handle: object, kind: object, ref: object) -> int:
        return self._put(ref, self.values["app"])

    def nvmlDeviceGetDefaultApplicationsClock(self, handle: object, kind: object, ref: object) -> int:
        return self._put(ref, self.values["default"])

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: object, ref: object) -> int:
        ctypes.cast(ref, ctypes.POINTER(ctypes.c_ulonglong)).contents.value = self.mask
        return 0


def _nvml(lib: _Lib) -> Nvml:
    n = Nvml(enabled=False)
    n._lib = lib  # type: ignore[assignment]
    return n


def test_conditions_power_limit_temperature_and_locked_clocks() -> None:
    free = _nvml(_Lib(1980, 1980, 0)).conditions()
    assert free == Conditions(power_limit_w=700.0, temperature_c=38, clocks_locked=False)
    assert _nvml(_Lib(1410, 1980, 0)).conditions().clocks_locked is True  # nvidia-smi -ac
    assert _nvml(_Lib(1980, 1980, 0x2)).conditions().clocks_locked is True  # held by the setting


def test_older_traces_without_the_new_clock_fields_read_back() -> None:
    old = {"sm_clock_mhz_before": 1980, "sm_clock_mhz_after": 1980, "throttled": False}
    clocks = Clocks.model_validate(old)
    assert clocks.sm_clock_mhz_mean is None and clocks.clocks_locked is None
    assert clocks.to_json_obj() == old
