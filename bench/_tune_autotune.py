"""``@triton.autotune`` over a whole large space, as a user with N GPUs would run it: the space
cut into N interleaved slices, one process per GPU, each tuning its slice with Triton's own
autotuner at its default settings (``do_bench``: 25 ms warm-up, 100 ms of repetitions). A slice
is tuned in chunks (one ``triton.autotune`` per chunk of ``chunk`` configs) only so that progress
is printed and a deadline can stop between chunks; the autotuner's loop over configs is the same.

Reported: each GPU's configs and tuning seconds, the wall time on N GPUs (the slowest slice),
the sum (what one process on one GPU would take, as the slices run the same code on identical
GPUs), the winner by the autotuner's own medians, and that winner re-timed with the grid's
settings so it compares with the grid's best. ``cubins()`` before and after says whether the
autotuner compiled anything itself (0 new when the grid's pool had filled Triton's cache).
"""

from __future__ import annotations

import queue
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _tune_grid import cubins

Point = dict[str, Any]
BENCH = Path(__file__).resolve().parent


def _median(t: object) -> float:
    return float(t[0]) if isinstance(t, (list, tuple)) else float(t)  # type: ignore[arg-type]


def _slice_worker(gpu: int, size: int, points: list[Point], chunk: int, done: Any) -> None:
    """One GPU: its slice tuned chunk by chunk; a message per chunk, then ``exit``."""
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    sys.path.insert(0, str(BENCH))
    import torch
    from _tune_gemm import autotuned_gemm

    torch.manual_seed(gpu)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    done.put(("ready", gpu, torch.cuda.get_device_name(), 0.0, None))
    for lo in range(0, len(points), chunk):
        part = points[lo : lo + chunk]
        fn = autotuned_gemm(part)
        t0 = time.monotonic()
        fn(a, b)
        torch.cuda.synchronize()
        secs = time.monotonic() - t0
        timings = fn.tuner.configs_timings  # type: ignore[attr-defined]
        best_cfg = fn.tuner.best_config  # type: ignore[attr-defined]
        best_i = next(i for i, cfg in enumerate(fn.tuner.configs) if cfg is best_cfg)  # type: ignore[attr-defined]
        done.put(("chunk", gpu, len(part), secs, (part[best_i], _median(timings[best_cfg]))))
    done.put(("exit", gpu, "", 0.0, None))


def _retime(size: int, point: Point, warmup_ms: float, rep_ms: float) -> float:
    """The point re-timed on GPU 0 with the grid's do_bench settings (median ms)."""
    import torch
    import triton
    from _tune_gemm import gemm

    torch.manual_seed(0)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    return float(
        triton.testing.do_bench(
            lambda: gemm(a, b, **point), warmup=warmup_ms, rep=rep_ms, return_mode="median"
        )
    )


def autotune_sliced(
    points: Sequence[Point],
    size: int,
    *,
    gpus: int,
    chunk: int,
    deadline_s: float,
    warmup_ms: float,
    rep_ms: float,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Tune ``points`` with ``@triton.autotune`` on ``gpus`` GPUs (slices), stopping new chunks
    at ``deadline_s``; returns and logs the figures the module docstring lists."""
    import multiprocessing as mp

    slices = [list(points[g::gpus]) for g in range(gpus)]
    ctx = mp.get_context("spawn")
    done = ctx.Queue()
    cache0, t0 = cubins(), time.monotonic()
    workers = [ctx.Process(target=_slice_worker, args=(g, size, slices[g], chunk, done)) for g in range(gpus)]
    for w in workers:
        w.start()
    configs = [0] * gpus
    tuning = [0.0] * gpus
    finished_at: dict[int, float] = {}
    bests: list[tuple[float, Point]] = []
    cut = False
    while len(finished_at) < gpus:
        if time.monotonic() - t0 > deadline_s:
            cut = True
            break
        if not any(w.is_alive() for w in workers) and done.empty():
            log("every autotune process has exited early")
            cut = True
            break
        try:
            kind, g, n, secs, best = done.get(timeout=0.5)
        except queue.Empty:
            continue
        if kind == "ready":
            log(f"  GPU {g} ready ({n}) at {time.monotonic() - t0:.1f} s")
        elif kind == "chunk":
            configs[g] += n
            tuning[g] += secs
            point, ms = best
            bests.append((ms, point))
            log(
                f"  GPU {g}: {configs[g]}/{len(slices[g])} configs, chunk of {n} in {secs:.1f} s "
                f"({secs / n * 1000:.0f} ms a config), chunk best {ms:.5f} ms"
            )
        else:
            finished_at[g] = time.monotonic() - t0
    for w in workers:
        if w.is_alive():
            w.terminate()
        w.join(timeout=30)
    wall = time.monotonic() - t0
    new_cubins = cubins() - cache0
    best_ms, best_point = min(bests, key=lambda b: b[0]) if bests else (float("nan"), {})
    retimed = _retime(size, best_point, warmup_ms, rep_ms) if best_point else float("nan")
    result = {
        "gpus": gpus,
        "configs_tuned": sum(configs),
        "configs": len(points),
        "complete": not cut and sum(configs) == len(points),
        "wall_s": wall,
        "tuning_s_per_gpu": tuning,
        "tuning_s_sum": sum(tuning),
        "best_ms_autotune": best_ms,
        "best_point": best_point,
        "best_ms_retimed": retimed,
        "new_cubins": new_cubins,
    }
    log(
        f"@triton.autotune over {sum(configs)} of {len(points)} configs on {gpus} GPU(s) "
        f"({'complete' if result['complete'] else 'CUT at the deadline'}): wall {wall:.1f} s "
        f"(processes' start included); tuning per GPU {', '.join(f'{t:.1f}' for t in tuning)} s; "
        f"sum {sum(tuning):.1f} s (one GPU would take about this); "
        f"{new_cubins} cubins compiled by the autotune processes"
    )
    log(
        f"autotune's winner {best_point}: {best_ms:.5f} ms by its own do_bench (25/100 ms), "
        f"{retimed:.5f} ms re-timed with the grid's settings ({warmup_ms}/{rep_ms} ms)"
    )
    return result
