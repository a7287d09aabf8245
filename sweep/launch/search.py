"""Guided search over parameter spaces: proposals on the driver, ordinary tasks on the cluster.

The plan gives every valid point of each solution's space on each workload (as a grid would
run). Points are grouped into decisions (:mod:`sweep.launch._search_groups`: one per target,
definition, solution and shape bucket); for each, a strategy (:mod:`sweep.plan.strategies`)
proposes a round of points, the round's tasks run through the ``runner`` (the launch path:
``sweep.launch.tune``), and each point's objective (the geometric mean of its
latencies over the bucket's workloads) is told back, until the budget is spent, the space
is used up, or the best has not improved for ``patience`` evaluations.

Nothing stored is run again: a task whose trace is in the store answers from it (a search
killed half-way resumes where it was; a second search of the same space starts from the
stored points, the best first; points stored on other hardware, from a store merged from
another cluster, are proposed first too). At the end the best few points are measured again
side by side (:func:`remeasure`) and shapes held back check the bucket's choice against
their grid's best.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sweep.config import SearchSettings
from sweep.launch._search_groups import Group
from sweep.plan.strategies import make_strategy
from sweep.schema.params import Point, params_json
from sweep.schema.task import Task
from sweep.schema.trace import TuningNote
from sweep.store import Estimate, estimate_from_runs, estimate_single, verdict

__all__ = ["Known", "Outcome", "Runner", "confirm", "remeasure", "search_group"]

#: Runs tasks (again, when the flag says so) and gives the latency of each (``None``: failed).
Runner = Callable[[Sequence[Task], bool], Mapping[str, float | None]]


@dataclass
class Known:
    """What the store already has: by task id (this target's), and the best latency of each
    point of a (definition, solution, workload) on any other hardware (warm start)."""

    by_task: dict[str, float | None] = field(default_factory=dict)
    elsewhere: dict[tuple[str, str, str, str], float] = field(default_factory=dict)


@dataclass
class Outcome:
    """One decision: the point chosen, how it was found and how sure it is."""

    group: str
    chosen: Point | None
    objective_ms: float | None
    evaluations: int
    ran: int
    resumed: int
    stopped: str
    wall_s: float
    ties: list[Point] = field(default_factory=list)
    winner_changes: int = 0
    remeasured: list[dict[str, object]] = field(default_factory=list)
    held_back: list[dict[str, object]] = field(default_factory=list)
    #: The best objective after each evaluation; ``None`` while no point has passed (JSON has no infinity).
    trajectory: list[float | None] = field(default_factory=list)


def _geomean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None or not v > 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def _objective(group: Group, point: Point, latency: Mapping[str, float | None]) -> float | None:
    return _geomean([latency.get(group.task(point, w).task_id) for w in group.train])


def search_group(group: Group, settings: SearchSettings, runner: Runner, known: Known) -> Outcome:
    """Search one decision's space; see the module docstring."""
    t0 = time.monotonic()
    latency = dict(known.by_task)
    cands = group.candidates
    stored = [
        (v, i) for i, p in enumerate(cands) if (v := _objective(group, p, latency)) is not None
    ]  # complete on every workload of the bucket
    first = [i for _, i in sorted(stored)]
    other = sorted(
        (v, i)
        for i, p in enumerate(cands)
        if (v := _geomean([known.elsewhere.get(group.key(p, w)) for w in group.train])) is not None
    )
    first += [i for _, i in other[: settings.parallel]]
    strategy = make_strategy(
        settings.strategy, cands, seed=settings.seed, first=first, initial=settings.initial
    )
    for v, i in other:
        strategy.tell(i, v, counted=False)
    best: float | None = None
    since, evaluations, ran, resumed, stopped = 0, 0, 0, 0, "space used up"
    trajectory: list[float | None] = []
    while True:
        if settings.budget_evaluations is not None and evaluations >= settings.budget_evaluations:
            stopped = f"budget of {settings.budget_evaluations} evaluations"
            break
        if settings.budget_s is not None and time.monotonic() - t0 >= settings.budget_s:
            stopped = f"budget of {settings.budget_s:g} s"
            break
        if settings.patience is not None and since >= settings.patience:
            stopped = f"no better point in {settings.patience} evaluations"
            break
        room = settings.parallel
        if settings.budget_evaluations is not None:
            room = min(room, settings.budget_evaluations - evaluations)
        chosen = strategy.ask(room)
        if not chosen:
            break
        todo = [
            t for i in chosen for w in group.train if (t := group.task(cands[i], w)).task_id not in latency
        ]
        resumed += sum(
            1 for i in chosen if all(group.task(cands[i], w).task_id in latency for w in group.train)
        )
        if todo:
            latency.update(runner(todo, False))
            ran += len(todo)
        for i in chosen:
            value = _objective(group, cands[i], latency)
            strategy.tell(i, value)
            evaluations += 1
            if value is not None and (best is None or value < best):
                best, since = value, 0
            else:
                since += 1
            trajectory.append(best)
    ranked = sorted(
        (v, i) for i in strategy.proposed if (v := _objective(group, cands[i], latency)) is not None
    )
    outcome = Outcome(
        group=group.name,
        chosen=cands[ranked[0][1]] if ranked else None,
        objective_ms=ranked[0][0] if ranked else None,
        evaluations=evaluations,
        ran=ran,
        resumed=resumed,
        stopped=stopped,
        wall_s=time.monotonic() - t0,
        trajectory=trajectory,
    )
    if ranked and settings.remeasure_top > 0:
        remeasure(group, [cands[i] for _, i in ranked[: settings.remeasure_top]], settings, runner, outcome)
        confirm(group, settings, runner, outcome)
    if outcome.chosen is not None and group.held:
        outcome.held_back = _held_back(group, outcome.chosen, runner, latency)
    return outcome


def remeasure(
    group: Group, top: Sequence[Point], settings: SearchSettings, runner: Runner, outcome: Outcome
) -> None:
    """Measure the best points again, side by side: ``remeasure_rounds`` rounds, each running
    every point on the same workloads (the same inputs: a task's inputs come from its seed),
    in an order rotated each round, so drift over time lands on every point alike. The
    winner is the lowest median over the rounds; a point whose verdict against it (the
    compare module's, threshold ``tie_threshold``) is ``same`` or ``noisy`` is a tie; how
    often the leader of a round differed from the previous round's is ``winner_changes``."""
    rounds: list[list[float | None]] = []
    for r in range(settings.remeasure_rounds):
        turn = list(range(len(top)))
        turn = turn[r % len(turn) :] + turn[: r % len(turn)]
        tasks = [group.task(top[k], w) for k in turn for w in group.train]
        got = runner(tasks, True)
        rounds.append([_objective(group, p, got) for p in top])
    estimates: list[Estimate | None] = []
    for k in range(len(top)):
        runs = [v for row in rounds if (v := row[k]) is not None]
        est = estimate_from_runs(runs) if len(runs) >= 2 else None
        if est is None and runs:
            est = estimate_single(runs[0])
        estimates.append(est)
    ranked = sorted((e.latency_ms, k) for k, e in enumerate(estimates) if e is not None)
    if not ranked:
        return
    win = ranked[0][1]
    winner = estimates[win]
    assert winner is not None
    leaders = [min((v, k) for k, v in enumerate(row) if v is not None)[1] for row in rounds if any(row)]
    outcome.winner_changes = sum(1 for a, b in itertools.pairwise(leaders) if a != b)
    outcome.chosen, outcome.objective_ms = top[win], winner.latency_ms
    for k, est in enumerate(estimates):
        word = (
            "failed"
            if est is None
            else "winner"
            if k == win
            else verdict(winner, est, settings.tie_threshold)
        )
        if word in ("same", "noisy"):
            outcome.ties.append(top[k])
        outcome.remeasured.append(
            {
                "params": params_json(top[k]),
                "median_ms": est.latency_ms if est is not None else None,
                "noise": est.noise if est is not None else None,
                "verdict": word,
                "rounds": [row[k] for row in rounds],
            }
        )


def confirm(group: Group, settings: SearchSettings, runner: Runner, outcome: Outcome) -> None:
    """Run the chosen point once more on the bucket's workloads, its tasks carrying the decision
    (``provenance.tuning``): the chosen point's newest trace then says how often the winner
    changed in re-measurement and how many points tied with it."""
    if outcome.chosen is None or not outcome.remeasured:
        return
    note = TuningNote(
        decision=group.name,
        winner_changes=outcome.winner_changes,
        remeasure_rounds=settings.remeasure_rounds,
        remeasured_points=len(outcome.remeasured),
        ties=len(outcome.ties),
    )
    tasks = [group.task(outcome.chosen, w).model_copy(update={"tuning": note}) for w in group.train]
    runner(tasks, True)


def _held_back(
    group: Group, chosen: Point, runner: Runner, latency: dict[str, float | None]
) -> list[dict[str, object]]:
    """For each held-back workload: the chosen point against the best of its whole grid."""
    out: list[dict[str, object]] = []
    for w in group.held:
        points = group.valid_on(w)
        todo = [t for p in points if (t := group.task(p, w)).task_id not in latency]
        if todo:
            latency.update(runner(todo, False))
        grid = [
            (v, params_json(p)) for p in points if (v := latency.get(group.task(p, w).task_id)) is not None
        ]
        mine = latency.get(group.task(chosen, w).task_id) if group.has(chosen, w) else None
        best = min(grid) if grid else None
        out.append(
            {
                "workload": w,
                "chosen_ms": mine,
                "grid_best_ms": best[0] if best else None,
                "grid_best_params": best[1] if best else None,
                "gap": (mine / best[0] - 1.0) if mine is not None and best else None,
            }
        )
    return out
