"""What a command prints never holds what a terminal acts on instead of showing (escape
sequences, C1 controls, carriage returns, backspaces, bidirectional overrides): names from
ingested traces, query answers (table, CSV, JSON), reports, plans, warnings and error messages
quoting values are escaped (``\\u001b``), JSON output stays JSON of the same data."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from sweep.cli import app
from sweep.errors import printable
from sweep.schema import Trace

pytestmark = pytest.mark.hostile
runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "data" / "dataset" / "good"

#: What a terminal acts on (the newline and the tab only lay text out).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
HOSTILE = [
    "\x1b[31mred\x1b[0m",
    "\x1b]0;pwned\x07",  # set the window title
    "\x1b]52;c;ZXZpbA==\x07",  # write the clipboard
    "\x9b2J",  # C1 CSI: clear the screen
    "over\rwrite",
    "back\x08\x08space",
    "abc\u202egnp.exe",  # shown reversed
    "nul\x00byte",
    "multi\nline",
]


def _safe(result: Result) -> None:
    assert "Traceback" not in result.output
    bad = UNSAFE.findall(result.stdout) + UNSAFE.findall(result.stderr)
    assert not bad, (bad, result.output)


def _trace(i: int, name: str) -> dict[str, object]:
    return {
        "definition": f"def{name}",
        "solution": f"sol{name}",
        "workload": {"uuid": f"wl{name}", "axes": {"n": 1 + i}, "inputs": {}},
        "evaluation": {
            "status": "PASSED",
            "environment": {"hardware": f"NVIDIA_H100{name}", "libs": {"torch": f"2{name}"}},
            "timestamp": "2026-01-01T00:00:00Z",
            "log": f"log {name}",
            "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
            "performance": {
                "latency_ms": 1.0 + i,
                "reference_latency_ms": 2.0,
                "speedup_factor": 2.0 / (1.0 + i),
            },
        },
        "provenance": {"sweep": f"sw{name}", "task_id": f"t{i}"},
    }


@pytest.fixture
def store(tmp_path: Path) -> Path:
    log = tmp_path / "t.jsonl"
    lines = [json.dumps(_trace(i, n)) for i, n in enumerate(HOSTILE)]
    lines.append('{"definition": "\\u001b[2Jbroken", "workload": 3}')  # a warning quotes it
    log.write_text("\n".join(lines) + "\n")
    assert all(Trace.model_validate_json(x) for x in lines[:-1])
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", str(log), "--store", str(db)])
    assert res.exit_code == 0, res.output
    _safe(res)
    return db


@pytest.mark.parametrize("fmt", [[], ["--csv"], ["--json"], ["--width", "200"]])
def test_query_answers_are_escaped(store: Path, fmt: list[str]) -> None:
    sql = 'SELECT definition, solution, hardware, log, libs, axes, 1 AS "col\x1b[1m" FROM traces ORDER BY latency_ms'
    res = runner.invoke(app, ["query", sql, "--store", str(store), *fmt])
    assert res.exit_code == 0, res.output
    _safe(res)
    if fmt == ["--json"]:  # still JSON, of the same values
        rows = json.loads(res.stdout)
        assert [r["definition"] for r in rows] == [f"def{n}" for n in HOSTILE]
    else:
        assert "\\u001b[31mred" in res.stdout and "\\u009b2J" in res.stdout and "\\u202egnp" in res.stdout


def test_reports_are_escaped(store: Path) -> None:
    for args in (["report"], ["report", "--json"]):
        res = runner.invoke(app, [*args, "--store", str(store)])
        assert res.exit_code == 0, res.output
        _safe(res)


def test_error_messages_quoting_values_are_escaped(store: Path, tmp_path: Path) -> None:
    for args in (
        ["query", "SELECT \x1b[31m FROM traces", "--store", str(store)],
        ["query", 'SELECT "\x9bboom" FROM traces', "--store", str(store)],
        ["ingest", str(tmp_path / "no\x1b[2Jsuch.jsonl"), "--store", str(store)],
        ["compare", "run:\x1b[31mx", "run:y", "--store", str(store)],
        ["plan", str(tmp_path / "\x1b]0;t\x07.yaml")],
        ["new", "definition", "\x1b[31mx"],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code == 1, (args, res.output)
        _safe(res)


def test_plans_and_validation_of_hostile_names_are_escaped(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(GOOD, root)
    sol = root / "solutions" / "tester" / "ew" / "vec_add"
    for path in sol.glob("*.json"):
        data = json.loads(path.read_text())
        data["name"] = data["name"] + "\x1b[31m\u202e"
        data["description"] = "\x9b2J"
        path.write_text(json.dumps(data))
    cfg = tmp_path / "s.yaml"
    cfg.write_text(f'name: "x\\e[31m"\ndataset: [{root}]\nhardware: cpu\n')
    for args in (
        ["validate", str(root)],
        ["plan", str(cfg)],
        ["plan", str(cfg), "--json"],
        ["plan", str(cfg), "-v"],
    ):
        res = runner.invoke(app, args)
        assert res.exit_code in (0, 1), res.output
        _safe(res)
    res = runner.invoke(app, ["plan", str(cfg), "--json"])
    assert res.exit_code == 0 and "\x1b" in "".join(r["solution"] for r in json.loads(res.stdout))


def test_every_command_prints_through_the_one_echo() -> None:
    """No command module prints any other way (typer.echo, click.echo, print, sys.stdout)."""
    for path in sorted((REPO / "sweep" / "_cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                text = ast.unparse(node.func)
                allowed = path.name == "app.py" and text == "typer.echo"
                assert allowed or text not in (
                    "typer.echo",
                    "click.echo",
                    "print",
                    "typer.secho",
                    "sys.stdout.write",
                    "sys.stderr.write",
                ), f"{path.name}:{node.lineno}: {text}"


@settings(max_examples=500, deadline=None, derandomize=True)
@given(text=st.text(), one_line=st.booleans())
def test_printable_leaves_nothing_a_terminal_acts_on(text: str, one_line: bool) -> None:
    out = printable(text, one_line=one_line)
    assert not UNSAFE.search(out)
    if one_line:
        assert "\n" not in out and "\t" not in out
    if not UNSAFE.search(text) and (not one_line or not set(text) & {"\n", "\t"}):
        assert out == text  # plain text is left alone


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    value=st.recursive(
        st.text() | st.integers() | st.none(),
        lambda x: st.lists(x) | st.dictionaries(st.text(), x),
        max_leaves=10,
    )
)
def test_printed_json_is_json_of_the_same_data(value: object) -> None:
    for ensure_ascii in (True, False):
        text = json.dumps(value, ensure_ascii=ensure_ascii)
        assert json.loads(printable(text)) == value
