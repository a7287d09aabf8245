"""Rankings put correctness first and show failures: the views' added columns (rank,
passed_rows, failed_rows, bb_speedup_failures_as_1, failed_solutions, speedup_correct_ops)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.store import RowBatch, Store, StoreContext

from .conftest import make_definition, make_solution, make_trace, rows


def _store(tmp_path: Path, solutions: list[tuple[str, str, str]], traces: list[object]) -> Store:
    """A store of definitions op_a and op_b and (name, definition, author) solutions."""
    ctx = StoreContext.of(
        [make_definition("op_a"), make_definition("op_b")],
        [
            make_solution(n, d, author=a, body=f"out.copy_(x * {i + 2})")
            for i, (n, d, a) in enumerate(solutions)
        ],
    )
    b = RowBatch()
    b.add_context(ctx)
    for t in traces:
        b.add_trace(t, context=ctx)  # type: ignore[arg-type]
    store = Store(tmp_path / "sweep.duckdb")
    store.add(b)
    return store


def test_a_failing_kernel_ranks_below_a_correct_one(tmp_path: Path) -> None:
    # Five kernels that fail every workload (BackendBench's op_speedup: 1.0) and one correct
    # kernel at 0.62x: the correct one ranks first, and failures are counted.
    sols = [(f"fail{i}", "op_a", "alice") for i in range(5)] + [("slow_ok", "op_a", "bob")]
    traces = [
        make_trace(f"fail{i}", f"w{j}", definition="op_a", status="RUNTIME_ERROR")
        for i in range(5)
        for j in (1, 2)
    ]
    traces += [make_trace("slow_ok", f"w{j}", definition="op_a", latency=1.0, reference=0.62) for j in (1, 2)]
    store = _store(tmp_path, sols, traces)
    got = rows(
        store,
        "SELECT rank, solution, op_speedup, bb_speedup_failures_as_1, passed_rows, failed_rows "
        "FROM leaderboard ORDER BY rank",
    )
    assert got[0] == (1, "slow_ok", pytest.approx(0.62), pytest.approx(0.62), 2, 0)
    assert [r[1] for r in got[1:]] == [f"fail{i}" for i in range(5)]
    assert all(r[2] == pytest.approx(1.0) and r[4:] == (0, 2) for r in got[1:])
    # The old ordering on op_speedup alone would put the failures first: op_speedup keeps
    # BackendBench's meaning.
    assert rows(store, "SELECT solution FROM leaderboard ORDER BY op_speedup DESC, solution LIMIT 1") == [
        ("fail0",)
    ]


def test_an_author_with_failures_shows_them(tmp_path: Path) -> None:
    # alice: one kernel of op_a fails 4 of 4, another passes; op_b fails. carol: correct, slow.
    sols = [
        ("a_bad", "op_a", "alice"),
        ("a_ok", "op_a", "alice"),
        ("b_bad", "op_b", "alice"),
        ("c_a", "op_a", "carol"),
    ]
    traces = [make_trace("a_bad", f"w{j}", definition="op_a", status="INCORRECT_NUMERICAL") for j in range(4)]
    traces += [make_trace("a_ok", f"w{j}", definition="op_a", latency=1.0, reference=2.0) for j in range(4)]
    traces += [make_trace("b_bad", "w0", definition="op_b", status="COMPILE_ERROR")]
    traces += [make_trace("c_a", "w0", definition="op_a", latency=1.0, reference=0.92)]
    store = _store(tmp_path, sols, traces)
    assert rows(
        store,
        "SELECT author, definition, solution, correct, solutions, failed_solutions, passed_rows, failed_rows "
        "FROM op_scores ORDER BY ALL",
    ) == [
        ("alice", "op_a", "a_ok", True, 2, 1, 4, 4),  # the best solution is correct, the failures show
        ("alice", "op_b", "b_bad", False, 1, 1, 0, 1),
        ("carol", "op_a", "c_a", True, 1, 0, 1, 0),
    ]
    got = rows(
        store,
        "SELECT author, correctness_rate, failed_ops, passed_rows, failed_rows, failed_solutions, "
        "bb_speedup_failures_as_1, speedup_correct_ops FROM backend_scores "
        "ORDER BY correctness_rate DESC, speedup_correct_ops DESC",
    )
    assert got == [
        ("carol", 1.0, 0, 1, 0, 0, pytest.approx(0.92), pytest.approx(0.92)),
        ("alice", 0.5, 1, 4, 5, 2, pytest.approx(2**0.5), pytest.approx(2.0)),
    ]
