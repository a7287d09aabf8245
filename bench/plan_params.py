"""Planning a parameter space of 100,000 points (the most a solution may declare), with and
without constraints: ``sweep plan``'s expansion against main's before issue 27, in one run.

Builds a dataset root in a temporary folder: one definition, one workload, one solution whose
``params`` are 5 lists of 10 values (100,000 points), with the constraints of each case, and
times, for each case:

- ``plan``: :func:`sweep.plan.expand` of a config selecting it (tasks built, points left out
  with their reasons), best of ``--repeat``;
- ``main``: the same points planned as main did (``bench/_plan_params_baseline.py``: every
  point checked against every constraint by walking its syntax tree, every task validated
  again), on ``--baseline-points`` points spread evenly over the grid, scaled to the whole
  grid (main's cost is about the same for every point; the whole grid took it minutes, and
  more than 20 with 64 constraints).

Prints one row per case: points, constraints, tasks, both times and their ratio. The plan's
answer for each point main was asked about (a task, or left out and why) is checked to be
main's.

Usage: ``.venv/bin/python bench/plan_params.py [--repeat 3] [--baseline-points 2000]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _plan_params_baseline import baseline_tasks

from sweep.config import SweepConfig
from sweep.plan import expand
from sweep.plan.dataset import load_dataset
from sweep.schema.params import params_json

REPO = Path(__file__).resolve().parents[1]
GOOD = REPO / "tests" / "data" / "dataset" / "good"
PARAMS = {f"P{i}": list(range(1, 11)) for i in range(5)}

#: name -> constraints. "64 true": every point passes every constraint (each reads one or two
#: parameters); "64, 90% out": the first reads P0 alone and leaves 9 points of 10 out;
#: "64, last out": the last reads every parameter and leaves almost every point out.
CASES: dict[str, list[str]] = {
    "none": [],
    "64 true": [f"P{i % 5} * {i % 7 + 1} <= 1000 + n" for i in range(32)]
    + [f"P{i % 5} + P{(i + 2) % 5} >= 2 - n" for i in range(32)],
    "64, 90% out": ["P0 <= 1"] + [f"P{i % 5} * {i % 7 + 1} <= 1000 + n" for i in range(63)],
    "64, last out": [f"P{i % 5} * {i % 7 + 1} <= 1000 + n" for i in range(63)]
    + ["P0 + P1 + P2 + P3 + P4 < 10"],
}


def build(root: Path, constraints: list[str]) -> SweepConfig:
    """The dataset root of one case and a config selecting its solution on its one workload."""
    shutil.copytree(GOOD, root)
    solution = {
        "name": "big",
        "definition": "vec_add",
        "author": "bench",
        "spec": {
            "language": "python",
            "target_hardware": ["cpu"],
            "entry_point": "main.py::run",
            "destination_passing_style": False,
        },
        "sources": [
            {"path": "main.py", "content": "def run(x, y, alpha, **params):\n    return x + alpha * y\n"}
        ],
        "params": PARAMS,
        **({"params_constraints": constraints} if constraints else {}),
    }
    (root / "solutions" / "tester" / "ew" / "vec_add" / "big.json").write_text(json.dumps(solution))
    return SweepConfig.model_validate(
        {
            "name": "bench",
            "dataset": [str(root)],
            "hardware": "cpu",
            "solutions": {"names": ["big"]},
            "workloads": {"uuids": ["wl-0002"]},
        }
    )


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-points", type=int, default=2000)
    args = ap.parse_args()
    total = 10**5
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, constraints in CASES.items():
            config = build(Path(tmp) / name.replace(" ", "_").replace(",", "").replace("%", ""), constraints)
            ds = load_dataset(config.dataset)
            ours, plan = best_of(lambda c=config, d=ds: expand(c, d), args.repeat)  # type: ignore[misc]
            tasks = len(plan.tasks)  # type: ignore[attr-defined]
            d, s = ds.definitions["vec_add"], ds.solutions["big"]
            w = next(x for x in ds.workloads["vec_add"] if x.uuid == "wl-0002")
            stride = max(1, total // args.baseline_points)
            t0 = time.perf_counter()
            sampled = baseline_tasks(d, s, w, config.evaluation, s.param_space, stride)
            base = (time.perf_counter() - t0) * stride
            # The plan answers as main did, point for point, where main was asked.
            kept = {params_json(t.params) for t in plan.tasks if t.params is not None}  # type: ignore[attr-defined]
            why = {e.name.split(" ", 1)[1].rsplit(" on ", 1)[0]: e.reason for e in plan.excluded}  # type: ignore[attr-defined]
            for point, reason in sampled:
                assert (point in kept) == (reason is None) and why.get(point) == reason, (name, point)
            rows.append((name, total, len(constraints), tasks, ours, base))
    print(f"sweep plan of a {total:,}-point space (5 lists of 10 values), best of {args.repeat}; ")
    print(f"main's time from {args.baseline_points:,} points spread over the grid, scaled to the grid")
    print(
        f"{'case':<14} {'points':>8} {'constraints':>11} {'tasks':>7} {'plan s':>8} {'main s':>9} {'main/plan':>10}"
    )
    for name, points, ncons, tasks, ours, base in rows:
        print(
            f"{name:<14} {points:>8,} {ncons:>11} {tasks:>7,} {ours:>8.2f} {base:>9.1f} {base / ours:>10.1f}"
        )


if __name__ == "__main__":
    main()
