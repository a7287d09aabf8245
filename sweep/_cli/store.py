"""Results store commands: ingest, query, report, export."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo
from sweep.config import DEFAULT_STORE_PATH
from sweep.errors import StoreError

if TYPE_CHECKING:
    from sweep.store import ExportReport, IngestReport
    from sweep.store.render import Report

__all__ = ["app", "render_export", "render_ingest", "report_json"]

_MAX_WARNINGS = 20

StoreFileOpt = Annotated[Path, typer.Option("--store", help="The DuckDB store file.", show_default=True)]
ResultsOpt = Annotated[
    Path | None,
    typer.Option(
        "--results-dir",
        help="Results folder whose JSONL logs complete the store (default: the store's folder).",
    ),
]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render_ingest(r: IngestReport) -> str:
    """The summary ``sweep ingest`` prints."""
    src = ([_plural(r.files, "file")] if r.files or not r.exports else []) + (
        [_plural(r.exports, "export")] if r.exports else []
    )
    lines = [
        (
            f"ingested {_plural(r.traces_read, 'trace')} from {' and '.join(src)} into {r.store}: "
            f"{r.added.traces} added, {r.added.present} already stored"
        ),
        (
            f"workloads: {r.workload_records} workload-only records, {r.added.workloads} new workloads; "
            f"definitions: {r.added.definitions} new; solutions: {r.added.solutions} new"
        ),
    ]
    if r.exports:
        lines[0] = (
            f"ingested {' and '.join(src)} into {r.store}: {r.added.traces} traces added, "
            f"{r.added.present} already stored"
        )
    if r.skipped:
        lines.append(
            f"skipped {_plural(r.skipped, 'invalid record')} (warnings above); fix or delete them and "
            "ingest again: what is stored already is not added twice"
        )
    return "\n".join(lines)


def render_export(r: ExportReport) -> str:
    """The summary ``sweep export`` prints."""
    hw = ", ".join(r.hardware) or "none"
    return (
        f"exported {_plural(r.traces, 'trace')} (hardware: {hw}), "
        f"{_plural(r.rows.get('definitions', 0), 'definition')}, "
        f"{_plural(r.rows.get('solutions', 0), 'solution')}, "
        f"{_plural(r.rows.get('workloads', 0), 'workload')} to {r.folder}"
    )


@contextmanager
def _timeline_on_stderr() -> Iterator[None]:
    """The ingest's DEBUG lines (:data:`sweep.store.INGEST_LOGGER`) on stderr meanwhile, with
    the seconds since the start."""
    import logging
    import time

    from sweep.store import INGEST_LOGGER

    start = time.perf_counter()

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            echo(f"{time.perf_counter() - start:8.3f} s  {record.getMessage()}", err=True)

    log = logging.getLogger(INGEST_LOGGER)
    handler, level = _Lines(), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def _notes(notes: list[str]) -> None:
    for n in notes:
        echo(f"note: {n}", err=True)


@app.command()
def ingest(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Trace files (*.jsonl, *.json), folders, or folders written by 'sweep export'."),
    ],
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    timeline: Annotated[
        bool,
        typer.Option(
            "--timeline",
            help="Print each insert as it happens (its traces, seconds, how long the reading waited for it) "
            "and when the reading ended: whether the parsing or the one writer bounds the ingest.",
        ),
    ] = False,
) -> None:
    """Add traces to the store; ingesting the same file twice adds nothing.

    Reads sweep's own results folders (to rebuild or catch up a store), FlashInfer-Bench
    trace and workload files, definitions and solutions, and Parquet exports of other stores.

    Example: sweep ingest results/ /data/flashinfer-trace/traces --store results/sweep.duckdb
    """
    from sweep.store import ingest as ingest_paths

    with _timeline_on_stderr() if timeline else nullcontext():
        report = ingest_paths(paths, store)
    for w in report.warnings[:_MAX_WARNINGS]:
        echo(f"warning: {w}", err=True)
    if len(report.warnings) > _MAX_WARNINGS:
        echo(f"warning: ... and {len(report.warnings) - _MAX_WARNINGS} more", err=True)
    echo(render_ingest(report))


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="One SQL query (SELECT ...); the session is read-only.")],
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as a JSON array.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print rows as CSV.")] = False,
    width: Annotated[int, typer.Option("--width", min=8, help="Widest table cell.")] = 40,
) -> None:
    """Run one SQL query on the store. Tables: traces, definitions, solutions, workloads; views:
    latest, best, cross_hardware, leaderboard, op_scores, backend_scores; macro perf_at(p).

    Works while a sweep is writing (it sees every trace finished so far). Read-only: one
    statement, a query; no other file can be read or written from it.

    Example: sweep query "SELECT solution, hardware, op_speedup FROM leaderboard ORDER BY 3 DESC"
    """
    from sweep.store import query as run_query
    from sweep.store.render import format_table, to_csv, to_json

    if as_json and as_csv:
        raise StoreError("choose one of --json and --csv")
    result = run_query(store, sql, results_dir=results_dir)
    _notes(result.notes)
    if as_json:
        echo(to_json(result))
    elif as_csv:
        echo(to_csv(result), nl=False)
    elif result.columns:
        echo(format_table(result.columns, result.rows, width=width))
        echo(f"({_plural(len(result.rows), 'row')})")
    else:
        echo("ok")


def report_json(rep: Report) -> str:
    """``sweep report --json``: the report's tables, each row an object."""
    import json

    from sweep.store.render import json_value

    tables = [
        {
            "title": t.title,
            "columns": t.columns,
            "rows": [{c: json_value(v) for c, v in zip(t.columns, row)} for row in t.rows],
            "note": t.note,
        }
        for t in rep.tables
    ]
    data = {
        "store": rep.store,
        "source": rep.source,
        "generated_at": rep.generated_at.isoformat(),
        "notes": rep.notes,
        "tables": tables,
    }
    return json.dumps(data, indent=2, allow_nan=False)


