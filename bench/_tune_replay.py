"""The search loop of ``tune_strategies.py``, live or replayed against a measured table.

``search`` drives one strategy round by round (``parallel`` points a round: the GPUs' share)
and keeps its trajectory: which point, when, what value. Live, the clock is the wall clock.
Replayed (``--replay FILE``), each evaluation returns the table's measured latency and the
clock is a model of the live run on the table's stored costs: a round's points compiled by
``jobs`` CPU processes (each process takes the next point as it frees, as a pool does), then
timed by ``gpus`` GPU processes the same way (first launch plus do_bench), plus the strategy's
own time to choose the round (measured here, on this CPU). Nothing in a replay runs a kernel.
"""

from __future__ import annotations

import heapq
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.plan.strategies import make_strategy
from sweep.schema.params import Point

#: Within this fraction of the grid's best: found.
WITHIN = 0.02


@dataclass(frozen=True)
class Table:
    """A measured grid: points in grid order, each one's latency (None: failed) and costs."""

    space: str
    device: str
    size: int
    gpus: int
    jobs: int
    complete: bool
    valid_points: int
    points: list[Point]
    ms: list[float | None]
    compile_s: list[float]
    measure_s: list[float]

    @property
    def best(self) -> float:
        return min(v for v in self.ms if v is not None)


def load_table(path: Path) -> Table:
    """A table ``--save-grid`` wrote; a point never measured (a cut run) is left out."""
    doc: dict[str, Any] = json.loads(path.read_text())
    rows = [r for r in doc["points"] if "load_s" in r]
    if not rows:
        raise SystemExit(f"error: {path} holds no measured point")
    return Table(
        space=str(doc.get("space", "?")),
        device=str(doc.get("device", "?")),
        size=int(doc.get("size", 0)),
        gpus=int(doc.get("gpus", 1)),
        jobs=int(doc.get("compile_jobs", 1)),
        complete=bool(doc.get("complete", False)),
        valid_points=int(doc.get("valid_points", len(rows))),
        points=[dict(r["point"]) for r in rows],
        ms=[None if r.get("ms") is None else float(r["ms"]) for r in rows],
        compile_s=[float(r.get("compile_s") or 0.0) for r in rows],
        measure_s=[float(r.get("load_s") or 0.0) + float(r.get("bench_s") or 0.0) for r in rows],
    )


def makespan(costs: Sequence[float], workers: int) -> float:
    """Seconds for ``workers`` processes to finish ``costs`` in order, each taking the next as
    it frees (a pool's ``map`` with chunks of one)."""
    if not costs:
        return 0.0
    free = [0.0] * max(1, min(workers, len(costs)))
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def budget(name: str, n_points: int, parallel: int) -> int:
    """Evaluations a strategy may spend: the whole grid for ``grid``, a fifth of it otherwise
    (the issue's target: within 2% in at most 20% of the grid's evaluations)."""
    return n_points if name == "grid" else max(parallel, n_points // 5)


Trajectory = list[tuple[int, float, float | None]]  # (point, seconds when its round ended, value)


def search(
    name: str,
    points: list[Point],
    evaluate: Callable[[Sequence[int]], list[float | None]],
    *,
    parallel: int,
    seed: int,
    round_cost: Callable[[Sequence[int]], float] | None = None,
    stop_below: float | None = None,
) -> Trajectory:
    """Run strategy ``name`` for its budget (or until a value <= ``stop_below``): the trajectory.
    ``round_cost`` given: the clock is modelled (the strategy's own time plus each round's cost);
    else the wall clock."""
    strategy = make_strategy(name, points, seed=seed, initial=max(8, parallel))
    limit = budget(name, len(points), parallel)
    clock, t0, out = 0.0, time.monotonic(), []
    while len(out) < limit:
        a0 = time.perf_counter()
        chosen = strategy.ask(min(parallel, limit - len(out)))
        if not chosen:
            break
        values = evaluate(chosen)
        if round_cost is not None:
            clock += (time.perf_counter() - a0) + round_cost(chosen)
        else:
            clock = time.monotonic() - t0
        for i, v in zip(chosen, values):
            strategy.tell(i, v)
            out.append((i, clock, v))
        if stop_below is not None and any(v is not None and v <= stop_below for v in values):
            break
    return out


def hit(trajectory: Trajectory, best: float) -> tuple[int | None, float | None]:
    """Evaluations and seconds until a value within ``WITHIN`` of ``best`` (None: never)."""
    for n, (_, s, v) in enumerate(trajectory, 1):
        if v is not None and v <= best * (1 + WITHIN):
            return n, s
    return None, None


def replay(
    table: Table, name: str, seed: int, *, parallel: int, gpus: int, jobs: int, full: bool = False
) -> Trajectory:
    """``search`` against the table: stored latencies, modelled clock (see the module's doc)."""

    def evaluate(chosen: Sequence[int]) -> list[float | None]:
        return [table.ms[i] for i in chosen]

    def cost(chosen: Sequence[int]) -> float:
        return makespan([table.compile_s[i] for i in chosen], jobs) + makespan(
            [table.measure_s[i] for i in chosen], gpus
        )

    stop = None if full else table.best * (1 + WITHIN)
    return search(
        name, table.points, evaluate, parallel=parallel, seed=seed, round_cost=cost, stop_below=stop
    )


@dataclass(frozen=True)
class Row:
    """One strategy over seeds: medians of evaluations and seconds to within 2%."""

    name: str
    seeds: int
    found: int
    evals: float | None
    seconds: float | None
    spent: float


def summarise(name: str, runs: Sequence[tuple[int | None, float | None, int]]) -> Row:
    """Medians over seeds of (evals to 2%, s to 2%, evaluations spent); a seed that never got
    within 2% counts as infinitely slow, so the median is None when half or more missed."""
    inf = float("inf")
    evals = statistics.median([n if n is not None else inf for n, _, _ in runs])
    secs = statistics.median([s if s is not None else inf for _, s, _ in runs])
    return Row(
        name=name,
        seeds=len(runs),
        found=sum(1 for n, _, _ in runs if n is not None),
        evals=None if evals == inf else evals,
        seconds=None if secs == inf else secs,
        spent=statistics.median([t for _, _, t in runs]),
    )


HEADER = f"{'strategy':<28} {'seeds':>5} {'found':>5} {'evals to 2%':>11} {'% of grid':>9} {'s to 2%':>8} {'evals':>7}"


def format_row(row: Row, n_points: int) -> str:
    """A table line: medians over seeds; '-' where the median seed never got within 2%."""
    ev = "-" if row.evals is None else f"{row.evals:g}"
    pct = "-" if row.evals is None else f"{100 * row.evals / n_points:.1f}"
    s = "-" if row.seconds is None else f"{row.seconds:.1f}"
    return f"{row.name:<28} {row.seeds:>5} {row.found:>5} {ev:>11} {pct:>9} {s:>8} {row.spent:>7g}"
