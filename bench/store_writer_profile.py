"""Where the writing process of a first ingest spends its time, statement by statement, for this
checkout and a baseline's ``sweep`` measured in the same run.

The folder's logs (``bench/store_ingest.py``'s synthetic ones) are parsed once beforehand by
worker processes, untimed, into spooled files as an ingest's workers write them. Then, in a
fresh process per run (alternating the two checkouts, round by round), only what the one
writing process of an ingest does is run and timed, as ``store_ingest.py``'s ``writer`` does,
each run over its own copy of the files. Every statement DuckDB runs for it is timed by a
wrapper around ``duckdb.connect`` (wall seconds, and the process's CPU seconds over all its
threads meanwhile), grouped by the statement's first words; opening and closing the file (the
checkpoint) are rows of their own, one per batch.

CPU / wall tells how many threads a statement kept busy: near 1 is one thread, the share that
more cores cannot shorten. Statements under 0.5% of the run's time are left out of the table.

Without git (a copy of the checkout), ``--baseline-dir DIR`` names a folder holding the
baseline's ``sweep`` (``git archive REV sweep | tar -x -C DIR`` where git is).

Usage: ``python bench/store_writer_profile.py [--traces 1000000] [--rounds 2]
[--baseline REV | --baseline-dir DIR]`` (on a GPU host after ``source bench/gpu_site.sh``)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _duckdb_timing import time_every_connection
from warm_launch import REPO, _baseline_tree, _commit

#: (wall s, CPU s, calls) per statement kind, in a child.
_SPENT: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
_CLOSES: list[int] = []


def _kind(sql: str) -> str:
    """A statement's first words, its numbers and strings folded."""
    text = re.sub(r"\s+", " ", sql).strip()
    text = re.sub(r"\d+", "N", text)
    text = re.sub(r"'[^']*'", "'...'", text)
    return text[:70]


def _spend(what: str, _began: float, wall_s: float, cpu_s: float) -> None:
    """Sum a statement's seconds under its kind; each close (a checkpoint) is a row of its own."""
    if what == "(close)":
        _CLOSES.append(0)
        label = f"(close {len(_CLOSES)}: checkpoint)"
    else:
        label = what if what == "(open)" else _kind(what)
    s = _SPENT[label]
    s[0] += wall_s
    s[1] += cpu_s
    s[2] += 1


def _child(answers: Path, pristine: Path, work: Path) -> None:
    """Run the writing process over a copy of the spooled files; print what it took as JSON."""
    from store_ingest import _insert_spooled

    # The answers name the files where the workers wrote them: put a fresh copy there.
    shutil.rmtree(work / "files", ignore_errors=True)
    shutil.copytree(pristine, work / "files")
    time_every_connection(_spend)
    spool = work / "answers.copy"
    shutil.copyfile(answers, spool)
    store = work / "store.duckdb"
    store.unlink(missing_ok=True)
    w0, c0 = time.perf_counter(), time.process_time()
    added, present, _ = _insert_spooled(spool, store)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    store.unlink(missing_ok=True)
    print(json.dumps({"wall": wall, "cpu": cpu, "added": added, "present": present, "spent": _SPENT}))


def _run(tree: Path, answers: Path, pristine: Path, work: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(answers), str(pristine), str(work)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"writer run in {tree} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _prepare(work: Path, traces: int) -> tuple[Path, Path]:
    """Logs written and parsed by worker processes into spooled files (as an ingest's workers
    write them) and a file of the answers the writing process reads; returns both. The logs
    stay: the writing process reads each one's first bytes to mark how far it is stored."""
    from store_ingest import _spool, write_logs

    results = work / "results"
    write_logs(results, traces)
    logs = sorted((results / "traces").rglob("*.jsonl"))
    answers = _spool(logs, work / "answers.spool", work / "files")
    pristine = work / "pristine"
    shutil.copytree(work / "files", pristine)
    return answers, pristine


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--traces", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline", default="d714d0c", help="the revision to compare against (git archive)")
    ap.add_argument("--baseline-dir", type=Path, help="a folder holding the baseline's `sweep` package")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(Path(args.child[0]), Path(args.child[1]), Path(args.child[2]))
        return
    work = Path(tempfile.mkdtemp(prefix="writer-profile-", dir=args.workdir))
    try:
        base = (
            args.baseline_dir.resolve()
            if args.baseline_dir
            else _baseline_tree(args.baseline, work / "baseline")
        )
        trees = {"baseline": base, "this": REPO}
        t = time.perf_counter()
        answers, pristine = _prepare(work, args.traces)
        print(
            f"{args.traces:,} traces parsed and spooled beforehand in {time.perf_counter() - t:.1f} s",
            flush=True,
        )
        runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
        for i in range(args.rounds):
            for which in ("baseline", "this") if i % 2 == 0 else ("this", "baseline"):
                r = _run(trees[which], answers, pristine, work)
                runs[which].append(r)
                print(
                    f"round {i + 1} {which}: {r['wall']:.2f} s, {r['cpu']:.2f} s CPU, {r['added']:,} added",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(
        f"\nmachine: {platform.node()} {platform.machine()}, {os.cpu_count()} cpus, load {load[0]:.2f} at the end; "
        f"baseline {args.baseline_dir or _commit(args.baseline)}, this {_commit('HEAD')} (and the working tree); "
        f"{args.traces:,} traces, {args.rounds} rounds\n"
    )
    print("| writing process | median s | best s | CPU s | traces/s (median) | vs baseline |")
    print("| --- | --- | --- | --- | --- | --- |")
    base_med = statistics.median(r["wall"] for r in runs["baseline"])
    for which, rs in runs.items():
        med = statistics.median(r["wall"] for r in rs)
        cpu = statistics.median(r["cpu"] for r in rs)
        rate = rs[0]["added"] / med
        print(
            f"| {which} | {med:.2f} | {min(r['wall'] for r in rs):.2f} | {cpu:.2f} | {rate:,.0f} | {base_med / med:.2f}x |"
        )
    for which, rs in runs.items():
        last = rs[-1]
        print(f"\n{which}, last round: {last['wall']:.2f} s wall, {last['cpu']:.2f} s CPU\n")
        print("| statement | calls | wall s | share | CPU s | CPU / wall |")
        print("| --- | --- | --- | --- | --- | --- |")
        for kind, (w, c, n) in sorted(last["spent"].items(), key=lambda kv: -kv[1][0]):
            if w >= 0.005 * last["wall"]:
                print(
                    f"| `{kind}` | {int(n)} | {w:.2f} | {w / last['wall']:.0%} | {c:.2f} | {c / w if w else 0:.1f} |"
                )


if __name__ == "__main__":
    main()
