"""The typer app and its conventions.

- The error boundary: a :class:`SweepError` raised by a command, and every usage error of the
  flag parser (unknown option or command, missing argument, bad choice), print
  ``error: ...`` on stderr and exit 1.
- Output: everything a command prints goes through :func:`echo`, which escapes what a
  terminal would act on (:func:`sweep.errors.printable`): names from data cannot recolour,
  move or hide what is printed.
- ``--version``, ``-h`` as ``--help``, shell completion (``--install-completion``).
- Commands listed in workflow order (:data:`COMMAND_ORDER`; a command missing from it comes
  after, in the order it was registered), each help text with its examples first, and
  readable metavars (``ROOT...``, ``PATH``, ``INTEGER``) instead of Python types.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

try:  # typer >= 0.2x carries its own copy of click; its classes are what TyperGroup expects
    from typer._click.core import Context as _Context
    from typer._click.exceptions import ClickException as _ClickException
    from typer._click.exceptions import UsageError as _UsageError
    from typer.exceptions import Abort as _Abort
except ImportError:  # older typer uses the click package
    from click import Context as _Context  # type: ignore[assignment]
    from click.exceptions import Abort as _Abort  # type: ignore[assignment]
    from click.exceptions import ClickException as _ClickException  # type: ignore[assignment]
    from click.exceptions import UsageError as _UsageError  # type: ignore[assignment]

from sweep.errors import SweepError, clip_lines, printable


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``message`` (on stderr with ``err``), every character a terminal would act on
    escaped (:func:`sweep.errors.printable`). The one way a command prints."""
    typer.echo(printable(message), err=err, nl=nl)


__all__ = ["COMMAND_ORDER", "app", "fail"]

#: The order ``sweep --help`` lists commands in: the workflow, then the rest. Names not
#: registered (yet) are skipped; registered names missing here follow, in registration order.
COMMAND_ORDER: tuple[str, ...] = (
    "validate",
    "plan",
    "eval",
    "launch",
    "tune",
    "query",
    "show",
    "report",
    "compare",
    "profile",
    "new",
    "ingest",
    "export",
    "export-tuning",
    "calibrate",
    "workers",
    "schema",
    "import-backendbench",
    "import-backendbench-kernels",
    "export-backendbench",
)

_TYPES = {"Path": "PATH", "str": "TEXT", "int": "INTEGER", "int range": "INTEGER", "float": "FLOAT"}


def _type_word(param: TyperArgument | TyperOption, ctx: _Context) -> str:
    """``<list[Path]>`` -> ``PATH``, ``<int range>`` -> ``INTEGER``, ``<a|b>`` -> ``[a|b]``."""
    raw = param.display_type(ctx)
    text = raw.strip("<>")
    inner = re.fullmatch(r"list\[(.*)\]", text)
    text = inner.group(1) if inner else text
    if "|" in text:
        return "{" + text + "}"
    return _TYPES.get(text, text.upper())


class _Argument(TyperArgument):
    """An argument shown as ``NAME`` or ``NAME...`` (one of its choices: ``{a|b}``)."""

    def _name(self) -> str:
        if self.metavar is not None:
            return self.metavar
        name = (self.name or "arg").upper()
        return name[:-1] if self.nargs != 1 and name.endswith("S") else name

    def get_error_hint(self) -> str:
        return f"'{self._name()}'"

    def _usage_display_name(self) -> str:
        name = self._name() if self.required else f"[{self._name()}]"
        return name + ("..." if self.nargs != 1 else "")

    def _rich_display_name(self) -> str:
        return self._name() + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: _Context) -> str | None:
        word = _type_word(self, ctx)
        return word if word.startswith("{") else None


class _Option(TyperOption):
    """An option's value shown as ``PATH``, ``TEXT``, ``INTEGER`` or ``{a|b}``."""

    def display_type_rich(self, ctx: _Context) -> str | None:
        if self.metavar is not None:
            return self.metavar
        return _type_word(self, ctx)


