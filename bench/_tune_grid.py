"""A whole tuning space measured fast: every config compiled in a pool of CPU processes (Triton's
on-disk cache then serves the GPU processes), each timed on N GPUs as soon as it is compiled,
every point's latency and costs written as JSON (``tune_strategies.py --save-grid``).

Why a pool of CPU processes: Triton compiles a config in the process that first launches it, one
at a time, so a GPU process spends most of a large grid compiling (227 configs took over 150 s on
one GPU). ``precompile`` sets a GPU-less Triton driver in each pool process (the GPU's target
only: ``compute_cap`` from nvidia-smi, or ``--arch``) and calls ``JITFunction.warmup`` with the
arguments ``gemm`` passes; the compile key is the same, so the GPU process's first launch loads
the cubin from the cache. ``cubins()`` counts the cache's cubins before and after the GPU work:
an unchanged count proves the GPU processes compiled nothing themselves.
"""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

Point = dict[str, Any]
BENCH = Path(__file__).resolve().parent


def default_jobs() -> int:
    """Compile processes: every core but a few for the GPU processes and the driver, at most 48."""
    return max(1, min((os.cpu_count() or 1) - 2, 48))


def gpu_arch() -> int:
    """The first GPU's compute capability as Triton writes it (9.0 -> 90), from nvidia-smi (no
    CUDA context in this process, so the compile pool may still fork); 90 when it cannot tell."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
        major, minor = out.split()[0].split(".")
        return int(major) * 10 + int(minor)
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return 90


def triton_cache_dir() -> Path:
    import triton

    return Path(triton.knobs.cache.dir)


def cubins(cache: Path | None = None) -> int:
    """Compiled kernels in Triton's on-disk cache (one ``.cubin`` per config)."""
    root = cache or triton_cache_dir()
    return sum(1 for _ in root.rglob("*.cubin")) if root.exists() else 0


class _TargetOnlyDriver:
    """What ``JITFunction.warmup`` asks of the active driver: a device, a stream, the target."""

    def __init__(self, arch: int) -> None:
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)

    def get_current_target(self) -> Any:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")


def _init_compiler(arch: int) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # never a CUDA context in a compile process
    sys.path.insert(0, str(BENCH))
    from triton.runtime import driver

    driver.set_active(_TargetOnlyDriver(arch))


def _compile(size: int, point: Point) -> tuple[float, str | None]:
    from _tune_gemm import precompile as compile_point

    t0 = time.perf_counter()
    try:
        compile_point(size, **point)
        return time.perf_counter() - t0, None
    except Exception as e:  # noqa: BLE001  # a config Triton refuses: recorded, the GPU says the rest
        return time.perf_counter() - t0, f"{type(e).__name__}: {str(e)[:200]}"


def compile_pool(jobs: int, arch: int) -> ProcessPoolExecutor:
    """``jobs`` compile processes, forked (cheap: torch and triton imported once) where the
    platform can; this process must hold no CUDA context."""
    import multiprocessing as mp

    if os.environ.get("TRITON_INTERPRET") == "1":
        raise SystemExit(
            "error: TRITON_INTERPRET=1: Triton compiles nothing interpreted; unset it to precompile"
        )
    import torch  # noqa: F401  # imported before forking: each child shares it
    import triton  # noqa: F401

    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    return ProcessPoolExecutor(
        jobs, mp_context=mp.get_context(method), initializer=_init_compiler, initargs=(arch,)
    )


def precompile(
    points: Sequence[Point], size: int, jobs: int, arch: int, log: Callable[[str], None] = print
) -> list[tuple[float, str | None]]:
    """Compile every point in ``jobs`` processes; each point's (seconds, error)."""
    before, t0 = cubins(), time.monotonic()
    with compile_pool(jobs, arch) as pool:
        out = list(pool.map(_compile, [size] * len(points), points, chunksize=1))
    failed = sum(1 for _, e in out if e)
    log(
        f"precompiled {len(points)} configs in {time.monotonic() - t0:.1f} s with {jobs} processes "
        f"(sm{arch}; {cubins() - before} new cubins, {len(points) - (cubins() - before)} already cached or "
        f"failed; {failed} failed)"
    )
    return out


