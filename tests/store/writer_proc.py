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


def _wait_seen(seen: Path, count: int, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if int(seen.read_text() or 0) >= count:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    raise SystemExit(f"the reader never saw {count} traces")


def main() -> None:
    results, store, n, interval = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    # SEEN (optional): the reader's last count; at a quarter, half and three quarters the writer
    # waits until the reader has seen that many, so it meets the store mid-run however slow it is.
    seen = Path(sys.argv[5]) if len(sys.argv) > 5 else None
    gates = {n // 4, n // 2, 3 * n // 4} if seen else set()
    with ResultsWriter(results, store, sweep="concurrency", run_id="run-1", flush_interval_s=0.1) as w:
        for i in range(n):
            if i in gates and seen is not None:
                _wait_seen(seen, i)
            w.write(trace(i))
            print(f"wrote {i}", flush=True)
            if interval:
                time.sleep(interval)


if __name__ == "__main__":
    main()
