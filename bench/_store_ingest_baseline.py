"""The ingest of main as of commit 1b6bf7f, kept callable as the baseline of
``bench/store_ingest.py``: one process, every line parsed with ``Trace.model_validate_json``,
and inserted every 20,000 traces, each insert opening and closing the store file.

Rows are built by today's row builder (``RowBatch``, the one reader of the trace table's
column spec) and inserted through today's ``Store.add``, so the baseline also gets today's
table layout and row building; what it keeps of main's is the single process, the full parse
of every line and the insert pattern. Its figures are, if anything, better than main's own.
"""

from __future__ import annotations

from pathlib import Path

import pydantic

from sweep.errors import ValidationError
from sweep.schema import Trace
from sweep.store import RowBatch, Store
from sweep.store.db import describe_invalid
from sweep.store.ingestion import LogReader, head_hash, is_json
from sweep.store.rows import LogMark

__all__ = ["baseline_ingest"]

BATCH_ROWS = 20_000


class _BaselineIngest:
    """Main's ``IngestJob`` for JSONL logs (the only input the bench writes)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.batch = RowBatch()
        self.marks: list[LogMark] = []
        self.added = 0
        self.skipped = 0

    def flush(self) -> None:
        if self.batch.count("traces") or self.batch.count("workloads") or self.marks:
            self.added += self.store.add(self.batch, self.marks).traces
        self.batch = RowBatch()
        self.marks = []

    def line(self, data: bytes, source: str) -> None:
        try:
            trace = Trace.model_validate_json(data)
        except pydantic.ValidationError as e:
            describe_invalid(e, data)
            self.skipped += 1
            return
        try:
            self.batch.add_trace(trace, source=source)
        except ValidationError:
            self.skipped += 1
            return
        if self.batch.count("traces") + self.batch.count("workloads") >= BATCH_ROWS:
            self.flush()

    def jsonl(self, path: Path) -> None:
        reader = LogReader(path)
        source = str(path.resolve())
        for line in reader:
            if line.data.strip():
                self.line(line.data, source)
        if reader.torn.strip() and is_json(reader.torn):
            self.line(reader.torn, source)
        if reader.end:
            self.marks.append(LogMark(source, reader.end, head_hash(path, reader.end)))


def baseline_ingest(logs: list[Path], store_path: Path) -> int:
    """Ingest JSONL logs the way main did; returns the traces added."""
    job = _BaselineIngest(Store(store_path, lock_timeout_s=30.0))
    for path in logs:
        job.jsonl(path)
    job.flush()
    return job.added
