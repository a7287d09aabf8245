"""The report as one self-contained HTML page: inline CSS, an inline SVG chart, no scripts."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from sweep.store.render._formats import cell
from sweep.store.render._report import Report, ReportTable, SpeedupBar

__all__ = ["render_html", "speedup_chart"]

_PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5"]
_MAX_GROUPS = 40

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px 32px;
       color: #1d2330; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dde1e8; padding-bottom: 4px; }
.meta { color: #5b6475; margin: 0 0 4px; }
.note { color: #5b6475; font-size: 12.5px; margin: 6px 0 0; max-width: 1100px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eceff3; text-align: left; white-space: nowrap; }
th { background: #f5f7fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #1e7b34; } td.bad { color: #b3261e; }
tr:hover td { background: #fafbfd; }
tr.impossible td { color: #b3261e; font-weight: 600; background: #fdecea; }
tr.suspicious td { background: #fff4d6; }
.empty { color: #8a93a3; font-style: italic; }
svg text { font-family: inherit; }
"""


def _fmt(column: str, value: object) -> tuple[str, str]:
    """(css class, text) of one cell."""
    if isinstance(value, bool):
        return ("ok" if value else "bad"), ("yes" if value else "no")
    if value is None:
        return "", ""
    if isinstance(value, float):
        if column in ("pass_rate", "correctness_rate", "perf_at_1", "perf_at_p") or column.endswith(
            "peak_fraction"
        ):
            return "num", f"{value * 100:.1f}%"
        return "num", cell(value) if not math.isfinite(value) else f"{value:.4g}"
    if isinstance(value, int):
        return "num", str(value)
    return "", cell(value, 64)


