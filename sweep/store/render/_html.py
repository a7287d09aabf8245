"""The report as one self-contained HTML page: inline CSS, inline SVG pictures, no scripts,
nothing fetched."""

from __future__ import annotations

import html

from sweep.store.render._charts import distribution_chart, speedup_chart
from sweep.store.render._collective_section import COLLECTIVE_SECTION
from sweep.store.render._formats import human_cell, is_percent_column, is_speedup_column
from sweep.store.render._plots import bandwidth_charts, cross_charts, roofline_charts
from sweep.store.render._report import Report, ReportTable

__all__ = ["render_html"]

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px 32px;
       color: #1d2330; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dde1e8; padding-bottom: 4px; }
.meta { color: #5b6475; margin: 0 0 4px; overflow-wrap: anywhere; }
.note { color: #5b6475; font-size: 12.5px; margin: 6px 0 0; max-width: 1100px; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eceff3; text-align: left; white-space: nowrap; }
td.num.bad { color: #b3261e; }
th { background: #f5f7fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #1e7b34; } td.bad { color: #b3261e; }
tr:hover td { background: #fafbfd; }
tr.impossible td { color: #b3261e; font-weight: 600; background: #fdecea; }
tr.suspicious td { background: #fff4d6; }
.empty { color: #8a93a3; font-style: italic; }
svg text { font-family: inherit; }
svg.chart { display: block; margin: 8px 0; }
.pair { display: flex; flex-wrap: wrap; gap: 8px 24px; }
.pair > div { flex: 0 1 760px; min-width: 0; }
h3 { font-size: 14px; margin: 14px 0 2px; }
"""


def _fmt(column: str, value: object) -> tuple[str, str]:
    """(css class, text) of one cell."""
    if isinstance(value, bool):
        return ("ok" if value else "bad"), ("yes" if value else "no")
    if column == "failed_rows" or column.startswith("failed_"):
        return ("num bad" if value else "num"), human_cell(column, value)
    numeric = isinstance(value, (int, float)) or is_percent_column(column) or is_speedup_column(column)
    return ("num" if numeric and value is not None else ""), human_cell(column, value)


def _table_html(t: ReportTable) -> str:
    out = [f"<h2>{html.escape(t.title)}</h2>"]
    if not t.rows:
        out.append('<p class="empty">none</p>')
    else:
        out.append(
            '<div class="scroll"><table><thead><tr>'
            + "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
            + "</tr></thead><tbody>"
        )
        flags_at = t.columns.index("flags") if "flags" in t.columns else None
        for row in t.rows:
            flags = str(row[flags_at] or "") if flags_at is not None else ""
            mark = "impossible" if "impossible" in flags else "suspicious" if "suspicious" in flags else ""
            tds = []
            for c, v in zip(t.columns, row):
                cls, text = _fmt(c, v)
                attr = f' class="{cls}"' if cls else ""
                tds.append(f"<td{attr}>{html.escape(text)}</td>")
            tr = f'<tr class="{mark}">' if mark else "<tr>"
            out.append(tr + "".join(tds) + "</tr>")
        out.append("</tbody></table></div>")
    if t.note:
        out.append(f'<p class="note">{html.escape(t.note)}</p>')
    return "\n".join(out)


def _section(title: str, body: list[str], note: str) -> str:
    return "\n".join([f"<h2>{html.escape(title)}</h2>", *body, f'<p class="note">{html.escape(note)}</p>'])


def _pictures(report: Report) -> list[str]:
    empty = '<p class="empty">{}</p>'.format
    out = [
        _section(
            "Speedup per solution per hardware",
            [speedup_chart(report.bars) if report.bars else empty("no evaluated traces yet")],
            "Bars: geometric-mean speedup over PASSED traces (newest per workload), log scale, drawn from "
            "the 1x line: left of it slower than the reference, right of it faster. Hatched: the solution "
            "failed some workloads (k of n failed at the right); the bar stands for those that passed. "
            "Hover for details.",
        ),
        _section(
            "Speedup distribution per solution",
            [distribution_chart(report.samples) if report.samples else empty("no evaluated traces yet")],
            "One dot per PASSED workload, the bar at the median; the counts of passed and failed "
            "workloads at the right.",
        ),
    ]
    if report.compare_samples:
        out.append(
            _section(
                report.compare_title or "Comparison",
                [
                    distribution_chart(
                        report.compare_samples,
                        title="latency ratio B/A per solution",
                        axis="B's latency / A's latency on each task both passed (dots), median (bar), log scale",
                        one_label="B = A (1x); left: B faster",
                        value_name="B/A",
                    )
                ],
                "One dot per task: the latency ratio B/A, as in the comparison's table and sweep compare: left "
                "of the 1x line (under 1) B is faster than A, right of it slower; the counts of tasks compared "
                "and of tasks that failed on a side at the right. The table has each task's interval and "
                "verdict.",
            )
        )
    roofs, notes = roofline_charts(report.roofline, report.failing)
    if report.roofline_left_out:
        notes.append(f"{report.roofline_left_out} older traces not drawn.")
    body = [f"<div><h3>{html.escape(t)}</h3>{svg}</div>" for t, svg in roofs]
    if not roofs:
        body = [
            empty(
                "no roofline: no PASSED trace carries achieved throughput with FLOPs "
                "(performance.tflops and work_flops/work_bytes)"
            )
        ]
    out.append(
        _section(
            "Roofline per GPU type",
            ['<div class="pair">', *body, "</div>"],
            "Achieved TFLOP/s over arithmetic intensity (FLOP per byte of work); roofs from the datasheet "
            "peaks (sweep/schema/peaks.py): memory bandwidth times intensity, capped by the dense rate. "
            + " ".join(notes),
        )
    )
    pairs = cross_charts(report.cross_points, report.failing)
    body = [f"<div><h3>{html.escape(t)}</h3>{svg}</div>" for t, svg in pairs]
    if not pairs:
        body = [empty("no cross-hardware picture: no solution and workload PASSED on two hardware")]
    left = f" {report.cross_left_out} more pairs not drawn." if report.cross_left_out else ""
    out.append(
        _section(
            "Cross-hardware latency",
            ['<div class="pair">', *body, "</div>"],
            "Each point: one solution and workload, its latency on one hardware against the other (log-log); "
            "the dashed diagonal is equal latency." + left,
        )
    )
    return out


def _bandwidth_html(report: Report, table: ReportTable) -> str:
    """Under the bandwidth table (calls made by several ranks), its pictures; else nothing."""
    if table.title != COLLECTIVE_SECTION[0]:
        return ""
    charts = bandwidth_charts(report.bandwidth)
    if not charts:
        return ""
    body = "".join(f"<div><h3>{html.escape(t)}</h3>{svg}</div>" for t, svg in charts)
    return (
        f'<div class="pair">{body}</div><p class="note">One line per solution, world size and hardware: '
        "the median bus bandwidth of its PASSED traces at each message size (log-log); the table above "
        "has every figure.</p>"
    )


def render_html(report: Report) -> str:
    """The whole report as one HTML document that needs no network."""
    notes = "".join(f'<p class="meta">note: {html.escape(n)}</p>' for n in report.notes)
    body = [
        "<h1>kernel-sweep report</h1>",
        (
            f'<p class="meta">store: {html.escape(report.store)} · generated '
            f"{report.generated_at.strftime('%Y-%m-%d %H:%M:%S UTC')}</p>"
        ),
        notes,
        *(_table_html(t) for t in report.first_tables),
        *_pictures(report),
        *(_table_html(t) + _bandwidth_html(report, t) for t in report.later_tables),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>kernel-sweep report</title>"
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
