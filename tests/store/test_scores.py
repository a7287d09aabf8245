"""Time share, the projected speedup of a solution set, fast_p, win@p and the pass rate, on
hand-made traces whose answers are worked out in the comments (docs/scores.md)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.errors import StoreError
from sweep.schema import Trace
from sweep.store import RowBatch, Store, StoreContext, model_projection, scores_at
from sweep.store.render import build_report, render_text

from .conftest import make_definition, make_solution, make_trace, rows

H = "NVIDIA_H100"


def weighted(t: Trace, weight: float | None) -> Trace:
    obj = t.to_json_obj()
    if weight is not None:
        obj["workload"]["weight"] = weight  # type: ignore[index]
    return Trace.model_validate(obj)


@pytest.fixture
def model_store(tmp_path: Path) -> Path:
    """Definition A: workloads a1 (weight 3, reference 2 ms) and a2 (no weight, as FlashInfer-Bench
    workloads have: it counts 1; reference 4 ms);
    definition B: b1 (weight 2, reference 1 ms). Covered reference time 3*2 + 1*4 + 2*1 = 12.

    Set 'fast': a1 at 1 ms (2x), a2 INCORRECT, B never run.
    Set 'slow': a1 at 4 ms (0.5x), a2 at 4 ms (1x), b1 at 0.5 ms (2x).
    """
    ctx = StoreContext.of(
        [make_definition("A"), make_definition("B")],
        [
            make_solution("fa", "A", author="fast"),
            make_solution("sa", "A", author="slow", body="out.copy_(x + x)"),
            make_solution("sb", "B", author="slow", body="out.copy_(2.0 * x)"),
        ],
    )
    b = RowBatch()
    b.add_context(ctx)
    for t in [
        weighted(make_trace("fa", "a1", definition="A", latency=1.0, reference=2.0), 3),
        weighted(make_trace("fa", "a2", definition="A", status="INCORRECT_NUMERICAL"), None),
        weighted(make_trace("sa", "a1", definition="A", latency=4.0, reference=2.0), 3),
        weighted(make_trace("sa", "a2", definition="A", latency=4.0, reference=4.0), None),
        weighted(make_trace("sb", "b1", definition="B", latency=0.5, reference=1.0), 2),
    ]:
        b.add_trace(t, context=ctx)
    path = tmp_path / "sweep.duckdb"
    Store(path).add(b)
    return path


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param(
            "SELECT definition, workload_uuid, weight, reference_ms, weighted_ms, share, definition_share "
            "FROM time_share ORDER BY workload_uuid",
            [
                ("A", "a1", 3.0, 2.0, 6.0, pytest.approx(0.5), pytest.approx(10 / 12)),
                ("A", "a2", 1.0, 4.0, 4.0, pytest.approx(1 / 3), pytest.approx(10 / 12)),
                ("B", "b1", 2.0, 1.0, 2.0, pytest.approx(1 / 6), pytest.approx(2 / 12)),
            ],
            id="time share is weight times reference latency",
        ),
        pytest.param(
            "SELECT solution_set, workloads, passed, failed, not_run, covered_reference_ms, "
            "covered_projected_ms, covered_speedup, share_at_reference_time FROM projection ORDER BY 1",
            [
                # fast: a1 3*1, a2 failed at 1*4, b1 never run at 2*1 -> 9; 12/9; (4 + 2)/12 at reference.
                ("fast", 3, 1, 1, 1, 12.0, 9.0, pytest.approx(4 / 3), pytest.approx(0.5)),
                # slow: 3*4 + 1*4 + 2*0.5 = 17 (a slower kernel counts as slower).
                ("slow", 3, 3, 0, 0, 12.0, 17.0, pytest.approx(12 / 17), 0.0),
            ],
            id="projection counts failures and gaps at reference time",
        ),
        pytest.param(
            "SELECT workload_uuid, outcome, solution FROM set_projection WHERE solution_set = 'fast' ORDER BY 1",
            [("a1", "passed", "fa"), ("a2", "failed", None), ("b1", "not_run", None)],
            id="the set projection names each workload's outcome",
        ),
    ],
)
def test_a_view_of_the_model_store(model_store: Path, sql: str, expected: list[tuple[object, ...]]) -> None:
    assert rows(Store(model_store), sql) == expected


def test_model_projection_end_to_end_and_bound(model_store: Path) -> None:
    proj = model_projection(model_store, uncovered=0.5)
    fast = next(s for s in proj.sets if s.solution_set == "fast")
    # 1 / (0.5 + 0.5 / (4/3)) = 1 / 0.875; the bound is 1 / 0.5.
    assert fast.end_to_end_speedup == pytest.approx(1 / 0.875)
    assert fast.bound == pytest.approx(2.0)
    assert [s.solution_set for s in proj.sets] == ["fast", "slow"]  # best covered speedup first
    a, b_ = fast.top
    # A: 10 of 12 of the time; it saves 3 (10 -> 7): 3/12 of the covered time, all of the gain.
    assert (a.definition, a.time_share, a.gain_of_covered, a.share_of_gain) == (
        "A",
        pytest.approx(10 / 12),
        pytest.approx(0.25),
        pytest.approx(1.0),
    )
    assert (b_.definition, b_.not_run, b_.gain_of_covered, b_.share_of_gain) == ("B", 1, 0.0, 0.0)
    assert model_projection(model_store, uncovered=0.0).sets[0].bound == math.inf
    none = model_projection(model_store)
    assert none.sets[0].end_to_end_speedup is None and any("--uncovered" in n for n in none.notes)


def test_fast_p_win_at_p_and_pass_rate(model_store: Path) -> None:
    got = {
        (r.solution_set, r.p): (r.tasks, r.fast_p, r.win_at_p, r.win_tasks, r.pass_rate)
        for r in scores_at(model_store, [0.0, 0.5, 1.0, 2.0])
    }
    # fast: tasks a1 (2x, correct) and a2 (incorrect).
    assert got[("fast", 0.5)][:2] + got[("fast", 0.5)][4:] == (2, 0.5, 0.5)
    assert got[("fast", 2.0)][1] == 0.0  # strictly faster than p x the reference
    # slow: speedups 0.5, 1, 2.
    assert got[("slow", 0.5)][:2] == (3, pytest.approx(2 / 3))
    assert got[("slow", 1.0)][:2] == (3, pytest.approx(1 / 3))
    assert got[("slow", 2.0)][:2] + got[("slow", 2.0)][4:] == (3, 0.0, 1.0)
    # win@p, no set named 'baseline': each workload's fastest answer is its baseline and that set
    # is not scored there. a1: fast (1 ms) is the baseline, slow's r = 1/4. a2: slow (4 ms) is,
    # fast had no answer (a loss). b1: only slow, its own baseline.
    assert [got[("slow", p)][2:4] for p in (0.0, 0.5)] == [(1.0, 1), (0.0, 1)]
    assert [got[("fast", p)][2:4] for p in (0.0, 0.5)] == [(0.0, 1), (0.0, 1)]
    # Against the reference every task has a baseline: win@p is fast_p's count.
    ref = {
        (r.solution_set, r.p): (r.win_at_p, r.win_tasks)
        for r in scores_at(model_store, [0.5, 1.0], baseline="reference")
    }
    assert ref[("fast", 0.5)] == (0.5, 2) and ref[("fast", 1.0)] == (0.5, 2)
    assert ref[("slow", 0.5)] == (pytest.approx(2 / 3), 3) and ref[("slow", 1.0)] == (pytest.approx(1 / 3), 3)
    # The view holds the default thresholds and baseline, and agrees.
    assert rows(
        Store(model_store),
        "SELECT fast_p, win_at_p, win_tasks FROM scores_at_p WHERE solution_set = 'slow' AND p = 1.0",
    ) == [(pytest.approx(1 / 3), 0.0, 1)]


@pytest.fixture
def baseline_store(tmp_path: Path) -> Path:
    """Sets 'baseline', 'x' and 'y' on one definition, the latencies in ms (None: INCORRECT):

    w1: baseline 2, x 1, y 4.  w2: baseline None, x 3, y 1.  w3: x 2.  w4: baseline 1, x None.
    """
    names = {"baseline": "sb", "x": "sx", "y": "sy"}
    ctx = StoreContext.of(
        [make_definition("A")],
        [
            make_solution(sol, "A", author=a, body=f"out.copy_(x * 2 + 0 * {i})")
            for i, (a, sol) in enumerate(names.items())
        ],
    )
    table = {
        "w1": {"baseline": 2.0, "x": 1.0, "y": 4.0},
        "w2": {"baseline": None, "x": 3.0, "y": 1.0},
        "w3": {"x": 2.0},
        "w4": {"baseline": 1.0, "x": None},
    }
    b = RowBatch()
    b.add_context(ctx)
    for uuid, by_set in table.items():
        for author, ms in by_set.items():
            if ms is None:
                t = make_trace(names[author], uuid, definition="A", status="INCORRECT_NUMERICAL")
            else:
                t = make_trace(names[author], uuid, definition="A", latency=ms, reference=8.0)
            b.add_trace(t, context=ctx)
    path = tmp_path / "sweep.duckdb"
    Store(path).add(b)
    return path


@pytest.mark.parametrize("name", ["baseline", "BASELINE"])
def test_win_at_p_against_a_named_baseline_set(baseline_store: Path, name: str) -> None:
    """FlashInfer-Bench's rule (examples/win_at_p.py): the named set where it has an answer (matched
    without regard to case), else the workload's fastest answer, whose set is not scored there."""
    got = {
        (r.solution_set, r.p): (r.win_at_p, r.win_tasks)
        for r in scores_at(baseline_store, [0.0, 0.2, 1.0, 2.0], baseline=name)
    }
    # x: w1 r = 2/1 = 2; w2 (baseline failed; y is fastest) r = 1/3; w3 x is the fastest (not
    # scored); w4 no answer, a loss. Three tasks.
    assert [got[("x", p)] for p in (0.0, 0.2, 1.0, 2.0)] == [
        (pytest.approx(2 / 3), 3),
        (pytest.approx(2 / 3), 3),
        (pytest.approx(1 / 3), 3),
        (0.0, 3),
    ]
    # y: w1 r = 2/4; w2 it is the baseline. The baseline set: w2 failed (a loss), w1/w4 it is the baseline.
    assert [got[("y", p)] for p in (0.2, 1.0)] == [(1.0, 1), (0.0, 1)]
    assert got[("baseline", 0.0)] == (0.0, 1)


