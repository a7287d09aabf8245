"""BackendBench's scores for imported operators, on hand-made traces whose answers are worked
out in the comments: per-op pass rate, all-correct flag, geometric-mean speedup with failed
workloads counted as 1.0, perf@p; and the report's "BackendBench scores" section."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.store import Store, StoreContext
from sweep.store.render import build_report, render_text

from .conftest import make_definition, make_solution, make_trace, rows, store_with

BB = "backendbench"


@pytest.fixture
def bb_store(tmp_path: Path) -> Path:
    """Two imported ops (op_a, op_b) scored for authors aten and wrong, and one ordinary
    definition (vec) that must stay out of the BackendBench section."""
    ctx = StoreContext.of(
        [make_definition("op_a", op_type=BB), make_definition("op_b", op_type=BB), make_definition("vec")],
        [
            make_solution("a_aten", "op_a", author="aten"),
            make_solution("b_aten", "op_b", author="aten", body="out.copy_(x + x)"),
            make_solution("a_wrong", "op_a", author="wrong", body="out.copy_(3 * x)"),
            make_solution("b_wrong", "op_b", author="wrong", body="out.copy_(4 * x)"),
            make_solution("vec_aten", "vec", author="aten", body="out.copy_(5 * x)"),
        ],
    )
    traces = [
        # aten, op_a: 3 of 3 pass, speedups 2, 2, 0.5 -> op speedup 2 ** (1/3), correct.
        make_trace("a_aten", "a1", definition="op_a", latency=1.0, reference=2.0),
        make_trace("a_aten", "a2", definition="op_a", latency=1.0, reference=2.0),
        make_trace("a_aten", "a3", definition="op_a", latency=2.0, reference=1.0),
        # aten, op_b: 2 of 2 pass at exactly 1.0 -> correct, speedup 1 (not above 1).
        make_trace("b_aten", "b1", definition="op_b", latency=1.0, reference=1.0),
        make_trace("b_aten", "b2", definition="op_b", latency=3.0, reference=3.0),
        # wrong, op_a: 1 of 3 pass at 4x; the failures count as 1.0 -> speedup 4 ** (1/3).
        make_trace("a_wrong", "a1", definition="op_a", latency=1.0, reference=4.0),
        make_trace("a_wrong", "a2", definition="op_a", status="INCORRECT_NUMERICAL"),
        make_trace("a_wrong", "a3", definition="op_a", status="RUNTIME_ERROR"),
        # wrong, op_b: nothing passes -> pass rate 0, speedup 1.
        make_trace("b_wrong", "b1", definition="op_b", status="INCORRECT_SHAPE"),
        make_trace("b_wrong", "b2", definition="op_b", status="INCORRECT_DTYPE"),
        # Not an imported operator: 10x, must not count in the BackendBench section.
        make_trace("vec_aten", "v1", definition="vec", latency=1.0, reference=10.0),
    ]
    return store_with(tmp_path, ctx, traces)


def test_views_give_backendbench_scores(bb_store: Path) -> None:
    store = Store(bb_store)
    got = rows(
        store,
        "SELECT author, definition, pass_rate, correct, speedup FROM op_scores "
        f"WHERE op_type = '{BB}' ORDER BY ALL",
    )
    assert got == [
        ("aten", "op_a", 1.0, True, pytest.approx(2 ** (1 / 3))),
        ("aten", "op_b", 1.0, True, pytest.approx(1.0)),
        ("wrong", "op_a", pytest.approx(1 / 3), False, pytest.approx(4 ** (1 / 3))),
        ("wrong", "op_b", 0.0, False, pytest.approx(1.0)),
    ]
    # perf@p over the ops of each author (vec included for aten: 10x, correct).
    assert rows(store, "SELECT author, ops, perf_at_p FROM perf_at(1.2) ORDER BY author") == [
        ("aten", 3, pytest.approx(2 / 3)),  # op_a (1.26) and vec (10)
        ("wrong", 2, 0.0),  # op_a is 1.59x but not all-correct
    ]
    assert rows(store, "SELECT author, perf_at_p FROM perf_at(1.3) ORDER BY author") == [
        ("aten", pytest.approx(1 / 3)),
        ("wrong", 0.0),
    ]


def test_report_scores_imported_ops_apart_in_one_table(bb_store: Path) -> None:
    rep = build_report(bb_store)
    t = rep.backends
    assert t.columns == [
        "author",
        "hardware",
        "operators",
        "ops",
        "correct_ops",
        "failed_ops",
        "passed_rows",
        "failed_rows",
        "correctness_rate",
        "bb_correctness_score",
        "speedup_correct_ops",
        "bb_speedup_failures_as_1",
        "perf_at_1",
    ]
    imports = [r for r in t.rows if r[2] == "BackendBench imports"]
    assert imports == [
        # aten: both ops correct; mean pass rate 1; geomean(2 ** (1/3), 1) = 2 ** (1/6); op_a only
        # is correct and above 1.
        ("aten", "NVIDIA_H100", "BackendBench imports", 2, 2, 0, 5, 0, 1.0, 1.0)
        + (pytest.approx(2 ** (1 / 6)), pytest.approx(2 ** (1 / 6)), 0.5),
        # wrong: ranked below aten although its BackendBench performance score is higher:
        # mean pass rate (1/3 + 0) / 2; no op correct; geomean(4 ** (1/3), 1) = 4 ** (1/6).
        ("wrong", "NVIDIA_H100", "BackendBench imports", 2, 0, 2, 1, 4, 0.0, pytest.approx(1 / 6))
        + (None, pytest.approx(4 ** (1 / 6)), 0.0),
    ]
    # The ordinary definition (vec) is scored apart.
    assert [r[:4] for r in t.rows if r[2] != "BackendBench imports"] == [
        ("aten", "NVIDIA_H100", "other definitions", 1)
    ]
    text = render_text(rep)
    assert "== BackendBench scores" not in text  # one table, not two
    assert text.count("== Backend scores") == 1


def test_report_without_imported_ops(tmp_path: Path) -> None:
    ctx = StoreContext.of([make_definition("vec")], [make_solution("s1", "vec")])
    rep = build_report(store_with(tmp_path, ctx, [make_trace("s1", "v1", definition="vec")]))
    assert {r[2] for r in rep.backends.rows} == {"other definitions"}
    # The model section (projection, top definitions) first, then summary, leaderboard,
    # backends, cross-hardware.
    assert len(rep.model) == 2
    assert len(rep.tables) == 6
