"""The report's pictures: the log-scale speedup chart (tiny and large speedups both visible,
full labels), the speedup distribution, a roofline per GPU type and the cross-hardware
scatter, each present when its data is and replaced by a note when not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sweep.store.render import build_report, render_html
from sweep.store.render._chart_data import SpeedupBar
from sweep.store.render._charts import speedup_chart

from .report_stores import FAST, LONG_A, LONG_B, TINY, make_report_store


def _svgs(page: str, cls: str) -> list[str]:
    return re.findall(rf'<svg class="chart {cls}".*?</svg>', page, re.DOTALL)


def _bar_widths(svg: str) -> list[float]:
    return [float(w) for w in re.findall(r'<rect class="bar" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg)]


def test_tiny_and_large_speedups_are_both_visible() -> None:
    bars = [
        SpeedupBar("d", "tiny", "CPU", 0.0015, 1.0),
        SpeedupBar("d", "tiny2", "CPU", 0.0025, 1.0),
        SpeedupBar("d", "big", "H100", 50.0, 1.0),
        SpeedupBar("d", "even", "H100", 1.0, 1.0),
    ]
    svg = speedup_chart(bars)
    widths = _bar_widths(svg)
    assert len(widths) == 4
    assert min(widths) >= 2  # a speedup of exactly 1 still shows
    tiny, tiny2, big, _ = widths
    # Log scale: 0.0015x is as long (to the left) as 1/0.0015 = 667x would be to the right.
    assert tiny > big > 50 and tiny > tiny2 > 50
    assert "0.0015x" in svg and "0.0025x" in svg and "50x" in svg and "e-03" not in svg
    # The axis spans whole decades covering both.
    assert ">0.001x<" in svg and ">100x<" in svg


def test_labels_are_whole_and_tell_solutions_apart(tmp_path: Path) -> None:
    page = render_html(build_report(make_report_store(tmp_path / "sweep.duckdb")))
    (chart,) = _svgs(page, "speedup-chart")
    labels = re.findall(r'class="label"[^>]*>([^<]*)</text>', chart)
    assert sorted(labels) == sorted([LONG_A, LONG_B, FAST, TINY, "vec_sol"])
    assert "…" not in chart
    assert chart.startswith('<svg class="chart speedup-chart" width="100%"')  # the page's width


def test_every_picture_with_its_data(tmp_path: Path) -> None:
    rep = build_report(make_report_store(tmp_path / "sweep.duckdb"))
    page = render_html(rep)
    assert len(_svgs(page, "speedup-chart")) == 1
    (dist,) = _svgs(page, "distribution-chart")
    # One dot per PASSED workload: 3 GPU solutions x 4 workloads x 2 GPUs, vec_sol 4 x 2, TINY 2.
    assert dist.count('<circle class="dot"') == 3 * 4 * 2 + 8 + 2
    assert "4 passed, 1 failed" in dist  # LONG_B's failure on the H100
    roofs = _svgs(page, "roofline")
    assert len(roofs) == 2 and all(r.count('<circle class="dot') == 12 for r in roofs)
    # LONG_B failed one of its 5 workloads on the H100: its 4 points there hollow, none on the H200.
    assert roofs[0].count('<circle class="dot partial"') == 4 and 'class="dot partial"' not in roofs[1]
    assert f"{LONG_B} (1 of 5 failed: hollow)" in roofs[0]
    assert all(r.count('<polyline class="roof"') == 3 for r in roofs)  # FP16/BF16, TF32, FP32
    assert "datasheet NVIDIA H100 SXM5" in roofs[0]
    # vec_add has no FLOPs: said, not drawn.
    assert "NVIDIA_H100: 4 of 16 traces have no FLOPs counted" in page
    (cross,) = _svgs(page, "cross-scatter")
    assert cross.count('<circle class="dot') == 16  # 4 solutions x 4 workloads on both GPUs
    assert cross.count('<circle class="dot partial"') == 4  # LONG_B's, failing once on the H100
    assert "Latency on NVIDIA_H200 against NVIDIA_H100 (16 pairs PASSED on both)" in page
    assert not re.search(r"<script|<link|<img|<iframe|https?://(?!www\.w3\.org)|src=", page)


def test_pictures_absent_with_a_note(tmp_path: Path) -> None:
    page = render_html(
        build_report(make_report_store(tmp_path / "sweep.duckdb", rates=False, two_hardware=False))
    )
    assert _svgs(page, "roofline") == [] and _svgs(page, "cross-scatter") == []
    assert "no roofline: no PASSED trace carries achieved throughput" in page
    assert "no cross-hardware picture: no solution and workload PASSED on two hardware" in page
    assert len(_svgs(page, "speedup-chart")) == 1 and len(_svgs(page, "distribution-chart")) == 1


def test_add_table_hook_shows_rows_computed_elsewhere(tmp_path: Path) -> None:
    rep = build_report(make_report_store(tmp_path / "sweep.duckdb", rates=False, two_hardware=False))
    rep.add_table(
        "Compared with run B", ["solution", "speedup_ratio"], [("x", 0.0041)], note="from sweep compare"
    )
    page = render_html(rep)
    assert "<h2>Compared with run B</h2>" in page and '<td class="num">0.0041x</td>' in page


@pytest.mark.parametrize("n", [1, 70])
def test_many_solutions_are_counted_not_squeezed(n: int) -> None:
    svg = speedup_chart([SpeedupBar("d", f"s{i}", "H100", 2.0, 1.0) for i in range(n)])
    assert svg.count('<rect class="bar"') == min(n, 60)
    assert ("10 more solutions not shown" in svg) == (n == 70)
