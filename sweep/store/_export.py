"""Export a store as Parquet, traces partitioned by hardware, so stores can be merged.

Layout of an export folder (``sweep ingest`` reads it back)::

    manifest.json                       format, schema version, counts
    traces/hardware=<HW>/*.parquet      one partition per hardware
    definitions/definitions.parquet
    solutions/solutions.parquet
    workloads/workloads.parquet
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.errors import StoreError
from sweep.schema.files import fresh_folder, publish_folder, write_atomic
from sweep.store._outputs import output_folder_problem
from sweep.store.db._connection import count, sql_literal
from sweep.store.db._schema import DERIVED_COLUMNS, SCHEMA_VERSION
from sweep.store.ingestion._trace_files import EXPORT_FORMAT
from sweep.store.read._store import Store

if TYPE_CHECKING:
    import duckdb

__all__ = ["ExportReport", "export_parquet"]


@dataclass
class ExportReport:
    """What an export wrote.

    Attributes:
        folder: The export folder.
        traces: Traces written.
        hardware: The hardware partitions written.
        rows: Rows written per table.
    """

    folder: Path
    traces: int
    hardware: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)


def _why(err: Exception) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err).strip().splitlines()[0]


def export_parquet(store_path: Path, folder: Path, *, results_dir: Path | None = None) -> ExportReport:
    """Write every table of a store to Parquet (traces partitioned by hardware).

    Args:
        store_path: The DuckDB file.
        folder: A new or empty folder.
        results_dir: The sweep's results folder (default: the store file's folder); traces
            logged there but not stored yet are exported too.

    The tables are written into a fresh folder beside ``folder``, renamed to it once whole:
    an export that fails leaves nothing, and nothing can be planted in it meanwhile.

    Raises:
        StoreError: The folder is not new or empty (a file, a link, the store or inside its
            logs), cannot be created or written (the message names the path), or the store
            cannot be read.
    """
    import duckdb

    folder = Path(folder)
    problem = output_folder_problem(folder, Path(store_path), results_dir)
    if problem is not None:
        raise StoreError(f"export folder {folder} {problem}")
    store = Store(Path(store_path))
    rows: dict[str, int] = {}
    with store.session(results_dir, file_access=True) as s:
        try:
            # Written whole into a fresh folder of our own, renamed to the target at the end:
            # nothing can be planted in it meanwhile, and a failed export leaves nothing.
            tmp = fresh_folder(folder)
        except OSError as e:
            raise StoreError(
                f"cannot create export folder {folder}: {_why(e)}; give a folder you can write"
            ) from None
        try:
            hardware = _write_tables(s.con, tmp, rows)
            manifest = {
                "format": EXPORT_FORMAT,
                "schema_version": SCHEMA_VERSION,
                "exported_at": datetime.now(timezone.utc).isoformat(),
                "store": str(store_path),
                "hardware": hardware,
                "rows": rows,
            }
            write_atomic(tmp / "manifest.json", json.dumps(manifest, indent=2) + "\n")
            publish_folder(tmp, folder)
        except (OSError, duckdb.IOException, duckdb.PermissionException) as e:
            raise StoreError(
                f"cannot write the export to {folder}: {_why(e)}; export again into a new folder you can write"
            ) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return ExportReport(folder, rows["traces"], hardware, rows)


def _write_tables(con: duckdb.DuckDBPyConnection, folder: Path, rows: dict[str, int]) -> list[str]:
    """Every table as Parquet under ``folder`` (traces partitioned by hardware); fills ``rows``
    and returns the hardware partitions."""
    for table in ("definitions", "solutions", "workloads"):
        (folder / table).mkdir()
        rows[table] = count(con, f"SELECT count(*) FROM {table}")
        con.execute(
            f"COPY (SELECT * FROM {table}) TO {sql_literal(str(folder / table / (table + '.parquet')))} (FORMAT parquet)"
        )
    hardware = [
        r[0] for r in con.execute("SELECT DISTINCT hardware FROM traces ORDER BY hardware").fetchall()
    ]
    rows["traces"] = count(con, "SELECT count(*) FROM traces")
    if rows["traces"]:
        # Derived columns stay home: an ingest computes them again.
        derived = ", ".join(f'"{c}"' for c in DERIVED_COLUMNS["traces"])
        con.execute(
            f"COPY (SELECT * EXCLUDE ({derived}) FROM traces ORDER BY timestamp, trace_key) TO "
            f"{sql_literal(str(folder / 'traces'))} (FORMAT parquet, PARTITION_BY (hardware))"
        )
    else:
        (folder / "traces").mkdir()
    return hardware
