"""Rendering query answers: aligned text tables, JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal

from sweep.store._query import QueryResult

__all__ = ["cell", "format_table", "json_value", "number", "percent", "ratio", "to_csv", "to_json"]


def json_value(value: object) -> object:
    """A query value as JSON data: maps become objects, times ISO strings, NaN ``"NaN"``."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): json_value(v) for k, v in value}
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return value


def cell(value: object, width: int | None = 40) -> str:
    """A value as one short table cell."""
    if value is None:
        text = ""
    elif isinstance(value, float):
        text = f"{value:.6g}" if math.isfinite(value) else str(json_value(value))
    elif isinstance(value, datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
    elif isinstance(value, (list, dict)):
        text = json.dumps(json_value(value), separators=(",", ":"))
    else:
        text = str(value)
    text = text.replace("\n", "\\n")
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def format_table(columns: Sequence[str], rows: Sequence[Sequence[object]], *, width: int | None = 40) -> str:
    """An aligned text table with a header rule; numbers right-aligned."""
    cells = [[cell(v, width) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    numeric = [
        bool(rows) and all(isinstance(r[i], (int, float, Decimal)) or r[i] is None for r in rows)
        for i in range(len(columns))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(list(columns)), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def to_json(result: QueryResult) -> str:
    """Rows as a JSON array of objects (duplicate column names get a ``_2`` suffix)."""
    names: list[str] = []
    for c in result.columns:
        name, i = c, 2
        while name in names:
            name, i = f"{c}_{i}", i + 1
        names.append(name)
    data = [{n: json_value(v) for n, v in zip(names, row)} for row in result.rows]
    return json.dumps(data, indent=2, allow_nan=False)


def _csv_cell(value: object) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(json_value(value))
    return cell(value, None)


def to_csv(result: QueryResult) -> str:
    """Rows as CSV with a header line; nested values as compact JSON."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(result.columns)
    for row in result.rows:
        w.writerow([_csv_cell(v) for v in row])
    return buf.getvalue()


# ---- numbers for people: the one place a figure shown in a summary is formatted ----


def number(value: float) -> str:
    """A figure for people: two decimals from 1 up (``12.35``), two significant digits below
    (``0.0041``, not ``4.1e-03``), exponent only far out (``1.2e+09``, ``3.0e-08``)."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    size = abs(value)
    if size == 0:
        return "0"
    if size >= 1e6 or size < 1e-6:
        return f"{value:.1e}"
    if size >= 1:
        return f"{value:.2f}"
    decimals = 1 - math.floor(math.log10(size))
    text = f"{value:.{decimals}f}"
    if abs(float(text)) >= 1:  # 0.996 rounded up to 1.0
        return f"{value:.2f}"
    return text


def ratio(value: float | None) -> str:
    """A speedup: ``1.23x``, ``0.0041x``; ``-`` for none."""
    return "-" if value is None else number(value) + "x"


def percent(fraction: float | None) -> str:
    """A fraction as a percentage: ``100%``, ``99.5%``, ``0.1%``; ``-`` for none."""
    if fraction is None:
        return "-"
    if math.isnan(fraction) or math.isinf(fraction):
        return str(fraction)
    text = f"{fraction * 100:.1f}"
    return text.removesuffix(".0") + "%"
