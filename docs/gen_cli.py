"""Write docs/cli.md, the command reference, from the ``sweep`` command itself.

Every command and sub-command of the typer app (:data:`sweep.cli.app`), in the order
``sweep --help`` lists them, with its help text and options exactly as ``sweep COMMAND -h``
prints them at a fixed width. ``tests/test_docs.py`` fails when the file is out of date.

Usage, from the repository root:

    python docs/gen_cli.py            # rewrite docs/cli.md
    python docs/gen_cli.py --check    # exit 1 when docs/cli.md is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
CLI_MD = DOCS / "cli.md"
#: Help is wrapped at this width, whatever the terminal, so the file is the same everywhere.
WIDTH = 100

HEADER = """# Command reference

Generated from the commands themselves by `python docs/gen_cli.py`; do not edit by hand
(`tests/test_docs.py` fails when this file is out of date). Each section is what
`sweep COMMAND -h` prints. The [manual's index](index.md) says what each command is for.
"""


def _commands(cmd: Any, ctx: Any, path: list[str]) -> list[tuple[list[str], Any, Any]]:
    """``cmd`` and every sub-command below it, depth first, as ``(path, command, context)``."""
    out = [(path, cmd, ctx)]
    list_commands = getattr(cmd, "list_commands", None)
    if list_commands is None:
        return out
    for name in list_commands(ctx):
        sub = cmd.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        sub_ctx = type(ctx)(sub, info_name=name, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH)
        out.extend(_commands(sub, sub_ctx, [*path, name]))
    return out


def render() -> str:
    """The text of docs/cli.md."""
    import typer.main

    from sweep.cli import app

    root = typer.main.get_command(app)
    ctx_type = type(root.make_context("sweep", ["--help"], resilient_parsing=True))
    settings = {**root.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = ctx_type(root, info_name="sweep", **settings)
    parts = [HEADER]
    for path, cmd, cmd_ctx in _commands(root, ctx, ["sweep"]):
        title = " ".join(path)
        help_text = cmd.get_help(cmd_ctx).rstrip()
        parts.append(f"## `{title}`\n\n```text\n{help_text}\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    """Write docs/cli.md, or with ``--check`` say whether it is up to date."""
    text = render()
    if "--check" in argv:
        if CLI_MD.is_file() and CLI_MD.read_text(encoding="utf-8") == text:
            return 0
        print(f"{CLI_MD} is out of date: run python docs/gen_cli.py", file=sys.stderr)
        return 1
    CLI_MD.write_text(text, encoding="utf-8")
    print(f"wrote {CLI_MD}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent))
    raise SystemExit(main(sys.argv[1:]))
