"""``EvalSettings.process_env`` held by both ways an evaluation runs: a task of one process and
one rank of a distributed task each refuse a process started without the variables."""

from __future__ import annotations

import pytest

from sweep.engine import evaluate
from sweep.engine._process import env_problem
from sweep.errors import EngineError
from sweep.schema import Status
from sweep.schema.distributed import RankSlot
from sweep.schema.task import Task
from tests.cluster.conftest import fault_add_task
from tests.conftest import quick_settings
from tests.data.distributed.allreduce import definition, solution, workload

VAR = "CUDA_DEVICE_MAX_CONNECTIONS"


def test_env_problem_names_the_variable_and_both_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    assert env_problem(()) is None
    assert f"this process has {VAR}=None but the evaluation settings ask for '1'" in (
        env_problem([(VAR, "1")]) or ""
    )
    monkeypatch.setenv(VAR, "8")
    assert f"{VAR}='8'" in (env_problem([(VAR, "1")]) or "")
    monkeypatch.setenv(VAR, "1")
    assert env_problem([(VAR, "1")]) is None


def test_a_single_process_task_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    task = fault_add_task(quick_settings().model_copy(update={"cuda_max_connections": 1}), "CPU")
    with pytest.raises(EngineError, match=f"this process has {VAR}=None"):
        evaluate(task, device="cpu")


def test_a_rank_is_refused_before_it_joins_its_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    settings = quick_settings().model_copy(update={"cuda_max_connections": 1})
    task = Task.make(definition(None), solution("good"), workload(64, 2), settings, "CPU")
    # No peer ever comes: a rank that went on to join its process group would wait for it.
    rank = task.model_copy(update={"rank": RankSlot(rank=0, world_size=2, store_file="/nonexistent/store")})
    trace = evaluate(rank, device="cpu")
    ev = trace.evaluation
    assert ev is not None and ev.status is Status.RUNTIME_ERROR
    assert f"rank 0: this process has {VAR}=None but the evaluation settings ask for '1'" in ev.log, ev.log
