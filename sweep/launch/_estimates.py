"""How long each task of a launch will take, from earlier runs in the store, so the scheduler
starts the longest first and the sweep does not end on one GPU's long tail.

For each task, the first rule that applies:

1. the same definition, solution, workload and parameter point ran before (any settings, any
   hardware; a ``--force`` re-run is this case): its latest duration;
2. the same solution of the definition ran other workloads: its durations against the
   workload size (the product of the axis values), read at the task's size: linearly in log
   size between the nearest sizes below and above, and flat beyond the ends (no
   extrapolation: an evaluation has a fixed part, build, warm-up and the timing budget, that
   does not grow with the size); the median where one size has several durations (parameter
   points);
3. other solutions of the definition ran: the same over all of their durations;
4. none: no estimate. The scheduler puts those first (a task never measured may be the
   longest, a new solution or size), in plan order; a first sweep runs in plan order.

Hardware is not matched: only the order of one launch's tasks matters, and that mostly
carries from one GPU to another.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from sweep.schema.params import params_json
from sweep.schema.task import Task
from sweep.store import EarlierRun

__all__ = ["estimate_durations", "estimated_for", "workload_size"]


def workload_size(task: Task) -> float:
    """The product of the task's workload axis values (1 without axes)."""
    return float(math.prod(task.workload.axes.values()))


class _Curve:
    """Durations against log size: the median at each size, read by linear interpolation."""

    def __init__(self, points: Iterable[tuple[float, float]]) -> None:
        by_size: dict[float, list[float]] = defaultdict(list)
        for size, seconds in points:
            by_size[math.log(max(size, 1.0))].append(seconds)
        self.xs = sorted(by_size)
        self.ys = [statistics.median(by_size[x]) for x in self.xs]

    def at(self, size: float) -> float:
        x = math.log(max(size, 1.0))
        i = bisect.bisect_left(self.xs, x)
        if i < len(self.xs) and self.xs[i] == x:
            return self.ys[i]
        if i == 0:
            return self.ys[0]
        if i == len(self.xs):
            return self.ys[-1]
        x0, x1, y0, y1 = self.xs[i - 1], self.xs[i], self.ys[i - 1], self.ys[i]
        return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def estimate_durations(tasks: Sequence[Task], runs: Iterable[EarlierRun]) -> dict[str, float]:
    """Estimated seconds per task id for the ``tasks`` the rules above can say something of.

    Args:
        tasks: The tasks about to run.
        runs: Earlier durations (:func:`sweep.store.earlier_durations`).
    """
    exact: dict[tuple[str, str, str, str | None], float] = {}
    by_solution: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    by_definition: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in runs:
        exact[(r.definition, r.solution, r.workload_uuid, r.params)] = r.seconds
        by_solution[(r.definition, r.solution)].append((r.size, r.seconds))
        by_definition[r.definition].append((r.size, r.seconds))
    curves: dict[object, _Curve] = {}

    def curve(key: object, points: list[tuple[float, float]]) -> _Curve:
        if key not in curves:
            curves[key] = _Curve(points)
        return curves[key]

    out: dict[str, float] = {}
    for t in tasks:
        d, s = t.definition.name, t.solution.name
        params = params_json(t.params) if t.params is not None else None
        seconds = exact.get((d, s, t.workload.uuid, params))
        if seconds is None and (d, s) in by_solution:
            seconds = curve((d, s), by_solution[(d, s)]).at(workload_size(t))
        elif seconds is None and d in by_definition:
            seconds = curve(d, by_definition[d]).at(workload_size(t))
        if seconds is not None:
            out[t.task_id] = seconds
    return out


def estimated_for(
    todo: Sequence[Task], results: Path, store: Path, note: Callable[[str], None] | None = None
) -> dict[str, float]:
    """Seconds each task should take, from earlier runs in the store (:func:`estimate_durations`):
    the scheduler starts the longest first. ``note`` is told how many were timed."""
    from sweep.store import earlier_durations

    estimated = estimate_durations(todo, earlier_durations(results, store, {t.definition.name for t in todo}))
    if estimated and note is not None:
        note(f"longest first: {len(estimated)} of {len(todo)} task(s) timed by earlier runs")
    return estimated
