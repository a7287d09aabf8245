"""The device an evaluation runs on: resolving it, naming it, its memory budget and its health."""

from __future__ import annotations

import os
import platform
from importlib import metadata

import torch

from sweep.engine.timing._nvml import Nvml
from sweep.errors import EngineError
from sweep.schema import Environment
from sweep.schema.hardware import CPU, record_name

__all__ = ["cuda_problem", "device_name", "environment", "memory_budget", "nvml_for", "resolve_device"]

_BUDGET_FRACTION = 0.8


def resolve_device(device: str | None) -> torch.device:
    """``None`` means ``"cuda"`` when a GPU is visible, else ``"cpu"``.

    Raises:
        EngineError: The device string is not ``cpu``/``cuda[:N]``, or CUDA is asked for
            where none is available.
    """
    text = device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(text)
    except RuntimeError:
        raise EngineError(f"unknown device {text!r} (use 'cpu' or 'cuda' / 'cuda:N')") from None
    if dev.type not in ("cpu", "cuda"):
        raise EngineError(f"unsupported device {text!r} (use 'cpu' or 'cuda' / 'cuda:N')")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise EngineError(
                "device 'cuda' was asked for, but torch sees no CUDA GPU here (use --device cpu)"
            )
        dev = torch.device("cuda", dev.index if dev.index is not None else torch.cuda.current_device())
    return dev


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def device_name(device: torch.device) -> str:
    """The raw device name ("NVIDIA H100 80GB HBM3", or the CPU model)."""
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return _cpu_model()


def nvml_for(device: torch.device) -> Nvml:
    """An NVML handle for a CUDA device (inert on CPU or without NVML)."""
    if device.type != "cuda":
        return Nvml(enabled=False)
    props = torch.cuda.get_device_properties(device)
    uuid = str(getattr(props, "uuid", "") or "") or None
    bus = None
    ids = [getattr(props, a, None) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if all(isinstance(i, int) for i in ids):
        bus = f"{ids[0]:08x}:{ids[1]:02x}:{ids[2]:02x}.0"
    return Nvml(pci_bus_id=bus, uuid=uuid, index=device.index or 0)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment(device: torch.device, nvml: Nvml) -> Environment:
    """The ``environment`` record: normalized hardware name, raw name, library versions."""
    raw = device_name(device)
    libs: dict[str, str] = {"python": platform.python_version(), "torch": str(torch.__version__)}
    # The compilers of solutions, when installed (tvm-ffi and tilelang are optional extras).
    for lib, dist in (("triton", "triton"), ("tvm_ffi", "apache-tvm-ffi"), ("tilelang", "tilelang")):
        version = _version(dist)
        if version:
            libs[lib] = version
    if device.type == "cuda":
        if torch.version.cuda:
            libs["cuda"] = str(torch.version.cuda)
        driver = nvml.driver_version()
        if driver:
            libs["driver"] = driver
    hardware = record_name(raw) if device.type == "cuda" else CPU
    return Environment(hardware=hardware, libs=libs, device_name=raw)


def _mem_available() -> int:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def memory_budget(setting_gb: float | None, device: torch.device) -> tuple[int, str]:
    """Bytes one task may allocate, and where that number came from (for messages)."""
    if setting_gb is not None:
        return int(setting_gb * (1 << 30)), f"settings.memory_budget_gb = {setting_gb:g}"
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        # Blocks torch's caching allocator holds but does not use are free to this task too.
        idle = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        avail = int(free) + max(int(idle), 0)
        return int(_BUDGET_FRACTION * avail), f"80% of the GPU's free memory ({avail / (1 << 30):.2f} GiB)"
    avail = _mem_available()
    return int(_BUDGET_FRACTION * avail), f"80% of available RAM ({avail / (1 << 30):.2f} GiB)"


def cuda_problem(device: str) -> str | None:
    """Why this process's CUDA context on ``device`` is unusable, or ``None`` when a small
    computation there still gives the right answer (a kernel fault can surface only at
    the next synchronisation)."""
    try:
        torch.cuda.synchronize()
        probe = torch.ones(4, device=device)
        if float(probe.sum().item()) != 4.0:
            return "CUDA health probe returned a wrong value"
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - any failure means the context is gone
        return f"CUDA health probe failed: {e}"
    return None
