"""Ingest: trace files, folders and Parquet exports into a store, idempotently.

Every record is parsed with the schema models, checked for what the store needs
(:mod:`sweep.store.db._checks`), batched, and inserted as Arrow tables (one statement per table
per batch). A record that breaks a rule is skipped with a warning naming the file, line,
field and value. Traces already stored (same key) are counted, not added, so ingesting the
same file twice adds nothing. Parquet exports are held to the same rules, row by row, and
stored whole or not at all (:mod:`sweep.store.ingestion._ingest_export`).

JSONL logs are read in chunks of whole lines (:mod:`sweep.store.ingestion._jsonl_chunks`), parsed by
worker processes when there is much to read (:mod:`sweep.store.ingestion._ingest_pool`) except for
lines that are stored traces already (:mod:`sweep.store.ingestion._present_lines`), and inserted
here in the order of the lines, so what is stored, counted and warned about is the same
whichever process parsed a line; memory holds a few chunks and one batch, whatever the size
of the logs.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pydantic
import pydantic_core

from sweep.errors import StoreError, ValidationError, reason
from sweep.schema import Definition, Solution, Trace
from sweep.schema.limits import FileRefused, read_bytes
from sweep.store.db import describe_invalid
from sweep.store.ingestion._ingest_export import ingest_export
from sweep.store.ingestion._ingest_pool import auto_workers, parse_in_order
from sweep.store.ingestion._inserter import Inserter, ingest_log
from sweep.store.ingestion._jsonl_chunks import CHUNK_BYTES, Chunk, LineSink, LogEnd, ParsedChunk, split_log
from sweep.store.ingestion._present_lines import mark_present
from sweep.store.ingestion._spool import SpoolBatch, SpooledChunk
from sweep.store.ingestion._trace_files import (
    MAX_LINE_BYTES,
    MAX_RECORD_FILE_BYTES,
    Source,
    find_sources,
    head_hash,
    is_json,
    parse_json_record,
)
from sweep.store.rows import AddCounts, LogMark, RowBatch, WritableStore

__all__ = ["BATCH_ROWS", "SPOOL_BATCH_ROWS", "IngestReport", "ingest", "ingest_into"]


#: Traces per insert: DuckDB's row group. An insert of at least one row group is written
#: straight to the file, compressed once; a smaller one goes through the write-ahead log and is
#: compressed again at each checkpoint, which made 50,000-row inserts twice as costly per row.
#: Each insert also looks every stored key up once, so fewer inserts cost less. Memory: about
#: 1.5 KB of Arrow per trace, for this batch and the one being inserted.
BATCH_ROWS = 122_880
#: Traces per insert of rows that workers spooled to files (:mod:`sweep.store.ingestion._spool`):
#: four row groups. DuckDB compresses a row group in one thread, so an insert of one keeps one
#: core busy whatever the machine has, and updates the cross-hardware tables once per row group;
#: four cut the writing process's CPU by a quarter (eight did no better on 2 cores, and leave
#: less of an ingest's parsing to overlap with its inserts). Memory: the batch being inserted,
#: as Arrow (about 1.5 KB per trace); the next ones wait in the folder as Arrow files (LZ4).
SPOOL_BATCH_ROWS = 4 * BATCH_ROWS


@dataclass
class IngestReport:
    """What an ingest read and added.

    Attributes:
        store: The store's name.
        files: Trace files read (JSONL and JSON).
        exports: Parquet export folders read.
        traces_read: Evaluated traces found and accepted (a refused one counts in ``skipped``).
        workload_records: Workload-only records found (stored as workloads, not evaluations).
        added: What the inserts added, summed (``present``: traces the store held already,
            same key, including repeats in the input; definitions and solutions new or changed).
        skipped: Lines or files that were not valid records, or records the store cannot hold.
        warnings: One line per skipped record: file, line, field, value and what is wrong.
    """

    store: str
    files: int = 0
    exports: int = 0
    traces_read: int = 0
    workload_records: int = 0
    added: AddCounts = field(default_factory=AddCounts)
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)


class IngestJob:
    """One ingest's batches into a writable store: rows gathered, inserted every ``batch_rows``.

    Rows come built here (:attr:`batch`) or spooled to files by worker processes
    (:attr:`spooled`, :mod:`sweep.store.ingestion._spool`); one of the two holds rows at a time
    (the other is inserted first), so inserts keep the order of the lines.
    """

    def __init__(
        self, store: WritableStore, report: IngestReport, batch_rows: int, spool_rows: int | None = None
    ) -> None:
        self.store = store
        self.report = report
        self.batch_rows = batch_rows
        self.spool_rows = batch_rows if spool_rows is None else spool_rows
        self.batch = RowBatch()
        self.spooled = SpoolBatch()
        self.marks: list[LogMark] = []
        self.inserter = Inserter(store, report.added)

    def skip(self, where: str, why: str) -> None:
        self.report.skipped += 1
        self.report.warnings.append(f"{where}: {why}, skipped")

    def full(self) -> bool:
        """Whether the batch holds a whole insert of traces or of workloads."""
        return (
            max(self.batch.count("traces"), self.batch.count("workloads")) >= self.batch_rows
            or self.spooled.trace_rows >= self.spool_rows
        )

    def flush(self, *, wait: bool = False) -> None:
        """Hand the batch to the inserter; with ``wait``, return once it is stored."""
        if len(self.spooled) or self.spooled.duplicates:
            # Stored chunks counted while files were gathered (their lines all present).
            self.spooled.duplicates += self.batch.duplicates
            self.inserter.submit(self.spooled, self.marks)
        elif len(self.batch) or self.marks:
            self.inserter.submit(self.batch, self.marks)
        self.batch = RowBatch()
        self.spooled = SpoolBatch()
        self.marks = []
        if wait:
            self.inserter.wait()

    def _rows_here(self) -> None:
        """Before rows are built here: the spooled rows, read before them, go first."""
        if len(self.spooled) or self.spooled.duplicates:
            self.flush()

    def _rows_spooled(self) -> None:
        """Before rows are spooled: the rows built here, read before them, go first."""
        if len(self.batch):
            self.flush()

    def add(self, record: Definition | Solution | Trace, source: str, where: str) -> None:
        """Add one parsed record, or skip it (with ``where`` and the reason) if the store
        cannot hold it (:mod:`sweep.store.db._checks`)."""
        self._rows_here()
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
        if self.full():
            self.flush()

    def logs(self, paths: list[Path], workers: int | None, chunk_bytes: int, *, spool: bool = True) -> None:
        """Read JSONL logs, in order, their chunks parsed by ``workers`` processes (which,
        with ``spool``, hand their rows over as Arrow files: :mod:`sweep.store.ingestion._spool`)."""
        if workers is None:
            workers = auto_workers(sum(p.stat().st_size for p in paths), chunk_bytes)

        def items() -> Iterator[Chunk | LogEnd]:
            for path in paths:
                yield from split_log(path, chunk_bytes)

        # The insert in flight first: an in-memory store has one connection, which it uses.
        self.inserter.wait()
        with self.store.writing() as con:
            marks = self.store.log_marks(con)
        # Lines of what the store has of these logs: stored traces are found by hashing.
        chunks: Iterable[Chunk | ParsedChunk | LogEnd] = (
            mark_present(items(), marks, self.store.present_keys) if marks else items()
        )
        # With workers, rows reach the store as Arrow files they write (_spool.py): beside
        # a file store (its disk, not a memory-backed /tmp), deleted once inserted.
        folder = (
            Path(tempfile.mkdtemp(prefix=".sweep-ingest-", dir=self._spool_parent()))
            if workers > 1 and spool
            else None
        )
        try:
            start = time.perf_counter()
            for item in parse_in_order(chunks, workers, folder):
                if isinstance(item, LogEnd):
                    self.log_end(item)
                elif isinstance(item, SpooledChunk):
                    self.spooled_chunk(item)
                elif isinstance(item, ParsedChunk):
                    self.parsed(item)
            ingest_log.debug("logs read in %.3f s by %d worker(s)", time.perf_counter() - start, workers)
            if folder is not None:
                # The spooled files are read by the insert: it ends before their folder goes.
                self.flush(wait=True)
        finally:
            if folder is not None:
                self.inserter.join()
                shutil.rmtree(folder, ignore_errors=True)

    def _spool_parent(self) -> Path | None:
        path = self.store.path
        if path is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.parent

    def spooled_chunk(self, chunk: SpooledChunk) -> None:
        """Take the files, counts and warnings of a chunk a worker spooled."""
        self._rows_spooled()
        self.spooled.add(chunk)
        self._counted(chunk)

    def parsed(self, chunk: ParsedChunk) -> None:
        """Take the rows, counts and warnings of a parsed chunk."""
        if chunk.traces.num_rows or chunk.workloads.num_rows:
            self._rows_here()
        self.batch.add_arrow("traces", chunk.traces, duplicates=chunk.duplicates)
        self.batch.add_arrow("workloads", chunk.workloads)
        self._counted(chunk)

    def _counted(self, chunk: ParsedChunk | SpooledChunk) -> None:
        """Add a chunk's counts and warnings to the report; insert once the batch is full."""
        self.report.traces_read += chunk.traces_read
        self.report.workload_records += chunk.workload_records
        self.report.skipped += len(chunk.warnings)
        self.report.warnings.extend(chunk.warnings)
        if self.full():
            self.flush()

    def log_end(self, end: LogEnd) -> None:
        """Count the log, read a last line without its newline if it parses, and mark how
        far the log is stored."""
        self.report.files += 1
        if end.overlong:
            self.skip(
                f"{end.path}:{end.lines + 1}",
                f"a line longer than {MAX_LINE_BYTES:,} bytes (no trace is that long); it and the "
                "rest of the file were not read",
            )
        if end.torn.strip():
            where = f"{end.path}:{end.lines + 1}"
            # A last line without its newline is a write cut short only if it does not parse
            # (no prefix of a JSON object is one); a hand-written file may just lack the newline.
            if is_json(end.torn):
                self._rows_here()
                sink = LineSink(self.batch)
                sink.line(where, end.torn, end.source)
                self.report.traces_read += sink.traces_read
                self.report.workload_records += sink.workload_records
                self.report.skipped += len(sink.warnings)
                self.report.warnings.extend(sink.warnings)
            else:
                self.skip(where, "incomplete last line (a write cut short?)")
        if end.end:
            self.marks.append(LogMark(end.source, end.end, head_hash(end.path, end.end)))

    def json(self, path: Path) -> None:
        self.report.files += 1
        try:
            # pydantic's parser, as for JSONL lines: it refuses what Python's json module lets
            # through and no store can hold (lone surrogates in strings).
            raw = read_bytes(path, MAX_RECORD_FILE_BYTES)
        except (OSError, FileRefused) as e:
            self.skip(str(path), f"cannot read: {reason(e)}")
            return
        try:
            data = pydantic_core.from_json(raw)
        except ValueError as e:
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
        self.flush(wait=True)  # the export's own transaction comes after what was read before
        self.report.exports += 1
        self.report.added.add(ingest_export(self.store, folder, batch_rows=self.batch_rows))


