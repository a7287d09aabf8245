"""A warm second launch, before and after: seconds from the command's start to its first worker ready.

Starts one Ray head on this machine (``ray start --head``, one worker slot: one CPU, or one
GPU with ``--device cuda``; a ``HOME`` of its own, shared with the launches, so no stale
``~/.ray`` token gets in the way), builds the throw-away dataset of ``launch_overhead.py``
(N short evaluations of ``y = x + 1``), and runs, each round, for two checkouts of ``sweep``
one after the other:

- ``baseline``: the ``sweep`` package of ``--baseline REV`` (``git archive``: the code before
  the change), and ``this``: the checkout the bench is in;
- for each: every warm worker stopped, a first launch (starts the worker and keeps it), then
  ``--seconds`` second launches, each a fresh Python process (as a shell runs ``sweep
  launch``), each reusing that worker. The two checkouts cannot share a worker (its code
  digest differs: each would replace the other's), hence one first launch each.

Both checkouts are compiled first (``compileall``: in place, or under ``PYTHONPYCACHEPREFIX``
where that is set), so launches read ``.pyc`` files as an installed package's do.

Which checkout goes first alternates round by round. For every second launch it records:
the seconds from the process's start (the moment this bench spawned it) to the first worker
ready (``command``: Python's start, importing ``sweep``, the launch's own start), the
launch's own figure (``LaunchResult.startup_s``, from ``launch()``'s start) and the steps of
its start clock (``LaunchResult.phases``). The table gives medians and best of each, and the
ratio of this checkout's medians to the baseline's.

Without git (a copy of the checkout), ``--baseline-dir DIR`` names a folder holding the
baseline's ``sweep`` (``git archive bb96ca0 sweep | tar -x -C DIR`` where git is).

Usage: ``python bench/warm_launch.py [--baseline bb96ca0 | --baseline-dir DIR] [--rounds 2] [--seconds 3]
[--tasks 4] [--device cpu|cuda]`` (on a GPU host after ``source bench/gpu_site.sh``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_overhead import REPO, RunningRay, write_config, write_dataset
from warm_workers import STOP_WARM, run_python

_LAUNCH = """
import time
t_script = time.time()
import json, os, sys
from sweep.config import ConfigOverrides
from sweep.launch.driver import LaunchOptions, launch
opts = LaunchOptions(quiet=True, force=True, overrides=ConfigOverrides(address=os.environ["BENCH_ADDRESS"]))
t_launch = time.time()
r = launch(sys.argv[1], opts)
spawned = float(os.environ["BENCH_SPAWNED_AT"])
s = r.stats
print(json.dumps({"python_s": t_script - spawned, "imports_s": t_launch - t_script,
                  "command_s": t_launch - spawned + r.startup_s if r.startup_s is not None else None,
                  "startup_s": r.startup_s, "phases": dict(r.phases), "reused": s.workers_reused,
                  "statuses": dict(r.statuses)}))
