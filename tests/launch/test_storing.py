"""The launch's storing: the loop's traces are appended at once and counted (tally, progress)
only once their log is synced."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import pytest

from sweep.launch._storing import Storing
from sweep.launch.progress import Progress, Tally
from sweep.schema import Trace
from sweep.store import ResultsWriter


def _trace(i: int, status: str = "PASSED") -> Trace:
    perf = (
        {"latency_ms": 1.0, "reference_latency_ms": 2.0, "speedup_factor": 2.0}
        if status == "PASSED"
        else None
    )
    return Trace.model_validate(
        {
            "definition": "vec_add",
            "workload": {"uuid": f"wl-{i}", "axes": {"n": i + 1}, "inputs": {}},
            "solution": "s1",
            "evaluation": {
                "status": status,
                "environment": {"hardware": "NVIDIA_H100", "libs": {}},
                "timestamp": "2026-01-01T00:00:00+00:00",
                **(
                    {
                        "performance": perf,
                        "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
                    }
                    if perf
                    else {}
                ),
            },
            "provenance": {"task_id": f"t-{i}"},
        }
    )


def test_traces_count_only_once_their_log_is_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    release = threading.Event()
    real = os.fsync

    def slow(fd: int) -> None:
        release.wait(30)
        real(fd)

    tally, progress = Tally(), Progress(3, io.StringIO())
    with ResultsWriter(results, results / "sweep.duckdb", sweep="s", run_id="r") as w:
        monkeypatch.setattr(os, "fsync", slow)
        storing = Storing(w, tally, progress, {"t-0": "H100", "t-1": "H100", "t-2": "H100"})
        storing.on_traces([_trace(0), _trace(1, "RUNTIME_ERROR")])
        storing.on_traces([_trace(2)])
        time.sleep(0.2)
        storing.on_tick()
        assert (sum(tally.statuses.values()), progress.done) == (0, 0)  # logged, not yet durable
        release.set()
        storing.drain()
        assert tally.statuses == {"PASSED": 2, "RUNTIME_ERROR": 1}
        assert (progress.done, progress.passed) == (3, 2)
        assert tally.by_hardware == {"H100": 3}
        (row,) = tally.sorted_rows()
        assert (row.definition, row.solution, row.hardware, row.speedups) == (
            "vec_add",
            "s1",
            "H100",
            [2.0, 2.0],
        )


def test_an_empty_delivery_does_not_hold_the_drain(tmp_path: Path) -> None:
    # A group of no lines is never synced: a drain waiting for it would wait for ever.
    results = tmp_path / "results"
    tally = Tally()
    with ResultsWriter(results, results / "sweep.duckdb", sweep="s", run_id="r") as w:
        storing = Storing(w, tally, None, {"t-0": "H100"})
        storing.on_traces([_trace(0)])
        storing.drain()  # every group synced: nothing left for a sync to carry the next
        storing.on_traces([])
        done = threading.Event()
        threading.Thread(target=lambda: (storing.drain(), done.set()), daemon=True).start()
        assert done.wait(30)
    assert tally.statuses == {"PASSED": 1}
