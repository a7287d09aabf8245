"""The anchor of ``bench/gpu_autotune.py``: ``@triton.autotune`` over the same configurations,
in one process on one GPU, as a kernel engineer would tune the shipped Triton GEMM without
kernel-sweep.

The kernel is the shipped solution's own ``_gemm_abt`` (its source read from the solution
file), wrapped in ``triton.autotune`` with one ``triton.Config`` per parameter point (the
points the bench passes: the same valid points the sweep plans). One call of the tuned kernel
on the bench's shape compiles and benchmarks every configuration, one after the other
(Triton's ``do_bench``: 25 ms warm-up, 100 ms of repetitions, median). Prints one JSON line:
the seconds from this process's start (imports included) to the end of tuning, Triton's own
tuning time, the best configuration and every configuration's median.

Usage: python3 bench/_autotune_anchor.py SOLUTION_JSON POINTS_JSON M
"""

from __future__ import annotations

import time

T0 = time.monotonic()

import importlib.util
import json
import sys
import tempfile
from pathlib import Path


def main() -> None:
    solution_path, points_path, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import torch
    import triton

    sol = json.loads(Path(solution_path).read_text())
    folder = Path(tempfile.mkdtemp(prefix="anchor-"))
    (folder / "gemm_solution.py").write_text(sol["sources"][0]["content"])
    spec = importlib.util.spec_from_file_location("gemm_solution", folder / "gemm_solution.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    points = json.loads(Path(points_path).read_text())
    configs = [
        triton.Config(
            {"BM": p["BLOCK_M"], "BN": p["BLOCK_N"], "BK": p["BLOCK_K"]},
            num_warps=p["num_warps"],
            num_stages=p["num_stages"],
        )
        for p in points
    ]
    tuned = triton.autotune(configs=configs, key=["M"])(mod._gemm_abt)
    torch.manual_seed(0)
    n = k = 512
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)

    def grid(meta: dict[str, int]) -> tuple[int, int]:
        return (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))

    t_start = time.monotonic()
    tuned[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        UPCAST=False,
    )
    torch.cuda.synchronize()
    t_end = time.monotonic()
    torch.testing.assert_close(c.float(), (a.float() @ b.float().T), rtol=2e-2, atol=2e-2)
    best = tuned.best_config

    def point_of(cfg: triton.Config) -> dict[str, int]:
        return {
            "BLOCK_M": cfg.kwargs["BM"],
            "BLOCK_N": cfg.kwargs["BN"],
            "BLOCK_K": cfg.kwargs["BK"],
            "num_warps": cfg.num_warps,
            "num_stages": cfg.num_stages,
        }

    timings = [
        {"point": point_of(cfg), "median_ms": float(t[0]) if isinstance(t, (list, tuple)) else float(t)}
        for cfg, t in tuned.configs_timings.items()
    ]
    print(
        json.dumps(
            {
                "wall_s": time.monotonic() - T0,
                "tuning_s": t_end - t_start,
                "bench_time_s": getattr(tuned, "bench_time", None),
                "configs": len(configs),
                "best": point_of(best),
                "timings": timings,
                "device": torch.cuda.get_device_name(0),
            }
        )
    )


if __name__ == "__main__":
    main()
