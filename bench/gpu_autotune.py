"""Parameter sweep against ``@triton.autotune`` on one GPU (issue: parameter sweeps, the proof).

The shipped Triton GEMM (``gemm_n512_k512_triton``) over its whole valid parameter space on
one shape (``C = A @ B.T``, A ``M x 512``, B ``512 x 512``, float16; ``--m``, default 8192), two
ways, side by side in one run, each from a fresh process with an empty Triton cache:

- anchor: ``bench/_autotune_anchor.py``, ``@triton.autotune`` over the same configurations in
  one process (compile, then ``do_bench``, one configuration after the other);
- ours: ``sweep launch`` of a config that sweeps the same points (embedded Ray, the GPU
  worker's compile pool compiling ahead, ``ray.compile_workers: auto``), every point checked
  against the reference and timed, every trace stored;
- with ``--no-pool``, ours again with ``ray.compile_workers: 0`` (every compile in the GPU's
  process, as without the pool).

Prints a table: wall time of each (process start to the last result), the ratio to the anchor,
points; then the best point each found and whether they agree: the sweep's latency of the
anchor's choice against the sweep's best, and the anchor's time of the sweep's choice against
its best (within 5%, or the same point, is agreement).

Usage (on a GPU host): python3 bench/gpu_autotune.py --out DIR [--m 8192] [--grid full|small] [--no-pool]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLUTION = REPO / "solutions" / "sweep-examples" / "gemm" / "gemm_n512_k512" / "gemm_n512_k512_triton.json"
NAME = "gemm_n512_k512_triton"
SMALL = {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 128],
    "BLOCK_K": [32, 64],
    "num_warps": [4, 8],
    "num_stages": [3, 4],
}
KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")


def _dataset(root: Path, m: int) -> str:
    (root / "workloads" / "gemm").mkdir(parents=True, exist_ok=True)
    wl = {
        "uuid": f"bench-m{m}",
        "axes": {"M": m},
        "inputs": {"A": {"type": "random"}, "B": {"type": "random"}},
    }
    line = {"definition": "gemm_n512_k512", "solution": None, "workload": wl, "evaluation": None}
    (root / "workloads" / "gemm" / "bench.jsonl").write_text(json.dumps(line) + "\n")
    return str(wl["uuid"])


def _config(path: Path, data: Path, uuid: str, results: Path, grid: str, workers: str) -> Path:
    space = f"\n  params: {{{NAME}: {json.dumps(SMALL)}}}" if grid == "small" else ""
    path.write_text(
        f"name: autotune-bench\ndataset: [{REPO}, {data}]\nhardware: auto\n"
        f"definitions: {{names: [gemm_n512_k512]}}\n"
        f"solutions:\n  names: [{NAME}]{space}\n"
        f"workloads: {{uuids: [{uuid}]}}\n"
        f"ray: {{compile_workers: {workers}}}\n"
        # do_bench's budget (25 ms warm-up, 100 ms of repetitions), and no more, per point
        "evaluation: {warmup_ms: 25, rep_ms: 100, max_ms: 100}\n"
        f"output: {{results_dir: {results}}}\n"
    )
    return path


def _key(point: dict[str, object]) -> tuple[object, ...]:
    return tuple(point[k] for k in KEYS)


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(cache)
    env.pop("TRITON_INTERPRET", None)
    return env


def _ours(cfg: Path, results: Path, work: Path, label: str) -> dict[str, object]:
    from sweep.store import query

    cache = work / f"triton-cache-{label}"
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "sweep.cli", "launch", str(cfg)],
        capture_output=True,
        text=True,
        env=_env(cache),
        check=False,
    )
    wall = time.monotonic() - t0
    tail = [ln for ln in out.stdout.splitlines() if not ln.startswith("[")][-8:]
    print(
        f"-- sweep launch ({label}): exit {out.returncode}, {wall:.1f} s\n  " + "\n  ".join(tail), flush=True
    )
    if out.returncode != 0:
        print(out.stderr[-3000:])
    rows = query(
        results / "sweep.duckdb",
        f"SELECT solution_params, status, latency_ms FROM latest WHERE solution = '{NAME}'",
        results_dir=results,
    ).rows
    lat = {
        _key(json.loads(str(p))): float(ms) for p, status, ms in rows if status == "PASSED" and ms is not None
    }
    spans = query(
        results / "sweep.duckdb",
        "SELECT median(epoch(finished_at) - epoch(started_at)), sum(epoch(finished_at) - epoch(started_at)), "
        "max(epoch(finished_at)) - min(epoch(started_at)) FROM traces",
        results_dir=results,
    ).rows[0]
    cubins = len(list(cache.rglob("*.cubin")))
    print(
        f"  per evaluation: median {spans[0]:.3f} s, sum {spans[1]:.1f} s, first start to last end "
        f"{spans[2]:.1f} s; kernels in its Triton cache: {cubins}",
        flush=True,
    )
    statuses: dict[str, int] = {}
    for _, status, _ in rows:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {
        "wall_s": wall,
        "latency": lat,
        "statuses": statuses,
        "points": len(rows),
        "rc": out.returncode,
        "eval_median_s": spans[0],
        "eval_span_s": spans[2],
        "cubins": cubins,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--m", type=int, default=8192)
    ap.add_argument("--grid", choices=("full", "small"), default="full")
    ap.add_argument("--no-pool", action="store_true", help="also run the sweep with compile_workers: 0")
    args = ap.parse_args()
    from sweep.config import ConfigOverrides
    from sweep.plan import plan_config

    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="autotune-bench-"))
    data = work / "data"
    uuid = _dataset(data, args.m)
    cfg_pool = _config(work / "pool.yaml", data, uuid, work / "results-pool", args.grid, "auto")
    plan = plan_config(cfg_pool, ConfigOverrides(hardware="H100"))
    points = [t.params for t in plan.tasks if t.params is not None]
    (work / "points.json").write_text(json.dumps(points))
    print(f"{len(points)} points of {NAME} on M={args.m} ({args.grid} grid); work folder {work}", flush=True)

    t0 = time.monotonic()
    anchor_run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "_autotune_anchor.py"),
            str(SOLUTION),
            str(work / "points.json"),
            str(args.m),
        ],
        capture_output=True,
        text=True,
        env=_env(work / "triton-cache-anchor"),
        check=False,
    )
    anchor_wall = time.monotonic() - t0
    if anchor_run.returncode != 0:
        print("anchor failed:\n" + anchor_run.stderr[-4000:])
        return 1
    anchor = json.loads(anchor_run.stdout.strip().splitlines()[-1])
    print(
        f"-- @triton.autotune: {anchor_wall:.1f} s (tuning {anchor['tuning_s']:.1f} s) on {anchor['device']}",
        flush=True,
    )

    runs = {"sweep launch, compile pool": _ours(cfg_pool, work / "results-pool", work, "pool")}
    if args.no_pool:
        cfg0 = _config(work / "nopool.yaml", data, uuid, work / "results-nopool", args.grid, "0")
        runs["sweep launch, no pool"] = _ours(cfg0, work / "results-nopool", work, "nopool")

    print(f"\n{'run':<30} {'points':>6} {'wall s':>8} {'vs autotune':>12}")
    print(f"{'@triton.autotune (anchor)':<30} {anchor['configs']:>6} {anchor_wall:>8.1f} {1.0:>11.2f}x")
    for label, r in runs.items():
        print(
            f"{label:<30} {r['points']:>6} {r['wall_s']:>8.1f} {anchor_wall / float(r['wall_s']):>11.2f}x  {r['statuses']}"
        )

    ours = runs["sweep launch, compile pool"]
    lat: dict[tuple[object, ...], float] = ours["latency"]  # type: ignore[assignment]
    their = {_key(t["point"]): float(t["median_ms"]) for t in anchor["timings"]}
    ok = True
    if lat:
        our_best = min(lat, key=lambda k: lat[k])
        their_best = _key(anchor["best"])
        r1 = lat.get(their_best, float("nan")) / lat[our_best]
        r2 = their.get(our_best, float("nan")) / min(their.values())
        print("\nbest point (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):")
        print(f"  sweep:    {our_best}  {lat[our_best] * 1000:.2f} us (sweep's timer)")
        print(f"  autotune: {their_best}  {min(their.values()) * 1000:.2f} us (do_bench)")
        print(f"  sweep's latency of autotune's choice / sweep's best: {r1:.3f}")
        print(f"  autotune's time of the sweep's choice / autotune's best: {r2:.3f}")
        agree = our_best == their_best or (r1 <= 1.05 and r2 <= 1.05)
        print(f"  agree within 5%: {agree}")
        ok = agree
    else:
        print("no PASSED point in the sweep")
        ok = False
    summary = {
        "anchor_wall_s": anchor_wall,
        "anchor": anchor,
        "runs": {
            k: {**v, "latency": {str(p): ms for p, ms in v["latency"].items()}} for k, v in runs.items()
        },
    }  # type: ignore[union-attr]
    (args.out / "gpu_autotune.json").write_text(json.dumps(summary, indent=1))
    return 0 if ok and all(r["rc"] == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
