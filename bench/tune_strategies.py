"""Search strategies against the grid on a GEMM space: evaluations and wall time to reach
within 2% of the grid's best, per strategy, and ``@triton.autotune`` on the same space.

Two spaces: ``shipped`` (the shipped Triton GEMM's params and constraints) and ``large``
(block sizes, warps, stages, split-K and group size: >= 5,000 valid points).

Objectives:

* ``--objective measured`` (``--device cuda``): each point is the Triton GEMM of this script
  run and timed with ``triton.testing.do_bench`` on M=N=K=``--size`` float16; ``--gpus N``
  spreads each round's points over N GPUs (one process per GPU). ``@triton.autotune`` is
  timed over the same configs on one GPU.
* ``--objective simulated`` (the default on ``--device cpu``): a SIMULATED latency, a
  deterministic model of a GEMM tile's cost with seeded noise. It measures the strategies'
  search behaviour only, never a kernel; every table row says so.

Run: ``python bench/tune_strategies.py --device cpu --space shipped``;
GPU: ``python bench/tune_strategies.py --device cuda --space large --objective measured --gpus 1``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sweep.plan.strategies import STRATEGIES, make_strategy
from sweep.schema.params import Point, grid_violations

SHIPPED = {
    "params": {
        "BLOCK_M": [64, 32, 128, 256],
        "BLOCK_N": [64, 32, 128, 256],
        "BLOCK_K": [64, 32, 128],
        "num_warps": [4, 8, 2],
        "num_stages": [3, 2, 4],
    },
    "constraints": [
        "(BLOCK_M + BLOCK_N) * BLOCK_K * 2 * num_stages <= 131072",
        "BLOCK_M <= 2 * max(M, 16)",
        "BLOCK_M * BLOCK_N >= 1024 * num_warps",
    ],
}
LARGE = {
    "params": {
        "BLOCK_M": [16, 32, 64, 128, 256],
        "BLOCK_N": [16, 32, 64, 128, 256],
        "BLOCK_K": [16, 32, 64, 128],
        "num_warps": [2, 4, 8],
        "num_stages": [2, 3, 4, 5],
        "SPLIT_K": [1, 2, 4],
        "GROUP_M": [1, 4, 8],
    },
    "constraints": [
        "(BLOCK_M + BLOCK_N) * BLOCK_K * 2 * num_stages <= 229376",
        "BLOCK_M * BLOCK_N >= 256 * num_warps",
    ],
}


def valid_points(space: dict[str, object], size: int) -> list[Point]:
    params = space["params"]
    constraints = space["constraints"]
    assert isinstance(params, dict) and isinstance(constraints, list)
    return [
        p for p, why in grid_violations(params, constraints, {"M": size, "N": size, "K": size}) if why is None
    ]


def simulated(size: int, seed: int) -> Callable[[Point], float]:
    """A SIMULATED latency (ms): waves of tiles, a pipeline's latency hiding, split-K's
    reduction, a group's L2 reuse, with 1.5% seeded noise. Not a measurement."""
    rng = random.Random(seed)
    noise: dict[str, float] = {}

    def latency(p: Point) -> float:
        bm, bn, bk = int(p["BLOCK_M"]), int(p["BLOCK_N"]), int(p["BLOCK_K"])
        warps, stages = int(p["num_warps"]), int(p["num_stages"])
        split, group = int(p.get("SPLIT_K", 1)), int(p.get("GROUP_M", 1))
        tiles = math.ceil(size / bm) * math.ceil(size / bn) * split
        waves = math.ceil(tiles / 132)
        per_tile = (size / split) / bk * (bm * bn * bk) / (warps * 32 * 64) * (1 + 2.0 / stages)
        per_tile *= 1.0 + 0.25 * abs(math.log2(bm * bn / (warps * 2048)))
        reuse = 1.0 - 0.08 * math.log2(group + 1) / 3
        cost = waves * per_tile * reuse * 1e-4 + (0.003 * split if split > 1 else 0.0)
        key = repr(sorted(p.items()))
        if key not in noise:
            noise[key] = 1.0 + rng.uniform(-0.015, 0.015)
        return cost * noise[key]

    return latency


