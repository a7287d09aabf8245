"""``sweep export-tuning``: the best parameter point per shape, for a kernel to look up."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import StoreLogsOpt
from sweep.config import DEFAULT_STORE_PATH

__all__ = ["app"]


@app.command("export-tuning")
def export_tuning(
    out: Annotated[Path, typer.Option("--out", help="The JSON file to write.")],
    store: Annotated[Path, typer.Option("--store", help="The store to read.")] = DEFAULT_STORE_PATH,
    results_dir: StoreLogsOpt = None,
) -> None:
    """Write the fastest PASSED parameter point per definition, solution, hardware and workload
    shape (view best_params) as a JSON table that sweep.tuning.lookup reads.

    Example: sweep export-tuning --store results/sweep.duckdb --out tuning.json
    """
    from sweep.store import write_tuning

    table = write_tuning(store, out, results_dir=results_dir)
    n = sum(len(e) for sols in table["tables"].values() for hws in sols.values() for e in hws.values())
    echo(f"wrote {out}: {n} shapes of {len(table['tables'])} definitions")
