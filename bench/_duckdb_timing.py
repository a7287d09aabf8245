"""Every DuckDB statement of this process timed, for benches that ask where a write's time goes.

:func:`time_every_connection` makes each ``duckdb.connect`` from then on return a
:class:`TimedConnection`: its opening, each statement (its cursors' too) and its close (the
checkpoint) are handed to ``note`` with their wall and CPU seconds. What a bench keeps of them
is its own (``store_writer_profile.py`` sums them by kind, ``ingest_timeline.py`` lists the long
ones in time order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["Note", "TimedConnection", "time_every_connection"]

#: ``note(what, began, wall_s, cpu_s)``: ``what`` is the statement's text, ``"(open)"`` or
#: ``"(close)"``; ``began`` a ``time.perf_counter()`` reading; CPU is the whole process's.
Note = Callable[[str, float, float, float], None]


def _timed(note: Note, what: str, fn: Callable[[], Any]) -> Any:
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        return fn()
    finally:
        note(what, w0, time.perf_counter() - w0, time.process_time() - c0)


class TimedConnection:
    """A DuckDB connection whose statements, cursors and close are timed into ``note``."""

    def __init__(self, con: Any, note: Note) -> None:
        self._con, self._note = con, note

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        return _timed(self._note, sql, lambda: self._con.execute(sql, *args, **kwargs))

    def cursor(self) -> TimedConnection:
        return TimedConnection(self._con.cursor(), self._note)

    def close(self) -> None:
        _timed(self._note, "(close)", self._con.close)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def time_every_connection(note: Note) -> None:
    """Every DuckDB connection this process opens from now on is a :class:`TimedConnection`."""
    import duckdb

    real = duckdb.connect

    def connect(*args: Any, **kwargs: Any) -> TimedConnection:
        return TimedConnection(_timed(note, "(open)", lambda: real(*args, **kwargs)), note)

    duckdb.connect = connect  # type: ignore[assignment]
