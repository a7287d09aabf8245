"""The phase clock: where one evaluation's time goes, as monotonic timestamps.

Each phase of an evaluation ends with :func:`mark` (a name and ``time.monotonic()``: a
list append, ~0.1 us, cheap enough to stay on). ``evaluate`` starts the list afresh;
the sandbox's process sends it back beside the trace (``sweep.engine.phase_marks``), where
the supervisor adds its own marks (fork, hand-off, hand-back, teardown) on the same clock
(``CLOCK_MONOTONIC`` is one clock for every process of a host). ``bench/eval_phases.py``
turns the marks into a table. The marks never reach a trace: they say how long the harness
took, not how fast a kernel is.

Names ending in ``warm-up`` or ``timed`` close a window of the timing budget (``warmup_ms``,
then ``rep_ms`` of timed calls, for each side): ``BUDGET_SUFFIXES``.
"""

from __future__ import annotations

import time

__all__ = ["BUDGET_SUFFIXES", "mark", "marks", "restart"]

#: A mark whose name ends so closes a window the timing settings ask for.
BUDGET_SUFFIXES = ("warm-up", "timed")

_marks: list[tuple[str, float]] = []


def restart(name: str) -> None:
    """Forget the marks of an earlier evaluation in this process; ``name`` is the first."""
    _marks.clear()
    _marks.append((name, time.monotonic()))


def mark(name: str) -> None:
    """The phase that ends now was ``name``."""
    _marks.append((name, time.monotonic()))


def marks() -> list[tuple[str, float]]:
    """The marks since the last :func:`restart`, oldest first."""
    return list(_marks)
