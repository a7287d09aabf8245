"""Results store speed: ingest rate and cross-hardware query latency at 100k and 1M traces,
against row-by-row inserts measured in the same run.

For each size it writes a results folder of synthetic JSONL logs shaped like a sweep's (50
definitions x 4 solutions x many workloads, on two GPUs, 90% PASSED, with provenance and
timing statistics) and times, in the same run:

- ``ingest``: :func:`sweep.store.ingest` of the folder into a new store file (parse and
  validate every line, build rows, batched Arrow inserts with the key anti-join), with the part
  spent inside DuckDB inserts shown separately;
- ``re-ingest``: the same folder again (every trace already stored: the idempotency check);
- ``row-by-row``: the same rows inserted with ``executemany`` one row per statement, the way a
  naive store would, on a sample of ``--rowwise-sample`` traces, extrapolated to the size (and
  labelled as such);
- query latency (median of ``--repeat``, each through :func:`sweep.store.query`, so including
  the read session: attach read-only, views): a cross-hardware summary over all pairs, and one
  definition's pairs.

Usage: ``.venv/bin/python bench/store_ingest.py [--sizes 100000 1000000] [--rowwise-sample 2000]``
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from sweep.schema import Trace
from sweep.store import TABLES, RowBatch, Store, column_names, ingest, query

DEFINITIONS = 50
SOLUTIONS = 4
HARDWARE = ("NVIDIA_H100", "NVIDIA_H200")


def _template() -> dict[str, object]:
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
    base = _template()
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
            obj = json.loads(json.dumps(base))
            obj["definition"] = f"def_{d}"
            obj["solution"] = f"def_{d}_sol_{s}"
            obj["workload"]["uuid"] = f"def_{d}-wl-{w}"
            obj["workload"]["axes"]["batch"] = w
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


def rowwise_rate(results: Path, sample: int, workdir: Path) -> float:
    """Traces per second inserting the same rows one statement per row (executemany)."""
    batch = RowBatch()
    taken = 0
    for log in sorted((results / "traces").rglob("*.jsonl")):
        with log.open() as f:
            for line in f:
                batch.add_trace(Trace.model_validate_json(line), source=str(log))
                taken += 1
                if taken >= sample:
                    break
        if taken >= sample:
            break
    table = batch.arrow("traces")
    types = dict(TABLES["traces"])
    cols = column_names("traces")
    maps = {i for i, c in enumerate(cols) if types[c].startswith("MAP")}
    # Python has no MAP literal: maps travel as JSON text and are cast in SQL.
    rows = [
        tuple(json.dumps(dict(v)) if i in maps and v is not None else v for i, v in enumerate(r.values()))
        for r in table.to_pylist()
    ]
    store = Store(workdir / "rowwise.duckdb")
    marks = [f"CAST(CAST(? AS JSON) AS {types[c]})" if i in maps else "?" for i, c in enumerate(cols)]
    sql = f"INSERT INTO traces VALUES ({', '.join(marks)})"
    with store.writing() as con:
        start = time.perf_counter()
        con.executemany(sql, rows)
        elapsed = time.perf_counter() - start
    return len(rows) / elapsed


def timed_ingest(results: Path, store: Path) -> tuple[float, float, int]:
    """(total seconds, seconds inside DuckDB inserts, traces added)."""
    spent = [0.0]
    orig = Store.add

    def add(self: Store, *a: object, **k: object) -> object:
        t = time.perf_counter()
        try:
            return orig(self, *a, **k)  # type: ignore[arg-type]
        finally:
            spent[0] += time.perf_counter() - t

    Store.add = add  # type: ignore[assignment,method-assign]
    try:
        start = time.perf_counter()
        rep = ingest([results], store)
        total = time.perf_counter() - start
    finally:
        Store.add = orig  # type: ignore[method-assign]
    return total, spent[0], rep.traces_added


def query_latency(store: Path, sql: str, repeat: int) -> tuple[float, int]:
    times = []
    n = 0
    for _ in range(repeat):
        start = time.perf_counter()
        res = query(store, sql)
        times.append(time.perf_counter() - start)
        n = len(res.rows)
    return statistics.median(times), n


CROSS_ALL = """SELECT hardware_a, hardware_b, count(*) AS pairs,
       exp(avg(ln(latency_ratio)) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED')) AS ratio
FROM cross_hardware GROUP BY ALL"""
CROSS_ONE = "SELECT * FROM cross_hardware WHERE definition = 'def_7' ORDER BY solution, workload_uuid"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--rowwise-sample", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()

    print(
        f"machine: {platform.node()} {platform.machine()}, python {platform.python_version()}, "
        f"{__import__('os').cpu_count()} cpus"
    )
    rows: list[tuple[str, ...]] = []
    qrows: list[tuple[str, ...]] = []
    for n in args.sizes:
        work = Path(tempfile.mkdtemp(prefix=f"store-bench-{n}-", dir=args.workdir))
        try:
            results = work / "results"
            t = time.perf_counter()
            size = write_logs(results, n)
            print(
                f"[{n:,}] wrote {size / 1e6:.0f} MB of JSONL in {time.perf_counter() - t:.1f} s", flush=True
            )
            total, in_db, added = timed_ingest(results, results / "sweep.duckdb")
            assert added == n, (added, n)
            print(f"[{n:,}] ingest {total:.1f} s", flush=True)
            again, again_db, added_again = timed_ingest(results, results / "sweep.duckdb")
            assert added_again == 0
            rate = rowwise_rate(results, args.rowwise_sample, work)
            rows.append(
                (
                    f"{n:,}",
                    "ingest (batched Arrow)",
                    f"{total:.1f}",
                    f"{n / total:,.0f}",
                    f"of which Store.add (Arrow build + DuckDB insert) {in_db:.1f} s ({n / in_db:,.0f}/s)",
                )
            )
            rows.append(
                (
                    f"{n:,}",
                    "re-ingest (all present)",
                    f"{again:.1f}",
                    f"{n / again:,.0f}",
                    f"0 added; DuckDB {again_db:.1f} s",
                )
            )
            rows.append(
                (
                    f"{n:,}",
                    "row-by-row executemany",
                    f"{n / rate:.1f}",
                    f"{rate:,.0f}",
                    f"extrapolated from {args.rowwise_sample:,} rows (insert only, no parsing)",
                )
            )
            rows.append(
                (
                    f"{n:,}",
                    "ratio insert part",
                    "",
                    f"{(n / in_db) / rate:,.0f}x",
                    "Store.add rate / row-by-row insert rate",
                )
            )
            for label, sql in (
                ("cross_hardware summary (all pairs)", CROSS_ALL),
                ("cross_hardware, one definition", CROSS_ONE),
            ):
                lat, nrows = query_latency(results / "sweep.duckdb", sql, args.repeat)
                qrows.append((f"{n:,}", label, f"{lat * 1000:.0f}", str(nrows)))
            print(f"[{n:,}] done", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def table(header: tuple[str, ...], body: list[tuple[str, ...]]) -> str:
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        out = [
            "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
            "|" + "|".join("-" * (w + 2) for w in widths) + "|",
        ]
        out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in body]
        return "\n".join(out)

    print()
    print(table(("traces", "method", "seconds", "traces/s", "note"), rows))
    print()
    print(table(("traces", f"query (median of {args.repeat})", "ms", "rows"), qrows))


if __name__ == "__main__":
    main()