def _examples_first(text: str | None) -> str | None:
    """A help text with its ``Example:`` paragraphs moved after the first paragraph."""
    if not text:
        return text
    paras = re.split(r"\n\s*\n", text.strip())
    examples = [p for p in paras[1:] if p.lstrip().startswith("Example")]
    if not examples:
        return text
    rest = [p for p in paras[1:] if not p.lstrip().startswith("Example")]
    return "\n\n".join([paras[0], *examples, *rest])


def _conventional(cmd: Any) -> Any:
    """``cmd`` with readable metavars and its examples first (any registered command)."""
    if getattr(cmd, "_sweep_conventions", False):
        return cmd
    for p in getattr(cmd, "params", []):
        if type(p) is TyperArgument:
            p.__class__ = _Argument
        elif type(p) is TyperOption:
            p.__class__ = _Option
    cmd.help = _examples_first(cmd.help)
    cmd._sweep_conventions = True
    return cmd


def _lower_first(text: str) -> str:
    """``Missing argument`` -> ``missing argument``; ``SQL`` stays."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _usage_message(e: _UsageError) -> str:
    """Click's message in sweep's words: lower case, "did you mean" as everywhere else."""
    text = _lower_first(e.format_message().replace("Value error, ", ""))
    text = re.sub(r"\(Possible options: (.*)\)$", r"(did you mean \1?)", text)
    return re.sub(r"\. Did you mean (.*)\?$", r" (did you mean \1?)", text)


class _Group(TyperGroup):
    """The ``sweep`` group: the error boundary, the order of commands, readable help."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, cmd in list(self.commands.items()):
            self.commands[name] = _conventional(cmd)

    def add_command(self, cmd: Any, name: str | None = None) -> None:
        super().add_command(_conventional(cmd), name)

    def list_commands(self, ctx: _Context) -> list[str]:
        names = list(self.commands)
        first = [n for n in COMMAND_ORDER if n in self.commands]
        return first + [n for n in names if n not in first]

    def invoke(self, ctx: _Context) -> Any:
        try:
            return super().invoke(ctx)
        except SweepError as e:
            # Messages quote user values clipped (sweep.errors.shown); clip_lines is the last
            # guard so that no error floods a terminal with a huge token.
            echo(clip_lines(f"error: {e}"), err=True)
            raise SystemExit(1) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's usage errors (exit 2, ``Error:``) become ``error: ...``, exit 1."""
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _UsageError as e:
            if not standalone_mode:
                raise
            if type(e).__name__ == "NoArgsIsHelpError" and e.ctx is not None:
                echo(e.ctx.get_help())
                sys.exit(0)
            echo(clip_lines(f"error: {_usage_message(e)}"), err=True)
            if e.ctx is not None:
                usage = _lower_first(e.ctx.get_usage())
                echo(clip_lines(f"{usage}\n(see '{e.ctx.command_path} -h')"), err=True)
            sys.exit(1)
        except _ClickException as e:
            if not standalone_mode:
                raise
            echo(clip_lines(f"error: {_lower_first(e.format_message())}"), err=True)
            sys.exit(1)
        except _Abort:
            if not standalone_mode:
                raise
            echo("error: aborted", err=True)
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=_Group,
    name="sweep",
    help="kernel-sweep: check and time kernel solutions over definitions x workloads on Ray.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("kernel-sweep")
        except PackageNotFoundError:  # run from a checkout that was never installed
            v = "unknown (not installed)"
        echo(f"kernel-sweep {v}")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """kernel-sweep: check and time kernel solutions over definitions x workloads on Ray.

    Example: sweep validate data && sweep plan sweep.yaml && sweep launch sweep.yaml
    """


def fail(message: str) -> None:
    """Raise a :class:`SweepError` with ``message`` (for command bodies)."""
    raise SweepError(message)
