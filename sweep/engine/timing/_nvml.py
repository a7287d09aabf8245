"""SM clocks and throttle reasons through NVML, loaded with ctypes (pynvml is optional).

Everything here degrades to ``None`` / empty lists when NVML is missing (CPU hosts,
containers without the driver library): clocks are context, never a reason to fail.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

__all__ = ["THROTTLE_REASONS", "ClockReading", "Conditions", "Nvml"]

_NVML_CLOCK_SM = 1
_NVML_CLOCK_MEM = 2
_NVML_TEMPERATURE_GPU = 0
#: The throttle bit set while an application-clocks (or locked-clocks) setting holds the clocks.
_APPLICATIONS_CLOCKS_SETTING = 0x2
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
    mem_clock_mhz: int | None = None


@dataclass(frozen=True)
class Conditions:
    """What holds the GPU where it is, read once at the start of timing (read, never set)."""

    power_limit_w: float | None = None
    temperature_c: int | None = None
    clocks_locked: bool | None = None


class Nvml:
    """A handle on one GPU through ``libnvidia-ml.so.1``; inert when unavailable."""

    def __init__(
        self, pci_bus_id: str | None = None, uuid: str | None = None, index: int = 0, *, enabled: bool = True
    ) -> None:
        self._lib: ctypes.CDLL | None = None
        self._handle = ctypes.c_void_p()
        #: How the device was named, for another binding to open the same one (``_energy_meter``).
        self.ident: tuple[str | None, str | None, int] | None = (pci_bus_id, uuid, index) if enabled else None
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

    def _uint(self, getter: str, *args: int) -> int | None:
        """``getter(handle, *args, &value)``; ``None`` when missing or when it fails."""
        if self._lib is None:
            return None
        value = ctypes.c_uint()
        fn = getattr(self._lib, getter, None)
        if fn is None or fn(self._handle, *(ctypes.c_int(a) for a in args), ctypes.byref(value)) != 0:
            return None
        return int(value.value)

    def _clock(self, getter: str, kind: int = _NVML_CLOCK_SM) -> int | None:
        return self._uint(getter, kind)

    def _reason_mask(self) -> int | None:
        if self._lib is None:
            return None
        mask = ctypes.c_ulonglong()
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(self._lib, name, None)
            if fn is not None and fn(self._handle, ctypes.byref(mask)) == 0:
                return int(mask.value)
        return None

    def read(self) -> ClockReading:
        """The current SM and memory clocks and throttle reasons (the idle bit is left out)."""
        if self._lib is None:
            return ClockReading()
        mask = self._reason_mask()
        reasons = [n for bit, n in THROTTLE_REASONS.items() if mask and mask & bit and bit != 0x1]
        return ClockReading(
            sm_clock_mhz=self._clock("nvmlDeviceGetClockInfo"),
            reasons=reasons,
            mem_clock_mhz=self._clock("nvmlDeviceGetClockInfo", _NVML_CLOCK_MEM),
        )

    def conditions(self) -> Conditions:
        """The enforced power limit, the GPU's temperature, and whether its clocks are held:
        application clocks away from their defaults, or the application-clocks throttle bit
        set (``nvidia-smi -ac`` / ``-lgc``). Each ``None`` where NVML cannot tell."""
        if self._lib is None:
            return Conditions()
        limit_mw = self._uint("nvmlDeviceGetEnforcedPowerLimit")
        if limit_mw is None:
            limit_mw = self._uint("nvmlDeviceGetPowerManagementLimit")
        app = self._clock("nvmlDeviceGetApplicationsClock")
        default = self._clock("nvmlDeviceGetDefaultApplicationsClock")
        mask = self._reason_mask()
        locked: bool | None = None
        if mask is not None or (app is not None and default is not None):
            locked = bool(mask and mask & _APPLICATIONS_CLOCKS_SETTING) or (
                app is not None and default is not None and app != default
            )
        return Conditions(
            power_limit_w=limit_mw / 1000 if limit_mw is not None else None,
            temperature_c=self._uint("nvmlDeviceGetTemperature", _NVML_TEMPERATURE_GPU),
            clocks_locked=locked,
        )

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