def measured(size: int, gpus: int) -> Callable[[Sequence[Point]], list[float | None]]:
    """Each round's points timed on ``gpus`` GPUs, one process per GPU (spawned once)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    counter = ctx.Value("i", 0)
    pool = ctx.Pool(gpus, initializer=_pin, initargs=(counter,))

    def run(points: Sequence[Point]) -> list[float | None]:
        return pool.map(_time_point, [(size, dict(p)) for p in points], chunksize=1)

    return run


def _pin(counter: object) -> None:
    """Each worker process sees one GPU of its own (set before torch is imported)."""
    with counter.get_lock():  # type: ignore[attr-defined]
        index = counter.value  # type: ignore[attr-defined]
        counter.value += 1  # type: ignore[attr-defined]
    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)


def _time_point(args: tuple[int, dict[str, object]]) -> float | None:
    size, point = args
    import torch
    import triton

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _tune_gemm import gemm

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    try:
        return float(triton.testing.do_bench(lambda: gemm(a, b, **point), warmup=5, rep=20))
    except Exception:  # noqa: BLE001  # a point the hardware cannot run (shared memory): a failure
        return None


def run_strategy(
    name: str,
    points: list[Point],
    batch: Callable[[Sequence[Point]], list[float | None]],
    best: float,
    parallel: int,
    seed: int,
) -> tuple[int | None, float | None, int, float]:
    """Evaluations and seconds until within 2% of ``best`` (None: never), and the total."""
    strategy = make_strategy(name, points, seed=seed, initial=max(8, parallel))
    t0, evaluations = time.monotonic(), 0
    hit: tuple[int | None, float | None] = (None, None)
    budget = len(points) if name == "grid" else max(parallel, len(points) // 5)
    while evaluations < budget:
        chosen = strategy.ask(min(parallel, budget - evaluations))
        if not chosen:
            break
        values = batch([points[i] for i in chosen])
        for i, v in zip(chosen, values):
            strategy.tell(i, v)
            evaluations += 1
            if hit[0] is None and v is not None and v <= best * 1.02:
                hit = (evaluations, time.monotonic() - t0)
    return hit[0], hit[1], evaluations, time.monotonic() - t0


def autotune_seconds(points: list[Point], size: int) -> tuple[float, float]:
    """``@triton.autotune`` over the same configs on one GPU: seconds to tune, best ms."""
    import torch
    import triton

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _tune_gemm import autotuned_gemm

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    fn = autotuned_gemm(points)
    t0 = time.monotonic()
    fn(a, b)
    torch.cuda.synchronize()
    tuned = time.monotonic() - t0
    return tuned, float(triton.testing.do_bench(lambda: fn(a, b), warmup=5, rep=20))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--space", choices=["shipped", "large"], default="shipped")
    ap.add_argument("--objective", choices=["simulated", "measured"], default=None)
    ap.add_argument("--gpus", type=int, choices=[1, 2, 4], default=1)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--parallel", type=int, default=8, help="points per round")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    args = ap.parse_args()
    objective = args.objective or ("measured" if args.device == "cuda" else "simulated")
    if objective == "measured" and args.device != "cuda":
        ap.error("--objective measured needs --device cuda")
    points = valid_points(SHIPPED if args.space == "shipped" else LARGE, args.size)
    label = (
        "SIMULATED objective (no kernel runs)"
        if objective == "simulated"
        else f"measured on {args.gpus} GPU(s)"
    )
    print(f"space {args.space}: {len(points)} valid points; M=N=K={args.size}; {label}")
    if objective == "simulated":
        model = simulated(args.size, 0)
        batch: Callable[[Sequence[Point]], list[float | None]] = lambda ps: [model(p) for p in ps]
        grid_values = [model(p) for p in points]
    else:
        batch = measured(args.size, args.gpus)
        t0 = time.monotonic()
        grid_values = batch(points)
        print(f"grid: {len(points)} evaluations in {time.monotonic() - t0:.1f} s")
    best = min(v for v in grid_values if v is not None)
    print(f"grid best: {best:.5f} ms")
    print(
        f"{'strategy':<10} {'seed':>4} {'evals to 2%':>12} {'% of grid':>9} {'s to 2%':>8} {'evals':>6} {'wall s':>7}"
    )
    for name in args.strategies.split(","):
        for seed in range(args.seeds if name != "grid" else 1):
            try:
                n, s, total, wall = run_strategy(name, points, batch, best, args.parallel * args.gpus, seed)
            except Exception as e:  # noqa: BLE001  # forest without scikit-learn: said, not hidden
                print(f"{name:<10} {seed:>4} unavailable: {e}")
                break
            pct = f"{100 * n / len(points):.1f}" if n is not None else "-"
            print(
                f"{name:<10} {seed:>4} {n if n is not None else '-':>12} {pct:>9} {s if s is None else round(s, 2)!s:>8} {total:>6} {wall:>7.2f}"
            )
    if objective == "measured":
        tuned, ms = autotune_seconds(points, args.size)
        print(
            f"@triton.autotune: {len(points)} configs in {tuned:.1f} s, best {ms:.5f} ms ({ms / best:.3f}x the grid's best)"
        )


if __name__ == "__main__":
    main()
