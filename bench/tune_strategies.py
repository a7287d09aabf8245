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

Modes:

* live (the default): the grid, then each strategy, evaluated as they go; measured, the space's
  configs are compiled first by ``--compile-jobs`` CPU processes (``_tune_grid.precompile``) so
  the GPU processes only load them, and the strategies after the grid stop once within 2%.
* ``--save-grid FILE``: every point compiled in a process pool and timed on ``--gpus`` GPUs as
  soon as it is compiled (``_tune_grid.measure_grid``), written as JSON with each point's
  latency and compile and measure seconds; then replayed (``--no-replay``: not).
* ``--replay FILE``: every strategy, over ``--seeds`` seeds, against the stored latencies, on
  this CPU, with the wall time modelled from the stored costs for 1, 2 and 4 GPUs
  (``_tune_replay``), and Kernel Tuner's strategies on the same table through its simulation
  mode where it is installed (``--kernel-tuner-path``; ``_tune_kt``).

Run: ``python bench/tune_strategies.py --device cpu --space shipped``;
GPU: ``python bench/tune_strategies.py --device cuda --space large --save-grid large.json --gpus 4``;
then ``python bench/tune_strategies.py --replay large.json --kernel-tuner-path /tmp/kt``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _tune_autotune
import _tune_grid
import _tune_kt
import _tune_replay as rp

from sweep.plan.strategies import STRATEGIES
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


_INPUTS: dict[int, tuple[object, object]] = {}


def _time_point(args: tuple[int, dict[str, object]]) -> float | None:
    size, point = args
    import torch
    import triton
    from _tune_gemm import gemm

    if size not in _INPUTS:  # the inputs made once per process, not once per point
        _INPUTS[size] = (
            torch.randn(size, size, device="cuda", dtype=torch.float16),
            torch.randn(size, size, device="cuda", dtype=torch.float16),
        )
    a, b = _INPUTS[size]
    try:
        return float(triton.testing.do_bench(lambda: gemm(a, b, **point), warmup=5, rep=20))
    except Exception:  # noqa: BLE001  # a point the hardware cannot run (shared memory): a failure
        return None


def autotune_seconds(points: list[Point], size: int) -> tuple[float, float]:
    """``@triton.autotune`` over the same configs on one GPU: seconds to tune, best ms."""
    import torch
    import triton
    from _tune_gemm import autotuned_gemm

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    fn = autotuned_gemm(points)
    t0 = time.monotonic()
    fn(a, b)
    torch.cuda.synchronize()
    tuned = time.monotonic() - t0
    return tuned, float(triton.testing.do_bench(lambda: fn(a, b), warmup=5, rep=20))


def _seed_line(name: str, seed: int, traj: rp.Trajectory, best: float, n_points: int) -> str:
    n, s = rp.hit(traj, best)
    pct = f"{100 * n / n_points:.1f}" if n is not None else "-"
    wall = traj[-1][1] if traj else 0.0
    return (
        f"{name:<10} {seed:>4} {n if n is not None else '-':>12} {pct:>9} "
        f"{'None' if s is None else round(s, 2)!s:>8} {len(traj):>6} {wall:>7.2f}"
    )


def live(args: argparse.Namespace, points: list[Point], objective: str) -> None:
    """The grid then each strategy, evaluated as they go (measured, or the simulated model)."""
    if objective == "simulated":
        model = simulated(args.size, 0)
        batch: Callable[[Sequence[Point]], list[float | None]] = lambda ps: [model(p) for p in ps]
    else:
        if args.compile_jobs > 0:
            _tune_grid.precompile(points, args.size, args.compile_jobs, args.arch or _tune_grid.gpu_arch())
        batch = measured(args.size, args.gpus)
    parallel = args.parallel * args.gpus

    def evaluate(chosen: Sequence[int]) -> list[float | None]:
        return batch([points[i] for i in chosen])

    names = args.strategies.split(",")
    grid = rp.search("grid", points, evaluate, parallel=parallel, seed=0)
    best = min(v for _, _, v in grid if v is not None)
    print(f"grid: {len(grid)} evaluations in {grid[-1][1]:.1f} s")
    print(f"grid best: {best:.5f} ms")
    print(
        f"{'strategy':<10} {'seed':>4} {'evals to 2%':>12} {'% of grid':>9} {'s to 2%':>8} {'evals':>6} {'wall s':>7}"
    )
    rows: list[rp.Row] = []
    for name in names:
        runs: list[tuple[int | None, float | None, int]] = []
        for seed in range(args.seeds if name != "grid" else 1):
            try:
                traj = grid if name == "grid" else rp.search(
                    name, points, evaluate, parallel=parallel, seed=seed, stop_below=best * (1 + rp.WITHIN)
                )  # fmt: skip
            except Exception as e:  # noqa: BLE001  # forest without scikit-learn: said, not hidden
                print(f"{name:<10} {seed:>4} unavailable: {e}")
                break
            print(_seed_line(name, seed, traj, best, len(points)))
            runs.append((*rp.hit(traj, best), len(traj)))
        if runs:
            rows.append(rp.summarise(name, runs))
    print(f"median over seeds ({'simulated' if objective == 'simulated' else f'live, {args.gpus} GPU(s)'}):")
    print(rp.HEADER)
    for row in rows:
        print(rp.format_row(row, len(points)))
    if objective == "measured" and not args.no_autotune:
        tuned, ms = autotune_seconds(points, args.size)
        print(
            f"@triton.autotune: {len(points)} configs in {tuned:.1f} s, best {ms:.5f} ms ({ms / best:.3f}x the grid's best)"
        )


