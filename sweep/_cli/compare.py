"""``sweep compare A B``: latency of B against A, task by task, with verdicts and a CI gate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import StoreLogsOpt
from sweep.config import DEFAULT_STORE_PATH
from sweep.errors import StoreError

if TYPE_CHECKING:
    from sweep.store import Comparison, QueryResult, TaskComparison

__all__ = ["COLUMNS", "app", "render_summary", "rows_of"]

#: The columns of the table, ``--json`` and ``--csv``.
COLUMNS = [
    "definition",
    "solution",
    "workload_uuid",
    "hardware_a",
    "hardware_b",
    "status_a",
    "status_b",
    "latency_ms_a",
    "latency_ms_b",
    "ratio",
    "ci_low",
    "ci_high",
    "noise_a",
    "noise_b",
    "basis_a",
    "basis_b",
    "verdict",
    "sm_clock_mhz_a",
    "sm_clock_mhz_b",
]
# The text table leaves out what --json and --csv carry for machines.
_TEXT_COLUMNS = ["definition", "solution", "workload_uuid", "latency_ms_a", "latency_ms_b", "ratio"]
_VERDICT_WORDS = {"noisy": "too noisy to say", "failed": "failed on a side"}


def _row(t: TaskComparison) -> tuple[object, ...]:
    return tuple(getattr(t, c) for c in COLUMNS)


def rows_of(c: Comparison) -> QueryResult:
    """The comparison's tasks as a query answer (for the shared JSON and CSV writers)."""
    from sweep.store import QueryResult

    return QueryResult(list(COLUMNS), [], [_row(t) for t in c.tasks])


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x * 100:.1f}%"


def render_summary(c: Comparison) -> str:
    """The lines under the table: what each side held, geomean ratio, counts per verdict."""
    s = c.summary
    geo = "n/a" if s.geomean_ratio is None else f"{s.geomean_ratio:.4g} (B/A; under 1: B is faster)"
    counts = ", ".join(f"{n} {_VERDICT_WORDS.get(v, v)}" for v, n in s.counts.items() if n)
    lines = [
        f"A: {c.a.text} ({c.a.traces} traces, {', '.join(c.a.hardware)})",
        f"B: {c.b.text} ({c.b.traces} traces, {', '.join(c.b.hardware)})",
        f"{s.tasks} tasks matched{' across hardware' if c.across_hardware else ''}: {counts}; threshold {_pct(c.threshold)}",
        f"geomean ratio: {geo}",
    ]
    if s.only_a or s.only_b:
        lines.append(f"not matched: {s.only_a} tasks only in A, {s.only_b} only in B")
    return "\n".join(lines)


def _text_table(c: Comparison, width: int) -> str:
    from sweep.store.render import format_table

    cols = [*_TEXT_COLUMNS, "ci", "verdict"]
    if not c.across_hardware:
        cols.insert(3, "hardware")
    rows = []
    for t in c.tasks:
        ci = "" if t.ci_low is None or t.ci_high is None else f"[{t.ci_low:.3f}, {t.ci_high:.3f}]"
        row: list[object] = [getattr(t, k) for k in _TEXT_COLUMNS] + [
            ci,
            _VERDICT_WORDS.get(t.verdict, t.verdict),
        ]
        if not c.across_hardware:
            row.insert(3, t.hardware_a)
        rows.append(row)
    return format_table(cols, rows, width=width)


@app.command()
def compare(
    a: Annotated[
        str,
        typer.Argument(
            metavar="A",
            help="Side A, the baseline: PATH, run:ID, sweep:NAME, hw:NAME, hash:PREFIX, NAME@PREFIX.",
        ),
    ],
    b: Annotated[str, typer.Argument(metavar="B", help="Side B, the change (same syntax).")],
    store: Annotated[
        Path, typer.Option("--store", help="The store that run:, sweep:, hw: and hash: sides select from.")
    ] = DEFAULT_STORE_PATH,
    results_dir: StoreLogsOpt = None,
    threshold: Annotated[
        float,
        typer.Option("--threshold", min=0.0, max=1000.0, help="Percent change under which a task is 'same'."),
    ] = 5.0,
    fail_on_slower: Annotated[
        float | None,
        typer.Option(
            "--fail-on-slower",
            min=0.0,
            help="Exit 1 if a task is slower by more than PCT percent (or passed on A and fails on B).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tasks as a JSON array.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print the tasks as CSV.")] = False,
    width: Annotated[int, typer.Option("--width", min=8, help="Widest table cell.")] = 40,
    cycles: Annotated[
        bool,
        typer.Option(
            "--cycles",
            help="Compare clock-normalised time: latencies in thousands of SM cycles (latency x the "
            "SM clock NVML read while timed), as nvbench's compare; traces without a clock are left out.",
        ),
    ] = False,
) -> None:
    """Compare latencies of B against A task by task: ratio, 95% interval, verdict (faster,
    slower, same, too noisy to say), geomean ratio. Tasks match on definition, solution name
    and workload (and hardware, unless a side is hw:NAME).

    Example: sweep compare run:20260101T000000Z-3f9a1c run:20260102T000000Z-77ab01 --fail-on-slower 5
    """
    from sweep.store import compare as run_compare
    from sweep.store.render import to_csv, to_json

    if as_json and as_csv:
        raise StoreError("choose one of --json and --csv")
    result = run_compare(a, b, store=store, results_dir=results_dir, threshold=threshold / 100, cycles=cycles)
    for note in result.notes:
        echo(f"note: {note}", err=True)
    if as_json:
        echo(to_json(rows_of(result)))
    elif as_csv:
        echo(to_csv(rows_of(result)), nl=False)
    else:
        echo(_text_table(result, width))
        echo(render_summary(result))
    if fail_on_slower is not None:
        bad = result.regressions(fail_on_slower)
        if bad:
            lines = [
                f"error: {len(bad)} tasks slower than A by more than {fail_on_slower:g}% (or failing on B):"
            ]
            lines += [
                f"  {t.label}: " + (f"ratio {t.ratio:.4g}" if t.ratio is not None else f"status {t.status_b}")
                for t in bad
            ]
            echo("\n".join(lines), err=True)
            raise SystemExit(1)
