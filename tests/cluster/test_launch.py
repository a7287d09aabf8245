"""``sweep launch`` end to end on a two-node Ray cluster (logical GPUs), real engine and store.

The engine runs its CPU path (no real GPU here); placement, faults, retries and storage are
what is under test.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.cluster.scheduler import SchedulerOptions
from sweep.errors import ClusterError
from sweep.launch.driver import LaunchOptions, launch
from sweep.store import completed_task_ids

from .conftest import DATA, read_traces, write_config, write_dataset

runner = CliRunner()

_BARRIER = """import os
import time

FOLDER = {folder!r}


def run(x):
    # Wait until every GPU of the pool has started an evaluation: only a scheduler that
    # keeps all four busy at once lets this finish without the 60 s fallback.
    os.makedirs(FOLDER, exist_ok=True)
    open(os.path.join(FOLDER, os.environ.get("CUDA_VISIBLE_DEVICES", "none")), "w").close()
    deadline = time.monotonic() + 60
    while len(os.listdir(FOLDER)) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    return x + 1
"""

_KILL_WORKER = """import os


def run(x):
    if x.numel() != 64:  # only workload toy-0 (n = 64) loses its worker
        return x + 1
    # sandbox -> zygote -> the Ray actor that owns this GPU: SIGKILL it, as if its node died.
    with open(f"/proc/{os.getppid()}/stat") as f:
        actor = int(f.read().rsplit(")", 1)[1].split()[1])
    os.kill(actor, 9)
    return x + 1
