"""A store for the report's pictures: tiny and large speedups, long solution names that share
a prefix, two GPUs and a CPU, achieved rates with and without FLOPs."""

from __future__ import annotations

from pathlib import Path

from sweep.schema import Trace
from sweep.store import RowBatch, Store, StoreContext

from .conftest import make_definition, make_solution, make_trace

#: Two solutions of one operator whose names differ only at the end (a label cut at 28
#: characters could not tell them apart).
LONG_A = "gemm_triton_implementation_blocked_k_loop_v1"
LONG_B = "gemm_triton_implementation_blocked_k_loop_v2_autotuned"
TINY = "triton_on_cpu_interpreted"  # 0.0015x and 0.0025x on the CPU
FAST = "gemm_cutlass_fast"  # 50x

DEVICES = {"NVIDIA_H100": "NVIDIA H100 80GB HBM3", "NVIDIA_H200": "NVIDIA H200", "CPU": "cpu"}


def _rated(
    solution: str, uuid: str, hw: str, latency: float, reference: float, *, flops: float, nbytes: float
) -> Trace:
    perf: dict[str, object] = {
        "latency_ms": latency,
        "reference_latency_ms": reference,
        "speedup_factor": reference / latency,
        "work_flops": flops,
        "work_bytes": nbytes,
        "work_source": "declared",
        "tflops": flops / (latency * 1e-3) / 1e12,
        "gbps": nbytes / (latency * 1e-3) / 1e9,
        "peak_fraction": 0.1,
    }
    env = {"hardware": hw, "device_name": DEVICES[hw], "libs": {"torch": "2.9.0"}}
    return make_trace(
        solution,
        uuid,
        hw,
        definition="gemm" if solution != "vec_sol" else "vec_add",
        latency=latency,
        reference=reference,
        extra_eval={"performance": perf, "environment": env},
    )


def make_report_store(path: Path, *, rates: bool = True, two_hardware: bool = True) -> Path:
    """The store file at ``path``; ``rates``: traces carry work and rates; ``two_hardware``:
    the GPU solutions ran on both H100 and H200."""
    ctx = StoreContext.of(
        [make_definition("gemm", op_type="gemm"), make_definition("vec_add")],
        [
            make_solution(LONG_A, "gemm", author="alice"),
            make_solution(LONG_B, "gemm", author="alice", body="out.copy_(x + x)"),
            make_solution(FAST, "gemm", author="bob", body="out.copy_(2 * x)"),
            make_solution(TINY, "gemm", author="carol", body="out.copy_(x * 2.0)"),
            make_solution("vec_sol", "vec_add", author="bob", body="out.copy_(x * 2 + 0)"),
        ],
    )
    b = RowBatch()
    b.add_context(ctx)
    gpus = ["NVIDIA_H100", "NVIDIA_H200"] if two_hardware else ["NVIDIA_H100"]
    traces: list[Trace] = []
    for gi, hw in enumerate(gpus):
        for wi in range(4):
            uuid, ref, flops, nbytes = f"wl-{wi}", 2.0 * (wi + 1), 2e9 * (wi + 1), 1e7
            for sol, speed in ((LONG_A, 1.1 + 0.1 * wi), (LONG_B, 1.6 + 0.2 * wi), (FAST, 50.0 - wi)):
                lat = ref / speed / (gi + 1)
                if rates:
                    traces.append(_rated(sol, uuid, hw, lat, ref, flops=flops, nbytes=nbytes))
                else:
                    traces.append(make_trace(sol, uuid, hw, definition="gemm", latency=lat, reference=ref))
            lat = 0.01 / (gi + 1)
            if rates:
                traces.append(_rated("vec_sol", uuid, hw, lat, 0.012, flops=0.0, nbytes=3e6))
            else:
                traces.append(
                    make_trace("vec_sol", uuid, hw, definition="vec_add", latency=lat, reference=0.012)
                )
    # LONG_B fails one workload on the H100.
    traces.append(make_trace(LONG_B, "wl-9", "NVIDIA_H100", definition="gemm", status="RUNTIME_ERROR"))
    for wi, speed in enumerate((0.0015, 0.0025)):
        traces.append(
            make_trace(TINY, f"wl-{wi}", "CPU", definition="gemm", latency=1.0 / speed, reference=1.0)
        )
    for t in traces:
        b.add_trace(t, context=ctx)
    Store(path).add(b)
    return path
