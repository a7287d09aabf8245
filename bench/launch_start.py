"""Start-up of an embedded ``sweep launch``: seconds from the command's start to its first trace.

Runs, in a fresh Python process each round (as a shell runs the command), an embedded launch
(no address: Ray started in the process) over the throw-away dataset of ``launch_overhead.py``
(N short evaluations of ``y = x + 1``), and prints, per round: the seconds from the process's
start to the first trace's end (its ``provenance.finished_at``), the launch's own start figure
(``LaunchResult.startup_s``: to the first worker ready) and the steps of its start clock
(``LaunchResult.phases``: plan, Ray, scheduler ...), then the medians.

``--compile-workers auto,0`` alternates, round by round, launches whose config sets
``ray.compile_workers`` to each value, and prints the medians of each: what the compile pool
costs the start (on a 16-core host with one GPU, ``auto`` is 8 processes, each from a zygote
of its own; they start once the worker's sandbox is ready, where they used to start beside
its zygote and be waited for).

``--handover on,off`` (the default) alternates, round by round, ``ray.zygote_handover: true``
and ``false``: the driver starts the workers' zygotes beside Ray's start and each worker adopts
one (``zygote_preloaded``: when the handed zygote had imported everything, ``zygote_adopted``:
when the worker had it), against each worker starting its own once it is up (``zygote``).

``--head-start on,off`` alternates ``ray.head_start: true`` and ``false`` the same way (with
the hand-over on): the driver's lanes evaluate the first tasks on those zygotes while Ray
starts (``head_start``: the first lane's sandbox ready), against waiting for the workers.

``--hardware`` is the config's target (default: ``auto`` on cuda, which plans for this
host's GPU model, and ``cpu`` on the CPU).

Usage: ``python bench/launch_start.py [--tasks 4] [--rounds 2] [--device cpu|cuda]
[--compile-workers auto,0] [--handover on,off] [--head-start on,off] [--hardware H100]``
(on a GPU host after ``source bench/gpu_site.sh``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_overhead import REPO, write_config, write_dataset
from warm_workers import run_python

_LAUNCH = """
import time
t_wall = time.time()
import json, sys
from datetime import datetime
from pathlib import Path
from sweep.launch.driver import LaunchOptions, launch
r = launch(sys.argv[1], LaunchOptions(quiet=True, force=True))
ends = []
for f in Path(sys.argv[2]).rglob("*.jsonl"):
    for line in f.read_text().splitlines():
        p = json.loads(line).get("provenance") or {}
        if p.get("finished_at"):
            ends.append(datetime.fromisoformat(p["finished_at"]).timestamp())
w = r.stats.workers[0] if r.stats is not None and r.stats.workers else None
print(json.dumps({"first_trace_s": min(ends) - t_wall if ends else None, "startup_s": r.startup_s,
                  "head": r.head_start,
                  "refused": w.handover_refused if w is not None else None,
                  "phases": dict(r.phases), "wall_s": r.wall_s, "statuses": dict(r.statuses)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--compile-workers", default="", help="comma-separated ray.compile_workers values")
    ap.add_argument("--handover", default="on,off", help="comma-separated on/off: ray.zygote_handover")
    ap.add_argument("--head-start", default="", help="comma-separated on/off: ray.head_start (hand-over on)")
    ap.add_argument("--hardware", default="", help="the config's target (default: auto on cuda, cpu on cpu)")
    args = ap.parse_args()
    hardware = args.hardware or ("cpu" if args.device == "cpu" else "auto")
    if args.head_start:
        # The head start needs the hand-over: "h:on/off" labels stand for its own switch.
        handovers = [f"h:{h}" for h in args.head_start.split(",") if h in ("on", "off")] or ["h:on"]
    else:
        handovers = [h for h in args.handover.split(",") if h in ("on", "off")] or ["on"]
    compile_values = [p for p in args.compile_workers.split(",") if p] or [""]
    # Each configuration: "compile_workers value|on/off"; rounds go through them in turn.
    pools = [f"{p}|{h}" for p in compile_values for h in handovers]
    firsts: dict[str, list[float]] = {p: [] for p in pools}
    readies: dict[str, list[float]] = {p: [] for p in pools}
    with tempfile.TemporaryDirectory(prefix="launch-start-") as tmp:
        data = Path(tmp) / "data"
        write_dataset(data, args.tasks)
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        for i in range(args.rounds):
            results = Path(tmp) / f"results-{i}"
            cfg = Path(tmp) / f"sweep-{i}.yaml"
            write_config(cfg, data, results, hardware)
            pool = pools[i % len(pools)]
            workers, handover = pool.split("|")
            if handover.startswith("h:"):
                head = "true" if handover == "h:on" else "false"
                settings = f"num_cpus: 1, zygote_handover: true, head_start: {head}"
            else:
                on = "true" if handover == "on" else "false"
                settings = f"num_cpus: 1, zygote_handover: {on}, head_start: false"
            if workers:
                settings += f", compile_workers: {workers}"
            cfg.write_text(cfg.read_text().replace("ray: {num_cpus: 1}", f"ray: {{{settings}}}"))
            row, _ = run_python(_LAUNCH, [str(cfg), str(results)], env)
            steps = ", ".join(f"{k} {v:.2f}" for k, v in row["phases"].items())
            what = f"head start {handover[2:]}" if handover.startswith("h:") else f"hand-over {handover}"
            label = f" (compile_workers {workers}, {what})" if workers else f" ({what})"
            print(
                f"round {i}{label}: first trace {row['first_trace_s']:.2f} s after the command's start; "
                f"first worker ready {row['startup_s'] or float('nan'):.2f} s; wall {row['wall_s']:.2f} s; "
                f"start steps (s since start): {steps}; {row['statuses']}; {row.get('head', 0)} by the head start"
                + (f"; hand-over refused: {row['refused']}" if row.get("refused") else "")
            )
            if row["first_trace_s"] is not None:
                firsts[pool].append(row["first_trace_s"])
            if row["startup_s"] is not None:
                readies[pool].append(row["startup_s"])
    for pool in pools:
        workers, handover = pool.split("|")
        label = f" with compile_workers {workers}," if workers else " with"
        label += f" head start {handover[2:]}" if handover.startswith("h:") else f" hand-over {handover}"
        if firsts[pool]:
            print(
                f"median time to first trace{label} over {len(firsts[pool])} rounds: "
                f"{statistics.median(firsts[pool]):.2f} s; first worker ready "
                f"{statistics.median(readies[pool]) if readies[pool] else float('nan'):.2f} s"
            )


if __name__ == "__main__":
    main()
