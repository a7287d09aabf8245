"""SM clocks and throttle reasons through NVML, loaded with ctypes (pynvml is optional).

Everything here degrades to ``None`` / empty lists when NVML is missing (CPU hosts,
containers without the driver library): clocks are context, never a reason to fail.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

__all__ = ["THROTTLE_REASONS", "ClockReading", "Nvml"]

_NVML_CLOCK_SM = 1
#: NVML clock-event (throttle) reason bits and their names.
THROTTLE_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


@dataclass(frozen=True)
class ClockReading:
    """One reading of the SM clock and the active throttle reasons."""

    sm_clock_mhz: int | None = None
    reasons: list[str] = field(default_factory=list)


class Nvml:
    """A handle on one GPU through ``libnvidia-ml.so.1``; inert when unavailable."""

    def __init__(
        self, pci_bus_id: str | None = None, uuid: str | None = None, index: int = 0, *, enabled: bool = True
    ) -> None:
        self._lib: ctypes.CDLL | None = None
        self._handle = ctypes.c_void_p()
        if not enabled:
            return
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
        except (OSError, AttributeError):
            return
        ok = False
        if uuid:
            for text in (uuid, f"GPU-{uuid}"):
                if lib.nvmlDeviceGetHandleByUUID(text.encode(), ctypes.byref(self._handle)) == 0:
                    ok = True
                    break
        if not ok and pci_bus_id:
            ok = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(self._handle)) == 0
        if not ok:
            ok = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(self._handle)) == 0
        if ok:
            self._lib = lib

    @property
    def available(self) -> bool:
        """Whether NVML answered for this device."""
        return self._lib is not None

    def _clock(self, getter: str) -> int | None:
        if self._lib is None:
            return None
        value = ctypes.c_uint()
        fn = getattr(self._lib, getter, None)
        if fn is None or fn(self._handle, ctypes.c_int(_NVML_CLOCK_SM), ctypes.byref(value)) != 0:
            return None
        return int(value.value)

    def read(self) -> ClockReading:
        """The current SM clock and throttle reasons (the idle bit is left out)."""
        if self._lib is None:
            return ClockReading()
        mask = ctypes.c_ulonglong()
        reasons: list[str] = []
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(self._lib, name, None)
            if fn is not None and fn(self._handle, ctypes.byref(mask)) == 0:
                reasons = [n for bit, n in THROTTLE_REASONS.items() if mask.value & bit and bit != 0x1]
                break
        return ClockReading(sm_clock_mhz=self._clock("nvmlDeviceGetClockInfo"), reasons=reasons)

    def max_sm_clock(self) -> int | None:
        """The SM clock's maximum (MHz)."""
        return self._clock("nvmlDeviceGetMaxClockInfo")

    def driver_version(self) -> str | None:
        """The driver version string."""
        if self._lib is None:
            return None
        buf = ctypes.create_string_buffer(96)
        if self._lib.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(96)) != 0:
            return None
        return buf.value.decode()
