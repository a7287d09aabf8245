"""``sweep tune``: a guided search of the config's parameter spaces (``solutions.search``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import AddressOpt, HardwareOpt, QuietOpt, ResultsDirOpt, StoreOpt, make_overrides

__all__ = ["app"]


@app.command()
def tune(
    config: Annotated[Path, typer.Argument(help="Sweep config (YAML) with solutions.search.")],
    address: AddressOpt = None,
    hardware: HardwareOpt = None,
    results_dir: ResultsDirOpt = None,
    store: StoreOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Search each solution's parameter space as solutions.search says (grid, random, forest,
    evolution), one decision per workload or shape bucket; proposals run as ordinary tasks
    on every GPU of the cluster and are stored as traces. Killed, it resumes from the store.
    The decisions (winner, ties after re-measurement, how often the winner changed, held-back
    shapes) go to <results_dir>/tuning/<sweep>.search.json. See docs/tuning.md.

    Example: sweep tune configs/tune-cpu.yaml && sweep export-tuning --store results/tune-cpu/sweep.duckdb --out t.json
    """
    from sweep.launch.driver import LaunchOptions
    from sweep.launch.tune import tune as run_tune
    from sweep.schema.params import params_json

    overrides = make_overrides(hardware=hardware, address=address, results_dir=results_dir, store=store)
    outcomes = run_tune(config, LaunchOptions(overrides=overrides, quiet=quiet))
    for o in outcomes:
        chosen = params_json(o.chosen) if o.chosen is not None else "none passed"
        ms = f"{o.objective_ms:.4g} ms" if o.objective_ms is not None else "-"
        echo(
            f"{o.group}: {chosen} {ms}; {o.evaluations} evaluations ({o.resumed} from the store), "
            f"stopped: {o.stopped}; ties: {len(o.ties)}; winner changed {o.winner_changes}x in re-measurement"
        )
        for h in o.held_back:
            gap = h["gap"]
            echo(
                f"  held back {h['workload']}: {'-' if gap is None else f'{100 * float(str(gap)):.1f}%'} from the grid's best"
            )
