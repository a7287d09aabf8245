"""The store follower: a process that moves the writer's synced log lines into the DuckDB file.

The sweep driver's writer (:class:`~sweep.store.ResultsWriter`) only appends traces to their
JSONL logs and syncs them. Turning a trace into rows and inserting them costs about 80 us of
Python a trace: at 10,000 traces a second most of a core, and in the driver's process it would
hold the GIL the driver loop needs. So it happens here, in a child process (``python -m
sweep.store.write._follower_main``), as ``sweep ingest`` does it: read the new lines of each log, parse and
check each with the schema, build rows, and insert them with the logs' marks in one
transaction (the file held only for that moment, so ``sweep query`` gets in between).

It reads no further than the writer says each log is synced (:class:`Synced`), so the store
never holds a trace its log could still lose, and never meets a line being written. Messages
are pickled, one after the other, both ways: the driver sends :class:`Start` once, then
:class:`Synced` and :class:`Flush`; the end of its stdin (the writer closed, or the driver
died) asks for one last pass, then the follower exits. After every pass it answers
:class:`Stored`. Exactly once: the marks move in the transaction that inserts the lines, and a
line inserted twice (another process ingesting the same logs) has the key of the first.
Nothing imports the process part of this module but the writer's client
(:mod:`sweep.store.write._follower_client`).
"""

from __future__ import annotations

import logging
import pickle
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pydantic

from sweep.errors import StoreError, ValidationError
from sweep.schema import Trace
from sweep.schema.limits import open_regular
from sweep.store.db import StoreContext, describe_invalid
from sweep.store.ingestion import head_hash
from sweep.store.rows import LogMark, RowBatch, WritableStore

__all__ = ["Flush", "Start", "Stored", "Synced", "main"]

_log = logging.getLogger("sweep.store")
#: Bytes of log lines one pass reads at most (~40,000 traces, ~60 MB of rows): a follower far
#: behind catches up in passes of bounded memory, one after the other.
_PASS_BYTES = 32 << 20


@dataclass(frozen=True)
class Start:
    """The follower's setup: the store, the context that fills columns, how often to insert."""

    store_path: str
    context: StoreContext
    interval_s: float
    lock_timeout_s: float


@dataclass(frozen=True)
class Synced:
    """How far logs are synced: absolute log path -> offset just past its last synced line."""

    ends: dict[str, int]


@dataclass(frozen=True)
class Flush:
    """Insert what is synced now, waiting up to the lock timeout; answered with its token."""

    token: int


@dataclass(frozen=True)
class Stored:
    """One pass done.

    Attributes:
        ends: How far each log is in the store now (only logs this pass moved).
        traces: Traces inserted by the pass (lines already stored not counted).
        token: The :class:`Flush` this pass answers, if any.
        error: Why the pass stored nothing (the file stayed locked, ...), or ``None``.
        warnings: Lines refused (``<log>:<line>: <what is wrong>, skipped``).
        last: The follower's last pass: it exits after this message.
    """

    ends: dict[str, int]
    traces: int = 0
    token: int | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    last: bool = False


