"""Scaling from one GPU to several: the same sweep on 1 and on N GPUs of this host, side by side.

The sweep: real BackendBench rows (``tests/data/real/backendbench/sample.trace.txt``, the first
``--per-op`` non-synthetic rows of every operator: 2 give ~180 rows of 90 operators), each
with its operator's ATen-identity solution (``gpu_backendbench.aten_identity``). Each run is
a fresh process doing ``sweep launch`` on an embedded Ray that sees the first G GPUs
(``CUDA_VISIBLE_DEVICES``), into a fresh results folder; the runs alternate 1, N, 1, N ... for
``--rounds`` rounds. For each run it prints:

- the evaluation phase (the launch's ``steady_s``: first worker ready to the last trace) and
  the whole command's wall time;
- per GPU: evaluations and busy seconds (the sum of each trace's ``finished_at - started_at``);
- the driver process's CPU seconds (is the driver the limit?).

Then the ratios, 1 GPU against N, of the evaluation phase and of the command, and each
evaluation's duration on N GPUs against the same task's on one (median and spread over the
tasks): the issue's "every evaluation got about 8% slower when two ran at once". Without N
GPUs on this host it says so and runs the one-GPU side only.

On CPU (``--device cpu``, a smoke test of this script) the "GPUs" are CPU worker slots.

Usage (device machine, repository root): ``source bench/gpu_site.sh; python3 bench/gpu_scaling.py
[--gpus 2] [--per-op 2] [--rounds 1]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from warm_workers import run_python

SAMPLE_NAMES = ("tests/data/real/backendbench/sample.trace.txt",)

_LAUNCH = """
import json, resource, sys
from sweep.launch.driver import LaunchOptions, launch
r = launch(sys.argv[1], LaunchOptions(quiet=True))
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"steady_s": r.stats.steady_s, "wall_s": r.wall_s, "startup_s": r.startup_s,
                  "ran": r.ran, "statuses": dict(r.statuses), "workers": len(r.stats.workers),
                  "driver_cpu_s": u.ru_utime + u.ru_stime}))
"""


def _sample() -> Path:
    for name in SAMPLE_NAMES:
        p = (REPO / name).resolve()
        if p.is_file():
            return p
    sys.exit(f"no BackendBench sample trace at {', '.join(SAMPLE_NAMES)} (relative to {REPO})")


def trimmed_trace(src: Path, per_op: int, dst: Path, max_ops: int | None = None) -> None:
    """``src`` with, for every operator (the first ``max_ops`` of them), only its first
    ``per_op`` rows of ``cnt`` > 0."""
    out: list[str] = []
    kept, ops = 0, 0
    for line in src.read_text().splitlines():
        if line.startswith("Operator:"):
            ops += 1
            if max_ops is not None and ops > max_ops:
                break
            out.append(line)
            kept = 0
        elif line.startswith("cnt:"):
            synthetic = line.startswith("cnt: 0,")
            if not synthetic and kept < per_op:
                out.append(line)
                kept += 1
    dst.write_text("\n".join(out) + "\n")


def write_dataset(root: Path, per_op: int, max_ops: int | None = None) -> int:
    """The dataset: trimmed rows, definitions and workloads imported, an ATen identity each."""
    from gpu_backendbench import aten_identity

    from sweep.backendbench import import_backendbench
    from sweep.plan import load_dataset

    trace = root / "rows.trace.txt"
    root.mkdir(parents=True, exist_ok=True)
    trimmed_trace(_sample(), per_op, trace, max_ops)
    import_backendbench(trace, root / "data")
    ds = load_dataset([root / "data"])
    for name, defn in ds.definitions.items():
        op = _op_of(defn.tags)
        sol = aten_identity(defn, op)
        folder = root / "data" / "solutions" / "aten" / defn.op_type / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sol.name}.json").write_text(sol.to_json() + "\n")
    return sum(len(v) for v in ds.workloads.values())


def _op_of(tags: list[str]) -> str:
    """``aten.relu.default`` from an imported definition's ``aten:relu.default`` tag."""
    for tag in tags:
        if tag.startswith("aten:"):
            return "aten." + tag.split(":", 1)[1]
    raise SystemExit(f"an imported definition without its aten: tag: {tags}")


def write_config(path: Path, data: Path, results: Path, slots: int, device: str) -> None:
    ray = f"ray: {{num_gpus: {slots}}}\n" if device == "cuda" else f"ray: {{num_cpus: {slots}}}\n"
    path.write_text(
        f"name: scaling\ndataset: [{data}]\nhardware: auto\n{ray}"
        "evaluation: {seed: 0, trials: 3, warmup_ms: 10, rep_ms: 50, "
        "op_type_tolerance: {backendbench: {atol: 0.01, rtol: 0.01}}}\n"
        f"output: {{results_dir: {results}}}\n"
    )


