"""A first ingest's timeline: when the reading waits for the one writer, when the writer waits
for the reading, and where the seconds of each insert go, for a few settings in one run.

It writes ``store_ingest.py``'s synthetic logs once, then for each variant runs
:func:`sweep.store.ingestion.ingest_into` into a new store, in a fresh process, with the
``sweep.store.ingest`` logger at DEBUG (each insert's size, the reading's wait for the insert
before it, each insert's seconds, when the reading ended). Variants (``--variants``, comma
separated, each run ``--rounds`` times, alternating):

- ``default``: the product as it is (parsing processes as ``auto_workers`` picks them);
- ``workers=N``: N parsing processes;
- ``rows=N``: N traces per insert, spooled or built here (the product's batches otherwise);
- ``baseline``: the product of ``--baseline-dir DIR`` (a folder holding another checkout's
  ``sweep``: ``git archive REV sweep | tar -x -C DIR``), measured in the same run (a checkout
  older than this bench logs no timeline: its seconds only);
- ``a+b``: both (``held+rows=245760``);
- ``held``: an experiment, not the product: the store's file held open by one connection for
  the whole ingest (the product opens and closes it for each insert, so other processes can
  get in between, and each close checkpoints), closed once at the end, that close timed.

Per run: seconds, traces/s, the reading's end, the sum of the reading's waits, the inserts'
seconds, the writer's idle time (the seconds before its first insert and between inserts), the
last insert's seconds, the ingesting process's peak resident memory, and the CPU time per
trace of the ingesting process (all its threads, DuckDB's too) and of its workers (on a
loaded or small machine these move less than the seconds do).
An ingest bound by its writer shows the reading waiting; one bound by its parsing shows the
writer idle.

Usage: ``python bench/ingest_timeline.py [--traces 1000000] [--rounds 2]
[--variants default,workers=16,rows=245760]`` (on a GPU host after ``source bench/gpu_site.sh``)
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _duckdb_timing import time_every_connection
from store_ingest import write_logs

_WAITED = re.compile(r"insert of (\d+) trace rows: reading waited ([\d.]+) s")
_DONE = re.compile(r"insert done in ([\d.]+) s")
_READ = re.compile(r"logs read in ([\d.]+) s by (\d+) worker")


class _Held:
    """The ``held`` experiment's one connection, opened by the first write."""

    def __init__(self) -> None:
        self.cm: Any = None
        self.con: Any = None

    def close(self, events: list[tuple[float, str]], start: float) -> None:
        if self.cm is None:
            return
        t = time.perf_counter()
        self.cm.__exit__(None, None, None)
        events.append(
            (time.perf_counter() - start, f"held connection closed in {time.perf_counter() - t:.3f} s")
        )


_HELD = _Held()


def _hold_open() -> None:
    """Make every ``WritableStore.writing`` of this process use one connection, never closed by it."""
    from contextlib import contextmanager

    from sweep.store.rows import WritableStore

    opening = WritableStore.writing

    @contextmanager
    def writing(self: WritableStore, *, timeout_s: float | None = None) -> Iterator[Any]:
        if _HELD.cm is None:
            _HELD.cm = opening(self, timeout_s=timeout_s)
            _HELD.con = _HELD.cm.__enter__()
        yield _HELD.con

    WritableStore.writing = writing  # type: ignore[method-assign]


_STATEMENTS_ENV = "INGEST_TIMELINE_STATEMENTS"


_STATEMENT_MIN_S = 0.05


def _time_statements(events: list[tuple[float, str]], since: Callable[[], float]) -> None:
    """Every DuckDB statement of this process from now on, and each close (not the opens), that takes
    ``_STATEMENT_MIN_S`` or more: an event at its start (seconds since ``since()``)."""

    def note(what: str, began: float, wall_s: float, _cpu_s: float) -> None:
        if what != "(open)" and wall_s >= _STATEMENT_MIN_S:
            text = "(close: checkpoint)" if what == "(close)" else " ".join(what.split())[:80]
            events.append((began - since(), f"  {wall_s:.3f} s: {text}"))

    time_every_connection(note)


