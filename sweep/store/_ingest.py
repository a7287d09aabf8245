"""Ingest: trace files, folders and Parquet exports into a store, idempotently.

Every record is parsed with the schema models, checked for what the store needs
(:mod:`sweep.store._checks`), batched, and inserted as Arrow tables (one statement per table
per batch). A record that breaks a rule is skipped with a warning naming the file, line,
field and value. Traces already stored (same key) are counted, not added, so ingesting the
same file twice adds nothing. Parquet exports are held to the same rules, row by row, and
stored whole or not at all (:mod:`sweep.store._ingest_export`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pydantic
import pydantic_core

from sweep.errors import StoreError, ValidationError
from sweep.schema import Definition, Solution, Trace
from sweep.store._checks import describe_invalid
from sweep.store._ingest_export import ingest_export
from sweep.store._insert import AddCounts, LogMark
from sweep.store._row_batch import RowBatch
from sweep.store._trace_files import LogReader, Source, find_sources, head_hash, is_json, parse_json_record
from sweep.store._writable_store import WritableStore

__all__ = ["BATCH_ROWS", "IngestReport", "ingest", "ingest_into"]

#: Traces per insert: big enough that per-statement costs vanish, small enough for memory.
BATCH_ROWS = 20_000


@dataclass
class IngestReport:
    """What an ingest read and added.

    Attributes:
        store: The store's name.
        files: Trace files read (JSONL and JSON).
        exports: Parquet export folders read.
        traces_read: Evaluated traces found and accepted (a refused one counts in ``skipped``).
        traces_added: Traces new to the store.
        traces_present: Traces the store held already (same key), including repeats in the input.
        workload_records: Workload-only records found (stored as workloads, not evaluations).
        workloads_added: Workloads new to the store.
        definitions_added: Definitions new or changed.
        solutions_added: Solutions new or changed.
        skipped: Lines or files that were not valid records, or records the store cannot hold.
        warnings: One line per skipped record: file, line, field, value and what is wrong.
    """

    store: str
    files: int = 0
    exports: int = 0
    traces_read: int = 0
    traces_added: int = 0
    traces_present: int = 0
    workload_records: int = 0
    workloads_added: int = 0
    definitions_added: int = 0
    solutions_added: int = 0
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)

    def _add(self, c: AddCounts) -> None:
        self.traces_added += c.traces
        self.traces_present += c.present
        self.workloads_added += c.workloads
        self.definitions_added += c.definitions
        self.solutions_added += c.solutions


class _Ingest:
    def __init__(self, store: WritableStore, report: IngestReport, batch_rows: int) -> None:
        self.store = store
        self.report = report
        self.batch_rows = batch_rows
        self.batch = RowBatch()
        self.marks: list[LogMark] = []

    def skip(self, where: str, why: str) -> None:
        self.report.skipped += 1
        self.report.warnings.append(f"{where}: {why}, skipped")

    def flush(self) -> None:
        if len(self.batch) or self.marks:
            self.report._add(self.store.add(self.batch, self.marks))
        self.batch = RowBatch()
        self.marks = []

    def add(self, record: Definition | Solution | Trace, source: str, where: str) -> None:
        """Add one parsed record, or skip it (with ``where`` and the reason) if the store
        cannot hold it (:mod:`sweep.store._checks`)."""
        try:
            if isinstance(record, Definition):
                self.batch.add_definition(record)
            elif isinstance(record, Solution):
                self.batch.add_solution(record)
            else:
                self.batch.add_trace(record, source=source)
                if record.is_workload_only:
                    self.report.workload_records += 1
                else:
                    self.report.traces_read += 1
        except ValidationError as e:
            self.skip(where, f"not a valid {type(record).__name__.lower()}: {e}")
            return
        if self.batch.count("traces") + self.batch.count("workloads") >= self.batch_rows:
            self.flush()

    def line(self, where: str, data: bytes, source: str) -> None:
        try:
            trace = Trace.model_validate_json(data)
        except pydantic.ValidationError as e:
            self.skip(where, describe_invalid(e, data))
            return
        self.add(trace, source, where)

    def jsonl(self, path: Path) -> None:
        self.report.files += 1
        reader = LogReader(path)
        source = str(path.resolve())
        last = 0
        for line in reader:
            last = line.number
            if line.data.strip():
                self.line(f"{path}:{line.number}", line.data, source)
        if reader.torn.strip():
            # A last line without its newline is a write cut short only if it does not parse
            # (no prefix of a JSON object is one); a hand-written file may just lack the newline.
            if is_json(reader.torn):
                self.line(f"{path}:{last + 1}", reader.torn, source)
            else:
                self.skip(f"{path}:{last + 1}", "incomplete last line (a write cut short?)")
        if reader.end:
            self.marks.append(LogMark(source, reader.end, head_hash(path, reader.end)))

    def json(self, path: Path) -> None:
        self.report.files += 1
        try:
            # pydantic's parser, as for JSONL lines: it refuses what Python's json module lets
            # through and no store can hold (lone surrogates in strings).
            data = pydantic_core.from_json(path.read_bytes())
        except (OSError, ValueError) as e:
            self.skip(str(path), f"not valid JSON ({e})")
            return
        items = data if isinstance(data, list) else [data]
        for i, obj in enumerate(items):
            where = f"{path}[{i}]" if isinstance(data, list) else str(path)
            try:
                record = parse_json_record(obj)
            except pydantic.ValidationError as e:
                self.skip(where, describe_invalid(e, data=obj))
                continue
            except (TypeError, ValueError) as e:
                self.skip(where, str(e))
                continue
            self.add(record, str(path.resolve()), where)

    def export(self, folder: Path) -> None:
        self.flush()
        self.report.exports += 1
        self.report._add(ingest_export(self.store, folder, batch_rows=self.batch_rows))


def ingest_into(
    store: WritableStore, paths: Sequence[Path], *, allow_empty: bool = False, batch_rows: int = BATCH_ROWS
) -> IngestReport:
    """Ingest files and folders into an open store (see :func:`ingest`).

    Args:
        store: The store.
        paths: Files or folders.
        allow_empty: Return an empty report for paths with nothing to ingest, not an error.
        batch_rows: Traces per insert.
    """
    report = IngestReport(store=store.where)
    if allow_empty:
        paths = [p for p in paths if p.exists()]
    try:
        sources: list[Source] = find_sources(list(paths))
    except StoreError:
        if allow_empty:
            return report
        raise
    job = _Ingest(store, report, batch_rows)
    for src in sources:
        if src.kind == "jsonl":
            job.jsonl(src.path)
        elif src.kind == "json":
            job.json(src.path)
        else:
            job.export(src.path)
    job.flush()
    return report


def ingest(paths: Sequence[Path], store_path: Path, *, lock_timeout_s: float = 30.0) -> IngestReport:
    """Ingest trace files, folders and Parquet exports into a store file (created if missing).

    Accepts JSONL logs (``sweep``'s own and FlashInfer-Bench's, workload-only lines included),
    JSON files holding a trace, definition or solution (or a list of them), folders of those
    (searched recursively; hidden entries skipped), and folders written by ``sweep export``.
    Invalid lines are skipped with a warning that names file, line, field and value; a last
    line without its newline is read when it parses (else it is a write cut short, skipped).

    Args:
        paths: Files or folders.
        store_path: The DuckDB file.
        lock_timeout_s: How long to wait for a running writer's batch.

    Raises:
        StoreError: A path does not exist or holds nothing to ingest, the store is locked, or
            a Parquet export breaks a rule (nothing of that export is stored; what earlier
            paths added stays).
    """
    store = WritableStore(store_path, lock_timeout_s=lock_timeout_s)
    try:
        return ingest_into(store, paths)
    finally:
        store.close()