"""


def test_h100_sweep_uses_every_h100_gpu_one_evaluation_at_a_time(
    two_nodes: dict[str, str], tmp_path: Path, task_channel: Path
) -> None:
    data = write_dataset(
        tmp_path / "data", {"barrier": _BARRIER.format(folder=str(task_channel / "gpus"))}, 40
    )
    cfg = write_config(tmp_path / "h100.yaml", [data], tmp_path / "results", hardware="H100")
    result = launch(cfg, LaunchOptions(quiet=True))
    assert (result.planned, result.ran, result.skipped) == (40, 40, 0)
    assert result.statuses == {"PASSED": 40}
    traces = read_traces(tmp_path / "results")
    assert len(traces) == 40
    spans: dict[tuple[str, str], list[tuple[datetime, datetime]]] = defaultdict(list)
    for t in traces:
        p = t["provenance"]
        assert isinstance(p, dict)
        spans[(p["node_id"], p["gpu_id"])].append(
            (datetime.fromisoformat(p["started_at"]), datetime.fromisoformat(p["finished_at"]))
        )
    assert {node for node, _ in spans} == {two_nodes["H100"]}, "ran outside the H100 node"
    assert {gpu for _, gpu in spans} == {"0", "1", "2", "3"}, "a GPU was left idle"
    for intervals in spans.values():
        intervals.sort()
        for (_, end), (start, _) in itertools.pairwise(intervals):
            assert end <= start, "two evaluations overlapped on one GPU"


def test_fault_sweep_one_trace_each_with_the_right_status(two_nodes: dict[str, str], tmp_path: Path) -> None:
    results = tmp_path / "results"
    cfg = write_config(
        tmp_path / "faults.yaml", [DATA / "faults"], results, hardware="H100", compile_s=6, run_s=6
    )
    out = runner.invoke(app, ["launch", str(cfg), "--quiet"])
    assert out.exit_code == 0, out.output
    assert (
        "fault_add_segfault" in out.stdout and "14 ran (PASSED 4, RUNTIME_ERROR 6, TIMEOUT 4)" in out.stdout
    )
    traces = read_traces(results)
    assert len(traces) == 14
    assert len({t["provenance"]["task_id"] for t in traces}) == 14  # type: ignore[index]
    by_solution: dict[str, list[dict]] = defaultdict(list)  # type: ignore[type-arg]
    for t in traces:
        by_solution[str(t["solution"])].append(t["evaluation"])  # type: ignore[arg-type]
    expect = {
        "fault_add_ok": ("PASSED", ""),
        "fault_add_ok_torch_add": ("PASSED", ""),
        "fault_add_segfault": ("RUNTIME_ERROR", "killed by signal 11 (SIGSEGV)"),
        "fault_add_exit": ("RUNTIME_ERROR", "exited with code 3"),
        "fault_add_raise": ("RUNTIME_ERROR", "fault_add_raise: deliberate failure"),
        "fault_add_hang_run": ("TIMEOUT", "the run phase exceeded timeouts.run_s=6"),
        "fault_add_hang_import": (
            "TIMEOUT",
            "the build phase (import, compile) exceeded timeouts.compile_s=6",
        ),
    }
    assert set(by_solution) == set(expect)
    for name, (status, text) in expect.items():
        evals = by_solution[name]
        assert len(evals) == 2, name
        for ev in evals:
            assert ev["status"] == status, (name, ev["log"])
            assert text in ev["log"], (name, ev["log"])
    # The log says where it broke: faulthandler's report of the crash or the hang.
    for ev in by_solution["fault_add_segfault"]:
        assert "Fatal Python error: Segmentation fault" in ev["log"] and "main.py" in ev["log"]
    for name in ("fault_add_hang_run", "fault_add_hang_import"):
        assert all('main.py", line' in ev["log"] for ev in by_solution[name]), by_solution[name]

    # Launching again runs nothing: the store and logs already hold every task.
    again = runner.invoke(app, ["launch", str(cfg), "--quiet"])
    assert again.exit_code == 0, again.output
    assert "14 planned, 14 already stored (skipped), 0 ran" in again.stdout
    assert len(read_traces(results)) == 14
    assert len(completed_task_ids(results, results / "sweep.duckdb")) == 14


def test_config_for_absent_hardware_fails_at_once(two_nodes: dict[str, str], tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data", {"ok": "def run(x):\n    return x + 1\n"})
    cfg = write_config(tmp_path / "a100.yaml", [data], tmp_path / "results", hardware="A100")
    out = runner.invoke(app, ["launch", str(cfg)])
    assert out.exit_code == 1
    assert "error: no node of the cluster has A100 GPUs" in out.stderr
    assert "it has: H100, H200" in out.stderr
    assert "4 x H100 GPU" in out.stderr and "2 x H200 GPU" in out.stderr
    assert not (tmp_path / "results" / "traces").exists() or not read_traces(tmp_path / "results")


def test_lost_worker_tasks_run_elsewhere_then_give_up(two_nodes: dict[str, str], tmp_path: Path) -> None:
    ok = "def run(x):\n    return x + 1\n"
    data = write_dataset(tmp_path / "data", {"ok": ok, "kill_worker": _KILL_WORKER}, n_workloads=4)
    cfg = write_config(tmp_path / "h200.yaml", [data], tmp_path / "results", hardware="H200")
    # Unconfined: the solution stands for a lost node, and a confined one may not signal its worker.
    opts = LaunchOptions(quiet=True, scheduler=SchedulerOptions(stall_timeout_s=120), confine=False)
    result = launch(cfg, opts)
    traces = read_traces(tmp_path / "results")
    assert len(traces) == result.planned == 8
    assert len({t["provenance"]["task_id"] for t in traces}) == 8  # type: ignore[index]
    for t in traces:
        p, ev = t["provenance"], t["evaluation"]
        assert p["node_id"] == two_nodes["H200"]  # type: ignore[index]
        if t["solution"] == "ok" or t["workload"]["uuid"] != "toy-0":  # type: ignore[index]
            assert ev["status"] == "PASSED", (t["solution"], t["workload"], ev["log"])  # type: ignore[index]
        else:
            assert ev["status"] == "RUNTIME_ERROR"  # type: ignore[index]
            assert "the worker running this task was lost 3 time(s)" in ev["log"]  # type: ignore[index]
            assert p["attempt"] == 2  # type: ignore[index]
    assert result.stats.lost == 1 and result.stats.workers_died == 3


def test_workers_that_cannot_start_stop_the_launch_with_their_error(
    two_nodes: dict[str, str], tmp_path: Path
) -> None:
    data = write_dataset(tmp_path / "data", {"ok": "def run(x):\n    return x + 1\n"})
    cfg = write_config(tmp_path / "h200.yaml", [data], tmp_path / "results", hardware="H200")
    opts = LaunchOptions(quiet=True, backend="no_such_engine_module", preload=())
    with pytest.raises(ClusterError) as err:
        launch(cfg, opts)
    msg = str(err.value)
    assert msg.startswith("no worker can run the remaining 2 H200 task(s): all workers were lost or failed")
    assert "No module named 'no_such_engine_module'" in msg
    assert "launch again to resume" in msg
