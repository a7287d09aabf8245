"""A sweep on a one-slot host (embedded Ray, one CPU worker) whose solutions attack their
parent, their process group, their worker and their descriptors: every task gets exactly
one trace, the offenders RUNTIME_ERROR, every innocent one PASSED, and the sweep completes."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from .conftest import read_traces, run_fresh, write_config, write_dataset

pytestmark = pytest.mark.hostile

_OK = "def run(x):\n    return x + 1\n"
_HOSTILE = {
    "kills_parent": "import os, signal\n\ndef run(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return x + 1\n",
    "kills_parent_group": (
        "import os, signal\n\ndef run(x):\n    os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)\n    return x + 1\n"
    ),
    "kills_own_group": "import os, signal\n\ndef run(x):\n    os.killpg(os.getpgrp(), signal.SIGKILL)\n",
    "closes_fds": "import os\n\ndef run(x):\n    os.closerange(3, 1 << 16)\n    return x + 1\n",
    "leaves_orphan": (
        "import os, time\n\n"
        "def run(x):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(600)\n"
        "        os._exit(0)\n"
        "    return x + 1\n"
    ),
}
_KILLS_WORKER = (
    "import os\n\n"
    "def run(x):\n"
    "    # sandbox -> zygote -> the Ray worker that owns this slot\n"
    "    with open(f'/proc/{os.getppid()}/stat') as f:\n"
    "        worker = int(f.read().rsplit(')', 1)[1].split()[1])\n"
    "    os.kill(worker, 9)\n"
    "    return x + 1\n"
)


def test_hostile_solutions_on_a_one_slot_host(tmp_path: Path) -> None:
    _sweep(tmp_path, hardware="CPU", extra="ray: {num_cpus: 1}\n")


@pytest.mark.gpu
def test_hostile_solutions_on_a_one_gpu_host(tmp_path: Path) -> None:
    import torch

    if torch.cuda.device_count() != 1:
        pytest.skip("needs a host with exactly one GPU")
    _sweep(tmp_path, hardware="auto", extra="")


def _sweep(tmp_path: Path, *, hardware: str, extra: str) -> None:
    # Three innocent solutions of distinct content (a task's id hashes the solution's content).
    innocent = {f"ok_{k}": f"# {k}\n{_OK}" for k in "abc"}
    solutions = {**innocent, **_HOSTILE, "kills_worker": _KILLS_WORKER}
    data = write_dataset(tmp_path / "data", solutions, n_workloads=1)
    results = tmp_path / "results"
    cfg = write_config(
        tmp_path / "one-slot.yaml", [data], results, hardware=hardware, compile_s=60, run_s=60, extra=extra
    )
    home = tmp_path / "home"
    home.mkdir()
    proc = run_fresh(
        [sys.executable, "-m", "sweep.cli", "launch", str(cfg), "--quiet"], cwd=tmp_path, home=home
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    traces = read_traces(results)
    by_solution: dict[str, list[dict]] = defaultdict(list)  # type: ignore[type-arg]
    for t in traces:
        by_solution[str(t["solution"])].append(t["evaluation"])  # type: ignore[arg-type]
    assert len(traces) == len(solutions), out
    assert len({t["provenance"]["task_id"] for t in traces}) == len(traces)  # type: ignore[index]
    for name in ("ok_a", "ok_b", "ok_c", "leaves_orphan"):
        assert [e["status"] for e in by_solution[name]] == ["PASSED"], (name, by_solution[name])
    expect = {
        # Refused by the sandbox's seccomp filter (``sweep.sandbox._confine``).
        "kills_parent": "Operation not permitted",
        "kills_parent_group": "Operation not permitted",
        "kills_own_group": "killed by signal 9",
        "closes_fds": "socket to the supervisor was closed",
        "kills_worker": "Operation not permitted",
    }
    for name, needle in expect.items():
        for ev in by_solution[name]:
            assert ev["status"] == "RUNTIME_ERROR", (name, ev["log"][:500])
            assert needle in ev["log"], (name, ev["log"][:500])