def replay_main(args: argparse.Namespace, path: Path) -> None:
    """Every strategy against a saved table, over seeds, the clock modelled for 1, 2, 4 GPUs;
    then Kernel Tuner's strategies on the same table where it is installed."""
    table = rp.load_table(path)
    n = len(table.points)
    jobs = args.compile_jobs or table.jobs
    print(
        f"REPLAY of {path.name}: space {table.space}, {n} points measured of {table.valid_points} valid"
        f"{'' if table.complete else ' (the grid run was CUT: the replay space is the measured points)'}; "
        f"M=N=K={table.size}; {table.device}; grid best {table.best:.5f} ms; "
        f"{sum(1 for v in table.ms if v is None)} points failed"
    )
    print(
        f"latencies: the table's; seconds: MODELLED from its per-point costs (compile on {jobs} CPU processes, "
        f"first launch + do_bench on the GPUs, the strategy's own time measured here); medians over {args.seeds} seeds"
    )
    names = [s for s in args.strategies.split(",") if s]
    for gpus in [int(g) for g in args.replay_gpus.split(",")]:
        parallel = args.parallel * gpus
        print(
            f"-- {gpus} GPU(s), {parallel} points a round; budget {rp.budget('random', n, parallel)} evaluations"
        )
        print(rp.HEADER)
        for name in names:
            runs: list[tuple[int | None, float | None, int]] = []
            for seed in range(args.seeds if name != "grid" else 1):
                try:
                    traj = rp.replay(table, name, seed, parallel=parallel, gpus=gpus, jobs=jobs)
                except Exception as e:  # noqa: BLE001  # forest without scikit-learn: said, not hidden
                    print(f"{name:<28} unavailable: {e}")
                    break
                runs.append((*rp.hit(traj, table.best), len(traj)))
            if runs:
                print(rp.format_row(rp.summarise(name, runs), n), flush=True)
    _kernel_tuner_rows(args, table, jobs)