def run(cfg: Path, slots: int, device: str) -> dict[str, Any]:
    """One launch of ``cfg`` in a fresh process seeing the first ``slots`` GPUs."""
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(slots))} if device == "cuda" else {}
    got, wall = run_python(_LAUNCH, [str(cfg)], env)
    got["process_s"] = wall
    return got


def per_task(results: Path) -> tuple[dict[str, float], dict[str, tuple[int, float]]]:
    """Each task's evaluation seconds, and per GPU (node, gpu id): evaluations, busy seconds."""
    durations: dict[str, float] = {}
    gpus: dict[str, list[float]] = defaultdict(list)
    for log in sorted((results / "traces").rglob("*.jsonl")):
        for line in log.read_text().splitlines():
            if not line.strip():
                continue
            p = json.loads(line).get("provenance") or {}
            if not (p.get("started_at") and p.get("finished_at")):
                continue
            s = (
                datetime.fromisoformat(p["finished_at"]) - datetime.fromisoformat(p["started_at"])
            ).total_seconds()
            durations[str(p.get("task_id"))] = s
            # On CPU (no GPU id) each worker slot is told apart by its sandbox process.
            slot = f"gpu{p['gpu_id']}" if p.get("gpu_id") is not None else f"pid{p.get('worker_pid')}"
            gpus[f"{str(p.get('node_id'))[:8]}/{slot}"].append(s)
    return durations, {k: (len(v), sum(v)) for k, v in sorted(gpus.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--gpus", type=int, default=2, help="N: the run to compare with one GPU")
    ap.add_argument("--per-op", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--max-ops", type=int, default=None, help="only the first N operators (a quick check)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args()

    have = args.gpus
    if args.device == "cuda":
        import torch

        have = torch.cuda.device_count()
        print(f"GPUs: {have} x {torch.cuda.get_device_name(0) if have else '-'}; {os.cpu_count()} CPU cores")
    sizes = [1, args.gpus] if have >= args.gpus else [1]
    if len(sizes) == 1:
        print(f"only {have} GPU(s) on this host: the {args.gpus}-GPU run cannot be made here; one GPU only")

    tmp = Path(tempfile.mkdtemp(prefix="sweep-scaling-"))
    rows = write_dataset(tmp / "dataset", args.per_op, args.max_ops)
    print(f"{rows} BackendBench rows (first {args.per_op} real rows of each operator), ATen identity each")
    runs: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in range(args.rounds):
        for slots in sizes:
            results = tmp / f"results-{slots}-{r}"
            cfg = tmp / f"scaling-{slots}-{r}.yaml"
            write_config(cfg, tmp / "dataset" / "data", results, slots, args.device)
            got = run(cfg, slots, args.device)
            got["durations"], got["gpus"] = per_task(results)
            runs[slots].append(got)
            print(
                f"round {r + 1}, {slots} GPU(s): {got['ran']} ran {got['statuses']}; evaluation phase "
                f"{got['steady_s']:.1f} s, command {got['process_s']:.1f} s, driver CPU {got['driver_cpu_s']:.1f} s",
                flush=True,
            )
            for gpu, (n, busy) in got["gpus"].items():
                print(f"    {gpu}: {n} evaluations, busy {busy:.1f} s")
    if len(sizes) < 2:
        return
    n = args.gpus
    print()
    print(
        f"{'round':>5}  {'1 GPU: eval s':>13}  {f'{n} GPUs: eval s':>14}  {'scaling (eval)':>14}  {'scaling (command)':>17}"
    )
    for r in range(args.rounds):
        a, b = runs[1][r], runs[n][r]
        print(
            f"{r + 1:>5}  {a['steady_s']:13.1f}  {b['steady_s']:14.1f}  {a['steady_s'] / b['steady_s']:14.2f}x"
            f"  {a['process_s'] / b['process_s']:16.2f}x"
        )
    ratios = [
        b["durations"][k] / a["durations"][k]
        for a, b in zip(runs[1], runs[n])
        for k in a["durations"].keys() & b["durations"].keys()
        if a["durations"][k] > 0
    ]
    q = statistics.quantiles(ratios, n=10) if len(ratios) >= 10 else [min(ratios), max(ratios)]
    print(
        f"each evaluation on {n} GPUs against the same task on 1: median {statistics.median(ratios):.3f}x "
        f"(p10 {q[0]:.3f}, p90 {q[-1]:.3f}) over {len(ratios)} tasks"
    )
    best = max(runs[1][r]["steady_s"] / runs[n][r]["steady_s"] for r in range(args.rounds))
    print(f"target >= {0.975 * n:.2f}x on the evaluation phase: {'met' if best >= 0.975 * n else 'NOT met'}")


if __name__ == "__main__":
    main()
