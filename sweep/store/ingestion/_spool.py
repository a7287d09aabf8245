"""Parsed chunks handed over as Arrow files, inserted by DuckDB with every thread.

With many parsing processes, what bounds a first ingest is the one process that writes. Today's
answer of a worker (its rows as Arrow, read back and deduplicated in Python, then registered)
cost that process about 4 µs of CPU per trace before DuckDB saw a row. Here a worker writes its
chunk's rows, in the store's column layout, to Arrow IPC files (LZ4) in a spool folder
(:func:`spool_chunk`), and answers with their names and its counts only; the writing process
gathers the files of a batch (:class:`SpoolBatch`) and inserts them with one statement per
table (:func:`insert_spooled`): DuckDB deduplicates (in SQL, the first of repeated keys kept, in
the order of the lines) and inserts with every thread, and no row becomes a Python object. Each
batch's files are deleted once it is stored, so the folder holds a few batches at most, whatever
the size of the logs.

The rows of a batch are read as one contiguous table (:func:`_batch_table`), not scanned from
the files, each row with its position, by which the first of repeated keys is kept. An insert
that keeps the order of its rows merges the pieces of its source smaller than a row group in
one thread; a spooled file holds one chunk (~5,000 traces), so the scan of the files kept two
of a 16-core host's cores busy (``bench/store_writer_profile.py``). Pieces of a row group or a
little more (tried too) sped the insert up but made the checkpoint after each batch about
three times as long. The price: the batch held in memory while it is inserted (about 1.5 KB
of Arrow per trace, twice that while it is joined).

Arrow IPC with LZ4, not Parquet (the format before): cheaper to write and to read back. On the
2-core VM a first ingest of 200,000 traces took 23.0 µs of the ingesting process's CPU a trace
against 27.6 and 60.0 µs of the workers' against 65.2, with a lower peak of memory
(``bench/results/2026-11-29-vm-ingest-arrow-spool.log``). On a 16-core H200 host at 1M traces
the ingesting process's CPU went from 33.2 to 30.2 µs a trace, but the seconds did not move
(16.5 against 16.2, within the rounds' spread: ``2026-11-29-h200-gang-file-and-ingest.log``).
The price: the files take about 230 bytes a trace on disk against 160.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sweep.store.ingestion._jsonl_chunks import Chunk, parse_chunk
from sweep.store.rows import AddCounts, LogMark, WritableStore, insert_relations

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["SpoolBatch", "SpooledChunk", "insert_spooled", "insert_spooled_on", "spool_chunk"]

#: The compression of spooled rows: cheap both ways, and the records (JSON, most of a row)
#: shrink several times, so the folder's bytes on disk are a fraction of the logs'.
_COMPRESSION = "lz4"


@dataclass(frozen=True)
class SpooledChunk:
    """A parsed chunk whose rows a worker wrote to files (see :class:`~sweep.store.ingestion._jsonl_chunks.ParsedChunk`).

    Attributes:
        traces_file: Arrow file of its ``traces`` rows (no repeats within the chunk), or "" for none.
        workloads_file: Arrow file of its ``workloads`` rows, or "" for none.
        trace_rows: Rows in ``traces_file``.
        duplicates: Traces left out because the chunk held the same trace before.
        traces_read: Evaluated traces accepted (repeats included).
        workload_records: Workload-only records accepted.
        warnings: One per refused line, in order.
    """

    traces_file: str
    workloads_file: str
    trace_rows: int
    duplicates: int
    traces_read: int
    workload_records: int
    warnings: list[str]


def _write(table: pa.Table, path: str) -> str:
    from pyarrow import feather

    if not table.num_rows:
        return ""
    # Written under another name and renamed: a reader never sees half a file.
    part = path + ".part"
    feather.write_feather(table, part, compression=_COMPRESSION)
    os.replace(part, path)
    return path


def spool_chunk(chunk: Chunk) -> SpooledChunk:
    """Parse a chunk (:func:`~sweep.store.ingestion._jsonl_chunks.parse_chunk`) and write its rows
    to ``<chunk.spool>.traces.parquet`` and ``<chunk.spool>.workloads.parquet``.

    Raises:
        ChunkReadError: The file changed since its chunks were cut.
        OSError: The files cannot be written.
    """
    parsed = parse_chunk(chunk)
    return SpooledChunk(
        traces_file=_write(parsed.traces, f"{chunk.spool}.traces.arrow"),
        workloads_file=_write(parsed.workloads, f"{chunk.spool}.workloads.arrow"),
        trace_rows=parsed.traces.num_rows,
        duplicates=parsed.duplicates,
        traces_read=parsed.traces_read,
        workload_records=parsed.workload_records,
        warnings=parsed.warnings,
    )


@dataclass
class SpoolBatch:
    """Spooled chunks to insert together, in the order of their lines.

    Attributes:
        traces_files: The chunks' ``traces`` files, in order.
        workloads_files: Their ``workloads`` files, in order.
        trace_rows: Rows in ``traces_files``.
        duplicates: Repeats the chunks left out already (counted present).
    """

    traces_files: list[str] = field(default_factory=list)
    workloads_files: list[str] = field(default_factory=list)
    trace_rows: int = 0
    duplicates: int = 0

    def add(self, chunk: SpooledChunk) -> None:
        """Take a chunk's files and counts."""
        if chunk.traces_file:
            self.traces_files.append(chunk.traces_file)
        if chunk.workloads_file:
            self.workloads_files.append(chunk.workloads_file)
        self.trace_rows += chunk.trace_rows
        self.duplicates += chunk.duplicates

    def __len__(self) -> int:
        return len(self.traces_files) + len(self.workloads_files)

    def remove(self) -> None:
        """Delete the batch's files."""
        for f in (*self.traces_files, *self.workloads_files):
            with suppress(FileNotFoundError):
                os.unlink(f)