def test_win_at_p_is_null_where_a_set_never_meets_a_baseline(baseline_store: Path) -> None:
    # Against 'x', x is the baseline wherever it passed (w1-w3); on w4 it failed and the baseline
    # set's answer is the fastest, so x is scored there once (a loss).
    got = {r.solution_set: (r.win_at_p, r.win_tasks) for r in scores_at(baseline_store, [1.0], baseline="x")}
    assert got["x"] == (0.0, 1)
    lone = {
        r.solution_set: (r.win_at_p, r.win_tasks) for r in scores_at(baseline_store, [1.0], baseline="nobody")
    }
    assert lone["x"][1] == 2  # w1 fastest is x (not scored), w2 r = 1/3, w3 fastest x, w4 loss
    assert lone["x"][0] == 0.0


@pytest.mark.parametrize("bad", ["", "   ", "b" * 201])
def test_bad_baseline_is_refused(model_store: Path, bad: str) -> None:
    with pytest.raises(StoreError, match="--baseline"):
        scores_at(model_store, [1.0], baseline=bad)


def test_baseline_with_a_quote_is_data_not_sql(model_store: Path) -> None:
    rows_ = scores_at(model_store, [1.0], baseline="o'neil'); DROP TABLE traces; --")
    assert {r.solution_set for r in rows_} == {"fast", "slow"}


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0, float("nan"), float("inf")])
def test_uncovered_outside_the_unit_interval_is_refused(model_store: Path, bad: float) -> None:
    with pytest.raises(StoreError, match="--uncovered"):
        model_projection(model_store, uncovered=bad)


