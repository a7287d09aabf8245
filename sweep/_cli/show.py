"""``sweep show``: one task's trace and log from the store, by task id or a prefix of it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.store import ResultsOpt, StoreFileOpt
from sweep.config import DEFAULT_STORE_PATH
from sweep.errors import StoreError, listing, shown

__all__ = ["app", "show"]

#: What a task id (or a prefix of one) may hold: it goes into a query.
_TASK_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_FIELDS = (
    "task_id",
    "definition",
    "solution",
    "solution_hash",
    "workload_uuid",
    "axes",
    "status",
    "hardware",
    "device_name",
    "latency_ms",
    "reference_latency_ms",
    "speedup_factor",
    "max_absolute_error",
    "max_relative_error",
    "flags",
    "run_id",
    "sweep",
    "attempt",
    "finished_at",
)


@app.command("show")
def show(
    task_id: Annotated[
        str, typer.Argument(help="A task id, or a unique prefix of one (the launch summary prints them).")
    ],
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
) -> None:
    """Print one task's trace (its newest run) and its whole log.

    Exit codes: 0 shown; 1 no task or several match the id, or no store.

    Example: sweep show 3f2a9c
    """
    from sweep.store import query

    if not _TASK_ID.fullmatch(task_id):
        raise StoreError(f"task id {shown(task_id)}: expected letters, digits, '_', '-', '.' or ':'")
    cols = ", ".join(_FIELDS)
    sql = (
        f"SELECT {cols}, log FROM traces WHERE starts_with(task_id, '{task_id}') "
        "ORDER BY finished_at DESC NULLS LAST"
    )
    result = query(Path(store), sql, results_dir=results_dir)
    ids = sorted({str(r[0]) for r in result.rows})
    if not ids:
        raise StoreError(
            f"no task {shown(task_id)} in {store} (the launch summary and "
            "'sweep query \"SELECT task_id, status FROM latest\"' list task ids)"
        )
    if len(ids) > 1:
        raise StoreError(
            f"task id prefix {shown(task_id)} is ambiguous: {listing(ids[:8])} (give more of it)"
        )
    row = result.rows[0]
    width = max(len(c) for c in _FIELDS)
    for name, value in zip(_FIELDS, row[: len(_FIELDS)]):
        if value is not None and value != "" and value != []:
            echo(f"{name.ljust(width)}  {value}")
    if len(result.rows) > 1:
        echo(f"{'runs'.ljust(width)}  {len(result.rows)} traces of this task; the newest shown")
    log = str(row[len(_FIELDS)] or "").rstrip()
    echo("\n--- log ---\n" + (log or "(empty)"))
