"""Ingest of a Parquet export folder (``sweep export``): all of it, or nothing.

An export is input from elsewhere, as a JSONL file is, and is held to the same rules: the
manifest must say a format and a schema version this code reads; every row's ``record`` must
be a valid record of its table (the schema's models and :mod:`sweep.store.db._checks`, as for a
JSONL line); the columns derived from a trace record are built again from it by
:class:`~sweep.store.RowBatch` (the record is the truth; a row whose identity columns
contradict its record was altered, and is refused); and the other columns the source store
filled (op_type, author, sweep, source, ingested_at...) must have their types. Everything
goes in one transaction: on the first refusal it is rolled back and the error names the file,
the row, the field and the value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pydantic

from sweep.errors import StoreError, ValidationError, reason, shown
from sweep.schema import Definition, Solution, Trace, Workload
from sweep.schema.limits import FileRefused, open_regular, read_bytes
from sweep.schema.trace import EARLIEST_TIME, LATEST_TIME
from sweep.store.db import SCHEMA_VERSION, arrow_schema, describe_invalid
from sweep.store.ingestion._trace_files import EXPORT_FORMAT, MAX_MANIFEST_BYTES
from sweep.store.rows import AddCounts, Known, RowBatch, WritableStore, insert_batch

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["EXPORT_TABLES", "ingest_export", "read_manifest"]

#: The tables of an export, in the order they are read (records a trace names come first).
EXPORT_TABLES = ("definitions", "solutions", "workloads", "traces")
#: The oldest schema version an export can have (exports came with version 2).
_OLDEST_EXPORT = 2
_READ_ROWS = 4096
_REEXPORT = "export the store again with 'sweep export --parquet'"

# Trace columns that are not in the record: kept from the source store.
_KNOWN_COLUMNS = (
    "op_type",
    "tags",
    "author",
    "language",
    "solution_hash",
    "sweep",
    "run_id",
    "config_hash",
    "settings_hash",
    "source",
)
# Trace columns copied from the record unchanged: a row that disagrees was altered.
_IDENTITY_COLUMNS = ("definition", "solution", "workload_uuid", "status", "latency_ms")
# What each table needs besides ``record``.
_NEEDED = {"workloads": ("definition",)}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class _Refused(Exception):
    """One row broke a rule; the message names the field and value."""


def read_manifest(folder: Path) -> dict[str, int]:
    """Check an export's ``manifest.json``; return the row counts it promises, by table.

    Raises:
        StoreError: Unreadable, not an export manifest, a schema version that is not a whole
            number this code reads, or row counts that are not whole numbers.
    """
    path = folder / "manifest.json"
    try:
        data = json.loads(read_bytes(path, MAX_MANIFEST_BYTES))
    except (OSError, ValueError) as e:  # FileRefused: not a regular file, too large
        raise StoreError(f"{path}: cannot read the export manifest ({reason(e)}); {_REEXPORT}") from None
    if not isinstance(data, dict):
        raise StoreError(f"{path}: must be a JSON object (got {type(data).__name__}); {_REEXPORT}")
    if data.get("format") != EXPORT_FORMAT:
        raise StoreError(
            f"{path}: format must be {EXPORT_FORMAT!r} (got {shown(data.get('format'))}); {_REEXPORT}"
        )
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise StoreError(f"{path}: schema_version must be a whole number (got {shown(version)}); {_REEXPORT}")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{folder}: exported by a newer kernel-sweep (schema {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade kernel-sweep to ingest it"
        )
    if version < _OLDEST_EXPORT:
        raise StoreError(
            f"{path}: schema_version must be from {_OLDEST_EXPORT} to {SCHEMA_VERSION} "
            f"(got {shown(version)}); {_REEXPORT}"
        )
    rows = data.get("rows", {})
    if not isinstance(rows, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in rows.values()
    ):
        raise StoreError(f"{path}: rows must map each table to a row count (got {shown(rows)}); {_REEXPORT}")
    return {t: n for t, n in rows.items() if t in EXPORT_TABLES}


def _storage(t: pa.DataType) -> pa.DataType:
    import pyarrow as pa

    # DuckDB writes its JSON columns as Arrow's JSON extension type over a string.
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def _fits(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a column read as ``actual`` can stand for the store's ``expected`` type."""
    import pyarrow as pa

    actual, expected = _storage(actual), _storage(expected)
    if pa.types.is_null(actual) or actual.equals(expected):
        return True
    if pa.types.is_string(expected):
        return bool(pa.types.is_string(actual) or pa.types.is_large_string(actual))
    if pa.types.is_timestamp(expected):
        return bool(pa.types.is_timestamp(actual))
    if pa.types.is_list(expected):
        return bool(pa.types.is_list(actual) or pa.types.is_large_list(actual)) and _fits(
            actual.value_type, expected.value_type
        )
    return False


