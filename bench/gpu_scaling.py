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
[--gpus 1,2,4] [--per-op 2] [--rounds 1] [--short]`` (``--short``: the shorter timing budget of
earlier runs; without it every task runs at the evaluation's default settings).
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


def write_config(path: Path, data: Path, results: Path, slots: int, device: str, short: bool = False) -> None:
    """A launch config over ``data``: the evaluation's default settings (timing budget included),
    or with ``short`` the shorter budget of earlier runs (trials 3, warm-up 10 ms, rep 50 ms)."""
    ray = f"ray: {{num_gpus: {slots}}}\n" if device == "cuda" else f"ray: {{num_cpus: {slots}}}\n"
    timing = "trials: 3, warmup_ms: 10, rep_ms: 50, " if short else ""
    path.write_text(
        f"name: scaling\ndataset: [{data}]\nhardware: auto\n{ray}"
        f"evaluation: {{seed: 0, {timing}"
        "op_type_tolerance: {backendbench: {atol: 0.01, rtol: 0.01}}}\n"
        f"output: {{results_dir: {results}}}\n"
    )


def run(cfg: Path, slots: int, device: str) -> dict[str, Any]:
    """One launch of ``cfg`` in a fresh process seeing the first ``slots`` GPUs."""
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(slots))} if device == "cuda" else {}
    got, wall = run_python(_LAUNCH, [str(cfg)], env)
    got["process_s"] = wall
    return got


def per_task(results: Path) -> tuple[dict[str, float], dict[str, tuple[int, float]], dict[str, list[str]]]:
    """Each task's evaluation seconds; per GPU (node, gpu id): evaluations, busy seconds; and
    per GPU the ids of the tasks it ran."""
    durations: dict[str, float] = {}
    gpus: dict[str, list[float]] = defaultdict(list)
    tasks_of: dict[str, list[str]] = defaultdict(list)
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
            tasks_of[f"{str(p.get('node_id'))[:8]}/{slot}"].append(str(p.get("task_id")))
    return durations, {k: (len(v), sum(v)) for k, v in sorted(gpus.items())}, dict(tasks_of)


def worker_lines(one: dict[str, float], many: dict[str, float], tasks_of: dict[str, list[str]]) -> list[str]:
    """Per worker of a run on several GPUs: whether it was slow because its tasks were heavier
    (their seconds on one GPU) or because it ran them slower (the median of each task's
    seconds here over its seconds on one GPU)."""
    out = []
    for worker, ids in sorted(tasks_of.items()):
        both = [k for k in ids if k in one and one[k] > 0 and k in many]
        if not both:
            continue
        ratio = statistics.median(many[k] / one[k] for k in both) - 1
        out.append(
            f"    {worker}: {len(both)} tasks, {sum(one[k] for k in both):.1f} s of them on 1 GPU, "
            f"{sum(many[k] for k in both):.1f} s here; each task's slowdown against 1 GPU, median {100 * ratio:+.1f}%"
        )
    return out


def _sizes(text: str) -> list[int]:
    sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    if not sizes or sizes[0] < 1:
        raise SystemExit(f"--gpus {text!r}: a comma-separated list of GPU counts >= 1, e.g. 1,2,4")
    return sizes if sizes[0] == 1 else [1, *sizes]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--gpus", default="2", help="GPU counts to compare with one GPU, e.g. 2 or 1,2,4")
    ap.add_argument("--per-op", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--max-ops", type=int, default=None, help="only the first N operators (a quick check)")
    ap.add_argument(
        "--short", action="store_true", help="the short timing budget of earlier runs, not the defaults"
    )
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args()

    wanted = _sizes(args.gpus)
    have = max(wanted)
    if args.device == "cuda":
        import torch

        have = torch.cuda.device_count()
        print(f"GPUs: {have} x {torch.cuda.get_device_name(0) if have else '-'}; {os.cpu_count()} CPU cores")
    sizes = [n for n in wanted if n <= have]
    for n in wanted:
        if n > have:
            print(f"only {have} GPU(s) on this host: the {n}-GPU run cannot be made here")
    settings = (
        "short budget (trials 3, warm-up 10 ms, rep 50 ms)" if args.short else "default evaluation settings"
    )

    tmp = Path(tempfile.mkdtemp(prefix="sweep-scaling-"))
    rows = write_dataset(tmp / "dataset", args.per_op, args.max_ops)
    print(
        f"{rows} BackendBench rows (first {args.per_op} real rows of each operator), ATen identity each; {settings}"
    )
    runs: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in range(args.rounds):
        for slots in sizes:
            results = tmp / f"results-{slots}-{r}"
            cfg = tmp / f"scaling-{slots}-{r}.yaml"
            write_config(cfg, tmp / "dataset" / "data", results, slots, args.device, args.short)
            got = run(cfg, slots, args.device)
            got["durations"], got["gpus"], got["tasks_of"] = per_task(results)
            runs[slots].append(got)
            print(
                f"round {r + 1}, {slots} GPU(s): {got['ran']} ran {got['statuses']}; start-up {got['startup_s']:.1f} s, "
                f"evaluation phase {got['steady_s']:.1f} s, command {got['process_s']:.1f} s, "
                f"driver CPU {got['driver_cpu_s']:.1f} s",
                flush=True,
            )
            for gpu, (n, busy) in got["gpus"].items():
                print(f"    {gpu}: {n} evaluations, busy {busy:.1f} s, {1000 * busy / max(n, 1):.0f} ms each")
    if len(sizes) < 2:
        return
    print()
    print(
        f"{'round':>5}  {'GPUs':>4}  {'start-up s':>10}  {'eval phase s':>12}  {'ms/eval/worker':>14}  "
        f"{'command s':>9}  {'vs 1 (eval)':>11}  {'vs 1 (command)':>14}  {'eval slowdown':>13}"
    )
    for r in range(args.rounds):
        one = runs[1][r]
        for n in sizes:
            b = runs[n][r]
            ratios = [
                b["durations"][k] / one["durations"][k]
                for k in one["durations"].keys() & b["durations"].keys()
                if one["durations"][k] > 0
            ]
            per_eval = statistics.median(b["durations"].values()) * 1000 if b["durations"] else float("nan")
            slow = statistics.median(ratios) - 1 if ratios else float("nan")
            print(
                f"{r + 1:>5}  {n:>4}  {b['startup_s']:10.1f}  {b['steady_s']:12.1f}  {per_eval:14.0f}  "
                f"{b['process_s']:9.1f}  {one['steady_s'] / b['steady_s']:10.2f}x  "
                f"{one['process_s'] / b['process_s']:13.2f}x  {100 * slow:12.1f}%"
            )
    print(
        "eval slowdown: the median over tasks of (a task's evaluation seconds on N GPUs / the same task's on 1) - 1"
    )
    print("per worker: heavier tasks (their seconds on 1 GPU) or a slower worker (its tasks' slowdown)?")
    for r in range(args.rounds):
        for n in sizes[1:]:
            print(f"  round {r + 1}, {n} GPU(s):")
            for line in worker_lines(
                runs[1][r]["durations"], runs[n][r]["durations"], runs[n][r]["tasks_of"]
            ):
                print(line)
    for n in sizes[1:]:
        best = max(runs[1][r]["steady_s"] / runs[n][r]["steady_s"] for r in range(args.rounds))
        need = {2: 1.95, 4: 3.8}.get(n, 0.95 * n)
        print(
            f"target >= {need:.2f}x on the evaluation phase with {n} GPUs: {'met' if best >= need else 'NOT met'} ({best:.2f}x)"
        )


if __name__ == "__main__":
    main()