@pytest.mark.parametrize("bad", [[], [-1.0], [float("nan")], [float("inf")], [0.5] * 65])
def test_bad_thresholds_are_refused(model_store: Path, bad: list[float]) -> None:
    with pytest.raises(StoreError, match="--p"):
        scores_at(model_store, bad)


def test_report_opens_with_what_it_does_to_the_model(model_store: Path) -> None:
    rep = build_report(model_store, uncovered=0.5)
    first = rep.tables[0]
    assert first.title.startswith("What this does to my model")
    sets = [r[first.columns.index("solution_set")] for r in first.rows]
    assert sets == ["fast", "slow"]
    e2e = first.rows[0][first.columns.index("end_to_end_speedup")]
    assert e2e == pytest.approx(1 / 0.875)
    text = render_text(rep)
    assert text.index("What this does to my model") < text.index("Leaderboard")


@settings(max_examples=30, deadline=None)
@given(u=st.floats(0.0, 0.99), covered=st.floats(0.01, 100.0))
def test_amdahl_never_beats_its_bound(u: float, covered: float) -> None:
    from sweep.store.scores._scores import amdahl, check_uncovered

    check_uncovered(u)
    e2e = amdahl(covered, u)
    if u > 0:
        assert e2e <= 1.0 / u + 1e-9
    assert min(1.0, covered) - 1e-9 <= e2e <= max(1.0, covered) + 1e-9


