"""Ingest refuses what the store cannot hold or should not, line by line, and says where and
why: file, line, field, value (cut short), and what to do. Reading never fails on a store
that got such a value before it was refused."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.errors import ValidationError, shown
from sweep.schema import Trace
from sweep.store import ResultsWriter, RowBatch, ingest, query
from sweep.store.render import build_report

from .conftest import make_trace

runner = CliRunner()


def _line(**changes: Any) -> dict[str, Any]:
    """A valid trace as a JSON object, with ``changes`` at dotted paths (``None`` deletes)."""
    obj = make_trace("s1", "wl-1").to_json_obj()
    for path, value in changes.items():
        *parents, last = path.split("__")
        cur = obj
        for p in parents:
            cur = cur.setdefault(p, {})
        if value is None:
            cur.pop(last, None)
        else:
            cur[last] = value
    return obj


def _ingest_lines(tmp_path: Path, *objs: dict[str, Any]) -> tuple[Path, Path, Any]:
    log = tmp_path / "t.jsonl"
    log.write_text("".join(json.dumps(o) + "\n" for o in objs))
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", str(log), "--store", str(db)])
    assert res.exit_code == 0, res.output
    return log, db, res


def _stored(db: Path) -> int:
    return int(str(query(db, "SELECT count(*) FROM traces").rows[0][0]))


@pytest.mark.parametrize(
    ("changes", "warning"),
    [
        (
            {"evaluation__timestamp": "0001-01-01T00:00:00+05:00"},
            (
                "not a valid trace: evaluation.timestamp: must be a time between 1970-01-01 and "
                "2200-01-01 UTC (write the real time of the run, e.g. 2025-06-01T12:00:00Z), got "
                "'0001-01-01T00:00:00+05:00'"
            ),
        ),
        (
            {"evaluation__timestamp": "9999-12-31T23:59:59-05:00"},
            (
                "not a valid trace: evaluation.timestamp: must be a time between 1970-01-01 and "
                "2200-01-01 UTC (write the real time of the run, e.g. 2025-06-01T12:00:00Z), got "
                "'9999-12-31T23:59:59-05:00'"
            ),
        ),
        (
            {"evaluation__timestamp": "last tuesday"},
            (
                "not a valid trace: evaluation.timestamp: must be an ISO 8601 timestamp such as "
                "2025-06-01T12:00:00Z, got 'last tuesday'"
            ),
        ),
        (
            {"provenance": {"started_at": "not a time"}},
            (
                "not a valid trace: provenance.started_at: must be an ISO 8601 timestamp such as "
                "2025-06-01T12:00:00Z, got 'not a time'"
            ),
        ),
        (
            {"evaluation__performance__latency_ms": -1.0},
            (
                "not a valid trace: evaluation.performance.latency_ms: Input should be greater than or "
                "equal to 0 (got -1.0)"
            ),
        ),
        (
            {"workload__axes": {"batch": 0}},
            (
                "not a valid trace: workload.axes.batch: must be a whole number from 1 to "
                "9223372036854775807 (the size of a dimension) (got 0)"
            ),
        ),
        (
            {"workload__axes": {"batch": -5}},
            (
                "not a valid trace: workload.axes.batch: must be a whole number from 1 to "
                "9223372036854775807 (the size of a dimension) (got -5)"
            ),
        ),
        (
            {"workload__axes": {"batch": 2**70}},
            (
                "not a valid trace: workload.axes.batch: Input should be less than or equal to "
                f"9223372036854775807 (got {2**70})"
            ),
        ),
        (
            {"evaluation__seed": 2**64},
            (
                "not a valid trace: evaluation.seed: Input should be less than or equal to "
                f"9223372036854775807 (got {2**64})"
            ),
        ),
        (
            {"provenance": {"worker_pid": 2**63}},
            (
                "not a valid trace: provenance.worker_pid: Input should be less than or equal to "
                f"9223372036854775807 (got {2**63})"
            ),
        ),
        (
            {
                "evaluation__timing": {
                    "clock": "cuda_event",
                    "iterations": 2**63,
                    "p10_ms": 1,
                    "p50_ms": 1,
                    "p90_ms": 1,
                    "mean_ms": 1,
                    "cv": 0,
                }
            },
            (
                "not a valid trace: evaluation.timing.iterations: Input should be less than or equal to "
                f"9223372036854775807 (got {2**63})"
            ),
        ),
        (
            {"evaluation": None},
            (
                "not a valid trace: solution: names 's1' but the trace has no evaluation; a result "
                "needs both (a workload-only record has neither: set solution to null)"
            ),
        ),
    ],
)
def test_a_bad_line_is_refused_with_file_line_field_and_value(
    tmp_path: Path, changes: dict[str, Any], warning: str
) -> None:
    log, db, res = _ingest_lines(tmp_path, _line(), _line(**changes))
    assert res.stderr == f"warning: {log}:2: {warning}, skipped\n"
    assert res.stdout.splitlines()[0].startswith("ingested 1 trace from 1 file")
    assert res.stdout.splitlines()[-1].startswith("skipped 1 invalid record (warnings above); fix or delete")
    assert _stored(db) == 1
    # Nothing poisons reading: every view, and the report, still answer.
    for rel in ("traces", "latest", "best", "leaderboard", "cross_hardware", "backend_scores"):
        query(db, f"SELECT * FROM {rel}")
    build_report(db)


def test_more_problems_on_one_line_are_counted(tmp_path: Path) -> None:
    log, _, res = _ingest_lines(
        tmp_path, _line(evaluation__seed=2**64, evaluation__performance__latency_ms=-2.0)
    )
    assert res.stderr.startswith(f"warning: {log}:1: not a valid trace: evaluation.performance.latency_ms")
    assert res.stderr.endswith(" (and 1 more), skipped\n")


def test_a_huge_value_is_never_echoed_whole(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(
        json.dumps(_line(evaluation__status="X" * 100_000))
        + "\n"
        + json.dumps(_line()).replace('"batch": 1', f'"batch": {"9" * 1000}')
        + "\n"
        + json.dumps(_line()).replace('"batch": 1', f'"batch": {"9" * 50_000}')
        + "\n"
    )
    r = ingest([log], tmp_path / "s.duckdb")
    assert r.skipped == 3
    assert all(len(w) < 400 for w in r.warnings), r.warnings
    assert r.warnings[0].startswith(
        f"{log}:1: not a valid trace: evaluation.status: Input should be 'PASSED'"
    )
    assert r.warnings[0].endswith(" (got " + shown("X" * 100_000) + "), skipped")
    assert r.warnings[1].startswith(
        f"{log}:2: not a valid trace: workload.axes.batch: Input should be less than or equal to"
    )
    assert r.warnings[1].endswith(" (got " + shown(int("9" * 1000)) + "), skipped")
    assert r.warnings[2].startswith(f"{log}:3: not valid JSON (number out of range at column ")


def test_a_solution_without_evaluation_is_counted_as_skipped_not_ingested(tmp_path: Path) -> None:
    _, db, res = _ingest_lines(tmp_path, _line(evaluation=None))
    assert res.stdout.splitlines()[0].startswith("ingested 0 traces from 1 file")
    assert query(db, "SELECT count(*) FROM workloads").rows == [(0,)]  # stored nowhere, and said so


def test_a_last_line_without_newline_is_read_when_it_parses(tmp_path: Path) -> None:
    log = tmp_path / "hand.jsonl"
    log.write_text(make_trace("s1", "wl-1").to_json() + "\n" + make_trace("s1", "wl-2").to_json())
    r = ingest([log], tmp_path / "s.duckdb")
    assert (r.added.traces, r.skipped, r.warnings) == (2, 0, [])
    # A one-line file without any newline too.
    only = tmp_path / "one.jsonl"
    only.write_text(make_trace("s1", "wl-3").to_json())
    assert ingest([only], tmp_path / "s.duckdb").added.traces == 1
    # A last line that parses but is not a valid trace says why, not "incomplete".
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_line(workload__axes={"batch": 0})))
    assert ingest([bad], tmp_path / "s.duckdb").warnings == [
        (
            f"{bad}:1: not a valid trace: workload.axes.batch: must be a whole number from 1 to "
            "9223372036854775807 (the size of a dimension) (got 0), skipped"
        )
    ]


def test_a_results_folder_session_reads_a_last_line_that_parses(tmp_path: Path) -> None:
    results = tmp_path / "results"
    log = results / "traces" / "vec_add" / "vec_add.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(make_trace("s1", "wl-1").to_json() + "\n" + make_trace("s1", "wl-2").to_json())
    assert query(results / "sweep.duckdb", "SELECT count(*) FROM traces").rows == [(2,)]


def test_json_files_are_held_to_the_same_rules(tmp_path: Path) -> None:
    (tmp_path / "axes.json").write_text(json.dumps(_line(workload__axes={"batch": 0})))
    # Python's json module would let a lone surrogate through, which no store can hold.
    (tmp_path / "surrogate.json").write_text(json.dumps(_line()).replace('"log": ""', '"log": "\\ud800"'))
    (tmp_path / "list.json").write_text(json.dumps([_line(), _line(evaluation__seed=2**64)]))
    r = ingest([tmp_path], tmp_path / "s.duckdb")
    assert (r.added.traces, r.skipped) == (1, 3)
    assert r.warnings[0].startswith(f"{tmp_path / 'axes.json'}: not a valid trace: workload.axes.batch:")
    assert r.warnings[1].startswith(f"{tmp_path / 'list.json'}[1]: not a valid trace: evaluation.seed:")
    assert r.warnings[2].startswith(f"{tmp_path / 'surrogate.json'}: not valid JSON (")


def test_insert_refuses_what_ingest_refuses() -> None:
    trace = Trace.model_validate(_line(workload__axes={"batch": 3}))
    bad = trace.model_copy(update={"workload": trace.workload.model_copy(update={"axes": {"batch": 0}})})
    batch = RowBatch()
    with pytest.raises(ValidationError, match=r"^workload.axes.batch: must be a whole number from 1"):
        batch.add_trace(bad)
    assert len(batch) == 0  # nothing of it was added


def test_a_writer_drops_a_trace_it_cannot_store_and_keeps_going(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    results, db = tmp_path / "results", tmp_path / "results" / "sweep.duckdb"
    good = make_trace("s1", "wl-1")
    bad = good.model_copy(update={"workload": good.workload.model_copy(update={"axes": {"batch": 0}})})
    with (
        caplog.at_level(logging.WARNING, logger="sweep.store"),
        ResultsWriter(results, db, sweep="s", run_id="r") as w,
    ):
        w.write_many([bad, make_trace("s1", "wl-2")])
        w.flush()
        assert w.pending == 0
    assert query(db, "SELECT workload_uuid FROM traces").rows == [("wl-2",)]
    assert "not a valid trace: workload.axes.batch: must be a whole number" in caplog.text


def test_a_store_poisoned_before_the_fix_still_answers(tmp_path: Path) -> None:
    """Times outside Python's range, stored by an older kernel-sweep, come back as text."""
    db = tmp_path / "s.duckdb"
    ingest([_ingest_lines(tmp_path, _line(), _line(workload__uuid="wl-2"))[0]], db)
    con = duckdb.connect(str(db))
    con.execute(
        "UPDATE traces SET timestamp = '0001-01-01 00:00:00+05'::TIMESTAMPTZ WHERE workload_uuid = 'wl-1'"
    )
    con.execute(
        "UPDATE traces SET timestamp = '9999-12-31 23:59:59-05'::TIMESTAMPTZ WHERE workload_uuid = 'wl-2'"
    )
    con.close()
    res = runner.invoke(app, ["query", "SELECT * FROM traces", "--store", str(db)])
    assert res.exit_code == 0, res.output
    assert "0000-12-31 19:00:00.000000Z" in res.stdout
    assert res.stderr.startswith(
        "note: 'timestamp': times outside Python's range (years 1-9999), shown as text"
    )
    for sql in ("SELECT * FROM latest", "SELECT max(timestamp), list(timestamp) FROM traces"):
        assert runner.invoke(app, ["query", sql, "--store", str(db), "--json"]).exit_code == 0
    res = runner.invoke(app, ["report", "--store", str(db)])
    assert res.exit_code == 0, res.output
    # The report's newest is the time a trace ranks by: never later than when it was stored.
    assert "10000-01-01" not in res.stdout
