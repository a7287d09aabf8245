"""The GPU's cumulative energy counter, through ``nvidia-ml-py`` (``kernel-sweep[energy]``).

``nvmlDeviceGetTotalEnergyConsumption`` gives the board's energy in millijoules since the
driver was last loaded, on Volta and newer GPUs (NVML's API reference). It is read through the
``pynvml`` module of ``nvidia-ml-py``, imported inside :func:`open_meter`, so nothing here
costs an import unless ``evaluation.energy`` is on. Where the package, the driver's library,
the device or the counter is missing, :func:`open_meter` returns the reason instead of a
meter; the caller puts it in the trace's log.

The counter is an unsigned 64-bit number: a difference across its wrap-around is taken
modulo 2**64 (:func:`counter_delta`).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["COUNTER_MODULUS", "EnergyMeter", "MeterError", "NvmlMeter", "counter_delta", "open_meter"]

#: The counter is an ``unsigned long long``: it wraps at 2**64 millijoules.
COUNTER_MODULUS = 1 << 64
#: What to install when ``pynvml`` is missing.
_EXTRA_HINT = "pip install 'kernel-sweep[energy]' (the nvidia-ml-py package, module pynvml)"


class MeterError(Exception):
    """A reading of the counter failed; the message says why."""


class EnergyMeter(Protocol):
    """A cumulative energy counter in millijoules (``NvmlMeter``, or a fake in tests)."""

    def energy_mj(self) -> int:
        """The counter now; raises :class:`MeterError` when it cannot be read."""
        ...


def counter_delta(start_mj: int, end_mj: int) -> int:
    """Millijoules from ``start_mj`` to ``end_mj``, across a wrap-around of the counter."""
    return (end_mj - start_mj) % COUNTER_MODULUS


class NvmlMeter:
    """The counter of one device through a ``pynvml`` module and its device handle."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self._nvml = pynvml
        self._handle = handle

    def energy_mj(self) -> int:
        try:
            value = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        except Exception as e:  # noqa: BLE001 - NVMLError and its subclasses, whatever the binding
            raise MeterError(f"nvmlDeviceGetTotalEnergyConsumption failed: {e}") from None
        if not isinstance(value, int) or value < 0:
            raise MeterError(f"nvmlDeviceGetTotalEnergyConsumption returned {value!r}, not a count")
        return value


def _handle(pynvml: Any, pci_bus_id: str | None, uuid: str | None, index: int) -> Any:
    """The device handle by UUID, else PCI bus id, else index (as ``Nvml`` finds it)."""
    tries: list[tuple[str, object]] = []
    if uuid:
        tries += [("nvmlDeviceGetHandleByUUID", uuid), ("nvmlDeviceGetHandleByUUID", f"GPU-{uuid}")]
    if pci_bus_id:
        tries.append(("nvmlDeviceGetHandleByPciBusId", pci_bus_id))
    tries.append(("nvmlDeviceGetHandleByIndex", index))
    last = "no way to name the device"
    for name, arg in tries:
        try:
            return getattr(pynvml, name)(arg)
        except Exception as e:  # noqa: BLE001 - NVMLError: try the next way to name it
            last = f"{name}({arg!r}): {e}"
    raise MeterError(f"NVML does not find the device ({last})")


def open_meter(ident: tuple[str | None, str | None, int] | None, *, module: Any = None) -> EnergyMeter | str:
    """A meter of the device ``ident`` names (PCI bus id, UUID, index: ``Nvml.ident``), or why
    there is none: no such device (a CPU), ``pynvml`` not importable, NVML not initialised,
    the device not found, or a counter that cannot be read (GPUs older than Volta, or a
    driver that does not support it: NVML answers "Not Supported"). ``module`` stands in for
    ``pynvml`` (tests)."""
    if ident is None:
        return "NVML has no device here (the evaluation does not run on an NVIDIA GPU)"
    if module is None:
        try:
            import pynvml as module  # type: ignore[no-redef]
        except ImportError:
            return f"nvidia-ml-py is not installed: {_EXTRA_HINT}"
    try:
        module.nvmlInit()
    except Exception as e:  # noqa: BLE001 - NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return f"NVML cannot be initialised ({e})"
    try:
        meter = NvmlMeter(module, _handle(module, *ident))
        meter.energy_mj()
    except MeterError as e:
        return f"the GPU's energy counter cannot be read: {e} (it needs a Volta or newer GPU)"
    return meter
