"""Writes ``v2.duckdb``: a store in schema version 2, the fixture of the 2 -> 3 migration test.

Its traces carry the extension fields that version 3 gives columns (work, rates, flags, the
timer's fields, ``clocks.throttled``), so the test can check the migration fills them from
the records. It also writes ``v2_traces.jsonl``, the traces the store holds.

It must run against the code of schema version 2 (commit 5cd4584, whose records already
know those fields); from the repository root of such a checkout:

    git archive 5cd4584 | tar -x -C /tmp/v2 && cp tests/store/make_v2_store.py /tmp/v2/
    (cd /tmp/v2 && PYTHONPATH=. python make_v2_store.py <this repo>/tests/data/store)
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

from sweep.schema import Definition, Solution, Trace
from sweep.store import SCHEMA_VERSION, RowBatch, Store, StoreContext

DEFINITION = Definition.model_validate(
    {
        "name": "scale_n4096",
        "op_type": "elementwise",
        "tags": ["demo", "v2"],
        "axes": {"batch": {"type": "var"}, "n": {"type": "const", "value": 4096}},
        "inputs": {"x": {"shape": ["batch", "n"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["batch", "n"], "dtype": "float32"}},
        "reference": "def run(x):\n    return x * 2\n",
        "flops": "batch * n",
        "bytes": "8 * batch * n",
    }
)


def _solution(name: str, author: str) -> Solution:
    return Solution.model_validate(
        {
            "name": name,
            "definition": DEFINITION.name,
            "author": author,
            "spec": {"language": "triton", "target_hardware": ["gpu"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"def run(x, y):\n    y.copy_(x * 2)  # {name}\n"}],
        }
    )


SOLUTIONS = [_solution("scale_honest", "alice"), _solution("scale_cheat", "mallory")]


def _trace(
    solution: str,
    hardware: str,
    latency: float,
    ts: str,
    *,
    flags: list[str] | None = None,
    status: str = "PASSED",
) -> Trace:
    batch = 1024
    work_bytes = 8.0 * batch * 4096
    peak_gbps = 4800 if hardware == "NVIDIA_H200" else 3350
    ev: dict[str, object] = {
        "status": status,
        "environment": {"hardware": hardware, "libs": {"torch": "2.9.0"}, "device_name": hardware},
        "timestamp": ts,
        "log": "" if status == "PASSED" else "RuntimeError: boom",
    }
    if status == "PASSED":
        ev["correctness"] = {"max_relative_error": 0.0, "max_absolute_error": 0.0}
        ev["performance"] = {
            "latency_ms": latency,
            "reference_latency_ms": 0.05,
            "speedup_factor": 0.05 / latency,
            "work_flops": float(batch * 4096),
            "work_bytes": work_bytes,
            "work_source": "declared",
            "tflops": batch * 4096 / (latency * 1e-3) / 1e12,
            "gbps": work_bytes / (latency * 1e-3) / 1e9,
            "peak_fraction": work_bytes / (latency * 1e-3) / 1e9 / peak_gbps,
            "floor_ms": work_bytes / (peak_gbps * 1e9) * 1e3,
        }
        ev["timing"] = {
            "clock": "cuda_event",
            "iterations": 100,
            "p10_ms": latency,
            "p50_ms": latency,
            "p90_ms": latency,
            "mean_ms": latency,
            "cv": 0.01,
            "timer": "cudagraph",
            "rel_error": 0.002,
            "target_rel_error": 0.005,
            "target_met": True,
        }
        ev["reference_timing"] = {**ev["timing"], "timer": "events"}  # type: ignore[dict-item]
        ev["clocks"] = {"sm_clock_mhz_max": 1980, "sm_clock_mhz_min": 1755, "throttled": False}
    if flags:
        ev["flags"] = flags
    return Trace.model_validate(
        {
            "definition": DEFINITION.name,
            "workload": {"uuid": "wl-a", "axes": {"batch": batch}, "inputs": {"x": {"type": "random"}}},
            "solution": solution,
            "evaluation": ev,
        }
    )


TRACES = [
    _trace("scale_honest", "NVIDIA_H100", 0.012, "2026-02-01T10:00:00+00:00"),
    # 0.0001 ms for 33.5 MB is 335 TB/s: under the floor, flagged by the engine of version 3.
    _trace(
        "scale_cheat", "NVIDIA_H100", 0.0001, "2026-02-01T10:00:01+00:00", flags=["impossible", "suspicious"]
    ),
    _trace("scale_honest", "NVIDIA_H200", 0.009, "2026-02-01T11:00:00+00:00"),
    _trace("scale_cheat", "NVIDIA_H200", 0.0, "2026-02-01T11:00:01+00:00", status="RUNTIME_ERROR"),
]


def main(out: Path) -> None:
    assert SCHEMA_VERSION == 2, f"run against schema version 2 code, not {SCHEMA_VERSION}"
    db = out / "v2.duckdb"
    db.unlink(missing_ok=True)
    # A small block size keeps the fixture small (the default 256 KiB blocks make it 1.3 MB).
    con = duckdb.connect()
    con.execute(f"ATTACH '{db}' AS v2 (BLOCK_SIZE 16384)")
    con.execute("DETACH v2")
    con.close()
    ctx = StoreContext.of([DEFINITION], SOLUTIONS)
    batch = RowBatch()
    batch.add_context(ctx)
    for t in TRACES:
        batch.add_trace(t, context=ctx, source="make_v2_store")
    Store(db).add(batch)
    (out / "v2_traces.jsonl").write_text("".join(t.to_json() + "\n" for t in TRACES))
    print(f"wrote {db} ({db.stat().st_size} bytes) and v2_traces.jsonl")


if __name__ == "__main__":
    main(
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data" / "store"
    )