@app.command()
def report(
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML page.")
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="Solutions per definition and hardware.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report's tables as JSON.")] = False,
    uncovered: Annotated[
        float | None,
        typer.Option(
            "--uncovered",
            help="Fraction of end-to-end time outside the stored kernels, in [0, 1): the first "
            "section's end-to-end speedup and its bound.",
        ),
    ] = None,
    compare_sides: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--compare",
            metavar="A B",
            help="Add 'sweep compare A B' (same side syntax, 5% threshold) as a table of the report.",
        ),
    ] = None,
    all_versions: Annotated[
        bool,
        typer.Option(
            "--all-versions",
            help="Show every version of an edited solution, each labelled by its content hash "
            "(default: each solution's current version, its newest trace's).",
        ),
    ] = False,
) -> None:
    """Print the leaderboard, backend scores and a cross-hardware summary.

    Example: sweep report --html results/report.html

    Example: sweep report --compare sweep:nightly-prev sweep:nightly --html results/report.html
    """
    from sweep.store import check_output, write_output
    from sweep.store.render import build_report, render_html, render_text

    if html is not None:
        check_output(html, store_path=store, results_dir=results_dir, flag="--html")
    rep = build_report(
        store, results_dir=results_dir, top=top, uncovered=uncovered, all_versions=all_versions
    )
    if compare_sides is not None:
        from sweep._cli.compare import render_summary, rows_of
        from sweep.store import compare as run_compare
        from sweep.store.render import comparison_samples

        a, b = compare_sides
        result = run_compare(a, b, store=store, results_dir=results_dir, threshold=0.05)
        rep.compare_title = f"Comparison: {b} (B) against {a} (A)"
        rep.compare_samples = comparison_samples(result.tasks)
        table = rows_of(result)
        rep.add_table(
            f"compare: {b} (B) against {a} (A), latency ratio B/A",
            table.columns,
            table.rows,
            render_summary(result).replace("\n", "; "),
        )
    echo(report_json(rep) if as_json else render_text(rep))
    if html is not None:
        write_output(html, render_html(rep), store_path=store, results_dir=results_dir, flag="--html")
        echo(f"wrote {html}", err=as_json)


@app.command()
def export(
    parquet: Annotated[Path, typer.Option("--parquet", help="New or empty folder to write.")],
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
) -> None:
    """Export the store as Parquet, traces partitioned by hardware; 'sweep ingest' reads it
    back, so stores of different clusters merge into one.

    Example: sweep export --parquet exports/h100 --store results/sweep.duckdb
    """
    from sweep.store import export_parquet

    echo(render_export(export_parquet(store, parquet, results_dir=results_dir)))
