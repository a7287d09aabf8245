"""The progress line and the summary table of ``sweep launch``."""

from __future__ import annotations

import io
import time

from sweep.launch.progress import Progress, Tally, render_summary
from sweep.schema import Correctness, Environment, Evaluation, Performance, Status, Trace, Workload

_WL = Workload(uuid="w", axes={}, inputs={})


def _trace(defn: str, sol: str, status: Status, speedup: float = 1.0) -> Trace:
    env = Environment(hardware="CPU")
    extra = {}
    if status is Status.PASSED:
        extra = {
            "correctness": Correctness(),
            "performance": Performance(latency_ms=1.0, reference_latency_ms=speedup, speedup_factor=speedup),
        }
    ev = Evaluation(status=status, environment=env, timestamp="2026-01-01T00:00:00Z", **extra)
    return Trace(definition=defn, workload=_WL, solution=sol, evaluation=ev)


def test_plain_progress_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    p = Progress(3, out, interval_s=0.0)
    p.update(_trace("d", "s", Status.PASSED))
    p.update(_trace("d", "s", Status.TIMEOUT))
    p.finish()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0].startswith("[1/3] passed 1 failed 0")
    assert lines[1].startswith("[2/3] passed 1 failed 1")
    assert "/s" in lines[1] and "ETA" in lines[1]
    assert lines[-1].startswith("[2/3]")


def test_summary_counts_statuses_and_median_speedup_per_pair() -> None:
    tally = Tally()
    for s in (1.0, 3.0, 2.0):
        tally.add(_trace("rmsnorm", "fast", Status.PASSED, s))
    tally.add(_trace("rmsnorm", "fast", Status.TIMEOUT))
    tally.add(_trace("gemm", "bad", Status.RUNTIME_ERROR))
    table = render_summary(tally.sorted_rows()).splitlines()
    assert " ".join(table[0].split()) == "definition solution total PASS RTERR TIMEOUT median_speedup"
    assert table[2].split() == ["gemm", "bad", "1", "0", "1", "0", "-"]
    assert table[3].split() == ["rmsnorm", "fast", "4", "3", "0", "1", "2x"]
    assert table[-1] == "PASS=PASSED, RTERR=RUNTIME_ERROR, TIMEOUT=TIMEOUT"
    assert tally.statuses == {"PASSED": 3, "TIMEOUT": 1, "RUNTIME_ERROR": 1}
    assert render_summary([]) == "no evaluations ran"


def test_tick_prints_while_nothing_finishes() -> None:
    out = io.StringIO()
    p = Progress(5, out, interval_s=0.0)
    p.tick()
    p.tick()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(ln.startswith("[0/5] passed 0 failed 0") for ln in lines)
    quiet = io.StringIO()
    q = Progress(5, quiet, interval_s=3600)
    q._last = time.monotonic()  # just printed
    q.tick()
    assert quiet.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_line_is_blanked_when_it_shrinks() -> None:
    out = _Terminal()
    p = Progress(2, out)
    p._draw("[0/2] passed 0 failed 0  0.0/s  elapsed 1m05s  ETA 18ss")
    p._draw("[1/2] ETA 1s")
    last = out.getvalue().split("\r")[-1]
    assert last.startswith("[1/2] ETA 1s ")
    assert last.strip() == "[1/2] ETA 1s"  # the old tail is blanked, not left as "18ss"


def test_final_line_once_on_a_terminal() -> None:
    out = _Terminal()
    p = Progress(1, out)
    p.update(_trace("d", "s", Status.PASSED))
    p.finish()
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    assert text.split("\r")[-1].startswith("[1/1] passed 1 failed 0")


def test_final_line_once_in_a_log() -> None:
    out = io.StringIO()
    p = Progress(1, out, interval_s=0.0)
    p.update(_trace("d", "s", Status.PASSED))
    p.finish()
    assert len(out.getvalue().splitlines()) == 1
    quiet = io.StringIO()
    q = Progress(1, quiet, interval_s=3600)
    q._last = time.monotonic()
    q.update(_trace("d", "s", Status.PASSED))
    q.finish()
    assert quiet.getvalue().startswith("[1/1] passed 1") and len(quiet.getvalue().splitlines()) == 1


def test_summary_speedups_for_people() -> None:
    tally = Tally()
    tally.add(_trace("d", "slow", Status.PASSED, 4.1e-3))
    assert "0.0041x" in render_summary(tally.sorted_rows())


def test_summary_of_several_targets_has_a_row_per_target() -> None:
    tally = Tally()
    tally.add(_trace("rmsnorm", "fast", Status.PASSED, 2.0), "H100")
    tally.add(_trace("rmsnorm", "fast", Status.PASSED, 4.0), "H200")
    tally.add(_trace("rmsnorm", "fast", Status.TIMEOUT), "H200")
    assert tally.by_hardware == {"H100": 1, "H200": 2}
    table = render_summary(tally.sorted_rows()).splitlines()
    assert " ".join(table[0].split()) == "definition solution hardware total PASS TIMEOUT median_speedup"
    assert table[2].split() == ["rmsnorm", "fast", "H100", "1", "1", "0", "2x"]
    assert table[3].split() == ["rmsnorm", "fast", "H200", "2", "1", "1", "4x"]
    # One target: no hardware column (the summary line names it).
    one = Tally()
    one.add(_trace("rmsnorm", "fast", Status.PASSED, 2.0), "H100")
    assert "hardware" not in render_summary(one.sorted_rows()).splitlines()[0]


def _failed(sol: str, status: Status, log: str, task: str) -> Trace:
    from sweep.schema.trace import Provenance

    ev = Evaluation(
        status=status,
        environment=Environment(hardware="CPU"),
        timestamp="2026-01-01T00:00:00Z",
        log=log,
        correctness=Correctness() if status is Status.INCORRECT_NUMERICAL else None,
    )
    return Trace(
        definition="d", workload=_WL, solution=sol, evaluation=ev, provenance=Provenance(task_id=task)
    )


def test_failures_group_by_status_and_first_line_with_a_task_id_each() -> None:
    from sweep.launch.progress import render_failures

    tally = Tally()
    tally.add(_trace("d", "ok", Status.PASSED))
    for i in range(3):
        tally.add(
            _failed("a", Status.RUNTIME_ERROR, f"RUNTIME_ERROR: boom at main.py:3\nTraceback {i}", f"t{i}")
        )
    tally.add(_failed("b", Status.INCORRECT_NUMERICAL, "INCORRECT_NUMERICAL: max error 3", "t9"))
    tally.add(_failed("c", Status.TIMEOUT, "", "t8"))
    groups = tally.top_failures(limit=2)
    assert [(g.status, g.reason, g.count, g.task_id) for g in groups] == [
        ("RUNTIME_ERROR", "boom at main.py:3", 3, "t0"),
        ("INCORRECT_NUMERICAL", "max error 3", 1, "t9"),
    ]
    lines = render_failures(groups, total=5)
    assert lines[0] == "failures (5, top 2 kinds: 4):"
    assert lines[1].split() == ["3", "RUNTIME_ERROR:", "boom", "at", "main.py:3", "(e.g.", "task", "t0)"]
    assert "sweep show TASK_ID" in lines[-1]
    assert tally.top_failures()[-1].reason == "(no log)"
    assert render_failures([], 0) == []
