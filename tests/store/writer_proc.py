"""A sweep driver stand-in for the concurrency tests: writes traces with a ResultsWriter.

Usage: python writer_proc.py RESULTS_DIR STORE N INTERVAL_S
Prints one line per trace written ("wrote <i>"), flushed, so the parent can follow along.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sweep.schema import Trace
from sweep.store import ResultsWriter


def trace(i: int) -> Trace:
    return Trace.model_validate(
        {
            "definition": f"op_{i % 3}",
            "workload": {"uuid": f"wl-{i}", "axes": {"batch": i + 1}, "inputs": {}},
            "solution": "s1",
            "evaluation": {
                "status": "PASSED",
                "environment": {"hardware": "NVIDIA_H100", "libs": {}},
                "timestamp": "2026-01-01T00:00:00+00:00",
                "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
                "performance": {"latency_ms": 1.0, "reference_latency_ms": 2.0, "speedup_factor": 2.0},
            },
            "provenance": {"task_id": f"task-{i}"},
        }
    )


def main() -> None:
    results, store, n, interval = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    with ResultsWriter(results, store, sweep="concurrency", run_id="run-1", flush_interval_s=0.1) as w:
        for i in range(n):
            w.write(trace(i))
            print(f"wrote {i}", flush=True)
            if interval:
                time.sleep(interval)


if __name__ == "__main__":
    main()
