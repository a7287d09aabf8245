"""``sweep show TASK_ID``: one task's trace and log from the store, by id or prefix."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from sweep.cli import app
from sweep.store import RowBatch, Store, StoreContext

from .conftest import make_definition, make_solution, make_trace

runner = CliRunner()


def _store(tmp_path: Path) -> Path:
    ctx = StoreContext.of([make_definition()], [make_solution("s1")])
    b = RowBatch()
    b.add_context(ctx)
    log = "RUNTIME_ERROR: the solution raised KeyError at main.py:4 (in run) (trial 0): 'x'\nTraceback: line two"
    for t in [
        make_trace(
            "s1", "wl-1", status="RUNTIME_ERROR", log=log, provenance={"task_id": "abc111", "run_id": "r1"}
        ),
        make_trace("s1", "wl-2", provenance={"task_id": "abc222", "run_id": "r1"}),
    ]:
        b.add_trace(t, context=ctx)
    path = tmp_path / "sweep.duckdb"
    Store(path).add(b)
    return path


def test_show_prints_the_trace_and_whole_log_by_prefix(tmp_path: Path) -> None:
    store = _store(tmp_path)
    r = runner.invoke(app, ["show", "abc1", "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert "task_id" in r.output and "abc111" in r.output and "RUNTIME_ERROR" in r.output
    assert r.output.rstrip().endswith(
        "--- log ---\n" + "RUNTIME_ERROR: the solution raised KeyError at main.py:4 "
        "(in run) (trial 0): 'x'\nTraceback: line two"
    )


def test_show_refuses_ambiguous_unknown_and_odd_ids(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ambiguous = runner.invoke(app, ["show", "abc", "--store", str(store)])
    assert ambiguous.exit_code == 1 and "ambiguous" in ambiguous.output and "abc111" in ambiguous.output
    unknown = runner.invoke(app, ["show", "zzz", "--store", str(store)])
    assert unknown.exit_code == 1 and "no task 'zzz'" in unknown.output
    odd = runner.invoke(app, ["show", "a'; DROP TABLE traces; --", "--store", str(store)])
    assert odd.exit_code == 1 and "expected letters" in odd.output
    assert "Traceback (most recent" not in odd.output
