"""Guided search on the driver, with a simulated runner (no cluster): strategies, budget,
patience, resume, warm start, re-measurement, buckets and held-back shapes (issue 33)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sweep.config import SearchSettings, SweepConfig
from sweep.launch._search_groups import groups_of
from sweep.launch.search import Known, search_group
from sweep.plan import Plan, expand
from sweep.plan.dataset import load_dataset
from sweep.schema.task import Task

from ..conftest import dataset_with, tuned_vec_add

SOLUTION = tuned_vec_add(
    {"A": [1, 2, 4, 8, 16, 32], "B": [1, 2, 4, 8, 16, 32], "C": ["u", "v", "w"]},
    ["A * B <= 512 or C != 'w'"],
)


def _plan(tmp_path: Path) -> Plan:
    root = dataset_with(tmp_path, SOLUTION)
    cfg = SweepConfig.model_validate(
        {"name": "t", "dataset": [str(root)], "hardware": "cpu", "solutions": {"names": ["vec_add_tuned"]}}
    )
    return expand(cfg, load_dataset([root]))


def _latency(t: Task) -> float:
    """A simulated objective (no kernel runs): a smooth bowl with its best at A=8, B=4, C='v'."""
    p = t.params or {}
    n = t.workload.axes.get("n", 1)
    return (
        1.0
        + (math.log2(int(p["A"])) - 3) ** 2
        + (math.log2(int(p["B"])) - 2) ** 2
        + {"u": 0.5, "v": 0.0, "w": 1.0}[str(p["C"])]
        + 0.001 * n
    )


class Sim:
    """A runner that records what it was asked to run."""

    def __init__(self, noise: float = 0.0) -> None:
        self.ran: list[str] = []
        self.calls = 0
        self.noise = noise

    def __call__(self, tasks: Sequence[Task], again: bool) -> Mapping[str, float | None]:
        self.calls += 1
        self.ran.extend(t.task_id for t in tasks)
        wobble = 1.0 + self.noise * ((self.calls % 3) - 1)
        return {t.task_id: _latency(t) * wobble for t in tasks}


def _best(group: Any) -> float:
    return min(_latency(group.task(p, w)) for p in group.candidates for w in group.train)


@pytest.mark.parametrize("strategy", ["grid", "random", "forest", "evolution"])
def test_each_strategy_finds_a_good_point_within_budget(tmp_path: Path, strategy: str) -> None:
    if strategy == "forest":
        pytest.importorskip("sklearn")
    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    settings = SearchSettings(strategy=strategy, budget_evaluations=60, parallel=4, seed=3, remeasure_top=0)  # type: ignore[arg-type]
    sim = Sim()
    out = search_group(group, settings, sim, Known())
    assert out.evaluations == 60 and out.ran == len(sim.ran) == 60  # one workload per point
    assert len(set(sim.ran)) == len(sim.ran)  # never a point twice
    assert out.objective_ms is not None
    if strategy != "grid":  # grid order reaches the bowl's bottom late; the others must not
        assert out.objective_ms <= _best(group) * 1.25, (strategy, out.objective_ms)


def test_patience_stops_the_search(tmp_path: Path) -> None:
    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    out = search_group(
        group, SearchSettings(strategy="random", patience=5, parallel=1, remeasure_top=0), Sim(), Known()
    )
    assert out.stopped == "no better point in 5 evaluations"
    assert out.evaluations < len(group.candidates)


def test_a_killed_search_resumes_without_running_a_point_again(tmp_path: Path) -> None:
    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    settings = SearchSettings(
        strategy="evolution", budget_evaluations=40, parallel=4, seed=1, remeasure_top=0
    )
    first = Sim()
    half = search_group(group, settings.model_copy(update={"budget_evaluations": 20}), first, Known())
    by_id = {t.task_id: t for t in group.tasks.values()}
    stored = Known(by_task={tid: _latency(by_id[tid]) for tid in first.ran})  # what the store holds
    second = Sim()
    full = search_group(group, settings, second, stored)
    assert not set(second.ran) & set(first.ran)  # nothing stored ran again
    assert full.resumed >= half.evaluations
    assert (
        full.objective_ms is not None
        and half.objective_ms is not None
        and full.objective_ms <= half.objective_ms
    )


def test_warm_start_proposes_stored_and_foreign_points_first(tmp_path: Path) -> None:
    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    best_point = next(p for p in group.candidates if p == {"A": 8, "B": 4, "C": "v"})
    w = group.train[0]
    known = Known(elsewhere={group.key(best_point, w): 0.5})  # measured on another cluster's GPU
    out = search_group(
        group,
        SearchSettings(strategy="random", budget_evaluations=1, parallel=1, remeasure_top=0),
        Sim(),
        known,
    )
    assert out.chosen == best_point


def test_remeasurement_declares_ties_and_counts_winner_changes(tmp_path: Path) -> None:
    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    settings = SearchSettings(strategy="grid", remeasure_top=3, remeasure_rounds=4, tie_threshold=0.6)
    out = search_group(group, settings, Sim(noise=0.05), Known())
    assert len(out.remeasured) == 3
    assert [r["verdict"] for r in out.remeasured].count("winner") == 1
    assert all(len(r["rounds"]) == 4 for r in out.remeasured)  # type: ignore[arg-type]
    assert out.ties  # within 60% of the winner: a tie by the compare module's verdict


class Flip(Sim):
    """Re-measurement rounds (``again``) in which the best point is twice as slow every other
    round: the leader of the rounds alternates, so the winner changes once per round after
    the first."""

    def __init__(self) -> None:
        super().__init__()
        self.again: list[list[Task]] = []

    def __call__(self, tasks: Sequence[Task], again: bool) -> Mapping[str, float | None]:
        got = dict(super().__call__(tasks, again))
        if again:
            self.again.append(list(tasks))
            if len(self.again) % 2 == 0:
                for t in tasks:
                    if t.params == {"A": 8, "B": 4, "C": "v"}:
                        got[t.task_id] = _latency(t) * 2.0
        return got


def test_the_chosen_points_confirmation_trace_says_how_often_the_winner_changed(tmp_path: Path) -> None:
    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    settings = SearchSettings(strategy="grid", remeasure_top=3, remeasure_rounds=4)
    sim = Flip()
    out = search_group(group, settings, sim, Known())
    assert out.winner_changes == 3  # leaders best, other, best, other
    *rounds, confirmation = sim.again
    assert len(rounds) == 4 and all(t.tuning is None for r in rounds for t in r)
    assert {t.workload.uuid for t in confirmation} == set(group.train)
    assert all(t.params == out.chosen for t in confirmation)
    note = confirmation[0].tuning
    assert note is not None
    assert (note.decision, note.winner_changes, note.remeasure_rounds, note.remeasured_points, note.ties) == (
        group.name,
        3,
        4,
        3,
        len(out.ties),
    )
    # Same task, same id: the confirmation is the chosen point's newest run.
    assert confirmation[0].task_id == group.task(out.chosen, confirmation[0].workload.uuid).task_id
    prov = confirmation[0].provenance()
    assert prov.tuning == note


def test_buckets_and_held_back_shapes(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    settings = SearchSettings.model_validate(
        {
            "strategy": "random",
            "budget_evaluations": 30,
            "holdout": 0.5,
            "remeasure_top": 0,
            "buckets": [{"name": "small", "axes": {"n": [1, 8]}}],
        }
    )
    groups = groups_of([plan], settings)
    assert sorted(g.name.rsplit("/", 1)[1] for g in groups) == ["small", "wl-0016"]  # shapes share decisions
    many = [g for g in groups if g.held]
    assert [len(many[0].train), len(many[0].held)] == [1, 1]
    out = search_group(many[0], settings, Sim(), Known())
    check = out.held_back[0]
    gap = check["gap"]
    assert check["grid_best_ms"] is not None and isinstance(gap, float) and gap >= 0


def test_failed_points_leave_a_trajectory_json_can_write(tmp_path: Path) -> None:
    """Points that fail (no latency) before any passes: the trajectory says None, not infinity,
    so the decisions file (strict JSON) is written whatever failed first."""
    import json
    from dataclasses import asdict

    group = groups_of([_plan(tmp_path)], SearchSettings())[0]
    failing = {t.task_id for p in group.candidates[:4] for t in [group.task(p, w) for w in group.train]}

    class FirstFail(Sim):
        def __call__(self, tasks: Sequence[Task], again: bool) -> Mapping[str, float | None]:
            got = super().__call__(tasks, again)
            return {k: (None if k in failing else v) for k, v in got.items()}

    settings = SearchSettings(strategy="grid", budget_evaluations=8, parallel=4, remeasure_top=0)
    out = search_group(group, settings, FirstFail(), Known())
    assert out.trajectory[:4] == [None] * 4
    assert all(isinstance(v, float) for v in out.trajectory[4:])
    json.dumps(asdict(out), allow_nan=False, default=str)  # what sweep tune writes
