"""``sweep export-tuning``: the best parameter point per shape, as a plain JSON table.

The table is the one :mod:`sweep.tuning` reads (see there for the format): per definition,
solution and hardware, one entry per workload with the workload's axes, the fastest PASSED
point (view ``best_params``, the fastest over settings when several) and its speedups.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweep.errors import StoreError
from sweep.store._outputs import check_output, write_output
from sweep.store.read._query import query

__all__ = ["TUNING_FORMAT", "TUNING_VERSION", "tuning_table", "write_tuning"]

TUNING_FORMAT = "kernel-sweep-tuning"
TUNING_VERSION = 1

_SQL = """SELECT definition, solution, hardware, workload_uuid, to_json(axes)::VARCHAR, best_params, latency_ms,
       speedup_over_default, speedup_over_reference, points_passed
FROM best_params
QUALIFY row_number() OVER (
    PARTITION BY definition, solution, hardware, workload_uuid ORDER BY latency_ms ASC, best_params ASC) = 1
ORDER BY definition, solution, hardware, workload_uuid"""


def tuning_table(store_path: Path, *, results_dir: Path | None = None) -> dict[str, Any]:
    """The tuning table of a store (entries ordered by definition, solution, hardware, workload).

    Raises:
        StoreError: No store, or no parameter point has passed in it.
    """
    rows = query(store_path, _SQL, results_dir=results_dir).rows
    if not rows:
        raise StoreError(
            f"{store_path}: no PASSED trace of a parameter point; sweep a solution with params first "
            "(docs/parameter-sweeps.md)"
        )
    tables: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    for definition, solution, hardware, uuid, axes, params, latency, over_default, over_ref, n in rows:
        entry = {
            "axes": json.loads(str(axes)) if axes is not None else {},
            "params": json.loads(str(params)),
            "workload": uuid,
            "latency_ms": latency,
            "speedup_over_default": over_default,
            "speedup_over_reference": over_ref,
            "points_passed": n,
        }
        by_hw: dict[str, list[dict[str, Any]]] = tables.setdefault(str(definition), {}).setdefault(
            str(solution), {}
        )
        by_hw.setdefault(str(hardware), []).append(entry)
    return {"format": TUNING_FORMAT, "version": TUNING_VERSION, "tables": tables}


def write_tuning(store_path: Path, out: Path, *, results_dir: Path | None = None) -> dict[str, Any]:
    """Write :func:`tuning_table` to ``out`` (indented JSON); returns the table.

    Raises:
        StoreError: As for :func:`tuning_table`, or ``out`` cannot be written or is no file to
            write: the store, its write-ahead log or logs, a folder, a device, a FIFO, another
            store (:func:`sweep.store._outputs.write_output`).
    """
    check_output(out, store_path=store_path, results_dir=results_dir, flag="--out")
    table = tuning_table(store_path, results_dir=results_dir)
    text = json.dumps(table, indent=2, sort_keys=False, allow_nan=False) + "\n"
    write_output(out, text, store_path=store_path, results_dir=results_dir, flag="--out")
    return table
