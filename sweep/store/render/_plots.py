"""The report's x-y pictures, as inline SVG on log-log axes: a roofline per GPU type
(achieved TFLOP/s over arithmetic intensity, under the datasheet's roofs), per pair of
hardware the latency of each solution and workload on one against the other, and per
definition of calls made by several ranks the bus bandwidth against the message size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sweep.schema.peaks import datasheet_ceilings
from sweep.store.render._chart_data import BandwidthPoint, CrossPoint, RooflinePoint
from sweep.store.render._formats import format_number
from sweep.store.render._svg import PALETTE, LogScale, esc, legend, svg_open, text, tick_label

__all__ = ["bandwidth_charts", "cross_charts", "roofline_charts"]

_W, _H = 760.0, 440.0
_L, _R, _T, _B = 78.0, 24.0, 30.0, 52.0

# The roofs drawn, by rate key of the datasheet, with their names.
_ROOFS = [("float16", "FP16/BF16"), ("tf32", "TF32"), ("float32", "FP32")]


def _axes(xs: LogScale, ys: LogScale, x_title: str, y_title: str, x_unit: str, y_unit: str) -> list[str]:
    parts = []
    for t in xs.ticks():
        x = xs(t)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_T}" y2="{_H - _B}" stroke="#eceff3"/>')
        parts.append(text(x, _H - _B + 16, tick_label(t, x_unit), size=11, anchor="middle", fill="#5b6475"))
    for t in ys.ticks():
        y = ys(t)
        parts.append(f'<line x1="{_L}" x2="{_W - _R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eceff3"/>')
        parts.append(text(_L - 6, y + 4, tick_label(t, y_unit), size=11, anchor="end", fill="#5b6475"))
    parts.append(
        f'<rect x="{_L}" y="{_T}" width="{_W - _L - _R}" height="{_H - _T - _B}" fill="none" stroke="#5b6475"/>'
    )
    parts.append(text((_L + _W - _R) / 2, _H - 12, x_title, anchor="middle"))
    cy = (_T + _H - _B) / 2
    parts.append(text(16, cy, y_title, anchor="middle", extra=f'transform="rotate(-90 16 {cy:.0f})"'))
    return parts


#: Legend entries naming a colour each, at most; the rest are counted in one more entry.
_MAX_KEYS = 12

#: (failed, total) ranked traces per (definition, solution, hardware): the report's ``failing``.
Failing = Mapping[tuple[str, str, str], tuple[int, int]]


def _dot(x: float, y: float, color: str, tip: str, *, partial: bool = False) -> str:
    if partial:  # hollow: the solution failed some of its workloads
        return (
            f'<circle class="dot partial" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#fff" stroke="{color}" '
            f'stroke-width="1.6"><title>{esc(tip)}</title></circle>'
        )
    return (
        f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}" fill-opacity="0.7">'
        f"<title>{esc(tip)}</title></circle>"
    )


def _failed(failing: Failing, definition: str, solution: str, hardware: str) -> str:
    failed, total = failing.get((definition, solution, hardware), (0, 0))
    return f"{failed} of {total} failed" if failed else ""


def _with_legend(parts: list[str], entries: list[tuple[str, str, str]]) -> tuple[str, float]:
    """Close the chart: its legend under the plot, and the height the chart takes with it."""
    key, h = legend(entries, _L, _H, _W - _L - _R)
    return "\n".join([*parts, key, "</svg>"]), _H + h + 4


def _keys_of(
    names: list[str], kind: str, label: Mapping[str, str] | None = None
) -> list[tuple[str, str, str]]:
    label = label or {}
    out = [(kind, PALETTE[i % len(PALETTE)], label.get(n, n)) for i, n in enumerate(names[:_MAX_KEYS])]
    if len(names) > _MAX_KEYS:
        out.append(("dot", "#8a93a3", f"{len(names) - _MAX_KEYS} more (colours repeat)"))
    return out


def roofline_charts(
    points: Sequence[RooflinePoint], failing: Failing | None = None
) -> tuple[list[tuple[str, str]], list[str]]:
    """One roofline per hardware with points whose FLOPs are known and above 0: (title, SVG)
    pairs, and notes on what could not be drawn (points without FLOPs, hardware without
    datasheet peaks). A legend names each solution's colour and the roofs; a solution that
    failed some workloads (``failing``) is drawn hollow, "k of n failed" in its legend entry."""
    failing = failing or {}
    charts: list[tuple[str, str]] = []
    notes: list[str] = []
    for hw in sorted({p.hardware for p in points}):
        mine = [p for p in points if p.hardware == hw]
        drawable = [p for p in mine if p.intensity and p.intensity > 0 and p.tflops and p.tflops > 0]
        if len(drawable) < len(mine):
            notes.append(
                f"{hw}: {len(mine) - len(drawable)} of {len(mine)} traces have no FLOPs counted "
                "(elementwise or memory-bound work, or unknown): not on the roofline; their GB/s is in "
                "the rates table."
            )
        if not drawable:
            continue
        sheet = datasheet_ceilings(mine[0].device_name, hardware=hw)
        roofs = [(label, sheet.tflops[k]) for k, label in _ROOFS if sheet and sheet.tflops.get(k)]
        bw = sheet.gbps if sheet else None
        if sheet is None:
            notes.append(f"{hw}: no datasheet peaks (sweep/schema/peaks.py): points without roofs.")
        xs = LogScale.covering([p.intensity or 0 for p in drawable], _L, _W - _R)
        y_vals = [p.tflops or 0 for p in drawable] + [r for _, r in roofs]
        ys = LogScale.covering(y_vals, _H - _B, _T)
        parts = []
        parts += _axes(xs, ys, "arithmetic intensity (FLOP per byte, log)", "achieved TFLOP/s (log)", "", "")
        for i, (label, peak) in enumerate(roofs):
            knee = peak * 1000 / bw if bw else xs.lo
            pts = [
                (xs.lo, min(peak, xs.lo * bw / 1000) if bw else peak),
                (max(knee, xs.lo), peak),
                (xs.hi, peak),
            ]
            path = " ".join(f"{xs(a):.1f},{ys(b):.1f}" for a, b in pts)
            dash = "" if i == 0 else ' stroke-dasharray="6 4"'
            parts.append(
                f'<polyline class="roof" points="{path}" fill="none" stroke="#b3261e" stroke-width="1.4"{dash}/>'
            )
            parts.append(
                text(
                    _W - _R - 4,
                    ys(peak) - 4,
                    f"{label} {format_number(peak)} TFLOP/s",
                    size=11,
                    anchor="end",
                    fill="#b3261e",
                )
            )
        if bw:
            parts.append(
                text(
                    _L + 6,
                    _T + 14,
                    f"memory {format_number(bw)} GB/s ({sheet.source if sheet else ''})",
                    size=11,
                    fill="#b3261e",
                )
            )
        sols = sorted({p.solution for p in drawable})
        failed_of = {p.solution: _failed(failing, p.definition, p.solution, hw) for p in drawable}
        for p in drawable:
            color = PALETTE[sols.index(p.solution) % len(PALETTE)]
            failed = failed_of[p.solution]
            tip = f"{p.definition} / {p.solution}: {format_number(p.tflops or 0)} TFLOP/s at {format_number(p.intensity or 0)} FLOP/B"
            tip += f" ({failed})" if failed else ""
            parts.append(_dot(xs(p.intensity or 0), ys(p.tflops or 0), color, tip, partial=bool(failed)))
        labels = {n: f"{n} ({failed_of[n]}: hollow)" if failed_of[n] else n for n in sols}
        entries = _keys_of(sols, "dot", labels)
        if roofs:
            entries.append(("line", "#b3261e", "roof (datasheet peak)"))
        body, height = _with_legend(parts, entries)
        head = svg_open(_W, height, f"roofline on {hw}", "roofline", max_width=_W * 1.25)
        charts.append((f"Roofline on {hw} ({len(drawable)} traces)", head + "\n" + body))
    return charts, notes


def cross_charts(points: Sequence[CrossPoint], failing: Failing | None = None) -> list[tuple[str, str]]:
    """Per pair of hardware: latency on A (x) against latency on B (y), log-log, with the
    diagonal (equal latency); points under it are faster on B. A legend names each
    definition's colour and the diagonal; points of a solution that failed some workloads on
    either hardware (``failing``) are hollow."""
    failing = failing or {}
    out: list[tuple[str, str]] = []
    for a, b in sorted({(p.hardware_a, p.hardware_b) for p in points}):
        mine = [p for p in points if (p.hardware_a, p.hardware_b) == (a, b)]
        vals = [p.latency_a for p in mine] + [p.latency_b for p in mine]
        xs = LogScale.covering(vals, _L, _W - _R)
        ys = LogScale(xs.lo, xs.hi, _H - _B, _T)
        parts = []
        parts += _axes(xs, ys, f"latency on {a} (ms, log)", f"latency on {b} (ms, log)", "", "")
        parts.append(
            f'<line x1="{xs(xs.lo):.1f}" y1="{ys(xs.lo):.1f}" x2="{xs(xs.hi):.1f}" y2="{ys(xs.hi):.1f}" '
            'stroke="#b3261e" stroke-dasharray="5 4"/>'
        )
        parts.append(text(_L + 6, _T + 14, f"under the dashed line: faster on {b}", size=11, fill="#b3261e"))
        defs = sorted({p.definition for p in mine})
        any_partial = False
        for p in mine:
            color = PALETTE[defs.index(p.definition) % len(PALETTE)]
            failed = "; ".join(
                f"{w} on {hw}" for hw in (a, b) if (w := _failed(failing, p.definition, p.solution, hw))
            )
            any_partial |= bool(failed)
            tip = (
                f"{p.definition} / {p.solution} / {p.workload[:8]}: {format_number(p.latency_a)} ms on {a}, "
                f"{format_number(p.latency_b)} ms on {b}"
            ) + (f" (solution: {failed})" if failed else "")
            parts.append(_dot(xs(p.latency_a), ys(p.latency_b), color, tip, partial=bool(failed)))
        entries = _keys_of(defs, "dot")
        entries.append(("dash", "#b3261e", "equal latency"))
        if any_partial:
            entries.append(("ring", "#5b6475", "hollow: the solution failed some workloads"))
        body, height = _with_legend(parts, entries)
        head = svg_open(_W, height, f"latency on {b} against {a}", "cross-scatter", max_width=_W * 1.25)
        out.append((f"Latency on {b} against {a} ({len(mine)} pairs PASSED on both)", head + "\n" + body))
    return out


def bandwidth_charts(points: Sequence[BandwidthPoint]) -> list[tuple[str, str]]:
    """Per definition of calls made by several ranks: bus bandwidth (GB/s, y) against message
    size (bytes, x), log-log, one line (``<path class="series">``) per solution, world size and
    hardware through its sizes in order, a dot per size with its figures. (title, SVG) pairs."""
    out: list[tuple[str, str]] = []
    for definition in sorted({p.definition for p in points}):
        mine = [p for p in points if p.definition == definition and p.message_bytes > 0 and p.busbw_gbps > 0]
        if not mine:
            continue
        xs = LogScale.covering([p.message_bytes for p in mine], _L, _W - _R)
        ys = LogScale.covering([p.busbw_gbps for p in mine], _H - _B, _T)
        parts = _axes(xs, ys, "message size (bytes per rank, log)", "bus bandwidth (GB/s, log)", " B", "")
        series: dict[tuple[str, int, str], list[BandwidthPoint]] = {}
        for p in mine:
            series.setdefault((p.solution, p.world_size, p.hardware), []).append(p)
        keys = sorted(series)
        names = [f"{sol}, {world} ranks, {hw}" for sol, world, hw in keys]
        for i, (key, name) in enumerate(zip(keys, names)):
            color = PALETTE[i % len(PALETTE)]
            line = sorted(series[key], key=lambda p: p.message_bytes)
            d = " ".join(
                f"{'M' if j == 0 else 'L'}{xs(p.message_bytes):.1f},{ys(p.busbw_gbps):.1f}"
                for j, p in enumerate(line)
            )
            parts.append(
                f'<path class="series" d="{d}" fill="none" stroke="{color}" stroke-width="1.6">'
                f"<title>{esc(name)}</title></path>"
            )
            for p in line:
                tip = f"{name}: {format_number(p.busbw_gbps)} GB/s at {format_number(p.message_bytes)} B"
                parts.append(_dot(xs(p.message_bytes), ys(p.busbw_gbps), color, tip))
        entries = _keys_of(names, "line")
        body, height = _with_legend(parts, entries)
        head = svg_open(
            _W, height, f"bus bandwidth against message size: {definition}", "bandwidth", max_width=_W * 1.25
        )
        out.append(
            (f"{definition}: bus bandwidth against message size ({len(keys)} lines)", head + "\n" + body)
        )
    return out
