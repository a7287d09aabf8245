"""Help texts: every command has one with an example, and the CLI imports nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from sweep.cli import app

runner = CliRunner()


def test_top_level_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("validate", "schema", "plan"):
        assert name in result.stdout


@pytest.mark.parametrize("command", ["validate", "schema", "plan"])
def test_command_help_has_an_example(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Example: sweep {command}" in result.stdout


def _leaf_commands() -> list[list[str]]:
    import typer.main

    out: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        # Typer may carry its own copy of click: recognise groups by their ``commands``.
        if isinstance(getattr(cmd, "commands", None), dict):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, [*path, name])
        else:
            out.append(path)

    walk(typer.main.get_command(app), [])
    return out


def test_every_registered_command_has_an_example() -> None:
    commands = _leaf_commands()
    assert ["plan"] in commands
    for path in commands:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Example: sweep" in result.stdout, path


def test_cli_import_is_light() -> None:
    code = (
        "import sys, sweep.cli\n"
        "heavy = [m for m in ('torch', 'ray', 'triton', 'tvm_ffi', 'duckdb', 'pyarrow') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("setup", "call", "report", "example", "last"),
    [
        pytest.param(
            "from sweep.cli import app",
            "app(['plan', '--help'])",
            "'HEAVY:' + ','.join(m for m in ('torch', 'ray', 'triton', 'duckdb') if m in sys.modules)",
            "Example: sweep plan",
            "HEAVY:",
            id="help runs without heavy imports",
        ),
        pytest.param(
            "sys.argv = ['sweep', 'import-backendbench', '--help']\nfrom sweep.cli import main",
            "main()",
            "'CLI:' + ','.join(sorted(m for m in sys.modules if m.startswith('sweep._cli.') and m != 'sweep._cli.app'))",
            "Example: sweep",
            "CLI:sweep._cli.backendbench",
            id="one command's run imports only its module",
        ),
    ],
)
def test_a_help_in_a_fresh_process_imports_only_what_it_needs(
    setup: str, call: str, report: str, example: str, last: str
) -> None:
    """A fresh Python runs ``setup``, then ``call`` (a help, which exits), then prints ``report``
    (what the help imported): the help's text is there, and the report is ``last``."""
    code = f"import sys\n{setup}\ntry:\n    {call}\nexcept SystemExit:\n    pass\nprint({report})\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert example in out
    assert out.splitlines()[-1] == last


def test_command_modules_name_where_each_command_is_defined() -> None:
    """A run of one command imports only the module :data:`sweep.cli.COMMAND_MODULES` names for
    it: every command of the whole app is there, with the module that defines it."""
    from sweep.cli import COMMAND_MODULES

    defined: dict[str, str] = {}
    for info in app.registered_commands:
        assert info.callback is not None
        name = info.name or info.callback.__name__.replace("_", "-")
        defined[name] = info.callback.__module__
    for group in app.registered_groups:
        assert group.name is not None and group.typer_instance is not None
        first = group.typer_instance.registered_commands[0].callback
        assert first is not None
        defined[group.name] = first.__module__
    assert {n: f"sweep._cli.{m}" for n, m in COMMAND_MODULES.items()} == defined
