"""``sweep calibrate``: measure this node's ceilings and keep them for fractions of peak."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import DeviceOpt
from sweep.config import DEFAULT_RESULTS_DIR, default_store_path
from sweep.schema import Ceilings
from sweep.schema.peaks import RATE_KEYS, datasheet_ceilings

__all__ = ["app", "render_calibration"]


def _versus(value: float, peak: float | None, unit: str) -> str:
    if not peak:
        return ""
    return f"   (datasheet {peak:g} {unit}: {value / peak:.0%})"


def render_calibration(c: Ceilings) -> str:
    """What ``sweep calibrate`` prints: each ceiling, beside the datasheet's where known."""
    sheet = datasheet_ceilings(c.device_name or c.hardware, hardware=c.hardware)
    where = f" ({c.device_name})" if c.device_name else ""
    lines = [f"calibrated {c.hardware}{where} on {c.node or '?'} at {c.measured_at or '?'}:"]
    if c.gbps is not None:
        lines.append(
            f"  copy bandwidth   {c.gbps:10.1f} GB/s" + _versus(c.gbps, sheet.gbps if sheet else None, "GB/s")
        )
    for key in RATE_KEYS:
        value = c.tflops.get(key)
        if value is None:
            continue
        peak = sheet.tflops.get(key) if sheet else None
        lines.append(f"  gemm {key:<11} {value:10.3f} TFLOP/s" + _versus(value, peak, "TFLOP/s"))
    if sheet is not None:
        lines.append(f"datasheet: {sheet.source.removeprefix('datasheet ')}")
    return "\n".join(lines)


@app.command()
def calibrate(
    device: DeviceOpt = None,
    results_dir: Annotated[
        Path, typer.Option("--results-dir", help="Results folder; the file goes to its calibration/.")
    ] = Path(DEFAULT_RESULTS_DIR),
    store: Annotated[
        Path | None,
        typer.Option(
            "--store", help="DuckDB store to add the rows to (default: sweep.duckdb in the results folder)."
        ),
    ] = None,
) -> None:
    """Measure this node's ceilings: copy bandwidth and dense GEMM TFLOP/s per dtype.

    Writes RESULTS/calibration/<hardware>.json (launches and 'sweep eval' read it, so fractions
    of peak use what the node reaches) and adds rows to the store's calibrations table. A GPU
    takes a few seconds (1 GiB copy, 8192^3 GEMMs); a CPU too (64 MiB copy, 512^3 GEMMs).

    Example: sweep calibrate --device cuda --results-dir results
    """
    from sweep.engine import calibrate as measure
    from sweep.store import save_calibration

    ceilings = measure(device)
    store_path = store if store is not None else default_store_path(results_dir)
    path = save_calibration(ceilings, results_dir, store_path)
    echo(render_calibration(ceilings))
    echo(f"wrote {path}; added rows to the calibrations table of {store_path}")
