"""Calibrated ceilings on disk and in the store (``sweep calibrate`` writes, launches read).

A calibration is one :class:`~sweep.schema.Ceilings` record, measured on one node. It is kept
twice:

- ``<results>/calibration/<hardware>.json``: the newest measurement of that hardware (what a
  launch or ``sweep eval`` hands the engine, so fractions of peak use what the nodes reach);
- the store's ``calibrations`` table: every measurement, one row per metric (``copy_gbps``,
  ``gemm_tflops_<dtype>``), with the hardware, device, node and time.
"""

from __future__ import annotations

from pathlib import Path

from sweep.errors import StoreError, reason, shown
from sweep.schema import Ceilings
from sweep.schema.files import name_problem, write_atomic
from sweep.schema.hardware import record_name, short_name
from sweep.schema.limits import read_bytes
from sweep.store.rows._row_batch import parse_timestamp
from sweep.store.rows._writable_store import WritableStore

__all__ = ["CALIBRATION_DIR", "calibration_for", "calibration_rows", "load_calibrations", "save_calibration"]

#: The folder of calibration files, under a results folder.
CALIBRATION_DIR = "calibration"
#: The largest calibration file read (one is a few hundred bytes).
MAX_CALIBRATION_BYTES = 2**20


def calibration_rows(ceilings: Ceilings) -> list[tuple[object, ...]]:
    """The rows of the ``calibrations`` table for one measurement."""
    metrics: list[tuple[str, float]] = []
    if ceilings.gbps is not None:
        metrics.append(("copy_gbps", ceilings.gbps))
    metrics.extend((f"gemm_tflops_{k}", v) for k, v in sorted(ceilings.tflops.items()))
    when = parse_timestamp(ceilings.measured_at)
    return [
        (ceilings.hardware, ceilings.device_name, ceilings.node, when, metric, value)
        for metric, value in metrics
    ]


def save_calibration(
    ceilings: Ceilings, results_dir: Path, store_path: Path | None, *, lock_timeout_s: float = 30.0
) -> Path:
    """Write the calibration file of ``ceilings``' hardware (replacing an older one) and, when
    ``store_path`` is given, add its rows to the store's ``calibrations`` table.

    Returns:
        The file written.

    Raises:
        StoreError: The file or the store cannot be written.
    """
    folder = Path(results_dir) / CALIBRATION_DIR
    name = f"{record_name(ceilings.hardware)}.json"
    problem = name_problem(name)
    if problem is not None:  # the hardware's name is a device's word: it must not climb out
        raise StoreError(
            f"the hardware {shown(ceilings.hardware)} cannot name a calibration file: it {problem}"
        )
    path = folder / name
    try:
        text = ceilings.model_dump_json(exclude_unset=True, indent=2) + "\n"
        write_atomic(path, text, inside=Path(results_dir))
    except (OSError, ValueError) as e:  # OutputRefused: a folder there, a link out of the results
        raise StoreError(f"cannot write {path}: {reason(e)}") from None
    if store_path is not None:
        store = WritableStore(Path(store_path), lock_timeout_s=lock_timeout_s)
        try:
            with store.writing() as con:
                con.executemany(
                    "INSERT INTO calibrations VALUES (?, ?, ?, ?, ?, ?)", calibration_rows(ceilings)
                )
        finally:
            store.close()
    return path


def load_calibrations(results_dir: Path) -> list[Ceilings]:
    """Every calibration file under ``results_dir`` (none when the folder is missing);
    unreadable files are skipped."""
    folder = Path(results_dir) / CALIBRATION_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            out.append(Ceilings.model_validate_json(read_bytes(path, MAX_CALIBRATION_BYTES)))
        except (OSError, ValueError):  # unreadable, not a regular file, too large, not a record
            continue
    return out


def calibration_for(results_dir: Path, hardware: str) -> Ceilings | None:
    """The newest calibration of ``hardware`` (any spelling) under ``results_dir``, or ``None``."""
    want = short_name(hardware)
    mine = [c for c in load_calibrations(results_dir) if short_name(c.hardware) == want]
    return max(mine, key=lambda c: c.measured_at or "", default=None)
