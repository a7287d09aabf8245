"""Warm workers: how soon a second ``sweep launch`` against a running cluster starts evaluating.

Starts one Ray head on this machine (``ray start --head``, one worker slot: one CPU, or one
GPU with ``--device cuda``), builds the throw-away dataset of ``launch_overhead.py`` (N short
evaluations of ``y = x + 1``), and runs, each round, two launches one after the other, each in
a fresh Python process (as a user's shell runs them), against that head:

- ``warm``: ``ray.keep_workers`` on (the default): the first launch starts the worker and
  leaves it running; the second one reuses it (its zygote, its sandbox, its built solution);
- ``cold`` (the baseline, today's behaviour): ``keep_workers: false``: each launch starts
  and ends its own worker.

Before each round every warm worker is stopped, so each first launch starts cold. The two
modes alternate which goes first, round by round. For each launch it records the launch's own
figure, the one ``sweep launch`` prints as "s to plan, start Ray and the first worker" (its
wall time minus its evaluation phase: ``LaunchResult.wall_s - stats.steady_s``), the
scheduler's seconds to the first worker ready, and the whole process's wall time. The table
gives the median and best over rounds, and the ratio of the warm second launch to the cold
second launch of the same round (median and worst).

``--overlap`` (CPU only) measures instead whether an embedded Ray could gain by starting the
zygote (``import torch``) while ``ray.init`` runs: each round, in a fresh process, ``ray.init``
of an embedded Ray and a zygote start one after the other, then at the same time (a thread);
both orders alternate.

Usage: ``.venv/bin/python bench/warm_workers.py [--tasks 20] [--rounds 5] [--device cpu|cuda]
[--overlap]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_overhead import REPO, RunningRay, write_config, write_dataset

_LAUNCH = """
import json, os, sys, time
t0 = time.monotonic()
from sweep.config import ConfigOverrides
from sweep.launch.driver import LaunchOptions, launch
keep = os.environ["BENCH_KEEP"] == "1"
opts = LaunchOptions(quiet=True, force=True,
                     overrides=ConfigOverrides(address=os.environ["BENCH_ADDRESS"], keep_workers=keep))
prof_out = os.environ.get("BENCH_PROFILE_OUT")
if prof_out:  # where a launch's time goes (--profile: the last warm second launch)
    import cProfile, io, pstats
    prof = cProfile.Profile()
    r = prof.runcall(launch, sys.argv[1], opts)
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
    open(prof_out, "w").write(text.getvalue())
else:
    r = launch(sys.argv[1], opts)
s = r.stats
print(json.dumps({"start_s": r.wall_s - s.steady_s, "first_ready_s": s.first_ready_s, "wall_s": r.wall_s,
                  "reused": s.workers_reused, "started": s.workers_started, "kept": r.kept_workers,
                  "statuses": dict(r.statuses), "process_s": time.monotonic() - t0,
                  "startup_s": r.startup_s, "phases": dict(r.phases)}))
"""

#: Stops every warm worker of the head at ``BENCH_ADDRESS`` and waits until their slots are free.
STOP_WARM = """
import os, time, ray
from sweep.cluster.warm import survey
from sweep.cluster.warm_admin import attached, stop_warm_workers
def busy():
    free, total = ray.available_resources(), ray.cluster_resources()
    return any(free.get(k, 0) < total.get(k, 0) for k in ("CPU", "GPU"))
with attached(os.environ["BENCH_ADDRESS"]):
    stop_warm_workers(stale_only=False, force=True)
    # until Ray has them dead and their slots free: the next launch must not wait for them
    deadline = time.monotonic() + 120
    while (survey() or busy()) and time.monotonic() < deadline:
        time.sleep(0.2)
"""

_OVERLAP = """
import json, sys, threading, time
mode = sys.argv[1]
t0 = time.monotonic()
from sweep.sandbox._zygote import ZygoteClient
out = {}
def zygote():
    t = time.monotonic()
    out["z"] = ZygoteClient("sweep.engine", "cpu", ("torch", "sweep.engine._evaluate"))
    out["zygote_s"] = time.monotonic() - t
def init():
    import ray
    t = time.monotonic()
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    out["init_s"] = time.monotonic() - t
if mode == "sequential":
    init(); zygote()
else:
    th = threading.Thread(target=zygote); th.start(); init(); th.join()
