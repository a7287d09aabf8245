"""Pieces of the report's inline SVG charts: the log axis scale and escaped SVG elements.

Charts are SVG strings with a ``viewBox`` and ``width="100%"``, so they take the page's width;
every length below is in viewBox units (about pixels at a 1200-wide page).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from dataclasses import dataclass

from sweep.store.render._formats import format_number

__all__ = ["HATCH", "PALETTE", "LogScale", "esc", "legend", "svg_open", "text", "tick_label"]

PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5"]

#: A diagonal hatch drawn over what belongs to a solution that failed some of its workloads;
#: ``fill="url(#sweep-hatch)"`` once a chart holds :data:`HATCH`.
HATCH = (
    '<defs><pattern id="sweep-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="none"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#fff" stroke-width="2.5"/></pattern></defs>'
)

#: Legend rows and an entry's swatch, in viewBox units.
_LEGEND_ROW = 18.0
_SWATCH = 12.0
#: An upper bound of one character's width in a legend's 12 px text.
_LEGEND_CHAR = 7.0

#: The widest range an axis spans, in decades (values outside are drawn at the edge).
MAX_DECADES = 12


def esc(s: object) -> str:
    """Text or an attribute value, escaped for SVG/HTML."""
    return html.escape(str(s), quote=True)


@dataclass(frozen=True)
class LogScale:
    """Maps values in ``[lo, hi]`` (both > 0) to ``[start, end]`` on a log10 axis; values
    outside (and values <= 0) are clamped to the ends."""

    lo: float
    hi: float
    start: float
    end: float

    @classmethod
    def covering(
        cls, values: Iterable[float], start: float, end: float, *, include: Iterable[float] = ()
    ) -> LogScale:
        """A scale over whole decades that covers every finite positive value (and those of
        ``include``), at most :data:`MAX_DECADES` decades wide (centred on the values' median)."""
        vals = sorted(v for v in [*values, *include] if math.isfinite(v) and v > 0)
        if not vals:
            return cls(0.1, 10.0, start, end)
        lo_e = math.floor(math.log10(vals[0]))
        hi_e = math.ceil(math.log10(vals[-1]))
        lo_e -= 10.0**lo_e > vals[0]  # log10 rounds: 999999.9999999999 gives 6.0
        hi_e += 10.0**hi_e < vals[-1]
        if hi_e <= lo_e:
            hi_e = lo_e + 1
        if hi_e - lo_e > MAX_DECADES:
            mid = round(math.log10(vals[len(vals) // 2]))
            lo_e, hi_e = mid - MAX_DECADES // 2, mid + MAX_DECADES // 2
        return cls(10.0**lo_e, 10.0**hi_e, start, end)

    def __call__(self, value: float) -> float:
        if not math.isfinite(value) or value <= self.lo:
            return self.start if not (math.isfinite(value) and value > self.hi) else self.end
        if value >= self.hi:
            return self.end
        frac = (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        return self.start + frac * (self.end - self.start)

    def ticks(self) -> list[float]:
        """Every decade in range; also 2 and 5 times each when the range is 2 decades or less."""
        lo_e = round(math.log10(self.lo))
        hi_e = round(math.log10(self.hi))
        out: list[float] = []
        for e in range(lo_e, hi_e + 1):
            for m in (1, 2, 5) if hi_e - lo_e <= 2 else (1,):
                v = m * 10.0**e
                if v <= self.hi * (1 + 1e-9):
                    out.append(v)
        return out


def text(
    x: float,
    y: float,
    body: str,
    *,
    size: float = 12,
    anchor: str = "start",
    fill: str = "#1d2330",
    cls: str = "",
    extra: str = "",
) -> str:
    """A ``<text>`` element; ``body`` is escaped here."""
    c = f' class="{cls}"' if cls else ""
    e = f" {extra}" if extra else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}" fill="{fill}"{c}{e}>'
        f"{esc(body)}</text>"
    )


def _swatch(kind: str, x: float, y: float, color: str) -> str:
    """One legend swatch whose top left is (x, y): ``box``, ``hatch`` (a box hatched as a
    partly failing solution is), ``shade`` (a row shaded as one), ``dot``, ``ring`` (a hollow dot), ``line`` or ``dash``."""
    mid = y + _SWATCH / 2
    if kind == "dot":
        return f'<circle cx="{x + 6:.1f}" cy="{mid:.1f}" r="4" fill="{color}" fill-opacity="0.7"/>'
    if kind == "ring":
        return (
            f'<circle cx="{x + 6:.1f}" cy="{mid:.1f}" r="4" fill="#fff" stroke="{color}" stroke-width="1.6"/>'
        )
    if kind in ("line", "dash"):
        dash = ' stroke-dasharray="5 4"' if kind == "dash" else ""
        return f'<line x1="{x:.1f}" x2="{x + 22:.1f}" y1="{mid:.1f}" y2="{mid:.1f}" stroke="{color}"{dash}/>'
    if kind == "shade":
        return f'<rect x="{x:.1f}" y="{y:.1f}" width="{_SWATCH}" height="{_SWATCH}" fill="#b3261e" fill-opacity="0.15"/>'
    box = f'<rect x="{x:.1f}" y="{y:.1f}" width="{_SWATCH}" height="{_SWATCH}" fill="{color}"/>'
    if kind == "hatch":
        box += (
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{_SWATCH}" height="{_SWATCH}" fill="url(#sweep-hatch)"/>'
        )
    return box


def legend(entries: list[tuple[str, str, str]], x: float, y: float, width: float) -> tuple[str, float]:
    """A chart's legend: ``(kind, color, label)`` entries (kinds as :func:`_swatch`) laid out
    left to right from (x, y), wrapped at ``width``; the ``<g class="legend">`` and its height."""
    parts, cx, cy = ['<g class="legend">'], x, y
    for kind, color, label in entries:
        sw = 22.0 if kind in ("line", "dash") else _SWATCH
        w = sw + 6 + _LEGEND_CHAR * len(label) + 18
        if cx > x and cx + w > x + width:
            cx, cy = x, cy + _LEGEND_ROW
        parts.append(
            f'<g class="entry">{_swatch(kind, cx, cy, color)}'
            + text(cx + sw + 5, cy + 10, label, size=12)
            + "</g>"
        )
        cx += w
    parts.append("</g>")
    return "".join(parts), cy - y + _LEGEND_ROW


def svg_open(width: float, height: float, label: str, cls: str, *, max_width: float | None = None) -> str:
    """The opening tag of a chart that scales to the page's width (at most ``max_width``)."""
    style = f' style="max-width: {max_width:.0f}px"' if max_width else ""
    return (
        f'<svg class="chart {cls}" width="100%" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="{esc(label)}"{style}>'
    )


def tick_label(value: float, unit: str = "") -> str:
    """A tick's label: ``0.001x``, ``10x``, ``1e-06 ms``."""
    return format_number(value) + unit
