"""When a worker's process started (``process_started_at``), for the launch's start clock."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from sweep.cluster._worker_actor import process_started_at


def test_process_started_at_is_when_the_process_began() -> None:
    started = process_started_at()
    assert started is not None
    assert started <= time.time()
    # A child process started now: within a few seconds of now (its start, not boot's).
    before = time.time()
    out = subprocess.run(
        [sys.executable, "-c", "from sweep.cluster._worker_actor import process_started_at as p; print(p())"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    child = float(out.stdout.strip())
    assert before - 0.5 <= child <= time.time()
