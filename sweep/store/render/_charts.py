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
from sweep.store.render._svg import PALETTE, LogScale, esc, svg_open, text, tick_label

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
    keys: Sequence[tuple[str, str]], hardware: list[str]
) -> tuple[float, float, float, list[tuple[str, float]], dict[tuple[str, str], float], float]:
    """Width, plot start and end, the definition headings' (name, y), the rows' top y, height."""
    longest = max((len(s) for _, s in keys), default=0)
    longest = max(longest, *(len(d) - 2 for d, _ in keys)) if keys else 0
    label_w = 24 + CHAR_W * longest
    x0 = label_w + 12
    width = max(1200.0, x0 + 480 + _VALUE_W)
    x1 = width - _VALUE_W
    row_h = max(len(hardware), 1) * _LINE + 10
    y = float(_TOP)
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
) -> str:
    width, x0, x1, heads, tops, height = _layout(keys, hardware)
    xs = LogScale.covering(scale_values, x0, x1, include=[1.0])
    plot_bottom = height - _AXIS
    parts = [svg_open(width, height, label, cls)]
    for t in xs.ticks():
        x = xs(t)
        major = math.isclose(math.log10(t), round(math.log10(t)))
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP - 4}" y2="{plot_bottom:.1f}" '
            f'stroke="{"#dde1e8" if major else "#f0f2f5"}"/>'
        )
        parts.append(text(x, plot_bottom + 16, tick_label(t, "x"), size=11, anchor="middle", fill="#5b6475"))
    parts.append(text((x0 + x1) / 2, plot_bottom + 31, axis_title, size=12, anchor="middle"))
    for name, y in heads:
        parts.append(text(8, y, name, size=12.5, cls="definition", extra='font-weight="600"'))
    for key, top in tops.items():
        n = max(len(hardware), 1)
        parts.append(text(x0 - 10, top + 5 + n * _LINE / 2 + 4, key[1], size=12, anchor="end", cls="label"))
        for hi, hw in enumerate(hardware):
            parts.extend(draw_row(xs, key, hw, top + 5 + hi * _LINE, PALETTE[hi % len(PALETTE)]))
    one = xs(1.0)
    parts.append(
        f'<line x1="{one:.1f}" x2="{one:.1f}" y1="{_TOP - 4}" y2="{plot_bottom:.1f}" stroke="#b3261e" '
        'stroke-dasharray="5 4" stroke-width="1.2"/>'
    )
    lx = x0
    for hi, hw in enumerate(hardware):
        parts.append(
            f'<rect x="{lx:.1f}" y="12" width="12" height="12" fill="{PALETTE[hi % len(PALETTE)]}"/>'
        )
        parts.append(text(lx + 17, 22, hw))
        lx += 34 + CHAR_W * len(hw)
    parts.append(
        f'<line x1="{lx:.1f}" x2="{lx + 22:.1f}" y1="18" y2="18" stroke="#b3261e" stroke-dasharray="5 4"/>'
    )
    parts.append(text(lx + 27, 22, "reference (1x)"))
    if dropped:
        parts.append(
            text(width - 8, 22, f"{dropped} more solutions not shown", size=11, anchor="end", fill="#5b6475")
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
        tip = f"{key[0]} / {key[1]} on {hw}: {format_speedup(bar.speedup)} speedup, {rate}"
        return [
            (
                f'<rect class="bar" x="{lo:.1f}" y="{y:.1f}" width="{hi - lo:.1f}" height="{_LINE - 3}" '
                f'fill="{color}" data-speedup="{bar.speedup!r}"><title>{esc(tip)}</title></rect>'
            ),
            text(vx, y + 10, f"{format_speedup(bar.speedup)}  {hw}", size=11, fill="#1d2330", cls="value"),
        ]

    return _frame(
        "speedup per solution per hardware",
        "speedup-chart",
        keys,
        hardware,
        [v for v in values if v is not None],
        "speedup over reference (geometric mean over PASSED workloads, log scale)",
        row,
        dropped,
    )


def distribution_chart(
    samples: Sequence[SpeedupSample],
    *,
    title: str = "speedup distribution per solution",
    axis: str = "speedup over reference of each PASSED workload (dots), median (bar), log scale",
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
                cls="value",
                fill="#b3261e" if sample.failed else "#1d2330",
            )
        ]
        mid = y + (_LINE - 3) / 2
        for i, v in enumerate(sample.speedups):
            jitter = ((i * 7) % 5 - 2) * 1.0
            parts.append(
                f'<circle class="dot" cx="{xs(v):.1f}" cy="{mid + jitter:.1f}" r="3" fill="{color}" '
                f'fill-opacity="0.65"><title>{esc(f"{key[1]} on {hw}: {format_speedup(v)}")}</title></circle>'
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

    return _frame(title, "distribution-chart", keys, hardware, values, axis, row, dropped)


def _median(values: Sequence[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else math.sqrt(v[n // 2 - 1] * v[n // 2])