def _columns(table: str, schema: pa.Schema) -> list[str]:
    """The columns of one file to read: ``record``, what the table needs, and the columns
    checked or kept, each of the store's type.

    Raises:
        _Refused: A needed column is missing, or a column read has another type.
    """
    expected = arrow_schema(table)
    wanted = ["record", *_NEEDED.get(table, ())]
    if table == "traces":
        wanted += [*_KNOWN_COLUMNS, *_IDENTITY_COLUMNS, "ingested_at"]
    have = set(schema.names)
    missing = [c for c in ("record", *_NEEDED.get(table, ())) if c not in have]
    if missing:
        raise _Refused(
            f"has no column {missing[0]!r} (columns: {shown(', '.join(schema.names))}); "
            f"not a {table} file written by 'sweep export'"
        )
    out = []
    for c in wanted:
        if c not in have:
            continue  # an older export lacks it: NULL, as in a store of that version
        actual = schema.field(c).type
        if not _fits(actual, expected.field(c).type):
            raise _Refused(f"column {c!r} is {actual}, expected {expected.field(c).type}")
        out.append(c)
    return out


def _batches(path: Path, table: str) -> Iterator[dict[str, list[object]]]:
    """The rows of one Parquet file, column by column, a few thousand at a time.

    Raises:
        _Refused: The file is not Parquet, is cut short, or its columns are not the store's.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        f = open_regular(path)
    except (OSError, FileRefused) as e:  # a device or FIFO named *.parquet: never opened as one
        raise _Refused(f"cannot read: {reason(e)}") from None
    try:
        pf = pq.ParquetFile(f)
        columns = _columns(table, pf.schema_arrow)
        for rb in pf.iter_batches(batch_size=_READ_ROWS, columns=columns):
            out: dict[str, list[object]] = {}
            for name in columns:
                col = rb.column(name)
                if name == "ingested_at" and pa.types.is_timestamp(col.type):
                    # As microseconds since 1970: a time outside Python's range must not
                    # raise while converting; the range is checked per row.
                    col = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC")), pa.int64())
                out[name] = col.to_pylist()
            yield out
    except (OSError, ValueError, pa.ArrowException) as e:
        # ValueError: a damaged page can hold bytes that are not UTF-8 in a string column.
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _Refused(f"not a readable Parquet file ({first[:200]})") from None
    finally:
        f.close()


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise _Refused(f"{field}: must be the record's JSON text (got {shown(value)})")
    return value


_FIRST_US = (EARLIEST_TIME - _EPOCH) // timedelta(microseconds=1)
_LAST_US = (LATEST_TIME - _EPOCH) // timedelta(microseconds=1)


def _ingested_at(micros: object, now: datetime) -> datetime | None:
    """When the other store stored the row, never later than ``now``: a time this store did
    not see is a claim, and a claimed time never outranks a stored one (``_newest.py``)."""
    if micros is None:
        return None
    if not isinstance(micros, int) or not _FIRST_US <= micros < _LAST_US:
        raise _Refused(
            f"ingested_at: must be a time between {EARLIEST_TIME:%Y-%m-%d} and "
            f"{LATEST_TIME:%Y-%m-%d} UTC (got {shown(micros)} microseconds since 1970)"
        )
    return min(_EPOCH + timedelta(microseconds=micros), now)


def _same(column: object, record: object) -> bool:
    if isinstance(column, float) and isinstance(record, float):
        return column == record or (math.isnan(column) and math.isnan(record))
    return column == record


def _check_identity(row: dict[str, object], trace: Trace) -> None:
    ev = trace.evaluation
    assert ev is not None
    from_record = {
        "definition": trace.definition,
        "solution": trace.solution,
        "workload_uuid": trace.workload.uuid,
        "status": ev.status.value,
        "latency_ms": ev.performance.latency_ms if ev.performance else None,
    }
    for c, want in from_record.items():
        if c in row and not _same(row[c], want):
            raise _Refused(
                f"{c}: column is {shown(row[c])} but the row's record says {shown(want)}; "
                "the export was altered after it was written"
            )


def _add_row(batch: RowBatch, table: str, row: dict[str, object], now: datetime) -> None:
    """Validate one row and add it to ``batch`` (rows are built again from the record).

    Raises:
        _Refused: The row breaks a rule.
    """
    text = _text(row["record"], "record")
    reason = None
    try:
        if table == "definitions":
            batch.add_definition(Definition.model_validate_json(text))
        elif table == "solutions":
            batch.add_solution(Solution.model_validate_json(text))
        elif table == "workloads":
            definition = row["definition"]
            if not isinstance(definition, str) or not definition:
                raise _Refused(f"definition: must name the workload's definition (got {shown(definition)})")
            batch.add_workload(definition, Workload.model_validate_json(text))
        else:
            trace = Trace.model_validate_json(text)
            if trace.evaluation is None:
                raise _Refused("record: a workload-only record (no evaluation) in the traces table")
            _check_identity(row, trace)
            known = Known(**{c: row.get(c) for c in _KNOWN_COLUMNS})  # type: ignore[arg-type]
            batch.add_trace(
                trace, record=text, known=known, now=_ingested_at(row.get("ingested_at"), now) or now
            )
    except pydantic.ValidationError as e:
        reason = describe_invalid(e, text)
    except ValidationError as e:
        reason = f"not a valid {table[:-1]}: {e}"
    if reason is not None:
        # Raised outside the handler, so no pydantic error is chained to it: one holds the
        # frames of this call (and the store's connection) in a cycle the collector cannot
        # see, and a caller that keeps the error would keep them alive.
        raise _Refused(reason)


def ingest_export(store: WritableStore, folder: Path, *, batch_rows: int) -> AddCounts:
    """Store a Parquet export, checked row by row, in one transaction.

    Args:
        store: The store.
        folder: The export folder (holding ``manifest.json``).
        batch_rows: Rows per insert.

    Raises:
        StoreError: The manifest or a row breaks a rule, a file is not readable Parquet, or
            the files hold other row counts than the manifest says; nothing was stored.
    """
    promised = read_manifest(folder)
    counts = AddCounts()
    now = datetime.now(timezone.utc)
    with store.writing() as con:
        con.execute("BEGIN")
        try:
            batch = RowBatch()
            for table in EXPORT_TABLES:
                read = 0
                for path in sorted((folder / table).rglob("*.parquet")):
                    n = 0
                    try:
                        for cols in _batches(path, table):
                            for i in range(len(cols["record"])):
                                try:
                                    _add_row(batch, table, {c: v[i] for c, v in cols.items()}, now)
                                except _Refused as e:
                                    raise _Refused(f"row {n + 1}: {e}") from None
                                n += 1
                                if len(batch) >= batch_rows:
                                    counts.add(insert_batch(con, batch, transaction=False))
                                    batch = RowBatch()
                    except _Refused as e:
                        raise StoreError(
                            f"{path}: {e}; nothing of {folder} was stored (fix the file, or {_REEXPORT})"
                        ) from None
                    read += n
                if table in promised and promised[table] != read:
                    raise StoreError(
                        f"{folder}: manifest.json promises {promised[table]} {table} rows but the "
                        f"files hold {read}: the export is incomplete; nothing of it was stored "
                        f"({_REEXPORT})"
                    )
            counts.add(insert_batch(con, batch, transaction=False))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return counts