@dataclass
class _Inbox:
    """What the driver said, gathered by the reading thread."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    limits: dict[str, int] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    eof: bool = False


def _read_messages(inp: BinaryIO, box: _Inbox) -> None:
    while True:
        try:
            msg = pickle.load(inp)  # our parent's message
        except (EOFError, OSError, pickle.UnpicklingError):
            msg = None
        with box.cond:
            if isinstance(msg, Synced):
                box.limits.update(msg.ends)
            elif isinstance(msg, Flush):
                box.tokens.append(msg.token)
            else:
                box.eof = True
            box.cond.notify_all()
            if box.eof:
                return


class _Follower:
    def __init__(self, start: Start) -> None:
        self.store = WritableStore(Path(start.store_path), lock_timeout_s=start.lock_timeout_s)
        self.context = start.context
        self.marks: dict[str, LogMark] | None = None
        self.lines: dict[str, int] = {}  # lines before each mark, for warnings' line numbers

    def _line_count(self, path: str, offset: int) -> int:
        n = self.lines.get(path)
        if n is None:
            n = 0
            with open_regular(path) as f:
                left = offset
                while left and (block := f.read(min(left, 1 << 20))):
                    n += block.count(b"\n")
                    left -= len(block)
        return n

    def behind(self, limits: dict[str, int]) -> bool:
        """Whether some log is synced further than it is stored."""
        marks = self.marks or {}
        return any(limit > (marks[p].offset if p in marks else 0) for p, limit in limits.items())

    def run_pass(self, limits: dict[str, int], timeout_s: float) -> Stored:
        """Read the logs from their marks towards their synced ends (at most ``_PASS_BYTES``);
        insert the rows and the new marks in one transaction."""
        if self.marks is None:
            with self.store.writing(timeout_s=timeout_s) as con:
                self.marks = self.store.log_marks(con)
        batch = RowBatch()
        new: list[LogMark] = []
        warnings: list[str] = []
        numbers: dict[str, int] = {}
        budget = _PASS_BYTES
        for path, limit in limits.items():
            if budget <= 0:
                break
            mark = self.marks.get(path)
            start = mark.offset if mark is not None else 0
            if start and (mark is None or head_hash(Path(path), start) != mark.head_hash):
                start = 0  # not the file the mark was made for
            if limit <= start:
                continue
            number = self._line_count(path, start)
            with open_regular(path) as f:
                f.seek(start)
                data = f.read(min(limit - start, budget))
                cut = data.rfind(b"\n") + 1  # whole lines only (the cap may end mid-line)
                if not cut and len(data) < limit - start:  # a line longer than a pass: alone
                    data += f.read(limit - start - len(data))
                    cut = data.find(b"\n") + 1
            if not cut:
                continue  # no whole line synced beyond the mark (cannot be: ends are of lines)
            budget -= cut
            for raw in data[:cut].splitlines(keepends=True):
                number += 1
                if raw.strip():
                    self._add(batch, raw, f"{path}:{number}", path, warnings)
            numbers[path] = number
            new.append(LogMark(path, start + cut, head_hash(Path(path), start + cut)))
        if not new:
            return Stored({})
        counts = self.store.add(batch, new, timeout_s=timeout_s)
        self.marks.update({m.path: m for m in new})
        self.lines.update(numbers)
        return Stored({m.path: m.offset for m in new}, counts.traces, warnings=warnings)

    def _add(self, batch: RowBatch, raw: bytes, where: str, source: str, warnings: list[str]) -> None:
        # The same checks and words as 'sweep ingest' and a reader's log tail.
        try:
            trace = Trace.model_validate_json(raw)
        except pydantic.ValidationError as e:
            warnings.append(f"{where}: {describe_invalid(e, raw)}, skipped")
            return
        try:
            batch.add_trace(trace, source=source, context=self.context)
        except ValidationError as e:
            warnings.append(f"{where}: not a valid trace: {e}, skipped")


def _catch_up(
    follower: _Follower, limits: dict[str, int], wait: float, *, whole: bool, out: BinaryIO
) -> Stored | None:
    """Passes until the logs are stored up to ``limits`` (``whole``: a flush or the last pass)
    or, for a periodic one, while the follower is behind; every pass but the last one answered
    at once. ``None``: the driver is gone."""
    while True:
        try:
            answer = follower.run_pass(limits, wait)
        except (StoreError, OSError) as e:
            return Stored({}, error=str(e))
        except Exception as e:  # noqa: BLE001 - the follower must outlive any failure; the logs keep all
            return Stored({}, error=f"{type(e).__name__}: {e}")
        if not answer.ends or not follower.behind(limits):
            return answer
        try:
            pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
        except OSError:
            return None


def main() -> None:
    """Follow the logs the parent syncs until its messages end (see the module doc)."""
    # Ctrl-C reaches the whole process group: the driver decides when we stop (it closes stdin).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not break the messages on stdout
    start = pickle.load(inp)  # our parent's first message
    assert isinstance(start, Start)
    follower = _Follower(start)
    box = _Inbox()
    threading.Thread(target=_read_messages, args=(inp, box), daemon=True).start()
    while True:
        with box.cond:
            box.cond.wait_for(lambda: box.eof or bool(box.tokens), timeout=start.interval_s)
            limits, tokens, last = dict(box.limits), box.tokens, box.eof
            box.tokens = []
        # A pass asked for waits out a reader; a periodic one gives up soon and comes again.
        wait = start.lock_timeout_s if (tokens or last) else min(start.interval_s, 0.5)
        answer = _catch_up(follower, limits, wait, whole=bool(tokens) or last, out=out)
        if answer is None:
            return  # the driver is gone
        try:
            for i, token in enumerate(tokens or [None]):
                one = answer if i == 0 else Stored({}, error=answer.error)
                pickle.dump(
                    Stored(one.ends, one.traces, token, one.error, one.warnings, last=last),
                    out,
                    protocol=pickle.HIGHEST_PROTOCOL,
                )
            out.flush()
        except OSError:  # the driver is gone (killed): what it synced is stored, nothing to say
            return
        if last:
            return
