"""What the launch does with the traces the driver loop hands over: log them, and count them
done once they are durable.

The loop's ``on_traces`` only appends (:meth:`sweep.store.ResultsWriter.submit`); the writer's
thread syncs the logs, and a group of traces is tallied and shown on the progress line when
its sync is done (at a later delivery or tick of the loop, or at :meth:`Storing.drain`). So
the loop never waits on the disk, and a trace the launch counts is one a killed driver keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sweep.launch.progress import Outcome, Progress, Tally
from sweep.schema import Trace

if TYPE_CHECKING:
    from sweep.store import ResultsWriter

__all__ = ["Storing"]


class Storing:
    """The launch's side of the writer: ``on_traces`` and ``on_tick`` for the driver loop.

    Args:
        writer: Where traces go; ``None`` until the launch has it open (set :attr:`writer`
            before the first traces: the loop's ticks before then only redraw the progress).
        tally: Counts the durable traces, per target.
        progress: Shows them (``None``: quiet).
        target_of: Each task's target, by task id.
    """

    def __init__(
        self,
        writer: ResultsWriter | None,
        tally: Tally,
        progress: Progress | None,
        target_of: Mapping[str, str],
    ) -> None:
        self.writer = writer
        self.tally = tally
        self.progress = progress
        self.target_of = target_of

    def on_traces(self, traces: Sequence[Trace]) -> None:
        """Append the traces to their logs; they count once synced (:meth:`_durable`). Only
        their outcomes wait for the sync, not the traces (see :class:`Outcome`)."""
        target_of = self.target_of
        outcomes = [
            Outcome.of(t, target_of.get(t.provenance.task_id or "", "") if t.provenance is not None else "")
            for t in traces
        ]
        if self.writer is None:
            raise RuntimeError("traces came before the results writer was open")
        self.writer.submit(traces, lambda: self._durable(outcomes))

    def on_tick(self) -> None:
        """Count what became durable since, and redraw the progress line when due."""
        if self.writer is not None:
            self.writer.poll()
        if self.progress is not None:
            self.progress.tick()

    def drain(self) -> None:
        """Wait for the last syncs, and count what they made durable."""
        if self.writer is not None:
            self.writer.drain()

    def _durable(self, outcomes: Sequence[Outcome]) -> None:
        for outcome in outcomes:
            self.tally.add_outcome(outcome)
            if self.progress is not None:
                self.progress.count(outcome.status == "PASSED")
