"""Traces to rows: the row batch, Arrow tables, inserting (deduplicated), the writable store,
migrations between schema versions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.store.rows._insert import (
        AddCounts as AddCounts,
    )
    from sweep.store.rows._insert import (
        LogMark as LogMark,
    )
    from sweep.store.rows._insert import (
        insert_batch as insert_batch,
    )
    from sweep.store.rows._insert import (
        insert_relations as insert_relations,
    )
    from sweep.store.rows._insert import (
        new_traces_sql as new_traces_sql,
    )
    from sweep.store.rows._row_batch import (
        Known as Known,
    )
    from sweep.store.rows._row_batch import (
        RowBatch as RowBatch,
    )
    from sweep.store.rows._row_batch import (
        trace_key as trace_key,
    )
    from sweep.store.rows._row_batch import (
        trace_keys as trace_keys,
    )
    from sweep.store.rows._writable_store import WritableStore as WritableStore

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "AddCounts": "_insert",
    "insert_batch": "_insert",
    "insert_relations": "_insert",
    "Known": "_row_batch",
    "LogMark": "_insert",
    "new_traces_sql": "_insert",
    "RowBatch": "_row_batch",
    "trace_key": "_row_batch",
    "trace_keys": "_row_batch",
    "WritableStore": "_writable_store",
}
__all__ = [
    "AddCounts",
    "Known",
    "LogMark",
    "RowBatch",
    "WritableStore",
    "insert_batch",
    "insert_relations",
    "new_traces_sql",
    "trace_key",
    "trace_keys",
]
__getattr__ = face(__name__, _WHERE)
