"""The ``sweep`` command. Thin: each command parses, calls one library function, renders.

Command modules register their commands on ``app`` when imported; none of them may import
torch, ray or triton at module level, so ``sweep --help`` stays instant. Importing all of them
costs most of a second (config models, the report's renderers), so a run of one command
(:func:`main`, ``python -m sweep.cli``) imports only the module of that command; ``app`` read
from this module (tests, ``sweep --help``, a name that is no command) has every command.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

    from sweep._cli.app import app

__all__ = ["COMMAND_MODULES", "app", "main", "register"]

#: The module under ``sweep._cli`` that defines each top-level command or group, in the order
#: they are registered (the order ``sweep --help`` lists them). tests/cli/test_help.py checks
#: it against the commands the modules define.
COMMAND_MODULES: dict[str, str] = {
    "import-backendbench": "backendbench",
    "export-backendbench": "backendbench",
    "import-backendbench-kernels": "backendbench",
    "import-torch-profile": "backendbench",
    "calibrate": "calibrate",
    "compare": "compare",
    "validate": "dataset",
    "schema": "dataset",
    "plan": "dataset",
    "eval": "evaluate",
    "launch": "launch",
    "new": "new",
    "profile": "profile",
    "project": "scores",
    "scores": "scores",
    "reveal": "scores",
    "show": "show",
    "ingest": "store",
    "query": "store",
    "report": "store",
    "export": "store",
    "tune": "tune",
    "export-tuning": "tuning",
    "workers": "workers",
}


def register(command: str | None = None) -> typer.Typer:
    """Import the command modules, so their commands are on the app, and return the app.

    Args:
        command: Only the module of this top-level command, when it is one of
            :data:`COMMAND_MODULES` (else every module).
    """
    from sweep._cli.app import app as the_app

    module = COMMAND_MODULES.get(command or "")
    names = [module] if module is not None else list(dict.fromkeys(COMMAND_MODULES.values()))
    for name in names:
        importlib.import_module(f"sweep._cli.{name}")
    return the_app


def _command(argv: list[str]) -> str | None:
    """The command a command line runs, when only its module is needed to run it."""
    if os.environ.get("_SWEEP_COMPLETE"):  # shell completion lists every command
        return None
    if not argv or argv[0].startswith("-"):  # --help, --version: the whole app
        return None
    return argv[0]


def main() -> None:
    """Console-script entry point: registers the command being run, then runs it."""
    register(_command(sys.argv[1:]))()


def __getattr__(name: str) -> object:
    # ``app`` with every command, for whoever reads it from here (tests, docs/gen_cli.py).
    if name == "app":
        return register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
