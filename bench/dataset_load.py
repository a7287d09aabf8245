"""Load speed of a dataset with thousands of files: ``load_dataset`` against plain JSON reading.

Builds a synthetic dataset root in a temporary folder (by default 2,000 definitions, 2,000
solutions and 2,000 workload files of 10 lines each, shaped like the shipped ones) and times,
in the same run:

- ``load_dataset``: :func:`sweep.plan.load_dataset` (json + pydantic validation, workload
  checks against definitions, duplicate detection, origins);
- ``json-only``: reading and ``json.loads`` of every file and line, nothing else: the floor
  for any loader that reads the same files.

It prints best-of-N wall times, records per second, and the ratio to ``json-only``.

Usage: ``.venv/bin/python bench/dataset_load.py [--files 2000] [--lines 10] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sweep.plan.dataset import load_dataset

REPO = Path(__file__).resolve().parents[1]


def build(root: Path, files: int, lines: int) -> int:
    """Write a synthetic dataset under ``root``; return the number of records."""
    base_def = json.loads((REPO / "definitions/rmsnorm/rmsnorm_h1024.json").read_text())
    base_sol = json.loads(
        (REPO / "solutions/sweep-examples/rmsnorm/rmsnorm_h1024/rmsnorm_h1024_triton.json").read_text()
    )
    for i in range(files):
        name = f"rmsnorm_{i:05d}"
        d = dict(base_def, name=name)
        p = root / "definitions" / "rmsnorm" / f"{name}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(d, indent=2))
        s = dict(base_sol, name=f"{name}_triton", definition=name)
        p = root / "solutions" / "bench" / "rmsnorm" / name / f"{name}_triton.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(s, indent=2))
        recs = [
            {
                "definition": name,
                "solution": None,
                "workload": {
                    "uuid": f"{name}-{j}",
                    "axes": {"batch_size": j + 1},
                    "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
                },
                "evaluation": None,
            }
            for j in range(lines)
        ]
        p = root / "workloads" / "rmsnorm" / f"{name}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return files * (2 + lines)


def json_only(root: Path) -> None:
    for p in sorted(root.rglob("*.json")):
        json.loads(p.read_text())
    for p in sorted(root.rglob("*.jsonl")):
        for line in p.read_text().splitlines():
            json.loads(line)


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--lines", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = build(root, args.files, args.lines)
        ds = load_dataset([root])
        assert len(ds.definitions) == args.files and ds.num_workloads() == args.files * args.lines
        floor = best_of(lambda: json_only(root), args.repeat)
        ours = best_of(lambda: load_dataset([root]), args.repeat)
    print(f"{args.files * 3} files, {records} records, best of {args.repeat}")
    print(f"{'variant':<14} {'seconds':>8} {'records/s':>10} {'ratio':>6}")
    for name, t in (("json-only", floor), ("load_dataset", ours)):
        print(f"{name:<14} {t:>8.3f} {records / t:>10.0f} {t / floor:>6.2f}")


if __name__ == "__main__":
    main()
