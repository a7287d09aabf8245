"""The typer app and its error boundary: a SweepError becomes a message and exit code 1."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer >= 0.2x carries its own copy of click; its Context is what TyperGroup expects
    from typer._click.core import Context as _Context
except ImportError:  # older typer uses the click package
    from click import Context as _Context  # type: ignore[assignment]

from sweep.errors import SweepError, clip_lines

__all__ = ["app", "fail"]


class _Group(TyperGroup):
    """Turns every :class:`SweepError` raised by a command into ``error: ...`` and exit 1."""

    def invoke(self, ctx: _Context) -> Any:
        try:
            return super().invoke(ctx)
        except SweepError as e:
            # Messages quote user values clipped (sweep.errors.shown); clip_lines is the last
            # guard so that no error floods a terminal with a huge token.
            typer.echo(clip_lines(f"error: {e}"), err=True)
            raise SystemExit(1) from None


app = typer.Typer(
    cls=_Group,
    name="sweep",
    help="kernel-sweep: check and time kernel solutions over definitions x workloads on Ray.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def fail(message: str) -> None:
    """Raise a :class:`SweepError` with ``message`` (for command bodies)."""
    raise SweepError(message)