def ingest_into(
    store: WritableStore,
    paths: Sequence[Path],
    *,
    allow_empty: bool = False,
    batch_rows: int | None = None,
    workers: int | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    spool: bool = True,
) -> IngestReport:
    """Ingest files and folders into an open store (see :func:`ingest`).

    Args:
        store: The store.
        paths: Files or folders.
        allow_empty: Return an empty report for paths with nothing to ingest, not an error.
        batch_rows: Traces per insert (default: :data:`BATCH_ROWS` of rows built here,
            :data:`SPOOL_BATCH_ROWS` of rows workers spooled to files).
        workers: Processes that parse JSONL logs (default: one per usable CPU, one less past two, when the logs
            are large, else none besides this one); 1 parses here.
        chunk_bytes: Bytes of whole lines a worker parses at a time.
        spool: Workers write their rows to Arrow files beside the store, which this process
            reads and DuckDB inserts (False: they send them back as Arrow, built into batches here; the same
            rows, counts and warnings, with more work for this process).
    """
    report = IngestReport(store=store.where)
    if allow_empty:
        paths = [p for p in paths if p.exists()]
    left_out: list[str] = []
    try:
        sources: list[Source] = find_sources(list(paths), left_out)
    except StoreError:
        if allow_empty:
            return report
        raise
    report.skipped += len(left_out)
    report.warnings.extend(left_out)
    job = IngestJob(
        store,
        report,
        BATCH_ROWS if batch_rows is None else batch_rows,
        SPOOL_BATCH_ROWS if batch_rows is None else batch_rows,
    )
    try:
        # Consecutive logs go through one stream of chunks, so workers stay busy across files.
        for is_log, group in itertools.groupby(sources, key=lambda src: src.kind == "jsonl"):
            if is_log:
                job.logs([src.path for src in group], workers, chunk_bytes, spool=spool)
                continue
            for src in group:
                if src.kind == "json":
                    job.json(src.path)
                else:
                    job.export(src.path)
        job.flush(wait=True)
    finally:
        # Never leave an insert running past the return (or the error) of this call.
        job.inserter.join()
    return report


def ingest(
    paths: Sequence[Path], store_path: Path, *, lock_timeout_s: float = 30.0, workers: int | None = None
) -> IngestReport:
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
        workers: Processes that parse JSONL logs (default: one per usable CPU, one less past two, for large logs);
            1 parses in this process. What is stored and reported is the same either way.

    Raises:
        StoreError: A path does not exist or holds nothing to ingest, the store is locked, or
            a Parquet export breaks a rule (nothing of that export is stored; what earlier
            paths added stays).
    """
    store = WritableStore(store_path, lock_timeout_s=lock_timeout_s)
    try:
        return ingest_into(store, paths, workers=workers)
    finally:
        store.close()
