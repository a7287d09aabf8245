"""What ``sweep launch`` shows: a progress line while it runs, a summary table at the end."""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple, TextIO

from sweep.errors import printable
from sweep.schema import FLAG_REFERENCE_FAILED, FLAG_TAMPERED, Status, Trace
from sweep.store.render import ratio

__all__ = [
    "REFERENCE_FAILED",
    "TAMPERED",
    "FailureGroup",
    "Outcome",
    "Progress",
    "SummaryRow",
    "Tally",
    "first_reason",
    "render_failures",
    "render_summary",
]

#: Outcomes counted apart from their status: a failure that is not the solution's (the
#: reference raised, timed out or crashed: ``reference_failed``), and one whose solution
#: changed the harness (``tampered``).
REFERENCE_FAILED = "REFERENCE_FAILED"
TAMPERED = "TAMPERED"
#: The summary's columns, in order, and their headings.
_STATUS_ABBR = {
    Status.PASSED.value: "PASS",
    Status.INCORRECT_NUMERICAL.value: "NUM",
    Status.INCORRECT_SHAPE.value: "SHAPE",
    Status.INCORRECT_DTYPE.value: "DTYPE",
    Status.RUNTIME_ERROR.value: "RTERR",
    Status.COMPILE_ERROR.value: "CMPERR",
    Status.TIMEOUT.value: "TIMEOUT",
    TAMPERED: "TAMPER",
    REFERENCE_FAILED: "REFFAIL",
}


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class Progress:
    """done/total, passed/failed, rate and ETA; one rewritten line on a terminal, plain
    lines every ``interval_s`` seconds otherwise (logs, CI, ``ray job logs``).

    Args:
        total: Tasks to run in this launch.
        stream: Where to write (stderr by default).
        interval_s: Seconds between plain-text lines when ``stream`` is not a terminal.
    """

    def __init__(self, total: int, stream: TextIO | None = None, interval_s: float = 10.0) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self.done = 0
        self.passed = 0
        self.t0 = time.monotonic()
        self._last = 0.0
        self._width = 0  # characters of the line on the terminal now (0: none)
        self._printed_done = -1  # ``done`` of the last plain line printed

    def line(self) -> str:
        """The current progress line."""
        elapsed = time.monotonic() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = _duration(left / rate) if rate > 0 and left else ("-" if left else "0s")
        width = len(str(self.total))
        return (
            f"[{self.done:>{width}}/{self.total}] passed {self.passed} failed {self.done - self.passed}"
            f"  {rate:.1f}/s  elapsed {_duration(elapsed)}  ETA {eta}"
        )

    def update(self, trace: Trace) -> None:
        """Count one finished trace and redraw when due."""
        self.count(trace.evaluation is not None and trace.evaluation.status is Status.PASSED)

    def count(self, passed: bool) -> None:
        """Count one finished trace, passed or not, and redraw when due."""
        self.done += 1
        if passed:
            self.passed += 1
        self._redraw(0.1, force_tty=self.done == self.total)

    def tick(self) -> None:
        """Redraw when due, also when nothing finished (a long evaluation, a hang)."""
        self._redraw(1.0)

    def _redraw(self, tty_interval_s: float, *, force_tty: bool = False) -> None:
        """On a terminal, rewrite the line at most every ``tty_interval_s``; elsewhere,
        print a new line every ``interval_s``."""
        now = time.monotonic()
        if self.tty:
            if now - self._last >= tty_interval_s or force_tty:
                self._draw(self.line())
                self._last = now
        elif now - self._last >= self.interval_s:
            self._last = now
            self._print(self.line())

    def _draw(self, text: str, end: str = "") -> None:
        """Rewrite the terminal's line; spaces blank what a longer line left (``ETA 18ss``)."""
        text = printable(text, one_line=True)
        self.stream.write("\r" + text.ljust(self._width) + end)
        self.stream.flush()
        self._width = 0 if end else len(text)

    def _print(self, text: str) -> None:
        self.stream.write(printable(text) + "\n")
        self.stream.flush()
        self._printed_done = self.done

    def note(self, text: str) -> None:
        """A message that does not break the progress line (what a terminal would act on in
        it escaped: it may quote names from the data)."""
        self.stream.write(("\n" if self.tty and self._width else "") + printable(text) + "\n")
        self.stream.flush()
        self._width = 0

    def finish(self) -> None:
        """The final line, once: rewritten in place on a terminal; elsewhere printed unless
        the last plain line already said the same count."""
        if self.tty:
            self._draw(self.line(), end="\n")
        elif self._printed_done != self.done:
            self._print(self.line())


