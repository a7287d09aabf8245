"""The phase clock: a sandboxed evaluation's timeline, the supervisor's marks and its sandbox's on one clock."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sweep.engine import evaluate, phase_marks
from sweep.plan import load_dataset
from sweep.sandbox import Sandbox, SandboxSpec
from sweep.sandbox.supervisor import _clean_marks
from sweep.schema import EvalSettings
from sweep.schema.hardware import CPU
from sweep.schema.task import Task

REPO = Path(__file__).resolve().parents[2]
SHORT = EvalSettings(trials=1, warmup_ms=1, rep_ms=2, min_iterations=2, max_iterations=8, input_sets=2)
WINDOWS = ("reference warm-up", "reference timed", "solution warm-up", "solution timed")


def _task() -> Task:
    ds = load_dataset([REPO])
    sol = ds.solutions["softmax_f32_torch"]
    defn = ds.definitions[sol.definition]
    return Task.make(defn, sol, ds.workloads[defn.name][0], SHORT, CPU, dataset_root=str(REPO))


def test_a_sandboxed_task_has_one_timeline_in_order() -> None:
    with Sandbox(SandboxSpec(device_kind="cpu")) as sandbox:
        trace = sandbox.run(_task())
        assert trace.evaluation is not None and trace.evaluation.status.value == "PASSED"
        timeline = sandbox.stats.timelines[-1]
    names = [n for n, _ in timeline]
    assert names[0] == "turn" and names[-1] == "task folder and log removed"
    for expected in (
        "task received",
        "evaluate",
        *WINDOWS,
        "trace to JSON",
        "trace received",
        "sandbox killed and reaped",
    ):
        assert expected in names, expected
    assert (
        names.index("reference timed")
        < names.index("solution build and import check")
        < names.index("solution timed")
    )
    times = [t for _, t in timeline]
    assert times == sorted(times)  # one clock for every process of the host
    assert len(sandbox.stats.prefork_seconds) == 1


class _SlowSender:
    """A connection whose sender is descheduled right after a send, as on a loaded host."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def send(self, obj: object) -> None:
        self._conn.send(obj)
        time.sleep(0.3)  # the sandbox receives the task and marks its clock meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_the_timeline_stays_in_order_when_the_supervisor_is_slow_after_a_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    take = Sandbox._take

    def slow_take(self: Sandbox) -> Any:
        child = take(self)
        child.conn = _SlowSender(child.conn)  # type: ignore[assignment]
        return child

    monkeypatch.setattr(Sandbox, "_take", slow_take)
    with Sandbox(SandboxSpec(device_kind="cpu")) as sandbox:
        trace = sandbox.run(_task())
        assert trace.evaluation is not None and trace.evaluation.status.value == "PASSED"
        timeline = sandbox.stats.timelines[-1]
    times = [t for _, t in timeline]
    assert times == sorted(times), timeline


def test_an_evaluation_in_this_process_restarts_the_clock() -> None:
    task = _task()
    evaluate(task, device="cpu")
    first = phase_marks()
    evaluate(task, device="cpu")
    again = phase_marks()
    assert first[0][0] == again[0][0] == "evaluate"
    assert [n for n, _ in first] == [n for n, _ in again]
    assert again[0][1] > first[-1][1]


def test_marks_a_sandbox_sends_are_not_trusted() -> None:
    assert _clean_marks("junk") == []
    assert _clean_marks((("ok", 1.0), ("bad", "x"), (3, 1.0), ("x" * 500, 2.0), ("a", 1.0, 2))) == [
        ("ok", 1.0),
        ("x" * 80, 2.0),
    ]
    assert len(_clean_marks(tuple(("m", float(i)) for i in range(10_000)))) == 256