def _child(variant: str, logs: Path, store: Path) -> None:
    """One ingest here; prints each DEBUG line as (seconds since start, message), then a JSON summary."""
    import logging

    from sweep.store.ingestion import CHUNK_BYTES, INGEST_LOGGER, auto_workers, ingest_into
    from sweep.store.rows import WritableStore

    start = time.perf_counter()
    events: list[tuple[float, str]] = []
    clock = [start]

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            events.append((time.perf_counter() - start, record.getMessage()))

    log = logging.getLogger(INGEST_LOGGER)
    log.setLevel(logging.DEBUG)
    log.addHandler(_Keep())
    size = sum(p.stat().st_size for p in logs.rglob("*.jsonl"))
    workers = auto_workers(size, CHUNK_BYTES)
    rows: int | None = None  # the product's batches (for rows built here and spooled)
    for part in variant.split("+"):  # e.g. held+rows=245760
        name, _, value = part.partition("=")
        if name == "workers":
            workers = int(value)
        elif name == "rows":
            rows = int(value)
        elif name == "held":
            _hold_open()
        elif name not in ("default", "baseline"):
            raise SystemExit(f"unknown variant {variant!r}")
    if os.environ.get(_STATEMENTS_ENV):
        _time_statements(events, lambda: clock[0])
    import resource

    def cpu(who: int) -> float:
        use = resource.getrusage(who)
        return use.ru_utime + use.ru_stime

    store_ = WritableStore(store)
    start = clock[0] = time.perf_counter()
    cpu_before = cpu(resource.RUSAGE_SELF)
    report = ingest_into(store_, [logs], workers=workers, batch_rows=rows)
    _HELD.close(events, start)
    seconds = time.perf_counter() - start
    # Every thread of this process (DuckDB's too), and the workers (ended by now).
    own_cpu, workers_cpu = cpu(resource.RUSAGE_SELF) - cpu_before, cpu(resource.RUSAGE_CHILDREN)
    store_.close()
    for t, msg in events:
        print(f"  {t:7.3f} s  {msg}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out = {"seconds": seconds, "added": report.added.traces, "events": events, "workers": workers}
    cpus = {"cpu_s": own_cpu, "workers_cpu_s": workers_cpu}
    print(json.dumps(out | cpus | {"peak_mb": peak_mb, "worker_peak_mb": worker_mb}))


def _summary(out: dict[str, object]) -> dict[str, float]:
    """Totals of one run's events. Inserts run in order, each once it is handed over and the
    one before it has ended (its start: its end less its seconds)."""
    events = out["events"]
    assert isinstance(events, list)
    waited = 0.0
    inserts: list[tuple[float, float]] = []  # (start, seconds)
    read_end = float("nan")
    for t, msg in events:
        if m := _WAITED.search(msg):
            waited += float(m.group(2))
        elif m := _DONE.search(msg):
            inserts.append((t - float(m.group(1)), float(m.group(1))))
        elif _READ.search(msg):
            read_end = t
    idle, free_at = 0.0, 0.0
    for s, d in inserts:
        idle += max(0.0, s - free_at)
        free_at = s + d
    seconds = float(out["seconds"])  # type: ignore[arg-type]
    return {
        "seconds": seconds,
        "rate": float(out["added"]) / seconds,  # type: ignore[arg-type]
        "read_end": read_end,
        "waited": waited,
        "inserts": float(len(inserts)),
        "insert_s": sum(d for _, d in inserts),
        "idle": idle,
        "last_s": inserts[-1][1] if inserts else float("nan"),
        "peak_mb": float(out["peak_mb"]),  # type: ignore[arg-type]
        # µs of CPU per trace: of the ingesting process (its DuckDB threads too), of its workers.
        "cpu_us": float(out.get("cpu_s", "nan")) / float(out["added"]) * 1e6,  # type: ignore[arg-type]
        "workers_cpu_us": float(out.get("workers_cpu_s", "nan")) / float(out["added"]) * 1e6,  # type: ignore[arg-type]
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default="default")
    ap.add_argument("--baseline-dir", type=Path, help="the `sweep` the `baseline` variant runs")
    ap.add_argument("--statements", action="store_true", help="time each DuckDB statement of 50 ms or more")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    work = Path(tempfile.mkdtemp(prefix="ingest-timeline-", dir=os.environ.get("BENCH_TMP")))
    try:
        t0 = time.perf_counter()
        size = write_logs(work, args.traces)
        print(
            f"{args.traces:,} traces, {size / 1e6:.0f} MB of JSONL written in {time.perf_counter() - t0:.1f} s"
        )
        runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
        for r in range(args.rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                store = work / f"{r}-{v.replace('=', '_')}.duckdb"
                # What the bench wrote (the logs, the last run's store) reaches the disk first, so
                # no commit of this run waits for it (a file system's journal can make one fsync wait
                # for other files' writes).
                t = time.perf_counter()
                os.sync()
                synced = time.perf_counter() - t
                env = dict(os.environ, **({_STATEMENTS_ENV: "1"} if args.statements else {}))
                if v.split("+")[0] == "baseline":
                    if args.baseline_dir is None:
                        raise SystemExit("the baseline variant needs --baseline-dir")
                    paths = [str(args.baseline_dir.resolve()), env.get("PYTHONPATH", "")]
                    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", v, str(work / "traces"), str(store)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise SystemExit(f"{v} failed:\n{proc.stdout}\n{proc.stderr}")
                lines = proc.stdout.rstrip().splitlines()
                out = json.loads(lines[-1])
                s = _summary(out)
                runs[v].append(s)
                print(
                    f"round {r + 1} {v} ({out['workers']} workers): {s['seconds']:.2f} s, {s['rate']:,.0f} traces/s "
                    f"peak {out['peak_mb']:,.0f} MB (workers' largest {out['worker_peak_mb']:,.0f}; "
                    f"CPU µs/trace: ingesting process {s['cpu_us']:.1f}, workers {s['workers_cpu_us']:.1f}; "
                    f"sync before it {synced:.2f} s)"
                )
                print("\n".join(lines[:-1]))
                store.unlink(missing_ok=True)
                shutil.rmtree(store.with_suffix(".duckdb.wal"), ignore_errors=True)
        print(
            f"\nmachine: {platform.machine()}, {os.cpu_count()} cpus; {args.traces:,} traces, {args.rounds} round(s)\n"
        )
        print(
            "| variant | median s | traces/s | reading ends s | reading waited s | inserts | insert s "
            "| writer idle s | last insert s | peak MB | CPU µs/trace: ingesting | workers |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for v, ss in runs.items():

            def med(k: str, ss: list[dict[str, float]] = ss) -> float:
                return statistics.median(x[k] for x in ss)

            print(
                f"| {v} | {med('seconds'):.2f} | {med('rate'):,.0f} | {med('read_end'):.2f} | {med('waited'):.2f} "
                f"| {med('inserts'):.0f} | {med('insert_s'):.2f} | {med('idle'):.2f} | {med('last_s'):.2f} | {med('peak_mb'):,.0f} "
                f"| {med('cpu_us'):.1f} | {med('workers_cpu_us'):.1f} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