_POSITION = "_spool_position"


def _first_of_each(rows: str, key: str) -> str:
    """SQL of the rows of the relation ``rows`` (its ``_spool_position`` says their order), the
    first row of each ``key`` only, as a batch built in Python keeps them."""
    return (
        f"SELECT * EXCLUDE ({_POSITION}) FROM {rows} "
        f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {_POSITION}) = 1"
    )


def _batch_table(files: list[str]) -> pa.Table:
    """The rows of ``files``, in their order, as one contiguous table (one chunk), with their
    position in it (column ``_spool_position``)."""
    import pyarrow as pa
    from pyarrow import feather

    table = pa.concat_tables([feather.read_table(f) for f in files]).combine_chunks()
    return table.append_column(_POSITION, pa.array(range(table.num_rows), type=pa.int64()))


@contextmanager
def _unordered(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inserts that need not keep the rows' order: DuckDB then inserts the result of a join
    (the anti-join on stored keys) with every thread, not one. Nothing reads the traces'
    physical order (every view ranks by columns)."""
    con.execute("SET preserve_insertion_order = false")
    try:
        yield
    finally:
        con.execute("RESET preserve_insertion_order")


def insert_spooled(store: WritableStore, batch: SpoolBatch, marks: list[LogMark]) -> AddCounts:
    """Insert a batch of spooled chunks and record ``marks``, in one transaction, then delete
    the files; what is stored and counted is what inserting the same rows built in Python would
    store and count (:func:`~sweep.store.rows.insert_relations`: new traces by key, the stored
    ones counted present, the cross-hardware tables kept up to date).

    Raises:
        StoreLockedError: Another process held the store for the whole wait.
    """
    try:
        if not len(batch) and not marks:
            return AddCounts(present=batch.duplicates)
        with store.writing() as con:
            return insert_spooled_on(con, batch, marks)
    finally:
        batch.remove()  # also when the store could not be opened


def insert_spooled_on(con: duckdb.DuckDBPyConnection, batch: SpoolBatch, marks: list[LogMark]) -> AddCounts:
    """:func:`insert_spooled` on a read-write connection the caller opened (and closes: its
    close checkpoints, which several batches in a row can share)."""
    try:
        if not len(batch) and not marks:
            return AddCounts(present=batch.duplicates)
        with _unordered(con):
            rels: dict[str, str] = {}
            if batch.traces_files:
                con.register("_spooled_rows", _batch_table(batch.traces_files))
                traces = f"SELECT * EXCLUDE ({_POSITION}) FROM _spooled_rows"
                # Repeats across the batch's chunks are rare (a log ingested under two names):
                # one count tells, and only then the window that keeps the first of each.
                repeats = con.execute(
                    "SELECT count(*) - count(DISTINCT trace_key) FROM _spooled_rows"
                ).fetchone()
                if repeats is not None and repeats[0]:
                    traces = _first_of_each("_spooled_rows", "trace_key")
                con.execute(f"CREATE OR REPLACE TEMP VIEW _spooled_traces AS {traces}")
                rels["traces"] = "_spooled_traces"
            if batch.workloads_files:
                con.register("_spooled_workload_rows", _batch_table(batch.workloads_files))
                workloads = _first_of_each("_spooled_workload_rows", "definition, uuid")
                con.execute(f"CREATE OR REPLACE TEMP VIEW _spooled_workloads AS {workloads}")
                rels["workloads"] = "_spooled_workloads"
            try:
                counts = insert_relations(con, rels, marks)
            finally:
                con.execute("DROP VIEW IF EXISTS _spooled_traces")
                con.execute("DROP VIEW IF EXISTS _spooled_workloads")
                if batch.traces_files:
                    con.unregister("_spooled_rows")
                if batch.workloads_files:
                    con.unregister("_spooled_workload_rows")
        # Repeats within the chunks and across them: present, as a batch built in Python counts them.
        counts.present = batch.trace_rows + batch.duplicates - counts.traces
        return counts
    finally:
        batch.remove()