def _table_html(t: ReportTable) -> str:
    out = [f"<h2>{html.escape(t.title)}</h2>"]
    if not t.rows:
        out.append('<p class="empty">none</p>')
    else:
        out.append(
            "<table><thead><tr>"
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
        out.append("</tbody></table>")
    if t.note:
        out.append(f'<p class="note">{html.escape(t.note)}</p>')
    return "\n".join(out)


def _nice_max(v: float) -> tuple[float, float]:
    """An axis top at or above ``v`` and a tick step (1, 2 or 5 times a power of ten)."""
    v = max(v, 1.0)
    raw = v / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return step * math.ceil(v / step), step


def speedup_chart(bars: Sequence[SpeedupBar]) -> str:
    """A grouped bar chart (SVG): geometric-mean speedup of each solution on each hardware.

    Bars of solutions that never passed on a hardware are drawn as a grey cross. A dashed line
    marks speedup 1.0 (as fast as the reference).
    """
    hardware = sorted({b.hardware for b in bars})
    groups: list[tuple[str, str]] = []
    for b in bars:
        key = (b.definition, b.solution)
        if key not in groups:
            groups.append(key)
    dropped = max(0, len(groups) - _MAX_GROUPS)
    groups = groups[:_MAX_GROUPS]
    by_key = {(b.definition, b.solution, b.hardware): b for b in bars}
    top, step = _nice_max(
        max((b.speedup for b in bars if b.speedup and math.isfinite(b.speedup)), default=1.0) * 1.08
    )
    bar_w, gap = 18, 18
    group_w = max(len(hardware), 1) * bar_w + gap
    # Rotated labels hang down-left of their group, so the plot starts well to the right.
    left, right, top_pad, plot_h = 150, 24, 40, 300
    longest = max((min(len(sname), 28) for _, sname in groups), default=0)
    label_h = 30 + int(longest * 4.6)  # rotated 40 degrees, ~7 px per character
    width = max(480, left + right + len(groups) * group_w)
    height = top_pad + plot_h + label_h

    def y(v: float) -> float:
        return top_pad + plot_h * (1 - min(v, top) / top)

    parts = [
        (
            f'<svg width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="speedup per solution per hardware">'
        )
    ]
    tick = 0.0
    while tick <= top + 1e-9:
        yy = y(tick)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eceff3"/>')
        parts.append(
            f'<text x="{left - 8}" y="{yy + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#5b6475">{tick:g}×</text>'
        )
        tick += step
    parts.append(
        f'<text x="{left - 48}" y="{top_pad + plot_h / 2:.0f}" font-size="12" fill="#1d2330" '
        f'transform="rotate(-90 {left - 48} {top_pad + plot_h / 2:.0f})" text-anchor="middle">'
        "speedup over reference (geomean, PASSED)</text>"
    )
    for gi, (dname, sname) in enumerate(groups):
        x0 = left + gi * group_w + gap / 2
        for hi, hw in enumerate(hardware):
            bar = by_key.get((dname, sname, hw))
            if bar is None:
                continue
            x = x0 + hi * bar_w
            color = _PALETTE[hi % len(_PALETTE)]
            tip = html.escape(
                f"{dname} / {sname} on {hw}: "
                + (f"{bar.speedup:.3g}× speedup" if bar.speedup is not None else "no PASSED trace")
                + f", pass rate {bar.pass_rate * 100:.0f}%"
            )
            if bar.speedup is None or not math.isfinite(bar.speedup):
                cy = y(0) - 8
                parts.append(
                    f'<g><title>{tip}</title><text x="{x + bar_w / 2 - 1:.1f}" y="{cy:.1f}" '
                    f'font-size="13" fill="#8a93a3" text-anchor="middle">×</text></g>'
                )
                continue
            yt = y(bar.speedup)
            parts.append(
                f'<rect x="{x:.1f}" y="{yt:.1f}" width="{bar_w - 3}" height="{y(0) - yt:.1f}" '
                f'fill="{color}"><title>{tip}</title></rect>'
            )
        cx = x0 + len(hardware) * bar_w / 2
        label = sname if len(sname) <= 28 else sname[:27] + "…"
        parts.append(
            f'<text x="{cx:.1f}" y="{top_pad + plot_h + 12}" font-size="11" fill="#1d2330" '
            f'text-anchor="end" transform="rotate(-40 {cx:.1f} {top_pad + plot_h + 12})">'
            f"<title>{html.escape(dname + ' / ' + sname)}</title>{html.escape(label)}</text>"
        )
    y1 = y(1.0)
    parts.append(
        f'<line x1="{left}" x2="{width - right}" y1="{y1:.1f}" y2="{y1:.1f}" stroke="#b3261e" '
        'stroke-dasharray="5 4" stroke-width="1.2"/>'
    )
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#5b6475"/>')
    lx = left
    for hi, hw in enumerate(hardware):
        color = _PALETTE[hi % len(_PALETTE)]
        parts.append(f'<rect x="{lx}" y="12" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{lx + 17}" y="22" font-size="12" fill="#1d2330">{html.escape(hw)}</text>')
        lx += 30 + 7 * len(hw)
    parts.append(f'<line x1="{lx}" x2="{lx + 22}" y1="18" y2="18" stroke="#b3261e" stroke-dasharray="5 4"/>')
    parts.append(f'<text x="{lx + 27}" y="22" font-size="12" fill="#1d2330">reference (1×)</text>')
    if dropped:
        parts.append(
            f'<text x="{width - right}" y="22" font-size="11" fill="#5b6475" text-anchor="end">'
            f"{dropped} more solutions not shown</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(report: Report) -> str:
    """The whole report as one HTML document that needs no network."""
    notes = "".join(f'<p class="meta">note: {html.escape(n)}</p>' for n in report.notes)
    chart = speedup_chart(report.bars) if report.bars else '<p class="empty">no evaluated traces yet</p>'
    body = [
        "<h1>kernel-sweep report</h1>",
        (
            f'<p class="meta">store: {html.escape(report.store)} · generated '
            f"{report.generated_at.strftime('%Y-%m-%d %H:%M:%S UTC')}</p>"
        ),
        notes,
        "<h2>Speedup per solution per hardware</h2>",
        chart,
        (
            '<p class="note">Bars: geometric-mean speedup over PASSED traces (newest per workload); '
            "× marks a solution with no PASSED trace on that hardware. Hover for details.</p>"
        ),
    ]
    body.extend(_table_html(t) for t in report.tables)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>kernel-sweep report</title>"
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