@dataclass
class SummaryRow:
    """One definition x solution (x target, in a launch on several): counts per status and
    the median speedup of PASSED runs."""

    definition: str
    solution: str
    hardware: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    speedups: list[float] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Traces in this row."""
        return sum(self.counts.values())

    @property
    def median_speedup(self) -> float | None:
        """Median ``speedup_factor`` over PASSED traces, ``None`` without any."""
        return statistics.median(self.speedups) if self.speedups else None


class Outcome(NamedTuple):
    """What the summary keeps of one trace (a few strings and a number: holding it costs the
    garbage collector nothing, where a trace is a dozen objects)."""

    definition: str
    solution: str
    hardware: str
    status: str
    speedup: float | None  # of a PASSED trace with a performance, else None
    #: Why it failed: the first line of its log, "" for a PASSED trace.
    reason: str = ""
    task_id: str = ""

    @classmethod
    def of(cls, trace: Trace, hardware: str = "") -> Outcome:
        """The outcome of ``trace``, of a task planned for ``hardware``: its status, or
        ``REFERENCE_FAILED`` / ``TAMPERED`` for a failure flagged so (counted apart)."""
        ev = trace.evaluation
        status = ev.status.value if ev is not None else "NONE"
        flags = (ev.flags or []) if ev is not None else []
        if FLAG_REFERENCE_FAILED in flags:
            status = REFERENCE_FAILED
        elif FLAG_TAMPERED in flags:
            status = TAMPERED
        speedup = None
        if ev is not None and ev.status is Status.PASSED and ev.performance is not None:
            speedup = ev.performance.speedup_factor
        reason = ""
        if ev is not None and ev.status is not Status.PASSED:
            reason = first_reason(ev.log, ev.status.value)
        task = (trace.provenance.task_id if trace.provenance is not None else None) or ""
        return cls(trace.definition, trace.solution or "-", hardware, status, speedup, reason, task)


def first_reason(log: str, status: str) -> str:
    """The first line of a failed trace's log without its status prefix, clipped: what the
    launch summary groups failures by."""
    line = next((x.strip() for x in log.splitlines() if x.strip()), "")
    if line.startswith(f"{status}:"):
        line = line[len(status) + 1 :].strip()
    return (line[:157] + "...") if len(line) > 160 else (line or "(no log)")


@dataclass
class FailureGroup:
    """Failures of one status and one reason: how many, and one task id to look at."""

    status: str
    reason: str
    count: int = 0
    task_id: str = ""


class Tally:
    """Collects the summary of a launch, one trace at a time (no traces kept)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str], SummaryRow] = {}
        self.statuses: Counter[str] = Counter()
        #: Traces per target (the ``hardware`` given to :meth:`add`).
        self.by_hardware: Counter[str] = Counter()
        #: Failures grouped by status and the first line of their reason.
        self.failures: dict[tuple[str, str], FailureGroup] = {}

    def add(self, trace: Trace, hardware: str = "") -> None:
        """Count ``trace``, of a task planned for ``hardware`` (its target, ``"H100"``: the
        trace's own ``environment.hardware`` is the device that ran it)."""
        self.add_outcome(Outcome.of(trace, hardware))

    def add_outcome(self, outcome: Outcome) -> None:
        """Count one trace's :class:`Outcome`."""
        self.by_hardware[outcome.hardware] += 1
        key = (outcome.definition, outcome.solution, outcome.hardware)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = SummaryRow(*key)
        row.counts[outcome.status] += 1
        self.statuses[outcome.status] += 1
        if outcome.speedup is not None:
            row.speedups.append(outcome.speedup)
        if outcome.status != "PASSED":
            group = self.failures.get((outcome.status, outcome.reason))
            if group is None:
                group = self.failures[(outcome.status, outcome.reason)] = FailureGroup(
                    outcome.status, outcome.reason, task_id=outcome.task_id
                )
            group.count += 1

    def top_failures(self, limit: int = 5) -> list[FailureGroup]:
        """The ``limit`` most frequent failure groups, the most frequent first."""
        groups = sorted(self.failures.values(), key=lambda g: (-g.count, g.status, g.reason))
        return groups[:limit]

    def sorted_rows(self) -> list[SummaryRow]:
        """Rows by definition, then solution, then target."""
        return [self.rows[k] for k in sorted(self.rows)]


_LEGEND = {
    REFERENCE_FAILED: "the reference failed (not the solution's failure; left out of pass rates)",
    TAMPERED: "RUNTIME_ERROR, the solution changed the harness",
}


def render_summary(rows: list[SummaryRow]) -> str:
    """A plain-text table: definition, solution (and hardware, when the rows have several),
    total, one column per status seen (failures of the reference and tampering apart), median
    speedup of the PASSED ones."""
    if not rows:
        return "no evaluations ran"
    seen = [s for s in _STATUS_ABBR if any(r.counts.get(s) for r in rows)]
    per_hw = len({r.hardware for r in rows}) > 1
    names = ["definition", "solution"] + (["hardware"] if per_hw else [])
    head = names + ["total"] + [_STATUS_ABBR[s] for s in seen] + ["median_speedup"]
    body = []
    for r in rows:
        med = r.median_speedup
        body.append(
            [r.definition, r.solution]
            + ([r.hardware] if per_hw else [])
            + [str(r.total)]
            + [str(r.counts.get(s, 0)) for s in seen]
            + [ratio(med)]
        )
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    right = set(range(len(names), len(head)))

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    legend = ", ".join(f"{_STATUS_ABBR[s]}={_LEGEND.get(s, s)}" for s in seen)
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body] + [legend])


def render_failures(groups: list[FailureGroup], total: int) -> list[str]:
    """Lines for the summary: the most frequent failures by status and reason, with a count
    and one task id each ('sweep show TASK_ID' prints its trace and log)."""
    if not groups:
        return []
    shown_n = sum(g.count for g in groups)
    head = f"failures ({total}" + (f", top {len(groups)} kinds: {shown_n}" if shown_n < total else "") + "):"
    lines = [head]
    for g in groups:
        task = f" (e.g. task {g.task_id[:12]})" if g.task_id else ""
        lines.append(f"  {g.count:>5}  {g.status}: {g.reason}{task}")
    lines.append("  'sweep show TASK_ID' prints a task's trace and log")
    return lines