def _kernel_tuner_rows(args: argparse.Namespace, table: rp.Table, jobs: int) -> None:
    version = _tune_kt.available(args.kernel_tuner_path)
    if version is None:
        print(
            "Kernel Tuner: not installed (pip install --target DIR kernel_tuner==1.5.0; --kernel-tuner-path DIR)"
        )
        return
    import tempfile
    import warnings

    warnings.filterwarnings("ignore")  # its "no thread block dimensions" warning: a GEMM tile has none
    n, gpus = len(table.points), max(int(g) for g in args.replay_gpus.split(","))
    parallel = args.parallel * gpus
    limit = rp.budget("random", n, parallel)
    print(
        f"-- Kernel Tuner {version}, simulation mode on the same table (its cache format), budget {limit} "
        f"evaluations; s to 2%: the same cost model, its evaluations taken {parallel} a round"
    )
    print(rp.HEADER)
    best_row: rp.Row | None = None
    with tempfile.TemporaryDirectory() as tmp:
        cache = _tune_kt.write_cache(table, Path(tmp) / "cache.json")
        for name in [s for s in args.kt_strategies.split(",") if s]:
            runs: list[tuple[int | None, float | None, int]] = []
            for seed in range(args.seeds):
                t0 = time.perf_counter()
                try:
                    seen = _tune_kt.run(table, cache, name, max_fevals=limit, seed=seed)
                except Exception as e:  # noqa: BLE001  # a strategy that fails on this space: said
                    print(f"{'kt:' + name:<28} failed: {type(e).__name__}: {str(e)[:120]}")
                    break
                own = time.perf_counter() - t0
                traj: rp.Trajectory = []
                clock = 0.0
                for k in range(0, len(seen), parallel):
                    chunk = [i for i, _ in seen[k : k + parallel]]
                    clock += own * len(chunk) / max(len(seen), 1) + rp.makespan(
                        [table.compile_s[i] for i in chunk], jobs
                    ) + rp.makespan([table.measure_s[i] for i in chunk], gpus)  # fmt: skip
                    traj.extend((i, clock, v) for i, v in seen[k : k + parallel])
                runs.append((*rp.hit(traj, table.best), len(traj)))
            if runs:
                row = rp.summarise("kt:" + name, runs)
                print(rp.format_row(row, n), flush=True)
                if row.evals is not None and (best_row is None or row.evals < (best_row.evals or 0)):
                    best_row = row
    print(f"Kernel Tuner's best: {best_row.name if best_row else 'none within 2% (median seed)'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--space", choices=["shipped", "large"], default="shipped")
    ap.add_argument("--objective", choices=["simulated", "measured"], default=None)
    ap.add_argument("--gpus", type=int, choices=[1, 2, 4], default=1)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--parallel", type=int, default=8, help="points per round per GPU")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--no-autotune", action="store_true", help="live, measured: skip @triton.autotune")
    ap.add_argument(
        "--autotune-only", action="store_true",
        help="measured: only @triton.autotune over the whole space, in --gpus slices (one process a GPU)",
    )  # fmt: skip
    ap.add_argument(
        "--autotune-chunk", type=int, default=250, help="--autotune-only: configs per autotune call"
    )
    ap.add_argument("--grid", type=Path, help="--autotune-only: a saved grid to compare the winner with")
    ap.add_argument(
        "--compile-jobs", type=int, default=None,
        help="CPU processes compiling configs ahead of the GPUs (default min(cores - 2, 48); 0: live, the "
        "GPU processes compile; --replay: the table's)",
    )  # fmt: skip
    ap.add_argument(
        "--arch", type=int, default=0, help="the GPUs' compute capability as 90 (0: nvidia-smi's)"
    )
    ap.add_argument("--save-grid", type=Path, help="measure every point (pool-compiled), write JSON")
    ap.add_argument(
        "--max-points", type=int, default=0, help="--save-grid: a seeded sample of this many points"
    )
    ap.add_argument(
        "--deadline-s", type=float, default=1e9, help="--save-grid: stop and save what is measured"
    )
    ap.add_argument("--warmup-ms", type=float, default=3.0, help="--save-grid: do_bench's warmup per point")
    ap.add_argument("--rep-ms", type=float, default=10.0, help="--save-grid: do_bench's rep per point")
    ap.add_argument("--no-replay", action="store_true", help="--save-grid: do not replay after saving")
    ap.add_argument("--replay", type=Path, help="replay every strategy against a saved grid (CPU only)")
    ap.add_argument("--replay-gpus", default="1,2,4", help="--replay: the GPU counts to model")
    ap.add_argument("--kernel-tuner-path", default=os.environ.get("KERNEL_TUNER_PATH"))
    ap.add_argument("--kt-strategies", default=",".join(_tune_kt.STRATEGIES))
    args = ap.parse_args()
    if args.replay:
        replay_main(args, args.replay)
        return
    if args.compile_jobs is None:
        args.compile_jobs = _tune_grid.default_jobs()
    objective = args.objective or ("measured" if args.device == "cuda" else "simulated")
    if objective == "measured" and args.device != "cuda":
        ap.error("--objective measured needs --device cuda")
    space = SHIPPED if args.space == "shipped" else LARGE
    points = valid_points(space, args.size)
    n_valid = len(points)
    if 0 < args.max_points < n_valid:
        keep = sorted(random.Random(0).sample(range(n_valid), args.max_points))
        points = [points[i] for i in keep]
    label = (
        "SIMULATED objective (no kernel runs)"
        if objective == "simulated"
        else f"measured on {args.gpus} GPU(s)"
    )
    print(
        f"space {args.space}: {n_valid} valid points"
        + (f" ({len(points)} sampled)" if len(points) < n_valid else "")
        + f"; M=N=K={args.size}; {label}"
    )
    if args.autotune_only:
        if objective != "measured":
            ap.error("--autotune-only needs --device cuda")
        res = _tune_autotune.autotune_sliced(
            points, args.size, gpus=args.gpus, chunk=args.autotune_chunk, deadline_s=args.deadline_s,
            warmup_ms=args.warmup_ms, rep_ms=args.rep_ms,
        )  # fmt: skip
        if args.grid:
            table = rp.load_table(args.grid)
            print(
                f"grid best {table.best:.5f} ms ({args.grid.name}); autotune's winner re-timed "
                f"{res['best_ms_retimed'] / table.best:.3f}x it"
            )
        return
    if args.save_grid:
        jobs = max(args.compile_jobs, 1)
        if objective == "simulated":
            table = _tune_grid.simulated_grid(points, args.size, simulated(args.size, 0), args.gpus, jobs)
        else:
            arch = args.arch or _tune_grid.gpu_arch()
            each = 0.7 * len(points) / jobs
            print(
                f"ETA: about {each:.0f} s to compile {len(points)} configs on {jobs} processes (~0.7 CPU s each), "
                f"the timing on {args.gpus} GPU(s) overlapped; sm{arch}; do_bench warmup {args.warmup_ms} ms, "
                f"rep {args.rep_ms} ms, median"
            )
            table = _tune_grid.measure_grid(
                points, args.size, gpus=args.gpus, jobs=jobs, arch=arch,
                warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, deadline_s=args.deadline_s,
            )  # fmt: skip
        table["valid_points"] = n_valid
        _tune_grid.save_grid(table, args.space, space["params"], space["constraints"], args.save_grid)
        print(f"saved {len(table['points'])} points to {args.save_grid}")
        if not args.no_replay:
            replay_main(args, args.save_grid)
        return
    live(args, points, objective)


if __name__ == "__main__":
    main()
