"""Results store speed: ingest rate, peak memory and cross-hardware query latency at 100k and
1M traces, against main's ingest (the baseline) measured in the same run.

For each size it writes a results folder of synthetic JSONL logs shaped like a sweep's (50
definitions x 4 solutions x many workloads, on two GPUs, 90% PASSED, with provenance and
timing statistics), then, each in a fresh process (so its peak memory is its own):

- ``baseline``: main's ingest of the folder into a new store (``bench/_store_ingest_baseline.py``:
  one process, tuple rows, 20,000-row inserts);
- ``ingest``: :func:`sweep.store.ingest` of the folder into a new store, with the number of
  parsing processes it picks (one per usable CPU, one less past two, for logs this large): the
  workers write their rows as Arrow files that the ingesting process inserts (``spool``, the product's
  path); again with the workers sending their rows back as Arrow, batched in the ingesting
  process (``spool=False``, the path before, the baseline the new one is measured against in
  the same run); and with ``workers=1`` (this process parses: the cost of one core);
- ``re-ingest``: the same folder into the store again (every trace present: the idempotency
  check; nothing may be added);
- ``writing process alone``: the folder's chunks parsed beforehand (by worker processes,
  untimed) into a spool file of their answers, then only what the one writing process of an
  ingest does, timed: read each answer, batch, insert into a new store. With many cores the
  parsing workers keep up and this is what bounds an ingest. Measured for both hand-overs:
  Arrow answers, and spooled files (the files written beforehand too).

``small`` and ``writer-small``: the same two with spooled rows inserted 122,880 at a time (one
DuckDB row group, the batch before ``SPOOL_BATCH_ROWS``): the baseline of the new batch size,
in the same run ("vs before" compares each to them where they ran).

``--methods`` picks which of these run (default: all; ``ingest`` always runs, the queries use
its store).

Peak memory is the process's maximum resident set; with workers, the largest worker's is
shown beside it. CPU µs/trace counts every thread and worker process of the ingest (user and
system time): on a shared machine it moves less with the load than the seconds do.

Then the query latencies (median and fastest of ``--repeat``, each through
:func:`sweep.store.query`, so including the read session: open read-only, read what the logs
hold beyond the file, create the views; CPU: the median over all DuckDB's threads): the
the cross-hardware queries of docs/store-and-sql.md, on the store ``ingest`` made, and the same queries over the
view as main defined it (schema 5: partitioned and joined on four strings and an
expression), inlined as a CTE of the same session.

Before the timings, the rows of ``cross_hardware`` are checked to be exactly those of main's
view (as multisets, in one session), so the speed is not bought with a different answer.

``--keep DIR`` keeps each size's results folder and stores under ``DIR/<size>/`` (instead of a
temporary folder); ``--queries-only`` (with ``--keep``) then runs only the queries on the store
kept there, so a 1M store need not be written and ingested again. A kept store of an older
schema is migrated by the first open, timed on a line of its own.

Usage: ``.venv/bin/python bench/store_ingest.py [--sizes 100000,1000000] [--repeat 5]
[--methods baseline,arrow,small,one,again,writer-arrow,writer-small,writer] [--keep DIR [--queries-only]]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFINITIONS = 50
SOLUTIONS = 4
HARDWARE = ("NVIDIA_H100", "NVIDIA_H200")

#: The cross-hardware queries of docs/store-and-sql.md, and the summary the issue times.
QUERIES = {
    "README: pairs with latency_ratio > 1.2": "SELECT * FROM cross_hardware WHERE latency_ratio > 1.2",
    "summary per hardware pair (geomean ratio)": """SELECT hardware_a, hardware_b, count(*) AS pairs,
       exp(avg(ln(latency_ratio)) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED')) AS ratio
FROM cross_hardware GROUP BY ALL""",
    "one definition's pairs": "SELECT * FROM cross_hardware WHERE definition = 'def_7' ORDER BY solution, workload_uuid",
}


#: ``cross_hardware`` as main defined it (schema 5), for the same queries in the same session.
MAIN_CROSS_HARDWARE = """WITH per_hw AS (
    SELECT * FROM traces
    QUALIFY row_number() OVER (
        PARTITION BY definition, coalesce(solution_hash, 'name:' || solution), coalesce(solution_params, ''),
        workload_uuid, hardware ORDER BY timestamp DESC, trace_key DESC) = 1
)
SELECT a.definition, a.op_type, a.solution, coalesce(a.solution_hash, b.solution_hash) AS solution_hash,
       a.workload_uuid, a.axes,
       a.hardware AS hardware_a, b.hardware AS hardware_b,
       a.status AS status_a, b.status AS status_b,
       a.latency_ms AS latency_ms_a, b.latency_ms AS latency_ms_b,
       b.latency_ms / nullif(a.latency_ms, 0) AS latency_ratio,
       a.speedup_factor AS speedup_a, b.speedup_factor AS speedup_b,
       b.speedup_factor / nullif(a.speedup_factor, 0) AS speedup_ratio,
       a.settings_hash AS settings_hash_a, b.settings_hash AS settings_hash_b,
       a.trace_key AS trace_key_a, b.trace_key AS trace_key_b
FROM per_hw a
JOIN per_hw b
  ON a.definition = b.definition
 AND coalesce(a.solution_hash, 'name:' || a.solution) = coalesce(b.solution_hash, 'name:' || b.solution)
 AND coalesce(a.solution_params, '') = coalesce(b.solution_params, '')
 AND a.workload_uuid = b.workload_uuid
 AND a.hardware < b.hardware"""


def _template() -> dict[str, object]:
    from sweep.schema import Trace

    t = Trace.model_validate(
        {
            "definition": "d",
            "workload": {"uuid": "u", "axes": {"batch": 1, "seq": 128}, "inputs": {"x": {"type": "random"}}},
            "solution": "s",
            "evaluation": {
                "status": "PASSED",
                "environment": {
                    "hardware": "NVIDIA_H100",
                    "libs": {"torch": "2.9.1", "triton": "3.5.1"},
                    "device_name": "NVIDIA H100 80GB HBM3",
                },
                "timestamp": "2026-01-01T00:00:00+00:00",
                "log": "",
                "correctness": {"max_relative_error": 1e-3, "max_absolute_error": 2e-4},
                "performance": {"latency_ms": 0.1, "reference_latency_ms": 0.2, "speedup_factor": 2.0},
                "seed": 0,
                "timing": {
                    "clock": "cuda_event",
                    "iterations": 200,
                    "p10_ms": 0.09,
                    "p50_ms": 0.1,
                    "p90_ms": 0.11,
                    "mean_ms": 0.1,
                    "cv": 0.03,
                },
            },
            "provenance": {
                "task_id": "t",
                "sweep": "bench",
                "run_id": "run-1",
                "solution_hash": "h",
                "settings_hash": "set1",
                "node_id": "node-1",
                "gpu_id": "0",
                "attempt": 1,
            },
        }
    )
    return t.to_json_obj()


def write_logs(results: Path, n: int) -> int:
    """Write ``n`` traces as JSONL logs (one file per definition); returns bytes written."""
    base = json.dumps(_template())
    per_def = n // DEFINITIONS
    size = 0
    for d in range(DEFINITIONS):
        path = results / "traces" / f"op{d % 7}" / f"def_{d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        count = per_def + (1 if d < n % DEFINITIONS else 0)
        for i in range(count):
            hw = HARDWARE[i % 2]
            s = (i // 2) % SOLUTIONS
            w = i // (2 * SOLUTIONS)
            obj = json.loads(base)
            obj["definition"] = f"def_{d}"
            obj["solution"] = f"def_{d}_sol_{s}"
            obj["workload"]["uuid"] = f"def_{d}-wl-{w}"
            # An axis is a dimension size, 1 or more: the store refuses 0 (the first workload
            # of each definition used to be refused, so fewer traces were stored than written).
            obj["workload"]["axes"]["batch"] = w + 1
            ev = obj["evaluation"]
            ev["environment"]["hardware"] = hw
            ev["timestamp"] = f"2026-01-{1 + w % 28:02d}T{w % 24:02d}:{i % 60:02d}:{s:02d}+00:00"
            lat = 0.05 + 0.01 * s + (0.0 if hw == "NVIDIA_H100" else -0.01) + (w % 13) * 1e-4
            if (i * 7919) % 10 == 0:
                ev["status"] = "RUNTIME_ERROR"
                ev["log"] = "RuntimeError: CUDA error: an illegal memory access was encountered"
                for k in ("correctness", "performance", "timing"):
                    ev.pop(k)
            else:
                ev["performance"] = {
                    "latency_ms": lat,
                    "reference_latency_ms": 0.12,
                    "speedup_factor": 0.12 / lat,
                }
            prov = obj["provenance"]
            prov["task_id"] = f"t-{d}-{i}"
            prov["solution_hash"] = f"hash-{d}-{s}"
            prov["gpu_id"] = str(i % 8)
            lines.append(json.dumps(obj, separators=(",", ":")))
        text = "\n".join(lines) + "\n"
        path.write_text(text)
        size += len(text)
    return size


# ---- one measurement, in a process of its own ---------------------------------------------


def _child(mode: str, results: Path, store: Path) -> None:
    """Run one ingest here and print what it took as JSON (the parent reads the last line)."""
    logs = sorted((results / "traces").rglob("*.jsonl"))
    files = store.parent / (store.stem + ".parquet") if mode in ("writer", "writer-small") else None
    spool = _spool(logs, store.with_suffix(".spool"), files) if mode.startswith("writer") else None
    before = _cpu()
    start = time.perf_counter()
    if spool is not None:
        added, present, workers = _insert_spooled(spool, store, small=mode == "writer-small")
        if files is not None:
            shutil.rmtree(files, ignore_errors=True)
    elif mode == "baseline":
        sys.path.insert(0, str(Path(__file__).parent))
        from _store_ingest_baseline import baseline_ingest

        added, present, workers = baseline_ingest(logs, store), 0, 1
    else:
        from sweep.store import ingest
        from sweep.store.ingestion import CHUNK_BYTES, auto_workers

        workers = 1 if mode == "ingest-1" else auto_workers(sum(p.stat().st_size for p in logs), CHUNK_BYTES)
        if mode in ("ingest-arrow", "ingest-small") or (mode == "ingest" and os.environ.get(_ROWS_ENV)):
            from sweep.store.ingestion import BATCH_ROWS, ingest_into
            from sweep.store.rows import WritableStore

            ws = WritableStore(store)
            if mode == "ingest-arrow":
                rep = ingest_into(ws, [results / "traces"], workers=workers, spool=False)
            else:  # spooled rows one row group at a time (before), or --spool-rows at a time
                rows = BATCH_ROWS if mode == "ingest-small" else _spool_rows()
                rep = ingest_into(ws, [results / "traces"], workers=workers, batch_rows=rows)
            ws.close()
        else:
            rep = ingest([results / "traces"], store, workers=workers)
        added, present = rep.added.traces, rep.added.present
    seconds = time.perf_counter() - start
    cpu = _cpu() - before
    kb = 1024 if sys.platform != "darwin" else 1
    out = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "added": added,
        "present": present,
        "workers": workers,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * kb / 1e6,
        "worker_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * kb / 1e6,
    }
    print(json.dumps(out), flush=True)


def _spool(logs: list[Path], spool: Path, files: Path | None) -> Path:
    """Parse every chunk of the logs (worker processes, as ingest does) into a file of the
    answers the writing process reads, in order (with ``files``, the workers write their rows
    there as files, as ingest has them do); not timed."""
    import pickle

    from sweep.store.ingestion import CHUNK_BYTES, auto_workers, parse_in_order, split_log, write_frame

    items = (item for log in logs for item in split_log(log, CHUNK_BYTES))
    workers = max(2, auto_workers(sum(p.stat().st_size for p in logs), CHUNK_BYTES))
    if files is not None:
        files.mkdir(parents=True, exist_ok=True)
    with spool.open("wb") as out:
        for parsed in parse_in_order(items, workers, files):
            write_frame(out, pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
    return spool


def _insert_spooled(spool: Path, store: Path, *, small: bool = False) -> tuple[int, int, int]:
    """The writing process of an ingest alone, its parsing done: read each parsed chunk as a
    worker answers it, batch and insert (as ``sweep.store.ingestion`` does); (added, present, 1).
    ``small``: spooled rows inserted 122,880 at a time (one row group), as before
    ``SPOOL_BATCH_ROWS``."""
    import pickle

    from sweep.store.ingestion import (
        BATCH_ROWS,
        IngestJob,
        IngestReport,
        LogEnd,
        SpooledChunk,
        read_frame,
    )
    from sweep.store.rows import WritableStore

    ws = WritableStore(store)
    report = IngestReport(store=str(store))
    job = IngestJob(ws, report, BATCH_ROWS, BATCH_ROWS if small else _spool_rows())
    with spool.open("rb") as inp:
        while (frame := read_frame(inp)) is not None:
            item = pickle.loads(frame)  # written by _spool above
            if isinstance(item, LogEnd):
                job.log_end(item)
            elif isinstance(item, SpooledChunk):
                job.spooled_chunk(item)
            else:
                job.parsed(item)
    job.flush(wait=True)
    spool.unlink()
    return report.added.traces, report.added.present, 1


_ROWS_ENV = "STORE_INGEST_SPOOL_ROWS"


def _spool_rows() -> int:
    """Spooled traces per insert of ``ingest`` and ``writer``: ``--spool-rows``, else the product's."""
    from sweep.store.ingestion import SPOOL_BATCH_ROWS

    return int(os.environ.get(_ROWS_ENV) or SPOOL_BATCH_ROWS)


def _cpu() -> float:
    """CPU seconds of this process (all its threads) and of its children that have ended."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _measure(mode: str, results: Path, store: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(results), str(store)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stdout}\n{proc.stderr}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def query_latency(store: Path, sql: str, repeat: int) -> tuple[float, float, float, int]:
    """(median seconds, fastest seconds, median CPU seconds of all threads, rows) of
    ``repeat`` runs through :func:`sweep.store.query`."""
    from sweep.store import query

    times, cpu = [], []
    n = 0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        res = query(store, sql)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        n = len(res.rows)
    return statistics.median(times), min(times), statistics.median(cpu), n


def check_same_rows(store: Path) -> int:
    """Fail unless ``cross_hardware`` has exactly the rows of main's view; returns their number."""
    from sweep.store import query

    old = f"({MAIN_CROSS_HARDWARE})"
    sql = f"""SELECT (SELECT count(*) FROM (SELECT * FROM cross_hardware EXCEPT ALL SELECT * FROM {old})),
       (SELECT count(*) FROM (SELECT * FROM {old} EXCEPT ALL SELECT * FROM cross_hardware)),
       (SELECT count(*) FROM cross_hardware)"""
    only_new, only_old, rows = query(store, sql).rows[0]
    if only_new or only_old:
        raise SystemExit(f"cross_hardware: {only_new} rows not in main's view, {only_old} of main's missing")
    assert isinstance(rows, int)
    return rows


def run_queries(n: int, store: Path, repeat: int) -> list[tuple[str, ...]]:
    """The query table's rows of one size, over ``store``, after checking its pairs."""
    pairs = check_same_rows(store)
    print(f"[{n:,}] cross_hardware: {pairs:,} pairs, the same rows as main's view", flush=True)
    qrows: list[tuple[str, ...]] = []
    for label, sql in QUERIES.items():
        med, fastest, cpu, nrows = query_latency(store, sql, repeat)
        # The same query over main's view: a CTE of that name shadows the view.
        old_sql = f"WITH cross_hardware AS ({MAIN_CROSS_HARDWARE})\n{sql}"
        old_med, _, old_cpu, old_rows = query_latency(store, old_sql, repeat)
        if old_rows != nrows:
            raise SystemExit(f"{label}: {nrows} rows, main's view gives {old_rows}")
        qrows.append(
            (
                f"{n:,}",
                label,
                f"{med * 1000:.0f}",
                f"{fastest * 1000:.0f}",
                f"{cpu * 1000:.0f}",
                f"{old_med * 1000:.0f}",
                f"{old_cpu * 1000:.0f}",
                _ratio(old_med, med),
                f"{nrows:,}",
            )
        )
    return qrows


def _open_kept(n: int, store: Path) -> None:
    """Open a kept store once (migrating it if its schema is older), timed."""
    from sweep.store import Store

    if not store.exists():
        raise SystemExit(f"no kept store at {store}: run once with --keep (without --queries-only)")
    start = time.perf_counter()
    with Store(store).writing():
        pass
    print(f"[{n:,}] opened the kept store {store} in {time.perf_counter() - start:.1f} s", flush=True)


#: The ingests ``--methods`` picks from (``ingest``, the product's path, always runs).
_METHODS = ("baseline", "arrow", "small", "one", "again", "writer-arrow", "writer-small", "writer")


def _rate(n: float, seconds: float) -> str:
    return f"{n / seconds:,.0f}" if seconds > 0 else "-"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def _table(header: tuple[str, ...], body: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    out = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in body]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--sizes",
        nargs="+",
        default=["100000,1000000"],
        help="traces per size: 100000,1000000 or 100000 1000000",
    )
    ap.add_argument(
        "--methods",
        default=",".join(_METHODS),
        help=f"which ingests to time, of {','.join(_METHODS)} (ingest, the new path, always runs)",
    )
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--spool-rows", type=int, default=None, help="spooled traces per insert (default: the product's)"
    )
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="keep each size's folder under DIR/<size>/")
    ap.add_argument("--queries-only", action="store_true", help="only the queries, on the stores --keep kept")
    ap.add_argument("--child", nargs=3, metavar=("MODE", "RESULTS", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    if args.spool_rows:
        os.environ[_ROWS_ENV] = str(args.spool_rows)  # read by the measuring processes
    sizes = [int(x) for arg in args.sizes for x in str(arg).replace(",", " ").split()]
    methods = {m.strip() for m in args.methods.split(",") if m.strip()} | {"ingest"}
    unknown = methods - set(_METHODS) - {"ingest"}
    if unknown:
        ap.error(f"--methods: unknown {sorted(unknown)}; choose from {','.join(_METHODS)}")
    if args.queries_only and args.keep is None:
        ap.error("--queries-only needs --keep DIR (where an earlier run kept its stores)")

    load = os.getloadavg()
    print(
        f"machine: {platform.node()} {platform.machine()}, python {platform.python_version()}, "
        f"{os.cpu_count()} cpus; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    rows: list[tuple[str, ...]] = []
    qrows: list[tuple[str, ...]] = []
    for n in sizes:
        if args.queries_only:
            store = args.keep / str(n) / "results" / "sweep.duckdb"
            _open_kept(n, store)
            qrows += run_queries(n, store, args.repeat)
            continue
        if args.keep is not None:
            work = args.keep / str(n)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        else:
            work = Path(tempfile.mkdtemp(prefix=f"store-bench-{n}-", dir=args.workdir))
        try:
            results = work / "results"
            t = time.perf_counter()
            size = write_logs(results, n)
            print(
                f"[{n:,}] wrote {size / 1e6:.0f} MB of JSONL in {time.perf_counter() - t:.1f} s", flush=True
            )
            measured: dict[str, dict[str, float]] = {}
            for key, mode, store, label in (
                ("baseline", "baseline", work / "baseline.duckdb", "baseline (main's ingest)"),
                ("arrow", "ingest-arrow", work / "arrow.duckdb", "ingest, Arrow answers (before)"),
                ("small", "ingest-small", work / "small.duckdb", "ingest, spooled files, 122,880 a batch"),
                ("ingest", "ingest", results / "sweep.duckdb", "ingest, spooled files (new)"),
                ("one", "ingest-1", work / "one.duckdb", "ingest, workers=1"),
                ("again", "ingest", results / "sweep.duckdb", "re-ingest"),
                (
                    "writer-arrow",
                    "writer-arrow",
                    work / "writer-arrow.duckdb",
                    "writing process alone, Arrow",
                ),
                (
                    "writer-small",
                    "writer-small",
                    work / "writer-small.duckdb",
                    "writing process alone, spooled files, 122,880 a batch",
                ),
                ("writer", "writer", work / "writer.duckdb", "writing process alone, spooled files"),
            ):
                if key in methods:
                    measured[key] = _measure(mode, results, store)
                    m = measured[key]
                    print(
                        f"[{n:,}] {label} {m['seconds']:.1f} s, {m['peak_mb']:.0f} MB peak "
                        f"(workers' largest {m['worker_peak_mb']:.0f} MB)",
                        flush=True,
                    )
                    for extra in ("arrow", "small", "baseline", "one"):
                        (work / f"{extra}.duckdb").unlink(missing_ok=True)
            for key, m in measured.items():
                if key != "again" and m["added"] != n:
                    raise SystemExit(f"{key} stored {m['added']:,} of {n:,} traces")
            again = measured.get("again")
            if again is not None and (again["added"] != 0 or again["present"] != n):
                raise SystemExit(f"re-ingest added {again['added']:,}, found {again['present']:,} of {n:,}")
            # Each row against the same path with one row group a batch (before) where measured.
            first = next(k for k in ("small", "arrow", "ingest") if k in measured)
            refs = {"writer": "writer-small" if "writer-small" in measured else first}
            notes = {
                "baseline": ("baseline (main's ingest)", "one process, 20,000-row inserts"),
                "arrow": ("ingest, workers answer Arrow (before)", "rows batched in the ingesting process"),
                "small": ("ingest, workers write files, 1 row group a batch", "as before: 122,880 a batch"),
                "ingest": ("ingest, workers write files (new)", f"{_spool_rows():,} a batch"),
                "one": ("ingest, workers=1", "parsed in the ingesting process"),
                "again": ("re-ingest (all present)", "0 added: idempotent"),
                "writer-arrow": ("writing process alone, Arrow (before)", "parsed beforehand"),
                "writer-small": (
                    "writing process alone, spooled files, 1 row group a batch",
                    "as before: 122,880 a batch",
                ),
                "writer": ("writing process alone, spooled files (new)", f"{_spool_rows():,} a batch"),
            }
            for key, m in measured.items():
                method, note = notes[key]
                if key in ("arrow", "small", "ingest"):
                    method += f" ({m['workers']:.0f} parsing processes)"
                workers = f", largest worker {m['worker_peak_mb']:.0f} MB" if m["workers"] > 1 else ""
                rows.append(
                    (
                        f"{n:,}",
                        method,
                        f"{m['seconds']:.1f}",
                        _rate(n, m["seconds"]),
                        _ratio(measured[refs.get(key, first)]["seconds"], m["seconds"]),
                        f"{m['cpu_seconds'] / n * 1e6:.0f}",
                        f"{m['peak_mb']:.0f} MB{workers}",
                        note,
                    )
                )
            qrows += run_queries(n, results / "sweep.duckdb", args.repeat)
            print(f"[{n:,}] done", flush=True)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)

    load = os.getloadavg()
    print(f"\nload average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    if rows:
        print(
            _table(
                (
                    "traces",
                    "method",
                    "seconds",
                    "traces/s",
                    "vs before",
                    "CPU µs/trace",
                    "peak memory",
                    "note",
                ),
                rows,
            )
        )
        print()
    header = ("traces", f"query (sweep.store.query, {args.repeat} runs)", "median ms", "fastest ms", "CPU ms")
    print(_table((*header, "main's view: median ms", "main's: CPU ms", "vs main", "rows"), qrows))


if __name__ == "__main__":
    main()
