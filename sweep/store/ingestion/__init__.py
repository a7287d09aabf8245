"""Files into the store: JSONL logs and export folders read as bounded regular files, split into
chunks, parsed in a pool of processes (their rows handed over as Arrow files), lines already stored counted present."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.store.ingestion._ingest import (
        BATCH_ROWS as BATCH_ROWS,
    )
    from sweep.store.ingestion._ingest import (
        SPOOL_BATCH_ROWS as SPOOL_BATCH_ROWS,
    )
    from sweep.store.ingestion._ingest import (
        IngestJob as IngestJob,
    )
    from sweep.store.ingestion._ingest import (
        IngestReport as IngestReport,
    )
    from sweep.store.ingestion._ingest import (
        ingest_into as ingest_into,
    )
    from sweep.store.ingestion._ingest_pool import (
        auto_workers as auto_workers,
    )
    from sweep.store.ingestion._ingest_pool import (
        parse_in_order as parse_in_order,
    )
    from sweep.store.ingestion._ingest_pool import (
        read_frame as read_frame,
    )
    from sweep.store.ingestion._ingest_pool import (
        write_frame as write_frame,
    )
    from sweep.store.ingestion._inserter import (
        INGEST_LOGGER as INGEST_LOGGER,
    )
    from sweep.store.ingestion._jsonl_chunks import (
        CHUNK_BYTES as CHUNK_BYTES,
    )
    from sweep.store.ingestion._jsonl_chunks import (
        LogEnd as LogEnd,
    )
    from sweep.store.ingestion._jsonl_chunks import (
        split_log as split_log,
    )
    from sweep.store.ingestion._spool import (
        SpooledChunk as SpooledChunk,
    )
    from sweep.store.ingestion._trace_files import (
        MAX_LINE_BYTES as MAX_LINE_BYTES,
    )
    from sweep.store.ingestion._trace_files import (
        LogReader as LogReader,
    )
    from sweep.store.ingestion._trace_files import (
        file_problem as file_problem,
    )
    from sweep.store.ingestion._trace_files import (
        head_hash as head_hash,
    )
    from sweep.store.ingestion._trace_files import (
        is_json as is_json,
    )
    from sweep.store.ingestion._trace_files import (
        log_files as log_files,
    )

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "INGEST_LOGGER": "_inserter",
    "auto_workers": "_ingest_pool",
    "BATCH_ROWS": "_ingest",
    "SPOOL_BATCH_ROWS": "_ingest",
    "CHUNK_BYTES": "_jsonl_chunks",
    "file_problem": "_trace_files",
    "head_hash": "_trace_files",
    "ingest_into": "_ingest",
    "IngestJob": "_ingest",
    "IngestReport": "_ingest",
    "is_json": "_trace_files",
    "log_files": "_trace_files",
    "LogEnd": "_jsonl_chunks",
    "LogReader": "_trace_files",
    "MAX_LINE_BYTES": "_trace_files",
    "parse_in_order": "_ingest_pool",
    "read_frame": "_ingest_pool",
    "split_log": "_jsonl_chunks",
    "SpooledChunk": "_spool",
    "write_frame": "_ingest_pool",
}
__all__ = [
    "BATCH_ROWS",
    "CHUNK_BYTES",
    "INGEST_LOGGER",
    "MAX_LINE_BYTES",
    "SPOOL_BATCH_ROWS",
    "IngestJob",
    "IngestReport",
    "LogEnd",
    "LogReader",
    "SpooledChunk",
    "auto_workers",
    "file_problem",
    "head_hash",
    "ingest_into",
    "is_json",
    "log_files",
    "parse_in_order",
    "read_frame",
    "split_log",
    "write_frame",
]
__getattr__ = face(__name__, _WHERE)
