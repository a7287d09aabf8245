"""CLI conventions: --version, -h, workflow order, readable metavars, and every usage error
as ``error: ...`` with exit 1 (with click's "did you mean" where it has one)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from sweep._cli.app import COMMAND_ORDER
from sweep.cli import app

runner = CliRunner()
FIX = Path(__file__).resolve().parents[1] / "data" / "dataset"


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert re.fullmatch(r"kernel-sweep \S+\n", result.stdout)


def test_dash_h_is_help() -> None:
    top = runner.invoke(app, ["-h"])
    assert top.exit_code == 0 and "Commands:" in top.stdout
    sub = runner.invoke(app, ["plan", "-h"])
    assert sub.exit_code == 0 and "Example: sweep plan" in sub.stdout


def test_completion_is_offered() -> None:
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout


def test_commands_in_workflow_order() -> None:
    text = runner.invoke(app, ["--help"]).stdout
    listed = [m.group(1) for m in re.finditer(r"^  ([a-z-]+)  ", text.split("Commands:")[1], re.MULTILINE)]
    known = [c for c in COMMAND_ORDER if c in listed]
    assert listed[: len(known)] == known
    assert listed[:4] == ["validate", "plan", "eval", "launch"]


def test_example_comes_first() -> None:
    text = runner.invoke(app, ["eval", "--help"]).stdout
    assert text.index("Example: sweep eval") < text.index("Fractions of peak")


def test_readable_metavars() -> None:
    for command in ("validate", "eval", "plan", "ingest", "query"):
        text = runner.invoke(app, [command, "--help"]).stdout
        assert "<" not in text and "list[" not in text and "{roots}" not in text, text
    # roots are optional since `sweep validate --config CFG` reads them from the config
    assert "Usage: sweep validate [OPTIONS] [ROOT]..." in runner.invoke(app, ["validate", "-h"]).stdout
    assert "-r, --root PATH" in runner.invoke(app, ["eval", "-h"]).stdout


def test_bad_choice() -> None:
    result = runner.invoke(app, ["schema", "foo"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: invalid value for 'KIND': 'foo' is not one of 'definition', 'solution', 'workload', 'trace'."
    )
    assert "Error:" not in result.output


def test_unknown_option_did_you_mean() -> None:
    result = runner.invoke(app, ["plan", "x.yaml", "--hardwar", "H100"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith(
        "error: no such option: --hardwar (did you mean --hardware"
    )
    assert "usage: sweep plan [OPTIONS] CONFIG" in result.stderr


def test_unknown_command_did_you_mean() -> None:
    result = runner.invoke(app, ["valdate"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no such command 'valdate' (did you mean 'validate'")


def test_unknown_top_level_option() -> None:
    result = runner.invoke(app, ["--bogus"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no such option: --bogus")


def test_missing_argument() -> None:
    result = runner.invoke(app, ["plan"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "error: missing argument 'CONFIG'."


def test_bad_integer() -> None:
    result = runner.invoke(app, ["query", "--width", "x", "SELECT 1"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid value for '--width'")


def test_no_arguments_prints_help() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0
    assert "Commands:" in result.stdout


def test_sweep_error_still_exit_1() -> None:
    result = runner.invoke(app, ["validate", str(FIX / "no-such-root")])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")


def test_validate_json_parses() -> None:
    result = runner.invoke(app, ["validate", str(FIX / "good"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["definitions"] >= 1 and data["errors"] == []


def test_report_json_parses(tmp_path: Path) -> None:
    store = tmp_path / "v2.duckdb"  # a copy: opening an old store migrates it
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "store" / "v2.duckdb", store)
    result = runner.invoke(app, ["report", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["tables"] and all({"title", "columns", "rows"} <= set(t) for t in data["tables"])
