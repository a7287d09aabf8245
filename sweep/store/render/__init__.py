"""Showing what the store holds: query answers as text tables, JSON or CSV, and the report
``sweep report`` prints (per-hardware summary, leaderboard, backend scores, cross-hardware
summary) as text or as one self-contained HTML page.

This package reads the store through its queries; :mod:`sweep.store` never imports it.
No DuckDB or Arrow import happens at import time of this package.
"""

from sweep.store.render._chart_data import SpeedupSample, comparison_samples
from sweep.store.render._formats import (
    cell,
    format_number,
    format_percent,
    format_speedup,
    format_table,
    json_value,
    percent,
    ratio,
    to_csv,
    to_json,
)
from sweep.store.render._html import render_html
from sweep.store.render._report import Report, ReportTable, SpeedupBar, build_report, render_text

__all__ = [
    "Report",
    "ReportTable",
    "SpeedupBar",
    "SpeedupSample",
    "build_report",
    "cell",
    "comparison_samples",
    "format_number",
    "format_percent",
    "format_speedup",
    "format_table",
    "json_value",
    "percent",
    "ratio",
    "render_html",
    "render_text",
    "to_csv",
    "to_json",
]
