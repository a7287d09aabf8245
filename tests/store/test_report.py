"""The report: its numbers on hand-made traces, and a self-contained HTML page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sweep.store import RowBatch, Store, StoreContext
from sweep.store.render import build_report, render_html, render_text

from .conftest import make_definition, make_solution, make_trace, rows, store_with


@pytest.fixture
def two_hw_store(tmp_path: Path) -> Path:
    """s1 passes everywhere (H200 twice as fast); 'bad<x>' fails on H200 and passes once on H100."""
    ctx = StoreContext.of(
        [make_definition()], [make_solution("s1"), make_solution("bad<x>", author="bob", body="out.copy_(x)")]
    )
    traces = [
        make_trace("s1", "wl-1", "NVIDIA_H100", latency=2.0, reference=4.0),
        make_trace("s1", "wl-2", "NVIDIA_H100", latency=1.0, reference=8.0),
        make_trace("s1", "wl-1", "NVIDIA_H200", latency=1.0, reference=4.0),
        make_trace("s1", "wl-2", "NVIDIA_H200", latency=0.5, reference=8.0),
        make_trace("bad<x>", "wl-1", "NVIDIA_H100", latency=4.0, reference=2.0),
        make_trace("bad<x>", "wl-1", "NVIDIA_H200", status="COMPILE_ERROR"),
    ]
    return store_with(tmp_path, ctx, traces)


def test_report_numbers(two_hw_store: Path) -> None:
    rep = build_report(two_hw_store)
    # traces, passed, reference failures and tampering (none here), definitions, solutions, workloads
    assert rep.summary.rows == [
        ("NVIDIA_H100", 3, 3, 0, 0, 1, 2, 2, rep.summary.rows[0][8]),
        ("NVIDIA_H200", 3, 2, 0, 0, 1, 2, 2, rep.summary.rows[1][8]),
    ]
    cols = rep.leaderboard.columns
    assert cols[6:] == [
        "passed_rows",
        "failed_rows",
        "pass_rate",
        "all_passed",
        "speedup_passed",
        "bb_speedup_failures_as_1",
    ]
    lb = {(r[2], r[5]): r for r in rep.leaderboard.rows}
    assert lb[("s1", "NVIDIA_H100")][0] == 1 and lb[("bad<x>", "NVIDIA_H100")][0] == 2
    assert lb[("s1", "NVIDIA_H100")][6:] == (2, 0, 1.0, True, pytest.approx(4.0), pytest.approx(4.0))
    assert lb[("s1", "NVIDIA_H200")][10] == pytest.approx(8.0)
    assert lb[("bad<x>", "NVIDIA_H200")][6:] == (0, 1, 0.0, False, None, pytest.approx(1.0))
    # Pairs: s1 wl-1, s1 wl-2, bad wl-1 (failed on H200); H200 is twice as fast where both passed.
    assert rep.cross.rows == [("NVIDIA_H100", "NVIDIA_H200", 3, 2, pytest.approx(0.5), 0, 2)]
    speed = {(b.solution, b.hardware): b.speedup for b in rep.bars}
    assert speed == {
        ("s1", "NVIDIA_H100"): pytest.approx(4.0),
        ("s1", "NVIDIA_H200"): pytest.approx(8.0),
        ("bad<x>", "NVIDIA_H100"): pytest.approx(0.5),
        ("bad<x>", "NVIDIA_H200"): None,
    }
    text = render_text(rep)
    assert (
        "== Leaderboard (correct first) ==" in text
        and "== Cross-hardware (same solution and workload) ==" in text
    )


def test_html_is_one_self_contained_page(two_hw_store: Path) -> None:
    page = render_html(build_report(two_hw_store))
    assert page.startswith("<!DOCTYPE html>")
    # Nothing to fetch: no scripts, stylesheets, images or any URL.
    assert not re.search(r"<script|<link|<img|<iframe|https?://|src=", page)
    # Bars, distribution, cross-hardware scatter; no roofline (no rates), with a note.
    assert page.count("<svg") == 3 and "<style>" in page
    assert "no roofline: no PASSED trace carries achieved throughput" in page
    # One bar per (solution, hardware) that passed; words for the one that never did.
    assert page.count('<rect class="bar"') == 3
    assert "bad&lt;x&gt; on NVIDIA_H200: no PASSED trace" in page
    assert "bad<x>" not in page  # names are escaped
    assert "NVIDIA_H100" in page and "NVIDIA_H200" in page and "reference (1x)" in page


def test_empty_store_report(tmp_path: Path) -> None:
    path = tmp_path / "sweep.duckdb"
    Store(path).add(RowBatch(), [])
    with Store(path).writing():
        pass
    rep = build_report(path)
    assert rep.leaderboard.rows == [] and rep.bars == []
    assert "no evaluated traces yet" in render_html(rep)
    assert "(none)" in render_text(rep)


def test_reference_failures_are_left_out_of_pass_rates_and_counted_apart(tmp_path: Path) -> None:
    ctx = StoreContext.of([make_definition()], [make_solution("s1")])
    b = RowBatch()
    b.add_context(ctx)
    for t in [
        make_trace("s1", "wl-1", latency=1.0, reference=2.0),
        make_trace("s1", "wl-2", status="RUNTIME_ERROR", extra_eval={"flags": ["reference_failed"]}),
        make_trace("s1", "wl-3", status="RUNTIME_ERROR", extra_eval={"flags": ["tampered"]}),
    ]:
        b.add_trace(t, context=ctx)
    path = tmp_path / "sweep.duckdb"
    Store(path).add(b)
    rep = build_report(path)
    assert rep.summary.rows[0][:5] == ("NVIDIA_H100", 3, 1, 1, 1)  # traces, passed, ref. failed, tampered
    (row,) = rows(Store(path), "SELECT traces, passed, pass_rate, op_correct FROM leaderboard")
    # the reference's failure is not the solution's: 2 traces count, one of them passed
    assert row == (2, 1, 0.5, False)
    assert "reference_failed" in render_text(rep) and "tampered" in render_text(rep)
