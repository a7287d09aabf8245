"""The distributed tasks of a launch: seconds of the shipped collectives' gangs, this checkout
against another one's ``sweep`` in the same run.

Each round runs, in a fresh process each (as a shell runs the command), an embedded launch of
``configs/local.yaml`` restricted to the distributed definitions (``all_reduce_sum_f32``,
``ag_gemm_bf16``, ``gemm_rs_bf16``: every solution on every workload a CPU rank can hold),
into a new results folder, from a working folder that holds no ``sweep``. It prints the
seconds from the store being ready to the last gang's end (the launch's start clock, as
``sweep launch`` says "N s of them the distributed tasks"), the whole launch, and the gangs
that ran and passed; then the medians and the ratio of each figure against the baseline.

``--baseline-dir DIR``: a folder holding another checkout's ``sweep`` (``git archive REV sweep
| tar -x -C DIR``), put first on ``PYTHONPATH`` for the baseline's rounds; rounds alternate.

Usage: ``python bench/gang_launch.py [--rounds 2] [--baseline-dir DIR]`` (on a GPU host after
``source bench/gpu_site.sh``, ``--hardware`` names its GPU type to run the gangs on GPUs).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warm_workers import run_python

REPO = Path(__file__).resolve().parent.parent
DEFINITIONS = ("all_reduce_sum_f32", "ag_gemm_bf16", "gemm_rs_bf16")

_LAUNCH = """
import json, sys
from sweep.config import ConfigOverrides
from sweep.launch.driver import LaunchOptions, launch
hardware = sys.argv[3] or None
r = launch(sys.argv[1], LaunchOptions(
    overrides=ConfigOverrides(results_dir=sys.argv[2], hardware=hardware), quiet=True, force=True))
marks = dict(r.phases)
gangs = marks["gangs"] - max(marks.get("scheduler", 0.0), marks.get("store", 0.0)) if "gangs" in marks else None
print(json.dumps({"gangs_s": gangs, "wall_s": r.wall_s, "statuses": dict(r.statuses)}))
"""


def _config(folder: Path) -> Path:
    """``configs/local.yaml`` with only the distributed definitions, written into ``folder``."""
    text = (REPO / "configs" / "local.yaml").read_text()
    names = "names: [" + ", ".join(DEFINITIONS) + "]"
    if "definitions: {}" not in text:
        sys.exit("configs/local.yaml has no 'definitions: {}' line to restrict")
    text = text.replace("definitions: {}", f"definitions: {{{names}}}", 1)
    text = text.replace("  - ..  ", f"  - {REPO}  ", 1)
    cfg = folder / "gangs.yaml"
    cfg.write_text(text)
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline-dir", type=Path, help="the `sweep` the baseline's rounds run")
    ap.add_argument("--hardware", default="", help="plan for this hardware (default: the config's)")
    args = ap.parse_args()
    variants = ["this checkout"] + (["baseline"] if args.baseline_dir else [])
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="gang-launch-") as tmp:
        work = Path(tmp)
        cfg = _config(work)
        cwd = work / "cwd"  # holds no `sweep`: each variant's children import its own
        cwd.mkdir()
        for i in range(args.rounds):
            for v in variants if i % 2 == 0 else variants[::-1]:
                first = [str(args.baseline_dir.resolve())] if v == "baseline" and args.baseline_dir else []
                path = os.pathsep.join([*first, str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(
                    os.pathsep
                )
                results = work / f"results-{i}-{len(rows[v])}-{v.replace(' ', '_')}"
                row, wall = run_python(
                    _LAUNCH, [str(cfg), str(results), args.hardware], {"PYTHONPATH": path}, cwd
                )
                passed = row["statuses"].get("PASSED", 0)
                print(
                    f"round {i + 1} {v}: distributed tasks {row['gangs_s']:.1f} s, launch {row['wall_s']:.1f} s, "
                    f"command {wall:.1f} s; statuses {row['statuses']} ({passed} passed)",
                    flush=True,
                )
                rows[v].append({"gangs": row["gangs_s"], "wall": row["wall_s"], "command": wall})
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cpus; {args.rounds} round(s)\n")
    print("| variant | distributed tasks s | launch s | command s | vs baseline (distributed tasks) |")
    print("| --- | --- | --- | --- | --- |")
    med = {
        v: {k: statistics.median(r[k] for r in rs) for k in ("gangs", "wall", "command")}
        for v, rs in rows.items()
    }
    for v, m in med.items():
        ratio = f"{med['baseline']['gangs'] / m['gangs']:.2f}x" if "baseline" in med and m["gangs"] else ""
        print(f"| {v} | {m['gangs']:.1f} | {m['wall']:.1f} | {m['command']:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
