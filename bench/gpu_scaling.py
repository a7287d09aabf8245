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

With ``--baseline REV`` (or ``--baseline-dir DIR``, a folder holding a baseline's ``sweep``,
where the checkout has no git) every run on more than one GPU is made twice, this checkout's
``sweep`` and the baseline's alternating, and the table gives both. ``--warmup`` first runs a
short sweep on all the GPUs, not counted, so that no measured run is the host's first (files
not yet cached). A first sweep has no earlier durations; the launch orders it by input bytes,
largest first, and the bench prints how well a task's input bytes rank its seconds on one GPU
(Spearman's rho over the tasks).

On CPU (``--device cpu``, a smoke test of this script) the "GPUs" are CPU worker slots.

Usage (device machine, repository root): ``source bench/gpu_site.sh; python3 bench/gpu_scaling.py
[--gpus 1,2,4] [--per-op 2] [--rounds 1] [--short] [--warmup] [--cuda-max-connections N]
[--baseline REV | --baseline-dir DIR]``
(``--short``: the shorter timing budget of earlier runs; without it every task runs at the
evaluation's default settings).
"""

from __future__ import annotations

import argparse
import itertools
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

from warm_launch import _baseline_tree, _commit
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


def write_config(
    path: Path,
    data: Path,
    results: Path,
    slots: int,
    device: str,
    short: bool = False,
    queues: int | None = None,
) -> None:
    """A launch config over ``data``: the evaluation's default settings (timing budget included),
    or with ``short`` the shorter budget of earlier runs (trials 3, warm-up 10 ms, rep 50 ms);
    ``queues``: ``evaluation.cuda_max_connections`` (``None``: unset, CUDA's default)."""
    ray = f"ray: {{num_{'gpus' if device == 'cuda' else 'cpus'}: {slots}}}\n"
    timing = "trials: 3, warmup_ms: 10, rep_ms: 50, " if short else ""
    if queues is not None:
        timing += f"cuda_max_connections: {queues}, "
    path.write_text(
        f"name: scaling\ndataset: [{data}]\nhardware: auto\n{ray}"
        f"evaluation: {{seed: 0, {timing}"
        "op_type_tolerance: {backendbench: {atol: 0.01, rtol: 0.01}}}\n"
        f"output: {{results_dir: {results}}}\n"
    )


def run(cfg: Path, slots: int, device: str, tree: Path = REPO) -> dict[str, Any]:
    """One launch of ``cfg`` in a fresh process seeing the first ``slots`` GPUs, importing the
    ``sweep`` of ``tree``."""
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(slots))} if device == "cuda" else {}
    got, wall = run_python(_LAUNCH, [str(cfg)], env, cwd=tree)
    got["process_s"] = wall
    return got


def per_task(results: Path) -> dict[str, Any]:
    """From a run's traces: each task's evaluation seconds (``durations``); per GPU (node, gpu
    id) its evaluations and busy seconds (``gpus``) and the ids of the tasks it ran
    (``tasks_of``); each task's definition and workload uuid (``keys``)."""
    durations: dict[str, float] = {}
    gpus: dict[str, list[float]] = defaultdict(list)
    tasks_of: dict[str, list[str]] = defaultdict(list)
    keys: dict[str, tuple[str, str]] = {}
    iters: dict[str, int] = {}
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    speedups: dict[str, float] = {}
    for log in sorted((results / "traces").rglob("*.jsonl")):
        for line in log.read_text().splitlines():
            if not line.strip():
                continue
            trace = json.loads(line)
            p = trace.get("provenance") or {}
            if not (p.get("started_at") and p.get("finished_at")):
                continue
            s = (
                datetime.fromisoformat(p["finished_at"]) - datetime.fromisoformat(p["started_at"])
            ).total_seconds()
            tid = str(p.get("task_id"))
            durations[tid] = s
            keys[tid] = (str(trace.get("definition")), str((trace.get("workload") or {}).get("uuid")))
            ev = trace.get("evaluation") or {}
            sides = [ev.get("timing") or {}, ev.get("reference_timing") or {}]
            if all(side.get("iterations") for side in sides):
                iters[tid] = sum(int(side["iterations"]) for side in sides)
            if (ev.get("performance") or {}).get("speedup_factor"):
                speedups[tid] = float(ev["performance"]["speedup_factor"])
            # On CPU (no GPU id) each worker slot is told apart by its sandbox process.
            slot = f"gpu{p['gpu_id']}" if p.get("gpu_id") is not None else f"pid{p.get('worker_pid')}"
            gpus[f"{str(p.get('node_id'))[:8]}/{slot}"].append(s)
            tasks_of[f"{str(p.get('node_id'))[:8]}/{slot}"].append(tid)
            spans[f"{str(p.get('node_id'))[:8]}/{slot}"].append(
                (
                    datetime.fromisoformat(p["started_at"]).timestamp(),
                    datetime.fromisoformat(p["finished_at"]).timestamp(),
                )
            )
    return {
        "durations": durations,
        "gpus": {k: (len(v), sum(v)) for k, v in sorted(gpus.items())},
        "tasks_of": dict(tasks_of),
        "keys": keys,
        "iters": iters,
        "gaps": {k: _gaps(v) for k, v in sorted(spans.items())},
        "speedups": speedups,
    }


def _gaps(spans: list[tuple[float, float]]) -> list[float]:
    """Seconds between one task's end and the next task's start on one GPU."""
    spans = sorted(spans)
    return [b[0] - a[1] for a, b in itertools.pairwise(spans)]


def input_sizes(data: Path) -> dict[tuple[str, str], int]:
    """Input bytes of each (definition, workload uuid) of the dataset: what a first sweep's
    launch orders its tasks by."""
    from sweep.plan import load_dataset
    from sweep.schema.sizes import input_bytes

    ds = load_dataset([data])
    return {(n, w.uuid): input_bytes(ds.definitions[n], w) for n, ws in ds.workloads.items() for w in ws}


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2  # ties share their mean rank
        i = j + 1
    return ranks


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rank correlation of two equally long lists (nan under 3 pairs)."""
    if len(xs) < 3:
        return float("nan")
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var if var else float("nan")


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


def _quantiles(xs: list[float]) -> tuple[float, float, float]:
    """p10, p50, p90 of ``xs`` (nearest rank; nan when empty)."""
    if not xs:
        return (float("nan"),) * 3
    xs = sorted(xs)
    return tuple(xs[min(len(xs) - 1, int(f * len(xs)))] for f in (0.1, 0.5, 0.9))  # type: ignore[return-value]


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
    ap.add_argument("--warmup", action="store_true", help="a short uncounted sweep on all the GPUs first")
    ap.add_argument(
        "--cuda-max-connections",
        type=int,
        default=None,
        help="evaluation.cuda_max_connections of every launch (default: unset, CUDA's 8 queues)",
    )
    ap.add_argument("--baseline", default=None, help="a revision to compare against on >1 GPU (git archive)")
    ap.add_argument("--baseline-dir", type=Path, help="a folder holding the baseline's `sweep` package")
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
    if args.cuda_max_connections is not None:
        settings += f"; evaluation.cuda_max_connections {args.cuda_max_connections}"

    tmp = Path(tempfile.mkdtemp(prefix="sweep-scaling-"))
    trees = {"this": REPO}
    if args.baseline_dir is not None:
        trees["baseline"] = args.baseline_dir.resolve()
    elif args.baseline is not None:
        trees["baseline"] = _baseline_tree(args.baseline, tmp / "baseline")
    if "baseline" in trees:
        print(
            f"this: {_commit('HEAD')} (and the working tree); baseline: {args.baseline_dir or _commit(args.baseline)}"
        )
    if args.warmup:
        write_dataset(tmp / "warm", 1, max_ops=8)
        cfg = tmp / "warmup.yaml"
        write_config(
            cfg,
            tmp / "warm" / "data",
            tmp / "results-warmup",
            sizes[-1],
            args.device,
            args.short,
            args.cuda_max_connections,
        )
        got = run(cfg, sizes[-1], args.device)
        print(
            f"warm-up on {sizes[-1]} GPU(s), not counted: {got['ran']} ran in {got['process_s']:.1f} s",
            flush=True,
        )
    rows = write_dataset(tmp / "dataset", args.per_op, args.max_ops)
    print(
        f"{rows} BackendBench rows (first {args.per_op} real rows of each operator), ATen identity each; {settings}"
    )
    runs: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for r in range(args.rounds):
        for slots in sizes:
            whos = ["this"] if slots == 1 else sorted(trees, reverse=r % 2 == 1)
            for who in whos:
                results = tmp / f"results-{slots}-{who}-{r}"
                cfg = tmp / f"scaling-{slots}-{who}-{r}.yaml"
                write_config(
                    cfg,
                    tmp / "dataset" / "data",
                    results,
                    slots,
                    args.device,
                    args.short,
                    args.cuda_max_connections,
                )
                got = run(cfg, slots, args.device, trees[who])
                got.update(per_task(results))
                runs[(slots, who)].append(got)
                print(
                    f"round {r + 1}, {slots} GPU(s), {who}: {got['ran']} ran {got['statuses']}; "
                    f"start-up {got['startup_s']:.1f} s, evaluation phase {got['steady_s']:.1f} s, "
                    f"command {got['process_s']:.1f} s, driver CPU {got['driver_cpu_s']:.1f} s",
                    flush=True,
                )
                for gpu, (n, busy) in got["gpus"].items():
                    gaps = got["gaps"].get(gpu) or [float("nan")]
                    print(
                        f"    {gpu}: {n} evaluations, busy {busy:.1f} s, {1000 * busy / max(n, 1):.0f} ms each; "
                        f"between tasks {sum(gaps):.1f} s, median {1000 * statistics.median(gaps):.0f} ms"
                    )
    sized = input_sizes(tmp / "dataset" / "data")
    for r, one in enumerate(runs[(1, "this")]):
        both = [t for t in one["durations"] if one["keys"][t] in sized]
        rho = spearman([one["durations"][t] for t in both], [float(sized[one["keys"][t]]) for t in both])
        print(
            f"round {r + 1}: input bytes against seconds on 1 GPU over {len(both)} tasks, Spearman rho {rho:.2f}"
        )
    if len(sizes) < 2:
        return
    print()
    print(
        f"{'round':>5}  {'GPUs':>4}  {'sweep':>8}  {'start-up s':>10}  {'eval phase s':>12}  {'ms/eval/worker':>14}  "
        f"{'command s':>9}  {'vs 1 (eval)':>11}  {'vs 1 (command)':>14}  {'eval slowdown':>13}"
    )
    for r in range(args.rounds):
        one = runs[(1, "this")][r]
        for n in sizes:
            for who in ["this"] if n == 1 else sorted(trees, reverse=True):
                b = runs[(n, who)][r]
                ratios = [
                    b["durations"][k] / one["durations"][k]
                    for k in one["durations"].keys() & b["durations"].keys()
                    if one["durations"][k] > 0
                ]
                per_eval = (
                    statistics.median(b["durations"].values()) * 1000 if b["durations"] else float("nan")
                )
                slow = statistics.median(ratios) - 1 if ratios else float("nan")
                print(
                    f"{r + 1:>5}  {n:>4}  {who:>8}  {b['startup_s']:10.1f}  {b['steady_s']:12.1f}  {per_eval:14.0f}  "
                    f"{b['process_s']:9.1f}  {one['steady_s'] / b['steady_s']:10.2f}x  "
                    f"{one['process_s'] / b['process_s']:13.2f}x  {100 * slow:12.1f}%"
                )
    print(
        "eval slowdown: the median over tasks of (a task's evaluation seconds on N GPUs / the same task's on 1) - 1"
    )
    print(
        "timed samples (both sides) and identity speedups per run; samples against the same task's on 1 GPU:"
    )
    for r in range(args.rounds):
        one = runs[(1, "this")][r]
        for n in sizes:
            for who in ["this"] if n == 1 else sorted(trees, reverse=True):
                b = runs[(n, who)][r]
                common = [k for k in b["iters"] if k in one["iters"] and one["iters"][k] > 0]
                more = (
                    statistics.median(b["iters"][k] / one["iters"][k] for k in common) - 1
                    if common
                    else float("nan")
                )
                q = _quantiles(list(b["speedups"].values()))
                print(
                    f"  round {r + 1}, {n} GPU(s), {who}: samples median {statistics.median(b['iters'].values()) if b['iters'] else 0:.0f}, "
                    f"{100 * more:+.1f}% against 1 GPU (median over tasks); speedup p10 {q[0]:.3f} p50 {q[1]:.3f} p90 {q[2]:.3f}"
                )
    print("per worker: heavier tasks (their seconds on 1 GPU) or a slower worker (its tasks' slowdown)?")
    for r in range(args.rounds):
        for n in sizes[1:]:
            for who in sorted(trees, reverse=True):
                print(f"  round {r + 1}, {n} GPU(s), {who}:")
                many = runs[(n, who)][r]
                for line in worker_lines(
                    runs[(1, "this")][r]["durations"], many["durations"], many["tasks_of"]
                ):
                    print(line)
    for n in sizes[1:]:
        best = max(
            runs[(1, "this")][r]["steady_s"] / runs[(n, "this")][r]["steady_s"] for r in range(args.rounds)
        )
        need = {2: 1.95, 4: 3.8}.get(n, 0.95 * n)
        print(
            f"target >= {need:.2f}x on the evaluation phase with {n} GPUs: {'met' if best >= need else 'NOT met'} ({best:.2f}x)"
        )


if __name__ == "__main__":
    main()
