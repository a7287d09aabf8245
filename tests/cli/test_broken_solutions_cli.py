"""A broken solution in the CLI: ``sweep validate`` still fails on it; ``sweep plan`` and
``sweep eval`` warn once, naming the file, and go on; ``sweep eval`` of the broken solution
gives its COMPILE_ERROR traces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from sweep.cli import app

if TYPE_CHECKING:
    from ..conftest import SharedSandboxes

GOOD = Path(__file__).resolve().parents[1] / "data" / "dataset" / "good"
runner = CliRunner()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The good fixture with a solution whose main.py is not valid Python and a file that is
    not JSON; builds go to a private cache, and the current directory is the tmp folder."""
    monkeypatch.setenv("SWEEP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    dest = tmp_path / "root"
    shutil.copytree(GOOD, dest)
    folder = dest / "solutions" / "tester" / "ew" / "vec_add"
    sol = json.loads((folder / "vec_add_py.json").read_text())
    sol["name"] = "syntax"
    sol["sources"][0]["content"] = "def run(x, y, alpha):\n    return x +\n"
    (folder / "syntax.json").write_text(json.dumps(sol))
    (folder / "garbage.json").write_text("not json at all")
    return dest


def _problems(root: Path) -> list[str]:
    folder = root.resolve() / "solutions" / "tester" / "ew" / "vec_add"
    return [
        f"{folder / 'garbage.json'}:1: not valid JSON: Expecting value (column 1)",
        f"{folder / 'syntax.json'}: sources: main.py: not valid Python: invalid syntax (line 2)",
    ]


def test_validate_reports_them_and_exits_1(root: Path) -> None:
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "solutions: 2" in lines  # the valid ones, as before
    assert [x for x in lines if x.startswith("error: ")] == [f"error: {p}" for p in _problems(root)]
    assert lines[-1] == "2 errors"


def test_plan_warns_once_each_and_plans_compile_error_tasks(root: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: x\ndataset: {root}\nhardware: cpu\n")
    result = runner.invoke(app, ["plan", str(cfg)])
    assert result.exit_code == 0, result.output
    warnings = [x for x in result.stdout.splitlines() if x.startswith("warning: ")]
    assert warnings == [f"warning: {p}" for p in _problems(root)]
    assert "  syntax      3 tasks" in result.stdout
    assert "1 solution: its file is not a valid record and names no definition" in result.stdout
    rows = json.loads(runner.invoke(app, ["plan", str(cfg), "--json"]).stdout)
    assert {r["solution"] for r in rows} == {"vec_add_py", "syntax"}
    for r in rows:
        if r["solution"] == "syntax":
            assert r["broken"].startswith(_problems(root)[1] + "\n")
        else:
            assert "broken" not in r


def test_eval_of_a_good_solution_warns_once_and_runs(
    root: Path, shared_eval_sandbox: SharedSandboxes
) -> None:
    result = runner.invoke(
        app, ["eval", "vec_add", "vec_add_py", "-r", str(root), "--device", "cpu", "--trials", "1"]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"warning: {p}" for p in _problems(root)]
    assert len([x for x in result.stdout.splitlines() if " PASSED " in x]) == 3


def test_eval_of_the_broken_solution_gives_compile_error_traces(
    root: Path, shared_eval_sandbox: SharedSandboxes
) -> None:
    result = runner.invoke(app, ["eval", "vec_add", "syntax", "-r", str(root), "--device", "cpu", "--json"])
    assert result.exit_code == 1, result.output  # no trace PASSED (--no-fail would exit 0)
    traces = [json.loads(x) for x in result.stdout.splitlines()]
    assert len(traces) == 3
    [syntax_problem] = _problems(root)[1:]
    for t in traces:
        assert t["solution"] == "syntax" and t["evaluation"]["status"] == "COMPILE_ERROR"
        assert t["evaluation"]["log"].startswith(f"COMPILE_ERROR: {syntax_problem}\n")
    # Its own problem is in its traces; the other one is said once.
    assert result.stderr.splitlines() == [f"warning: {_problems(root)[0]}"]


def test_eval_of_a_file_that_names_no_definition_is_an_error(root: Path) -> None:
    result = runner.invoke(app, ["eval", "vec_add", "garbage", "-r", str(root), "--device", "cpu"])
    assert result.exit_code == 1
    assert result.stderr == f"error: solution 'garbage' cannot be evaluated: {_problems(root)[0]}\n"


def test_a_bad_workload_line_is_a_warning_and_the_rest_plans(tmp_path: Path) -> None:
    root = tmp_path / "r"
    shutil.copytree(GOOD, root)
    wl = root / "workloads" / "ew" / "vec_add.jsonl"
    with wl.open("a") as f:
        f.write(
            '{"definition": "vec_add", "solution": null, "evaluation": null, "workload": {"uuid": "x"}}\n'
        )
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: x\ndataset: {root}\nhardware: cpu\n")
    result = runner.invoke(app, ["plan", str(cfg)])
    assert result.exit_code == 0, result.output
    warnings = [x for x in result.stdout.splitlines() if x.startswith("warning: ")]
    assert warnings and all(w.startswith(f"warning: {wl.resolve()}:4: workload.") for w in warnings)
    assert result.stdout.splitlines()[-1] == "total: 3 tasks"
    assert runner.invoke(app, ["validate", str(root)]).exit_code == 1
