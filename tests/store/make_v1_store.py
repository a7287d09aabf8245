"""Writes ``v1.duckdb``: a store in schema version 1, the fixture of the migration test.

It also writes ``v1_traces.jsonl``, the traces the store holds, so the test can check that
ingesting them into the migrated store adds nothing. Run from the repository root:

    .venv/bin/python tests/store/make_v1_store.py

The files go to ``tests/data/store/``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb

from sweep.schema import Definition, Solution, Trace
from sweep.store.rows._migrate import V1_SCHEMA

HERE = Path(__file__).resolve().parent.parent / "data" / "store"

DEFINITION = Definition.model_validate(
    {
        "name": "vec_add_n1024",
        "op_type": "elementwise",
        "tags": ["demo", "v1"],
        "axes": {"batch": {"type": "var"}, "n": {"type": "const", "value": 1024}},
        "inputs": {
            "x": {"shape": ["batch", "n"], "dtype": "float32"},
            "y": {"shape": ["batch", "n"], "dtype": "float32"},
        },
        "outputs": {"out": {"shape": ["batch", "n"], "dtype": "float32"}},
        "reference": "def run(x, y):\n    return x + y\n",
    }
)

SOLUTION = Solution.model_validate(
    {
        "name": "vec_add_triton_v1",
        "definition": "vec_add_n1024",
        "author": "alice",
        "spec": {"language": "triton", "target_hardware": ["gpu"], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": "def run(x, y, out):\n    out.copy_(x + y)\n"}],
    }
)


def _trace(uuid: str, batch: int, hardware: str, status: str, latency: float, ts: str) -> Trace:
    ev: dict[str, object] = {
        "status": status,
        "environment": {"hardware": hardware, "libs": {"torch": "2.9.0"}},
        "timestamp": ts,
        "log": "" if status == "PASSED" else "RuntimeError: boom",
    }
    if status == "PASSED":
        ev["correctness"] = {"max_relative_error": 1e-6, "max_absolute_error": 2e-6}
        ev["performance"] = {
            "latency_ms": latency,
            "reference_latency_ms": 0.02,
            "speedup_factor": 0.02 / latency,
        }
    return Trace.model_validate(
        {
            "definition": DEFINITION.name,
            "workload": {
                "uuid": uuid,
                "axes": {"batch": batch},
                "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
            },
            "solution": SOLUTION.name,
            "evaluation": ev,
        }
    )


TRACES = [
    _trace("wl-1", 1, "NVIDIA H100 80GB HBM3", "PASSED", 0.010, "2026-01-05T10:00:00"),
    _trace("wl-2", 64, "NVIDIA H100 80GB HBM3", "PASSED", 0.016, "2026-01-05T10:00:01"),
    _trace("wl-1", 1, "NVIDIA_H200", "PASSED", 0.008, "2026-01-06T09:00:00+00:00"),
    _trace("wl-2", 64, "NVIDIA_H200", "RUNTIME_ERROR", 0.0, "2026-01-06T09:00:01+00:00"),
]


def main() -> None:
    db = HERE / "v1.duckdb"
    db.unlink(missing_ok=True)
    # A small block size keeps the fixture small (the default 256 KiB blocks make it 1.3 MB).
    mem = duckdb.connect()
    mem.execute(f"ATTACH '{db}' AS v1 (BLOCK_SIZE 16384)")
    mem.execute("USE v1")
    con = mem
    for stmt in V1_SCHEMA:
        con.execute(stmt)
    con.execute("INSERT INTO store_meta VALUES ('schema_version', '1')")
    con.execute(
        "INSERT INTO definitions VALUES (?, ?, ?, ?)",
        [DEFINITION.name, DEFINITION.op_type, json.dumps(DEFINITION.tags), DEFINITION.to_json()],
    )
    con.execute(
        "INSERT INTO solutions VALUES (?, ?, ?, ?, ?, ?)",
        [
            SOLUTION.name,
            SOLUTION.definition,
            SOLUTION.author,
            SOLUTION.spec.language.value,
            SOLUTION.content_hash,
            SOLUTION.to_json(),
        ],
    )
    for t in TRACES:
        ev = t.evaluation
        assert ev is not None
        rec = t.to_json()
        perf, corr = ev.performance, ev.correctness
        con.execute(
            "INSERT INTO traces VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                hashlib.sha1(rec.encode()).hexdigest(),
                t.definition,
                t.solution,
                t.workload.uuid,
                json.dumps(t.workload.axes),
                ev.status.value,
                corr.max_absolute_error if corr else None,
                corr.max_relative_error if corr else None,
                perf.latency_ms if perf else None,
                perf.reference_latency_ms if perf else None,
                perf.speedup_factor if perf else None,
                ev.environment.hardware,
                json.dumps(ev.environment.libs),
                ev.timestamp,
                ev.log,
                DEFINITION.op_type,
                json.dumps(DEFINITION.tags),
                SOLUTION.author,
                SOLUTION.spec.language.value,
                SOLUTION.content_hash,
                "legacy-sweep",
                "run-2026-01",
                "cfg0001",
                "set0001",
                rec,
            ],
        )
    con.execute("USE memory")
    con.execute("DETACH v1")
    con.close()
    (HERE / "v1_traces.jsonl").write_text("".join(t.to_json() + "\n" for t in TRACES))
    print(f"wrote {db} ({db.stat().st_size} bytes) and v1_traces.jsonl")


if __name__ == "__main__":
    main()
