"""The report's per-solution pictures, as inline SVG on a log axis: the geometric-mean
speedup of each solution on each hardware (bars from the 1x line, so 0.002x and 50x both
show), and the distribution of each solution's speedups over its workloads.

Rows are grouped under their definition's name; each row is labelled with the solution's full
name (nothing is cut), so two solutions of one operator are always told apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from sweep.store.render._chart_data import SpeedupBar, SpeedupSample
from sweep.store.render._formats import format_speedup
from sweep.store.render._svg import HATCH, PALETTE, LogScale, esc, legend, svg_open, text, tick_label

__all__ = ["CHAR_W", "MAX_ROWS", "distribution_chart", "speedup_chart"]

#: An upper bound of the width of one character of the labels (12 px system-ui), in px.
CHAR_W = 7.5
#: Solutions drawn at most per chart; the rest are counted in a note.
MAX_ROWS = 60

_LINE = 15  # height of one hardware's line in a row
_HEAD = 24  # height of a definition's heading
_TOP = 44  # legend
_AXIS = 34  # tick labels under the plot
_VALUE_W = 190  # right of the plot: value texts


def _layout(
    keys: Sequence[tuple[str, str]], hardware: list[str], top: float = _TOP
) -> tuple[float, float, float, list[tuple[str, float]], dict[tuple[str, str], float], float]:
    """Width, plot start and end, the definition headings' (name, y), the rows' top y, height."""
    longest = max((len(s) for _, s in keys), default=0)
    longest = max(longest, *(len(d) - 2 for d, _ in keys)) if keys else 0
    label_w = 24 + CHAR_W * longest
    x0 = label_w + 12
    width = max(1200.0, x0 + 480 + _VALUE_W)
    x1 = width - _VALUE_W
    row_h = max(len(hardware), 1) * _LINE + 10
    y = float(top)
    heads: list[tuple[str, float]] = []
    tops: dict[tuple[str, str], float] = {}
    last = None
    for d, s in keys:
        if d != last:
            heads.append((d, y + 16))
            y += _HEAD
            last = d
        tops[(d, s)] = y
        y += row_h
    return width, x0, x1, heads, tops, y + _AXIS


def _frame(
    label: str,
    cls: str,
    keys: list[tuple[str, str]],
    hardware: list[str],
    scale_values: list[float],
    axis_title: str,
    draw_row: Callable[[LogScale, tuple[str, str], str, float, str], list[str]],
    dropped: int,
    *,
    one_label: str = "reference (1x)",
    partial: str = "",
) -> str:
    """The frame of a per-solution chart; ``partial``: the legend's words for the mark of a
    solution that failed some workloads (none: no such solution drawn)."""
    entries = [("box", PALETTE[hi % len(PALETTE)], hw) for hi, hw in enumerate(hardware)]
    entries.append(("dash", "#b3261e", one_label))
    if partial:
        entries.append(("hatch" if cls == "speedup-chart" else "shade", "#5b6475", partial))
    width0, x00, _, _, _, _ = _layout(keys, hardware)
    key_svg, key_h = legend(entries, x00, 12, width0 - x00 - 8)
    top = 12 + key_h + 14
    width, x0, x1, heads, tops, height = _layout(keys, hardware, top)
    xs = LogScale.covering(scale_values, x0, x1, include=[1.0])
    plot_bottom = height - _AXIS
    parts = [svg_open(width, height, label, cls), HATCH]
    for t in xs.ticks():
        x = xs(t)
        major = math.isclose(math.log10(t), round(math.log10(t)))
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4}" y2="{plot_bottom:.1f}" '
            f'stroke="{"#dde1e8" if major else "#f0f2f5"}"/>'
        )
        parts.append(text(x, plot_bottom + 16, tick_label(t, "x"), size=11, anchor="middle", fill="#5b6475"))
    parts.append(text((x0 + x1) / 2, plot_bottom + 31, axis_title, size=12, anchor="middle"))
    for name, y in heads:
        parts.append(text(8, y, name, size=12.5, cls="definition", extra='font-weight="600"'))
    for key, row_top in tops.items():
        n = max(len(hardware), 1)
        parts.append(
            text(x0 - 10, row_top + 5 + n * _LINE / 2 + 4, key[1], size=12, anchor="end", cls="label")
        )
        for hi, hw in enumerate(hardware):
            parts.extend(draw_row(xs, key, hw, row_top + 5 + hi * _LINE, PALETTE[hi % len(PALETTE)]))
    one = xs(1.0)
    parts.append(
        f'<line x1="{one:.1f}" x2="{one:.1f}" y1="{top - 4}" y2="{plot_bottom:.1f}" stroke="#b3261e" '
        'stroke-dasharray="5 4" stroke-width="1.2"/>'
    )
    parts.append(key_svg)
    if dropped:
        parts.append(
            text(
                width - 8,
                top - 8,
                f"{dropped} more solutions not shown",
                size=11,
                anchor="end",
                fill="#5b6475",
            )
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _keys(items: Sequence[SpeedupBar | SpeedupSample]) -> tuple[list[tuple[str, str]], list[str], int]:
    keys: list[tuple[str, str]] = []
    for b in items:
        if (b.definition, b.solution) not in keys:
            keys.append((b.definition, b.solution))
    dropped = max(0, len(keys) - MAX_ROWS)
    return keys[:MAX_ROWS], sorted({b.hardware for b in items}), dropped


def speedup_chart(bars: Sequence[SpeedupBar]) -> str:
    """Bars of each solution's geometric-mean speedup (PASSED traces) on each hardware, on a
    log axis, drawn from the 1x line (left: slower than the reference, right: faster); at
    least 2 px long, so a speedup of 1.0 shows too. A solution with no PASSED trace on a
    hardware gets the words "no PASSED trace" instead of a bar."""
    keys, hardware, dropped = _keys(bars)
    by_key = {(b.definition, b.solution, b.hardware): b for b in bars}
    values = [b.speedup for b in bars if b.speedup is not None and (b.definition, b.solution) in keys]

    def row(xs: LogScale, key: tuple[str, str], hw: str, y: float, color: str) -> list[str]:
        bar = by_key.get((*key, hw))
        if bar is None:
            return []
        one, vx = xs(1.0), xs.end + 8
        rate = f"pass rate {bar.pass_rate * 100:.0f}%"
        if bar.speedup is None or not math.isfinite(bar.speedup) or bar.speedup <= 0:
            tip = f"{key[0]} / {key[1]} on {hw}: no PASSED trace, {rate}"
            return [
                f'<g class="failed"><title>{esc(tip)}</title>'
                + text(one + 6, y + 10, "no PASSED trace", size=11, fill="#8a93a3")
                + "</g>"
            ]
        x = xs(bar.speedup)
        lo, hi = min(one, x), max(one, x)
        if hi - lo < 2:
            lo, hi = (one, one + 2) if x >= one else (one - 2, one)
        failed = _failed_words(bar)
        tip = f"{key[0]} / {key[1]} on {hw}: {format_speedup(bar.speedup)} speedup, {rate}" + (
            f", {failed}" if failed else ""
        )
        out = [
            (
                f'<rect class="bar" x="{lo:.1f}" y="{y:.1f}" width="{hi - lo:.1f}" height="{_LINE - 3}" '
                f'fill="{color}" data-speedup="{bar.speedup!r}"><title>{esc(tip)}</title></rect>'
            ),
            text(
                vx,
                y + 10,
                f"{format_speedup(bar.speedup)}  {hw}" + (f"  ({failed})" if failed else ""),
                size=11,
                fill="#b3261e" if failed else "#1d2330",
                cls="value partial" if failed else "value",
            ),
        ]
        if failed:  # hatched over the bar: it stands for the workloads that passed only
            out.insert(
                1,
                f'<rect class="partial" x="{lo:.1f}" y="{y:.1f}" width="{hi - lo:.1f}" height="{_LINE - 3}" '
                f'fill="url(#sweep-hatch)" pointer-events="none"/>',
            )
        return out

    partial = any(b.failed and (b.definition, b.solution) in keys for b in bars)
    return _frame(
        "speedup per solution per hardware",
        "speedup-chart",
        keys,
        hardware,
        [v for v in values if v is not None],
        "speedup over reference (geometric mean over PASSED workloads, log scale)",
        row,
        dropped,
        partial="hatched: failed some workloads (k of n failed at the right)" if partial else "",
    )


def _failed_words(bar: SpeedupBar) -> str:
    """``"2 of 5 failed"`` for a solution that failed some of its workloads, else ``""``."""
    total = bar.passed + bar.failed
    return f"{bar.failed} of {total} failed" if bar.failed and total else ""


def distribution_chart(
    samples: Sequence[SpeedupSample],
    *,
    title: str = "speedup distribution per solution",
    axis: str = "speedup over reference of each PASSED workload (dots), median (bar), log scale",
    one_label: str = "reference (1x)",
    value_name: str = "speedup",
) -> str:
    """Each solution's speedup on every PASSED workload (one dot each) on each hardware, with
    the median as a tick, on a log axis; the count passed and failed at the right. ``title``
    and ``axis`` say what the speedups are when they are not over the reference (the
    comparison of two runs draws B's speedup over A with it)."""
    keys, hardware, dropped = _keys(samples)
    by_key = {(s.definition, s.solution, s.hardware): s for s in samples}
    values = [v for s in samples if (s.definition, s.solution) in keys for v in s.speedups]

    def row(xs: LogScale, key: tuple[str, str], hw: str, y: float, color: str) -> list[str]:
        sample = by_key.get((*key, hw))
        if sample is None:
            return []
        count = f"{len(sample.speedups)} passed, {sample.failed} failed  {hw}"
        parts = [
            text(
                xs.end + 8,
                y + 10,
                count,
                size=11,
                cls="value partial" if sample.failed else "value",
                fill="#b3261e" if sample.failed else "#1d2330",
            )
        ]
        if sample.failed:  # the row's band hatched: these dots are not all its workloads
            parts.append(
                f'<rect class="partial" x="{xs.start:.1f}" y="{y - 1:.1f}" width="{xs.end - xs.start:.1f}" '
                f'height="{_LINE:.0f}" fill="#b3261e" fill-opacity="0.06" pointer-events="none"/>'
            )
        mid = y + (_LINE - 3) / 2
        for i, v in enumerate(sample.speedups):
            jitter = ((i * 7) % 5 - 2) * 1.0
            parts.append(
                f'<circle class="dot" cx="{xs(v):.1f}" cy="{mid + jitter:.1f}" r="3" fill="{color}" '
                f'fill-opacity="0.65"><title>{esc(f"{key[1]} on {hw}: {value_name} {format_speedup(v)}")}</title></circle>'
            )
        if sample.speedups:
            med = _median(sample.speedups)
            mx = xs(med)
            parts.append(
                f'<rect class="median" x="{mx - 1:.1f}" y="{y - 1:.1f}" width="2.5" height="{_LINE:.0f}" '
                f'fill="#1d2330"><title>{esc(f"median {format_speedup(med)}")}</title></rect>'
            )
        else:
            parts.append(text(xs(1.0) + 6, y + 10, "no PASSED trace", size=11, fill="#8a93a3"))
        return parts

    partial = any(s.failed and (s.definition, s.solution) in keys for s in samples)
    return _frame(
        title,
        "distribution-chart",
        keys,
        hardware,
        values,
        axis,
        row,
        dropped,
        one_label=one_label,
        partial="shaded row, count in red: failed some workloads" if partial else "",
    )


def _median(values: Sequence[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else math.sqrt(v[n // 2 - 1] * v[n // 2])
