"""Row tuples to Arrow tables of the store's schema (:class:`~sweep.store.rows._row_batch.RowBatch`'s
last step), naming the column when a value does not fit it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep.errors import ValidationError
from sweep.store.db import arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["rows_to_arrow"]


def rows_to_arrow(table: str, rows: list[tuple[object, ...]]) -> pa.Table:
    """Row tuples of ``table`` as an Arrow table of its schema."""
    import pyarrow as pa

    schema = arrow_schema(table)
    if rows and len(rows[0]) != len(schema):
        raise AssertionError(f"{table}: rows have {len(rows[0])} values for {len(schema)} columns")
    columns = list(zip(*rows)) if rows else [() for _ in schema]
    try:
        arrays = [_column(col, f) for col, f in zip(columns, schema)]
    except (OverflowError, pa.ArrowException, UnicodeError) as e:
        # The checks of add_* keep such values out; this names the column if one slips by.
        bad = next((f.name for col, f in zip(columns, schema) if not _converts(col, f)), "?")
        raise ValidationError(f"{table}.{bad}: a value the store cannot hold ({e})") from None
    return pa.Table.from_arrays(arrays, schema=schema)


def _column(values: tuple[object, ...], f: pa.Field) -> pa.Array:
    import pyarrow as pa

    if values and isinstance(values[0], bytes):
        # A trace's record, kept as the serializer's UTF-8 bytes: copied in as binary and
        # checked as UTF-8 by the cast (Arrow's own check, much cheaper than str objects).
        return pa.array(values, type=pa.binary()).cast(f.type)
    return pa.array(values, type=f.type)


def _converts(values: tuple[object, ...], f: pa.Field) -> bool:
    import pyarrow as pa

    try:
        _column(values, f)
    except (OverflowError, pa.ArrowException, UnicodeError):
        return False
    return True
