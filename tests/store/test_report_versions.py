"""An edited solution (same name, new content) in the report: every section shows its current
version only, one row per name with the newest version's figures; ``all_versions`` shows both,
each labelled by its content hash. And why tasks failed, per solution."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sweep.store import RowBatch, Store, StoreContext
from sweep.store.render import build_report, render_html, render_text

from .conftest import make_definition, make_solution, make_trace, rows

_HW = ("NVIDIA_H100", "NVIDIA_H200")


def _store_twice(path: Path) -> Path:
    """'k' stored at version 1 (4x everywhere), then edited and stored again (1.5x; wl-4 fails
    on both GPUs); 'other' (bob's) stored once, unchanged."""
    v1, v2 = make_solution("k", body="out.copy_(x * 2)"), make_solution("k", body="out.copy_(x + x)")
    other = make_solution("other", author="bob", body="out.copy_(2 * x)")
    for day, sol, speed in (("01", v1, 4.0), ("02", v2, 1.5)):
        ctx = StoreContext.of([make_definition()], [sol, other])
        b = RowBatch()
        b.add_context(ctx)
        for hw in _HW:
            for w in range(5):
                ts = f"2026-01-{day}T00:00:0{w}+00:00"
                if day == "02" and w == 4:
                    t = make_trace(
                        "k", f"wl-{w}", hw, status="RUNTIME_ERROR", ts=ts,
                        log="RUNTIME_ERROR: IndexError: boom (main.py, line 3)\nTraceback ...",
                        provenance={"task_id": f"task-{hw}-4"},
                    )  # fmt: skip
                else:
                    t = make_trace("k", f"wl-{w}", hw, latency=2.0 / speed, reference=2.0, ts=ts)
                b.add_trace(t, context=ctx)
                if day == "01":
                    b.add_trace(
                        make_trace("other", f"wl-{w}", hw, latency=1.0, reference=2.0, ts=ts), context=ctx
                    )
        Store(path).add(b)
    return path


@pytest.fixture
def edited(tmp_path: Path) -> Path:
    return _store_twice(tmp_path / "sweep.duckdb")


def _hashes(path: Path) -> tuple[str, str]:
    (h1,), (h2,) = rows(
        Store(path),
        "SELECT solution_hash FROM traces WHERE solution = 'k' GROUP BY 1 ORDER BY min(timestamp)",
    )
    return str(h1), str(h2)


def _col(table: object, name: str) -> list[object]:
    return [r[table.columns.index(name)] for r in table.rows]  # type: ignore[attr-defined]


def test_every_section_shows_the_current_version_once(edited: Path) -> None:
    rep = build_report(edited)
    # Leaderboard: one row per name and hardware, version 2's figures (4 passed at 1.5x, 1 failed).
    lb = rep.leaderboard
    assert sorted(_col(lb, "solution")) == ["k", "k", "other", "other"]
    for r in lb.rows:
        if r[lb.columns.index("solution")] == "k":
            assert r[lb.columns.index("passed_rows")] == 4 and r[lb.columns.index("failed_rows")] == 1
            assert r[lb.columns.index("speedup_passed")] == pytest.approx(1.5)
    # Summary: 5 workloads of each of 2 solutions per hardware, never 15 traces or 3 solutions.
    assert [(r[0], r[1], r[6], r[7]) for r in rep.summary.rows] == [(hw, 10, 2, 5) for hw in _HW]
    # The headline bars and the distribution: version 2.
    assert {(b.solution, b.hardware): (b.speedup, b.failed) for b in rep.bars if b.solution == "k"} == {
        ("k", hw): (pytest.approx(1.5), 1) for hw in _HW
    }
    k_samples = [s for s in rep.samples if s.solution == "k"]
    assert len(k_samples) == 2 and all(
        s.speedups == pytest.approx((1.5,) * 4) and s.failed == 1 for s in k_samples
    )
    # Cross-hardware: 5 pairs of k (version 2) and 5 of other, never version 1's.
    assert rep.cross.rows[0][2] == 10 and len(rep.cross_points) == 4 + 5
    k_points = [p.latency_a for p in rep.cross_points if p.solution == "k"]
    assert len(k_points) == 4 and all(v == pytest.approx(2.0 / 1.5) for v in k_points)
    # Backend scores: alice's k counts its current workloads only, per hardware.
    cols = rep.backends.columns
    alice = [r for r in rep.backends.rows if r[0] == "alice"]
    assert [(r[cols.index("passed_rows")], r[cols.index("failed_rows")]) for r in alice] == [(4, 1), (4, 1)]
    # The model projection (the headline): alice's set at k's version 2, 4 passed and 1 failed.
    (sets, _) = rep.model
    got = {
        (r[0], r[1]): (r[sets.columns.index("passed")], r[sets.columns.index("failed")]) for r in sets.rows
    }
    assert got == {**{("alice", hw): (4, 1) for hw in _HW}, **{("bob", hw): (5, 0) for hw in _HW}}
    # Failures, and nothing of version 1 anywhere; a note says older versions were left out.
    assert rep.failing[("vec_add", "k", "NVIDIA_H100")] == (1, 5)
    assert any("1 older versions of 1 edited solutions left out" in n for n in rep.notes)
    text, page = render_text(rep), render_html(rep)
    assert "@" not in text.replace("--all-versions", "") and " @" not in page
    h1, _ = _hashes(edited)
    assert h1[:8] not in text and h1[:8] not in page


def test_all_versions_shows_both_labelled_by_hash(edited: Path) -> None:
    h1, h2 = _hashes(edited)
    rep = build_report(edited, all_versions=True)
    new, old = f"k @{h2[:8]}", f"k @{h1[:8]} (older)"
    lb = {(r[2], r[5]): r for r in rep.leaderboard.rows}
    cols = rep.leaderboard.columns
    for hw in _HW:
        assert lb[(new, hw)][cols.index("speedup_passed")] == pytest.approx(1.5)
        assert lb[(old, hw)][cols.index("speedup_passed")] == pytest.approx(4.0)
        assert lb[(old, hw)][cols.index("failed_rows")] == 0
    assert ("other", "NVIDIA_H100") in lb  # a name never edited is not labelled
    assert {b.solution for b in rep.bars} == {new, old, "other"}
    assert {s.solution for s in rep.samples} == {new, old, "other"}
    assert {p.solution for p in rep.cross_points} == {new, old, "other"}
    assert rep.cross.rows[0][2] == 15
    assert [r[1] for r in rep.summary.rows] == [15, 15]
    assert any("every version shown" in n for n in rep.notes)
    page = render_html(rep)
    assert new in page and old in page


def test_failures_per_solution_in_text_and_html(edited: Path) -> None:
    rep = build_report(edited)
    assert rep.failures is not None
    assert rep.failures.columns == [
        "definition",
        "solution",
        "hardware",
        "status",
        "reason",
        "traces",
        "task_id",
    ]
    assert rep.failures.rows == [
        ("vec_add", "k", hw, "RUNTIME_ERROR", "IndexError: boom (main.py, line 3)", 1, f"task-{hw}-4")
        for hw in _HW
    ]
    text = render_text(rep)
    assert "== Failures per solution (status and first line of the log) ==" in text
    assert "IndexError: boom (main.py, line 3)" in text and "task-NVIDIA_H100-4" in text
    page = render_html(rep)
    assert "<h2>Failures per solution (status and first line of the log)</h2>" in page
    assert "IndexError: boom (main.py, line 3)" in page


def test_failures_group_with_counts_and_clip(tmp_path: Path) -> None:
    ctx = StoreContext.of([make_definition()], [make_solution("s1")])
    b = RowBatch()
    b.add_context(ctx)
    long = "x" * 300
    logs = ["\n\n  COMPILE_ERROR: bad syntax line 2", "COMPILE_ERROR: bad syntax line 2", long, ""]
    for i, log in enumerate(logs):
        b.add_trace(make_trace("s1", f"wl-{i}", status="COMPILE_ERROR", log=log), context=ctx)
    b.add_trace(
        make_trace("s1", "wl-9", status="RUNTIME_ERROR", extra_eval={"flags": ["reference_failed"]}),
        context=ctx,
    )
    Store(tmp_path / "s.duckdb").add(b)
    rep = build_report(tmp_path / "s.duckdb")
    assert rep.failures is not None
    got = {(r[3], r[4]): r[5] for r in rep.failures.rows}
    assert got == {
        ("COMPILE_ERROR", "bad syntax line 2"): 2,
        ("COMPILE_ERROR", "x" * 157 + "..."): 1,
        ("COMPILE_ERROR", "(no log)"): 1,
        ("REFERENCE_FAILED", "(no log)"): 1,
    }
    assert rep.failures.rows[0][4] == "bad syntax line 2"  # the biggest group first


def test_html_reads_top_down(edited: Path) -> None:
    page = render_html(build_report(edited))
    heads = re.findall(r"<h2>(.*?)</h2>", page)
    lb, fails = (
        heads.index("Leaderboard (correct first)"),
        heads.index("Failures per solution (status and first line of the log)"),
    )
    first_picture = heads.index("Speedup per solution per hardware")
    assert lb < fails < first_picture
    assert page.index("<h2>Leaderboard") < page.index("<svg")
    # Every table in its own horizontal scroll box.
    assert page.count("<table>") == page.count('<div class="scroll"><table>') > 0
    assert ".scroll { overflow-x: auto" in page
    # Every chart has a legend; the partly failing k is marked in the bars and the distribution.
    svgs = re.findall(r'<svg class="chart [^"]*".*?</svg>', page, re.DOTALL)
    assert len(svgs) == 3 and all('<g class="legend">' in s for s in svgs)
    assert all("1 of 5 failed" in s or "4 passed, 1 failed" in s for s in svgs[:2])
    assert all('class="partial"' in s or "dot partial" in s for s in svgs)
