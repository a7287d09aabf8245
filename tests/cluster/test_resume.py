"""Kill the driver with SIGKILL in the middle of a sweep, launch again: nothing lost or doubled.

Runs ``sweep launch`` as a subprocess on an embedded local Ray (CPU slots), as a user would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from sweep.store import query

from .conftest import REPO, read_traces, write_config, write_dataset

_SLOW = "import time\n\n\ndef run(x):\n    time.sleep(0.05)\n    return x + 1\n"


def _session(sid: int) -> dict[int, str]:
    """Live processes of session ``sid`` (the launch started it with ``start_new_session``)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                out[int(entry.name)] = cmd
    return out


def _ours(cmdline: str) -> bool:
    return "sweep.sandbox._zygote" in cmdline or "SweepWorker" in cmdline or "raylet" in cmdline


def _launch(cfg: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RAY_ADDRESS": ""}
    return subprocess.Popen(
        [sys.executable, "-m", "sweep.cli", "launch", str(cfg)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_driver_killed_midway_then_relaunched_loses_and_doubles_nothing(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data", {"slow_a": _SLOW, "slow_b": _SLOW + "# b\n"}, n_workloads=15)
    results = tmp_path / "results"
    cfg = write_config(tmp_path / "cpu.yaml", [data], results, hardware="cpu", extra="ray: {num_cpus: 2}\n")

    first = _launch(cfg)
    try:
        deadline = time.monotonic() + 240
        while len(read_traces(results) if (results / "traces").exists() else []) < 5:
            assert first.poll() is None, first.communicate()[0].decode()[-3000:]
            assert time.monotonic() < deadline, "the first launch wrote no traces in time"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        # Workers, zygotes and sandboxes die with the driver (fate sharing, closed sockets).
        # Two idle Ray agents may linger: killed here, by id, in this session only.
        end = time.monotonic() + 20
        while time.monotonic() < end and any(_ours(c) for c in _session(first.pid).values()):
            time.sleep(0.2)
        left = [c for c in _session(first.pid).values() if _ours(c)]
        for pid in _session(first.pid):
            os.kill(pid, signal.SIGKILL)
    killed_at = len(read_traces(results))
    assert 5 <= killed_at < 30, f"the kill did not land mid-sweep ({killed_at} traces)"
    assert not left, f"sweep processes outlived the killed driver: {left}"

    second = _launch(cfg)
    out = second.communicate(timeout=300)[0].decode()
    assert second.returncode == 0, out[-3000:]
    assert f"30 planned, {killed_at} already stored (skipped), {30 - killed_at} ran" in out
    # the summary covers the whole sweep, from the store, and says which part ran now
    assert f"sweep state (store): 30 tasks with a trace, {30 - killed_at} of them from this run" in out, out

    traces = read_traces(results)
    ids = Counter(str(t["provenance"]["task_id"]) for t in traces)  # type: ignore[index]
    assert len(ids) == 30 and max(ids.values()) == 1, "a task has no trace or two traces in the logs"
    store = results / "sweep.duckdb"
    latest = query(store, "SELECT task_id, count(*) FROM latest GROUP BY task_id", results_dir=results)
    assert latest.source == "store"
    assert len(latest.rows) == 30 and all(n == 1 for _, n in latest.rows)
    assert query(store, "SELECT count(*) FROM traces", results_dir=results).rows == [(30,)]