def _gpu_worker(gpu: int, size: int, warmup_ms: float, rep_ms: float, todo: Any, done: Any) -> None:
    """One GPU: the next compiled point, its first launch (the cubin's load), then do_bench."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    sys.path.insert(0, str(BENCH))
    import torch
    import triton
    from _tune_gemm import gemm

    torch.manual_seed(gpu)
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    done.put(("ready", gpu, torch.cuda.get_device_name()))
    while (item := todo.get()) is not None:
        i, point = item
        t0 = time.perf_counter()
        ms: float | None = None
        err: str | None = None
        t1 = t0
        try:
            gemm(a, b, **point)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            ms = float(
                triton.testing.do_bench(
                    lambda p=point: gemm(a, b, **p), warmup=warmup_ms, rep=rep_ms, return_mode="median"
                )
            )
        except Exception as e:  # noqa: BLE001  # a config the GPU cannot run (shared memory): a failure
            err = f"{type(e).__name__}: {str(e)[:200]}"
        t2 = time.perf_counter()
        done.put((i, ms, (t1 if ms is not None else t2) - t0, t2 - t1 if ms is not None else 0.0, err))
    done.put(("exit", gpu, ""))


def measure_grid(
    points: Sequence[Point],
    size: int,
    *,
    gpus: int,
    jobs: int,
    arch: int,
    warmup_ms: float,
    rep_ms: float,
    deadline_s: float,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Compile (``jobs`` CPU processes) and time (``gpus`` GPU processes) every point, pipelined:
    a point is timed as soon as it is compiled. Stops at ``deadline_s`` with what it has (the
    table says ``complete: false``). Returns the table ``save_grid`` writes."""
    import multiprocessing as mp

    n = len(points)
    rows: list[dict[str, Any]] = [{"point": dict(p)} for p in points]
    compiled: queue.Queue[tuple[int, float, str | None]] = queue.Queue()
    cache0, t0 = cubins(), time.monotonic()
    pool = compile_pool(jobs, arch)  # forked before any queue thread or GPU process exists
    order = list(range(n))
    random.Random(0).shuffle(order)  # big tiles compile slower: a shuffled order keeps the ETA honest

    def finished(i: int) -> Callable[[Future[tuple[float, str | None]]], None]:
        def put(f: Future[tuple[float, str | None]]) -> None:
            if not f.cancelled():
                compiled.put((i, *f.result()))

        return put

    for i in order:
        pool.submit(_compile, size, dict(points[i])).add_done_callback(finished(i))
    ctx = mp.get_context("spawn")
    todo, done = ctx.Queue(), ctx.Queue()
    workers = [
        ctx.Process(target=_gpu_worker, args=(g, size, warmup_ms, rep_ms, todo, done)) for g in range(gpus)
    ]
    for w in workers:
        w.start()
    n_compiled = n_measured = 0
    names: list[str] = []
    ready_at: float | None = None
    last_log = time.monotonic()
    cut = False
    while n_measured < n:
        now = time.monotonic()
        if now - t0 > deadline_s:
            cut = True
            break
        if not any(w.is_alive() for w in workers):
            log("every GPU process has exited: stopping")
            cut = True
            break
        try:
            while True:
                i, secs, err = compiled.get_nowait()
                rows[i]["compile_s"], rows[i]["compile_error"] = round(secs, 4), err
                n_compiled += 1
                todo.put((i, dict(points[i])))
        except queue.Empty:
            pass
        try:
            msg = done.get(timeout=0.2)
        except queue.Empty:
            msg = None
        while msg is not None:
            if msg[0] == "ready":
                names.append(str(msg[2]))
                ready_at = ready_at or time.monotonic() - t0
            elif msg[0] != "exit":
                i, ms, load_s, bench_s, err = msg
                rows[i].update(ms=ms, load_s=round(load_s, 4), bench_s=round(bench_s, 4), error=err)
                n_measured += 1
            try:
                msg = done.get_nowait()
            except queue.Empty:
                msg = None
        if time.monotonic() - last_log >= 15 or n_measured == n:
            last_log = time.monotonic()
            el = last_log - t0
            eta = max(
                (n - n_compiled) / max(n_compiled / el, 1e-9), (n - n_measured) / max(n_measured / el, 1e-9)
            )
            log(
                f"  {el:6.0f} s: compiled {n_compiled}/{n} ({n_compiled / el:.1f}/s), "
                f"measured {n_measured}/{n} ({n_measured / el:.1f}/s), ETA {eta:.0f} s"
            )
    pool.shutdown(wait=False, cancel_futures=True)
    if cut:  # the compiles in flight are not waited for
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        try:
            while True:
                todo.get_nowait()
        except queue.Empty:
            pass
    for _ in workers:
        todo.put(None)
    for w in workers:
        w.join(timeout=5)
        if w.is_alive():
            w.terminate()
    try:  # what the GPUs finished while stopping
        while True:
            msg = done.get_nowait()
            if msg[0] not in ("ready", "exit"):
                i, ms, load_s, bench_s, err = msg
                rows[i].update(ms=ms, load_s=round(load_s, 4), bench_s=round(bench_s, 4), error=err)
    except queue.Empty:
        pass
    wall = time.monotonic() - t0
    measured_rows = [r for r in rows if "load_s" in r]
    compiled_ok = sum(1 for r in rows if "compile_s" in r and not r["compile_error"])
    # One cubin per config whoever compiles it, and a GPU process gets a point only once the pool
    # has compiled it: cubins beyond the pool's are the GPU processes' own (a compile-key mismatch).
    self_compiled = max(cubins() - cache0 - compiled_ok, 0)
    loads = sorted(r["load_s"] for r in measured_rows if r.get("ms") is not None)
    log(
        f"grid: {len(measured_rows)}/{n} points measured in {wall:.1f} s on {gpus} GPU(s) "
        f"({', '.join(sorted(set(names))) or '?'}), {n_compiled} compiled by {jobs} processes; "
        f"GPU processes ready after {ready_at or float('nan'):.1f} s"
        + (f"; CUT at {wall:.0f} s (deadline {deadline_s:.0f} s)" if cut else "")
    )
    if loads:
        log(
            f"first launch per point (cubin load; a compile would take ~1 s): median "
            f"{1000 * loads[len(loads) // 2]:.1f} ms, p90 {1000 * loads[(9 * len(loads)) // 10]:.1f} ms; "
            f"cubins the GPU processes compiled themselves: at least {self_compiled} (0: the pool's cache served them)"
        )
    return {
        "complete": len(measured_rows) == n,
        "valid_points": n,
        "gpus": gpus,
        "device": f"{', '.join(sorted(set(names)))} x{gpus}",
        "compile_jobs": jobs,
        "arch": arch,
        "size": size,
        "warmup_ms": warmup_ms,
        "rep_ms": rep_ms,
        "wall_s": round(wall, 2),
        "gpu_compiled": self_compiled,
        "points": measured_rows,
    }


