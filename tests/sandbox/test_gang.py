"""Distributed tasks on the CPU: N rank sandboxes over gloo, one trace; the failing rank named.

Each test here starts one sandbox (a zygote that imports torch) per rank, so they are few and
use the shortest settings. The Ray test runs a mixed launch on the session's two-node cluster
(logical GPUs): 2- and 4-rank all-reduces beside single-GPU tasks, and an 8-rank one left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.sandbox._gang_merge import merge_ranks, secondary
from sweep.sandbox.gang import run_gang
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import EvalSettings, Status, Timeouts, Trace
from sweep.schema.task import Task
from tests.data.distributed.allreduce import definition, solution, workload

from ..cluster.conftest import read_traces, write_config, write_dataset
from ..conftest import quick_settings


def _settings(run_s: float = 30) -> EvalSettings:
    return quick_settings(timeouts=Timeouts(compile_s=30, run_s=run_s))


def _gang(kind: str, tmp_path: Path, *, world: int = 2, run_s: float = 30) -> Trace:
    task = Task.make(definition(None), solution(kind), workload(64, world), _settings(run_s), "CPU")
    return run_gang(task, SandboxSpec(device_kind="cpu", workdir=str(tmp_path)), grace_s=2.0)


def _dist(trace: Trace):  # type: ignore[no-untyped-def]
    assert trace.evaluation is not None and trace.evaluation.distributed is not None
    return trace.evaluation.distributed


def test_four_ranks_pass_each_with_its_figures(tmp_path: Path) -> None:
    trace = _gang("good", tmp_path, world=4)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.PASSED, ev.log if ev else None
    d = _dist(trace)
    assert d.world_size == 4 and d.backend == "gloo" and [r.rank for r in d.ranks] == [0, 1, 2, 3]
    assert all(r.status == "PASSED" and r.latency_ms is not None for r in d.ranks)
    slowest = max(d.ranks, key=lambda r: r.latency_ms or 0.0)
    assert d.straggler_rank == slowest.rank and ev.performance is not None
    assert ev.performance.latency_ms == slowest.latency_ms  # the task's latency is the slowest rank's
    assert len({r.pid for r in d.ranks}) == 4  # a process of its own each
    assert d.collective == "all_reduce" and d.message_bytes == 64 * 4
    assert d.busbw_gbps == pytest.approx(d.algbw_gbps * 2 * 3 / 4)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("kind", "status", "words"),
    [
        ("wrong_on_1", Status.INCORRECT_NUMERICAL, "rank 1"),
        ("crash_on_1", Status.RUNTIME_ERROR, "exited with code 3"),
    ],
)
def test_one_failing_rank_is_named(kind: str, status: Status, words: str, tmp_path: Path) -> None:
    trace = _gang(kind, tmp_path)
    ev = trace.evaluation
    assert ev is not None and ev.status is status, ev.log if ev else None
    assert ev.log.startswith(f"{status.value}: rank 1 of 2 failed") and words in ev.log
    d = _dist(trace)
    assert d.failed_rank == 1 and d.straggler_rank is None
    assert d.ranks[1].log and Path(d.ranks[1].log).is_file()  # the failing rank's log, kept and named


def test_a_hung_rank_takes_the_task_down_in_its_timeout(tmp_path: Path) -> None:
    trace = _gang("hang_on_1", tmp_path, run_s=4)
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.TIMEOUT, ev.log if ev else None
    assert _dist(trace).failed_rank == 1  # rank 0 waited in a collective: not its fault
    assert "time.sleep" not in ev.log or "main.py" in ev.log


def _rank_trace(status: str, log: str) -> Trace:
    ev: dict[str, object] = {
        "status": status,
        "environment": {"hardware": "CPU"},
        "timestamp": "2026-01-01T00:00:00Z",
        "log": log,
    }
    return Trace.model_validate(
        {"definition": "all_reduce_sum", "workload": workload().model_dump(), "evaluation": ev}
    )


def test_blame_goes_to_the_rank_whose_failure_is_its_own() -> None:
    waiting = _rank_trace(
        "TIMEOUT", 'TIMEOUT: ...\n  File "x/torch/distributed/distributed_c10d.py", line 1 in all_reduce'
    )
    hung = _rank_trace("TIMEOUT", 'TIMEOUT: ...\n  File "main.py", line 9 in run')
    peer = _rank_trace("RUNTIME_ERROR", "RUNTIME_ERROR: rank 0: RuntimeError: Connection closed by peer")
    assert secondary(waiting, False) and not secondary(hung, False) and secondary(peer, False)
    assert secondary(hung, True)  # killed because another failed
    task = Task.make(definition(None), solution("good"), workload(64, 2), _settings(), "CPU")
    merged = merge_ranks(task, [waiting, hung], [0, 1], set(), {})
    assert _dist(merged).failed_rank == 1 and merged.evaluation.status is Status.TIMEOUT  # type: ignore[union-attr]
    merged = merge_ranks(task, [peer, hung], [0, 1], set(), {})  # first to arrive, but a victim
    assert _dist(merged).failed_rank == 1


_OK = "def run(x):\n    return x + 1\n"


def _write_allreduce(root: Path, worlds: list[int]) -> None:
    d = definition(None).model_dump(mode="json", exclude_none=True)
    (root / "definitions" / "collective").mkdir(parents=True)
    (root / "definitions" / "collective" / "all_reduce_sum.json").write_text(json.dumps(d))
    (root / "workloads" / "collective").mkdir(parents=True)
    lines = [
        json.dumps(
            {"definition": "all_reduce_sum", "solution": None, "workload": workload(64, w).model_dump()}
        )
        for w in worlds
    ]
    (root / "workloads" / "collective" / "all_reduce_sum.jsonl").write_text("\n".join(lines) + "\n")
    folder = root / "solutions" / "tests" / "collective" / "all_reduce_sum"
    folder.mkdir(parents=True)
    (folder / "ar_good.json").write_text(solution("good").to_json())


def test_a_launch_runs_gangs_beside_single_gpu_tasks(two_nodes: dict[str, str], tmp_path: Path) -> None:
    from sweep.launch.driver import LaunchOptions, launch

    data = write_dataset(tmp_path / "data", {"ok": _OK}, n_workloads=2)
    _write_allreduce(data, [2, 4, 8])
    results = tmp_path / "results"
    cfg = write_config(tmp_path / "mixed.yaml", [data], results, hardware="H100", run_s=60)
    result = launch(cfg, LaunchOptions(quiet=True))
    traces = read_traces(results)
    by_world = {
        (t["evaluation"].get("distributed") or {}).get("world_size", 1): t
        for t in traces  # type: ignore[union-attr]
    }
    assert sorted(by_world) == [1, 2, 4], [t["evaluation"]["log"] for t in traces]  # type: ignore[index]
    assert all(t["evaluation"]["status"] == "PASSED" for t in traces), [
        t["evaluation"]["log"] for t in traces
    ]  # type: ignore[index]
    assert len(traces) == 4 and result.ran == 4  # 2 single-GPU, 2 gangs; the 8-rank one left out
    four = by_world[4]["provenance"]  # type: ignore[index]
    assert four["node_id"] == two_nodes["H100"]  # packed on the node that has 4 GPUs