out["both_s"] = time.monotonic() - t0
out.pop("z").close()
import ray; ray.shutdown()
print(json.dumps(out))
"""


def run_python(
    code: str, args: list[str], env: dict[str, str], cwd: Path = REPO
) -> tuple[dict[str, Any], float]:
    """``python -c code *args`` in a fresh process (no ``RAY_ADDRESS``, ``env`` added; run in
    ``cwd``, whose ``sweep`` it imports): the JSON object its last line prints, and its wall
    time; exits this bench if it fails. The child finds the wall time it was started at in
    ``BENCH_SPAWNED_AT``."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env={**os.environ, "RAY_ADDRESS": "", **env, "BENCH_SPAWNED_AT": repr(time.time())},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"benchmark step failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    return (json.loads(lines[-1]) if lines else {}), wall


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _launch_rounds(args: argparse.Namespace, tmp: Path, env: dict[str, str], target: str) -> None:
    write_dataset(tmp / "data", args.tasks)
    cfg = tmp / "bench.yaml"
    write_config(cfg, tmp / "data", tmp / "results", target, 1.0)
    head = RunningRay(tmp / "head", env, args.device)
    runs: dict[str, list[list[dict[str, Any]]]] = {"warm": [], "cold": []}
    try:
        base = {**env, "BENCH_ADDRESS": head.address}
        for i in range(args.rounds):
            order = ["warm", "cold"] if i % 2 == 0 else ["cold", "warm"]
            for mode in order:
                run_python(STOP_WARM, [], base)  # the first launch of each pair starts cold
                pair = []
                for _ in range(2):
                    shutil.rmtree(tmp / "results", ignore_errors=True)
                    extra = {}
                    if args.profile and mode == "warm" and len(pair) == 1 and i == args.rounds - 1:
                        extra["BENCH_PROFILE_OUT"] = str(tmp / "second-launch.prof.txt")
                    got, wall = run_python(
                        _LAUNCH, [str(cfg)], {**base, "BENCH_KEEP": "1" if mode == "warm" else "0", **extra}
                    )
                    got["process_wall_s"] = wall
                    pair.append(got)
                runs[mode].append(pair)
                print(
                    f"round {i + 1} {mode}: first launch {pair[0]['start_s']:.2f} s to the first evaluation, "
                    f"second {pair[1]['start_s']:.2f} s (reused {pair[1]['reused']} of {pair[1]['started']}); "
                    f"processes {pair[0]['process_wall_s']:.2f} s, {pair[1]['process_wall_s']:.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
        run_python(STOP_WARM, [], base)
    finally:
        head.close()
    prof = tmp / "second-launch.prof.txt"
    if prof.exists():
        print(f"cProfile of the last warm second launch:\n{prof.read_text()}", file=sys.stderr)

    import ray
    import torch

    cpu = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    print(
        f"machine: {cpu}, {os.cpu_count()} cores; python {platform.python_version()}, torch {torch.__version__}, "
        f"ray {ray.__version__}; uptime load {os.getloadavg()[0]:.2f} at the end"
    )
    print(
        f"{args.tasks} evaluations of bench_add per launch on {args.device}, one worker slot; a Ray head started "
        f"once (ray start --head); {args.rounds} rounds, warm and cold pairs alternating; each launch a fresh "
        "process; 'start' = the launch's own 's to plan, start Ray and the first worker' (wall_s - steady_s), "
        "the issue's measure"
    )
    last = runs["warm"][-1][1]
    print(
        f"statuses of the last warm second launch: {last['statuses']}; it reused {last['reused']} worker(s)"
    )
    print()
    rows: list[tuple[str, list[float], list[float] | None]] = []
    cold2 = [p[1]["start_s"] for p in runs["cold"]]
    for key, label in (
        ("start_s", "start"),
        ("startup_s", "launch start to first worker ready"),
        ("first_ready_s", "scheduler start to first worker ready"),
        ("process_wall_s", "process wall"),
    ):
        c1 = [float(p[0][key]) for p in runs["cold"]]
        c2 = [float(p[1][key]) for p in runs["cold"]]
        w1 = [float(p[0][key]) for p in runs["warm"]]
        w2 = [float(p[1][key]) for p in runs["warm"]]
        rows += [
            (f"cold, first launch: {label}", c1, None),
            (f"cold, second launch (baseline, today): {label}", c2, c2),
            (f"warm, first launch (starts, keeps): {label}", w1, c2 if key == "start_s" else None),
            (f"warm, second launch (reuses): {label}", w2, [float(p[1][key]) for p in runs["cold"]]),
        ]
    width = max(len(r[0]) for r in rows)
    print(
        f"{'launch: figure':<{width}}  {'best_s':>7}  {'median_s':>8}  {'vs baseline: median':>20}  {'max':>6}"
    )
    print(f"{'-' * width}  {'-' * 7}  {'-' * 8}  {'-' * 20}  {'-' * 6}")
    for name, xs, base in rows:
        rel = "-"
        worst = "-"
        if base is not None:
            paired = [x / b for x, b in zip(xs, base)]
            rel, worst = f"{_median(paired):.3f}", f"{max(paired):.3f}"
        print(f"{name:<{width}}  {min(xs):7.2f}  {_median(xs):8.2f}  {rel:>20}  {worst:>6}")
    print()
    steps = ("plan", "ray", "scheduler", "store")
    print(
        "where the start goes (median seconds since the launch began, at the end of each step; "
        "the store opens in a thread beside Ray where the plan allows):"
    )
    for mode in ("cold", "warm"):
        for n, which in ((1, "second"),):
            marks = [p[n]["phases"] for p in runs[mode]]
            first = [float(p[n]["startup_s"]) for p in runs[mode]]
            cells = ", ".join(
                f"{k} {_median([float(m[k]) for m in marks]):.2f}"
                for k in steps
                if all(k in m for m in marks)
            )
            print(f"  {mode}, {which} launch: {cells}, first worker ready {_median(first):.2f}")
    print()
    warm2 = [p[1]["start_s"] for p in runs["warm"]]
    ready2 = [float(p[1]["startup_s"]) for p in runs["warm"]]
    goal = 1.0 if args.device == "cpu" else 2.0
    met = "met" if _median(warm2) <= goal else "NOT met"
    print(
        f"target: a second launch against a running cluster starts evaluating within {goal:g} s: {met} "
        f"(median {_median(warm2):.2f} s, worst {max(warm2):.2f} s; cold second launch median {_median(cold2):.2f} s)"
    )
    print(
        f"the launch's start to its first worker ready (the evaluations can begin): median {_median(ready2):.2f} s, "
        f"worst {max(ready2):.2f} s ('start' above also counts the store's last flush, at the end)"
    )


def _overlap_rounds(args: argparse.Namespace) -> None:
    env = {"OMP_NUM_THREADS": "1"}
    got: dict[str, list[dict[str, Any]]] = {"sequential": [], "overlapped": []}
    for i in range(args.rounds):
        order = ["sequential", "overlapped"] if i % 2 == 0 else ["overlapped", "sequential"]
        for mode in order:
            out, _ = run_python(_OVERLAP, [mode], env)
            got[mode].append(out)
        s, o = got["sequential"][-1], got["overlapped"][-1]
        print(
            f"round {i + 1}: sequential {s['both_s']:.2f} s (init {s['init_s']:.2f}, zygote {s['zygote_s']:.2f}); "
            f"overlapped {o['both_s']:.2f} s (init {o['init_s']:.2f}, zygote {o['zygote_s']:.2f})",
            file=sys.stderr,
            flush=True,
        )
    print(f"machine: {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f} at the end; {args.rounds} rounds")
    print(f"{'embedded Ray start + zygote start':<44}  {'best_s':>7}  {'median_s':>8}")
    for mode in ("sequential", "overlapped"):
        for key in ("init_s", "zygote_s", "both_s"):
            xs = [float(r[key]) for r in got[mode]]
            print(f"{mode + ': ' + key:<44}  {min(xs):7.2f}  {_median(xs):8.2f}")
    paired = [o["both_s"] / s["both_s"] for s, o in zip(got["sequential"], got["overlapped"])]
    print(f"overlapped / sequential, paired by round: median {_median(paired):.3f}, max {max(paired):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--overlap", action="store_true", help="measure ray.init overlapped with a zygote start")
    ap.add_argument("--profile", action="store_true", help="cProfile the last warm second launch")
    args = ap.parse_args()
    if args.overlap:
        _overlap_rounds(args)
        return
    if args.device == "cuda":
        env = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]}
        target = "auto"
    else:
        env = {"OMP_NUM_THREADS": "1"}
        target = "cpu"
    with tempfile.TemporaryDirectory(prefix="sweep-bench-warm-") as tmp:
        _launch_rounds(args, Path(tmp), env, target)


if __name__ == "__main__":
    main()