def test_cli_project_and_scores_json(model_store: Path) -> None:
    import json

    from typer.testing import CliRunner

    from sweep.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["project", "--store", str(model_store), "--uncovered", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    fast = next(s for s in data["sets"] if s["solution_set"] == "fast")
    assert fast["covered_speedup"] == pytest.approx(4 / 3)
    assert fast["end_to_end_speedup"] == pytest.approx(1 / 0.875)
    assert fast["not_run"] == 1 and fast["failed"] == 1
    assert fast["top"][0]["definition"] == "A"
    res = runner.invoke(app, ["project", "--store", str(model_store), "--sets", "slow"])
    assert res.exit_code == 0, res.output
    assert "slow" in res.output and "fast" not in res.output.split("note:")[0]
    res = runner.invoke(app, ["scores", "--store", str(model_store), "--p", "1", "--json"])
    assert res.exit_code == 0, res.output
    got = sorted((r["solution_set"], r["fast_p"]) for r in json.loads(res.output))
    assert got == [("fast", 0.5), ("slow", pytest.approx(1 / 3))]
    res = runner.invoke(
        app, ["scores", "--store", str(model_store), "--p", "1", "--baseline", "reference", "--json"]
    )
    assert res.exit_code == 0, res.output
    got = sorted((r["solution_set"], r["win_at_p"], r["win_tasks"]) for r in json.loads(res.output))
    assert got == [("fast", 0.5, 2), ("slow", pytest.approx(1 / 3), 3)]
    res = runner.invoke(app, ["report", "--store", str(model_store), "--uncovered", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["tables"][0]["title"].startswith("What this does to my model")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["project", "--uncovered", "1.5"], "error: --uncovered 1.5"),
        (["report", "--uncovered", "-1"], "error: --uncovered -1"),
        (["scores", "--p", "1,fast"], "error: --p: 'fast' is not a number"),
        (["scores", "--p", "-2"], "error: --p -2"),
        (["scores", "--baseline", " "], "error: --baseline ' '"),
    ],
)
def test_cli_refuses_bad_numbers(model_store: Path, args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from sweep.cli import app

    res = CliRunner().invoke(app, [*args, "--store", str(model_store)])
    assert res.exit_code == 1, res.output
    assert message in res.output and "Traceback" not in res.output


def test_every_score_record_field_has_a_cast() -> None:
    """The records read from the score views name only field types ``_record`` can cast (a
    new field of another type fails here, not on the first store that has rows)."""
    from dataclasses import fields

    from sweep.store.scores._scores import _CASTS, DefinitionGain, ScoreAtP, SetProjection

    computed = {"end_to_end_speedup", "bound", "top"}  # SetProjection's, given by projection_of
    for cls in (DefinitionGain, SetProjection, ScoreAtP):
        assert {str(f.type) for f in fields(cls) if f.name not in computed} <= set(_CASTS), cls