"""

_STEPS = ("plan", "ray", "scheduler", "store")


def _baseline_tree(rev: str, into: Path) -> Path:
    """The ``sweep`` package of ``rev`` under ``into`` (``git archive``), for a child's cwd."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev, "sweep"], cwd=REPO, capture_output=True, check=False)
    if archive.returncode != 0:
        sys.exit(f"git archive {rev} failed: {archive.stderr.decode(errors='replace')[-500:]}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _commit(rev: str) -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", rev], check=False, cwd=REPO, capture_output=True, text=True
        )
    except OSError:  # no git on this host
        return rev
    return out.stdout.strip() or rev


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="bb96ca0", help="the revision to compare against (git archive)")
    ap.add_argument(
        "--baseline-dir", type=Path, help="a folder holding the baseline's `sweep` package (no git needed)"
    )
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=3, help="second launches per first launch")
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    if args.device == "cuda":
        env = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]}
        target = "auto"
    else:
        env = {"OMP_NUM_THREADS": "1"}
        target = "cpu"
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="sweep-bench-warm-launch-") as name:
        tmp = Path(name)
        if args.baseline_dir is not None:
            if not (args.baseline_dir / "sweep" / "__init__.py").is_file():
                sys.exit(f"--baseline-dir {args.baseline_dir} holds no sweep package")
            base_tree = args.baseline_dir.resolve()
        else:
            base_tree = _baseline_tree(args.baseline, tmp / "baseline")
        trees = {"baseline": base_tree, "this": REPO}
        (tmp / "home").mkdir()
        env["HOME"] = str(tmp / "home")
        # As an installed package: its `.pyc` files compiled once and read by every launch
        # (with PYTHONDONTWRITEBYTECODE set, each would compile every module of `sweep` again),
        # in place or under PYTHONPYCACHEPREFIX where that is set (`gpu_site.sh`).
        for tree in trees.values():
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(tree / "sweep")],
                stdout=subprocess.DEVNULL,
                check=False,
            )
        write_dataset(tmp / "data", args.tasks)
        cfg = tmp / "bench.yaml"
        write_config(cfg, tmp / "data", tmp / "results", target, 1.0)
        head = RunningRay(tmp / "head", env, args.device)
        try:
            base = {**env, "BENCH_ADDRESS": head.address}
            for i in range(args.rounds):
                for which in ("baseline", "this") if i % 2 == 0 else ("this", "baseline"):
                    run_python(STOP_WARM, [], base)
                    first, _ = run_python(_LAUNCH, [str(cfg)], base, cwd=trees[which])
                    for _ in range(args.seconds):
                        got, _ = run_python(_LAUNCH, [str(cfg)], base, cwd=trees[which])
                        runs[which].append(got)
                        print(
                            f"round {i + 1} {which}: command start to first worker ready "
                            f"{got['command_s']:.2f} s (python {got['python_s']:.2f}, imports "
                            f"{got['imports_s']:.2f}, launch {got['startup_s']:.2f}); reused "
                            f"{got['reused']}; steps {', '.join(f'{k} {v:.2f}' for k, v in got['phases'].items())}"
                            f"; first launch's {first['startup_s']:.2f} s",
                            file=sys.stderr,
                            flush=True,
                        )
            run_python(STOP_WARM, [], base)
        finally:
            head.close()
    _report(args, runs)


def _report(args: argparse.Namespace, runs: dict[str, list[dict[str, Any]]]) -> None:
    n = len(runs["this"])
    print(
        f"machine: {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f} at the end; baseline "
        f"{args.baseline_dir or _commit(args.baseline)}, this {_commit('HEAD')}; {args.rounds} rounds x {args.seconds} warm second "
        f"launches each on {args.device} ({args.tasks} tasks), checkouts alternating which goes first"
    )
    reused = {k: sum(r["reused"] for r in v) for k, v in runs.items()}
    print(
        f"second launches that reused the warm worker: baseline {reused['baseline']}/{n}, this {reused['this']}/{n}"
    )
    rows: list[tuple[str, str]] = [
        ("command_s", "command start to first worker ready"),
        ("python_s", "  python's start"),
        ("imports_s", "  imports (sweep.config, sweep.launch.driver)"),
        ("startup_s", "  launch() start to first worker ready"),
    ]
    rows += [(f"phase:{k}", f"    launch() start to '{k}' done") for k in _STEPS]
    width = max(len(label) for _, label in rows)
    print(
        f"\n{'figure (s)':<{width}}  {'base_med':>8}  {'this_med':>8}  {'base_best':>9}  {'this_best':>9}  {'ratio':>6}"
    )
    for key, label in rows:
        cols = []
        for which in ("baseline", "this"):
            xs = [
                float(r["phases"][key[6:]] if key.startswith("phase:") else r[key])
                for r in runs[which]
                if (key[6:] in r["phases"] if key.startswith("phase:") else r.get(key) is not None)
            ]
            cols.append(xs)
        if not all(cols):
            continue
        b, t = statistics.median(cols[0]), statistics.median(cols[1])
        print(f"{label:<{width}}  {b:8.2f}  {t:8.2f}  {min(cols[0]):9.2f}  {min(cols[1]):9.2f}  {t / b:6.3f}")
    goal = 1.0 if args.device == "cpu" else 2.0
    for key, what in (("startup_s", "from launch()'s start"), ("command_s", "from the command's start")):
        med = statistics.median(float(r[key]) for r in runs["this"])
        print(
            f"target {goal:g} s to the first worker ready {what}: {'met' if med <= goal else 'NOT met'} "
            f"(median {med:.2f} s, baseline {statistics.median(float(r[key]) for r in runs['baseline']):.2f} s)"
        )


if __name__ == "__main__":
    main()
