"""The gate before a task's timed calls: the previous task's process is reaped and the next
one's device start is over before the running task may time anything (``supervisor._gate``)."""

from __future__ import annotations

import os
from pathlib import Path

from sweep.plan import load_dataset
from sweep.sandbox import Sandbox, SandboxSpec
from sweep.sandbox.packing import Envelope
from sweep.schema import EvalSettings
from sweep.schema.hardware import CPU
from sweep.schema.task import Task

REPO = Path(__file__).resolve().parents[2]
SHORT = EvalSettings(trials=1, warmup_ms=1, rep_ms=2, min_iterations=2, max_iterations=8, input_sets=2)


def _task() -> Task:
    ds = load_dataset([REPO])
    sol = ds.solutions["softmax_f32_torch"]
    defn = ds.definitions[sol.definition]
    return Task.make(defn, sol, ds.workloads[defn.name][0], SHORT, CPU, dataset_root=str(REPO))


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class _Watched(Sandbox):
    """Records, at each gate, whether the previous task's process still exists and whether
    the next one had finished its start."""

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self.pids: list[int] = []
        self.seen: list[tuple[bool, bool]] = []  # (previous alive, spare ready) after the gate

    def _await(self, child, env):  # type: ignore[no-untyped-def]
        self.pids.append(child.pid)
        return super()._await(child, env)

    def _gate(self) -> None:
        pending = self._pending
        super()._gate()
        assert self._pending is None
        previous = pending is not None and _exists(pending.pid)
        spare = self._spare
        # Never mid-start at the gate: not told to start (a CPU sandbox starts it at "timed"),
        # or done (said Ready, or died).
        ready = spare is None or not spare.started or spare.conn.poll(0)
        self.seen.append((previous, ready))


def test_timed_calls_wait_for_the_previous_process_reaped_and_the_next_started() -> None:
    task = _task()
    with _Watched(SandboxSpec(device_kind="cpu")) as box:
        done = box.run_batch([Envelope.of(task, 0) for _ in range(3)])
        assert [d.trace(task).evaluation.status.value for d in done] == ["PASSED"] * 3  # type: ignore[union-attr]
        assert len(box.seen) == 3
        assert all(not alive and ready for alive, ready in box.seen), box.seen
        # Tasks 1 and 2 left their process to be reaped at the next task's gate.
        assert box._pending is not None and box._pending.pid == box.pids[-1]
        for timeline in box.stats.timelines:
            names = [n for n, _ in timeline]
            assert names.index("gate: previous process reaped, next one started") < names.index(
                "reference warm-up"
            )
            assert "sandbox sent SIGKILL" in names
    # Closing the sandbox reaps the last one.
    assert not any(_exists(p) for p in box.pids)


def test_the_last_process_of_one_batch_is_reaped_by_the_next_batch() -> None:
    task = _task()
    with _Watched(SandboxSpec(device_kind="cpu")) as box:
        box.run_batch([Envelope.of(task, 0)])
        first = box.pids[0]
        assert box._pending is not None and box._pending.pid == first
        box.run_batch([Envelope.of(task, 0)])
        assert not _exists(first)