def simulated_grid(
    points: Sequence[Point], size: int, latency: Callable[[Point], float], gpus: int, jobs: int
) -> dict[str, Any]:
    """The same table from the SIMULATED objective (no kernel runs; costs modelled: a compile of
    1 s for a big tile down to 0.5 s, a measurement of 20 ms plus 25 calls): the CPU path of
    ``--save-grid``, for testing the replay."""
    rows = []
    for p in points:
        ms = latency(p)
        tile = int(p["BLOCK_M"]) * int(p["BLOCK_N"]) * int(p["BLOCK_K"])
        rows.append(
            {
                "point": dict(p),
                "ms": ms,
                "compile_s": round(0.5 + 0.5 * tile / (256 * 256 * 128), 4),
                "compile_error": None,
                "load_s": 0.002,
                "bench_s": round(0.02 + 25 * ms / 1000, 5),
                "error": None,
            }
        )
    return {
        "complete": True, "valid_points": len(points), "gpus": gpus, "device": "SIMULATED", "compile_jobs": jobs,
        "arch": 0, "size": size, "warmup_ms": 0, "rep_ms": 0, "wall_s": 0.0, "gpu_compiled": 0, "points": rows,
    }  # fmt: skip


def save_grid(table: dict[str, Any], space: str, params: object, constraints: object, path: Path) -> None:
    """Write the table with its space (name, params, constraints) as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"space": space, "params": params, "constraints": constraints, **table}
    path.write_text(json.dumps(doc, indent=1) + "\n")
