"""Ceilings measured on this node (``sweep calibrate``): copy bandwidth and dense GEMM rates.

What is measured, on the evaluation device:

- **copy bandwidth**: ``dst.copy_(src)`` of one large buffer; a copy reads and writes every
  byte, so GB/s = 2 x buffer bytes / time;
- **dense GEMM TFLOP/s** per dtype: ``a @ b`` of square matrices, 2 n^3 FLOPs; float16 and
  bfloat16, float32 with TF32 off (``highest`` precision) and, on a GPU, ``tf32``
  (``high`` precision: TF32 tensor cores). float8 is not measured (its GEMMs need scaled
  matmuls and per-tensor scales): its ceiling stays the datasheet's.

Sizes (:data:`GPU_SIZES`, :data:`CPU_SIZES`): on a GPU a 1 GiB copy and n = 8192 GEMMs (large
enough to reach the plateau of a datacenter GPU), 3 warm-up runs then 10 timed, by CUDA
events; on a CPU a 64 MiB copy and n = 512 GEMMs (n = 256 for float16/bfloat16, which CPUs
emulate slowly), 1 warm-up then 3 timed, by the host clock: a few seconds in all. Each
ceiling is the best run (a ceiling is what the node can reach).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import torch

from sweep.engine.guard import preserved_state
from sweep.engine.timing._envinfo import environment, nvml_for, resolve_device
from sweep.schema import Ceilings

__all__ = ["CPU_SIZES", "GPU_SIZES", "CalibrationSizes", "calibrate"]


@dataclass(frozen=True)
class CalibrationSizes:
    """How large and how often each measurement is."""

    copy_bytes: int
    gemm_n: int
    gemm_n_half: int  # float16 / bfloat16
    warmup: int
    repeats: int


GPU_SIZES = CalibrationSizes(copy_bytes=1 << 30, gemm_n=8192, gemm_n_half=8192, warmup=3, repeats=10)
CPU_SIZES = CalibrationSizes(copy_bytes=64 << 20, gemm_n=512, gemm_n_half=256, warmup=1, repeats=3)


def _best_ms(fn: Callable[[], object], device: torch.device, sizes: CalibrationSizes) -> float:
    """The fastest of ``sizes.repeats`` timed runs of ``fn``, in ms, after the warm-up."""
    for _ in range(sizes.warmup):
        fn()
    times: list[float] = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        for _ in range(sizes.repeats):
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(sizes.repeats):
            t0 = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - t0) / 1e6)
    return min(times)


def _copy_gbps(device: torch.device, sizes: CalibrationSizes) -> float:
    n = sizes.copy_bytes // 4
    src = torch.ones(n, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    ms = _best_ms(lambda: dst.copy_(src), device, sizes)
    return 2 * n * 4 / (ms * 1e-3) / 1e9


def _gemm_tflops(device: torch.device, dtype: torch.dtype, n: int, sizes: CalibrationSizes) -> float:
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.rand(n, n, generator=gen, device=device, dtype=torch.float32).to(dtype)
    b = torch.rand(n, n, generator=gen, device=device, dtype=torch.float32).to(dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    ms = _best_ms(lambda: torch.matmul(a, b, out=out), device, sizes)
    return 2 * n**3 / (ms * 1e-3) / 1e12


def calibrate(device: str | None = None, *, sizes: CalibrationSizes | None = None) -> Ceilings:
    """Measure this node's ceilings on ``device`` (``None``: CUDA when available).

    Args:
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        sizes: What to measure with (default :data:`GPU_SIZES` or :data:`CPU_SIZES`).

    Raises:
        EngineError: ``device`` is invalid or unavailable.
    """
    dev = resolve_device(device)
    size = sizes or (GPU_SIZES if dev.type == "cuda" else CPU_SIZES)
    env = environment(dev, nvml_for(dev))
    rates: dict[str, float] = {}
    with preserved_state(), torch.no_grad():
        gbps = _copy_gbps(dev, size)
        rates["float16"] = _gemm_tflops(dev, torch.float16, size.gemm_n_half, size)
        rates["bfloat16"] = _gemm_tflops(dev, torch.bfloat16, size.gemm_n_half, size)
        torch.set_float32_matmul_precision("highest")
        rates["float32"] = _gemm_tflops(dev, torch.float32, size.gemm_n, size)
        if dev.type == "cuda":
            torch.set_float32_matmul_precision("high")
            rates["tf32"] = _gemm_tflops(dev, torch.float32, size.gemm_n, size)
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    node = socket.gethostname()
    measured_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return Ceilings.model_validate(
        {
            "hardware": env.hardware,
            "source": f"calibrated on {node} at {measured_at}",
            "tflops": rates,
            "gbps": gbps,
            "device_name": env.device_name,
            "node": node,
            "measured_at": measured_at,
            "sizes": asdict(size),
        }
    )
