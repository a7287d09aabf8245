"""Rendering query answers: aligned text tables, JSON and CSV; numbers for people (the one
home of the report's number formats: :func:`format_number`, :func:`format_speedup`,
:func:`format_percent`, :func:`human_cell`). Every cell and column name of a table or CSV
goes through :func:`cell` or :func:`sweep.errors.printable`: one line, nothing a terminal
would act on."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal

from sweep.errors import printable
from sweep.store.read import QueryResult

__all__ = [
    "cell",
    "format_number",
    "format_percent",
    "format_speedup",
    "format_table",
    "human_cell",
    "is_percent_column",
    "is_speedup_column",
    "json_value",
    "percent",
    "ratio",
    "to_csv",
    "to_json",
]

#: Columns holding a share (0..1), shown as percentages.
_PERCENT_COLUMNS = {"pass_rate", "correctness_rate", "bb_correctness_score", "correctness_score"}


def format_number(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, in plain notation from 1e-4 to 1e6
    (``0.00412``, ``4.1``, ``123456``) and scientific outside (``1.23e-07``); trailing zeros
    dropped. NaN and infinities as ``nan``, ``inf``, ``-inf``."""
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value == 0:
        return "0"
    mag = math.floor(math.log10(abs(value)))
    rounded = float(f"{value:.{digits - 1}e}")
    if not math.isfinite(rounded):  # within rounding of the largest float
        mag = 308
    elif rounded != 0 and math.floor(math.log10(abs(rounded))) != mag:  # 9.996 -> 10.0
        mag += 1
    if -4 <= mag < 6:
        decimals = max(digits - 1 - mag, 0)
        text = f"{rounded:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    mant, exp = f"{value:.{digits - 1}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return f"{mant}e{exp}"


def format_speedup(value: float) -> str:
    """A speedup (or any ratio) for people: ``0.0041x``, ``1.26x``, ``12.5x``."""
    return format_number(value) + "x"


def format_percent(value: float) -> str:
    """A share of 0..1 as a percentage: ``100%``, ``66.7%``, ``0.15%``."""
    return format_number(value * 100) + "%"


def is_percent_column(column: str) -> bool:
    """Whether a report column holds a share shown as a percentage."""
    return column in _PERCENT_COLUMNS or column.startswith("perf_at") or column.endswith("peak_fraction")


def is_speedup_column(column: str) -> bool:
    """Whether a report column holds a speedup or a ratio of latencies."""
    return "speedup" in column or "ratio" in column


def human_cell(column: str, value: object, width: int | None = 64) -> str:
    """One report cell for people: shares as percentages, speedups with ``x``, other numbers
    to 3 significant digits, booleans as yes/no, nothing as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        if is_percent_column(column) and math.isfinite(value):
            return format_percent(value)
        if is_speedup_column(column) and math.isfinite(value):
            return format_speedup(value)
        return format_number(value)
    return cell(value, width)


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
    # One line, and nothing a terminal would act on: a name from an ingested trace cannot
    # recolour or move what is printed, nor break the table's columns.
    text = printable(text, one_line=True)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def format_table(
    columns: Sequence[str], rows: Sequence[Sequence[object]], *, width: int | None = 40, human: bool = False
) -> str:
    """An aligned text table with a header rule; numbers right-aligned.

    Args:
        human: Numbers for people (:func:`human_cell`) instead of their full precision.
    """
    if human:
        cells = [[human_cell(c, v, width) for c, v in zip(columns, row)] for row in rows]
    else:
        cells = [[cell(v, width) for v in row] for row in rows]
    columns = [printable(c, one_line=True) for c in columns]  # a query names its columns
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
    w.writerow([printable(c, one_line=True) for c in result.columns])
    for row in result.rows:
        w.writerow([_csv_cell(v) for v in row])
    return buf.getvalue()


def ratio(value: float | None) -> str:
    """A speedup in a summary line: ``1.26x``, ``0.0041x``; ``-`` for none."""
    return "-" if value is None else format_speedup(value)


def percent(fraction: float | None) -> str:
    """A share in a summary line: ``100%``, ``99.5%``; ``-`` for none."""
    return "-" if fraction is None else format_percent(fraction)
