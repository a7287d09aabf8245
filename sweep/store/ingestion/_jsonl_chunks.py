"""JSONL logs in chunks of whole lines, each parsed into Arrow rows on its own.

Ingest reads a log as a sequence of :class:`Chunk` (a few MiB of whole lines, with the number
of its first line) and a :class:`LogEnd` (how far the whole lines go, and the bytes after the
last newline, if any). :func:`parse_chunk` is a pure function of one chunk: it checks every
line exactly as a line read alone is checked (the schema's models, then
:mod:`sweep.store.db._checks`, the same messages with ``file:line``) and returns the rows as
Arrow tables. Nothing in it touches a store, so chunks can be parsed in worker processes
(:mod:`sweep.store.ingestion._ingest_pool`) while the one process that writes inserts them in order; a
worker is told where a chunk lies in its file and reads it there.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pydantic

from sweep.errors import StoreError, ValidationError, reason
from sweep.schema import Trace
from sweep.schema.limits import FileRefused, open_regular
from sweep.store.db import describe_invalid
from sweep.store.ingestion._trace_files import MAX_LINE_BYTES
from sweep.store.rows import RowBatch, trace_key

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CHUNK_BYTES",
    "Chunk",
    "ChunkReadError",
    "LineSink",
    "LogEnd",
    "ParsedChunk",
    "parse_chunk",
    "read_chunk",
    "split_log",
]

#: Bytes of whole lines per chunk: thousands of traces, so the cost of handing a chunk to a
#: worker and its rows back vanishes, while a few chunks in flight stay a few tens of MiB.
CHUNK_BYTES = 4 << 20


@dataclass(frozen=True)
class Chunk:
    """Consecutive whole lines of one log.

    Attributes:
        path: The log as the user named it (messages say ``<path>:<line>``).
        source: The log's absolute path (the traces' ``source`` column).
        first_line: Number of the chunk's first line (1-based).
        offset: Where the chunk starts in the file.
        size: Its length in bytes.
        data: The lines, each ending with its newline; empty when the chunk is handed to a
            worker process, which reads them from the file (:func:`read_chunk`).
        present: Lines (0-based within the chunk) that are, byte for byte, the canonical
            record of a trace the store holds (:mod:`sweep.store.ingestion._present_lines`): counted as
            read and present without being parsed.
        spool: Where a worker writes the chunk's rows (``<spool>.traces.arrow`` ...) instead
            of answering with them (:mod:`sweep.store.ingestion._spool`); "" to answer with them.
    """

    path: str
    source: str
    first_line: int
    offset: int
    size: int
    data: bytes = b""
    present: frozenset[int] = frozenset()
    spool: str = ""

    def without_data(self) -> Chunk:
        """The chunk as a worker gets it: where to read, not the bytes."""
        return Chunk(
            self.path, self.source, self.first_line, self.offset, self.size, b"", self.present, self.spool
        )


class ChunkReadError(StoreError):
    """A log changed between reading its lines' boundaries and reading the lines."""


def read_chunk(chunk: Chunk) -> bytes:
    """The bytes of a chunk handed over without them, read from its file.

    Raises:
        ChunkReadError: The file no longer holds whole lines there (it was replaced or cut).
    """
    with open_regular(chunk.source) as f:
        if chunk.offset:
            f.seek(chunk.offset - 1)
            before = f.read(1)
        else:
            before = b"\n"
        data = f.read(chunk.size)
    if before != b"\n" or len(data) != chunk.size or not data.endswith(b"\n"):
        raise ChunkReadError(
            f"{chunk.path} changed while it was being ingested (bytes {chunk.offset} to "
            f"{chunk.offset + chunk.size} are no longer whole lines); ingest it again"
        )
    return data


@dataclass(frozen=True)
class LogEnd:
    """The end of one log, after its chunks.

    Attributes:
        path: The log as the user named it.
        source: The log's absolute path.
        end: Offset just past the last whole line.
        lines: Whole lines read (the number of the last one).
        torn: The bytes after the last newline: a line still being written, one cut short by
            a kill, or a hand-written file's last line without its newline.
        overlong: The reading stopped at a line longer than
            :data:`~sweep.store.ingestion._trace_files.MAX_LINE_BYTES` (line ``lines + 1``; neither it
            nor anything after it was read).
    """

    path: Path
    source: str
    end: int
    lines: int
    torn: bytes
    overlong: bool = False


def _overlong_line(data: bytes) -> int:
    """Where the first line of ``data`` (whole lines) longer than ``MAX_LINE_BYTES`` starts, or -1."""
    start = 0
    while start < len(data):
        end = data.index(b"\n", start) + 1
        if end - start > MAX_LINE_BYTES:
            return start
        start = end
    return -1


def split_log(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk | LogEnd]:
    """The chunks of a log, then its :class:`LogEnd`; reads the file once, in blocks.

    A line longer than ``chunk_bytes`` makes a chunk of its own (it is never cut); one longer
    than :data:`~sweep.store.ingestion._trace_files.MAX_LINE_BYTES` ends the log there (its
    :class:`LogEnd` says so), so memory stays bounded whatever the file holds.

    Raises:
        StoreError: The file is not a regular file (a device or FIFO put there after it was
            found), or cannot be read.
    """
    source = str(path.resolve())
    number, offset, carry = 1, 0, b""
    try:
        f = open_regular(path)
    except (OSError, FileRefused) as e:
        raise StoreError(f"{path}: {reason(e)}; ingest reads regular files only") from None
    with f:
        while block := f.read(chunk_bytes):
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            if not cut:
                carry = data
                if len(carry) > MAX_LINE_BYTES:
                    yield LogEnd(path, source, offset, number - 1, b"", overlong=True)
                    return
                continue
            whole, carry = data[:cut], data[cut:]
            long_at = _overlong_line(whole) if len(whole) > MAX_LINE_BYTES else -1
            if long_at >= 0:  # the lines before it, then the end
                if long_at:
                    yield Chunk(str(path), source, number, offset, long_at, whole[:long_at])
                    number += whole.count(b"\n", 0, long_at)
                    offset += long_at
                yield LogEnd(path, source, offset, number - 1, b"", overlong=True)
                return
            yield Chunk(str(path), source, number, offset, cut, whole)
            number += whole.count(b"\n")
            offset += cut
    yield LogEnd(path, source, offset, number - 1, carry)


#: ``Trace.model_validate_json`` without its Python wrapper (a microsecond per line).
_validate_json = Trace.__pydantic_validator__.validate_json


@dataclass
class LineSink:
    """Checks lines one at a time into a batch, counting and describing what it refuses.

    Attributes:
        batch: Receives the traces and workloads.
        traces_read: Evaluated traces accepted.
        workload_records: Workload-only records accepted.
        warnings: ``<where>: <what is wrong>, skipped``, one per refused line, in order.
    """

    batch: RowBatch
    traces_read: int = 0
    workload_records: int = 0
    warnings: list[str] = field(default_factory=list)

    def line(self, where: str, data: bytes, source: str) -> None:
        """Parse and add one line (``data`` as read, newline included: a JSON error at the
        end of the line then reads the same as when the line was read alone)."""
        text = data[:-1] if data.endswith(b"\n") else data
        key = trace_key(text)
        if self.batch.has_trace(key):
            # The line is the canonical record of a trace this batch holds (its key is the
            # hash of those bytes): parsing it would find that trace again, a repeat.
            self.batch.duplicates += 1
            self.traces_read += 1
            return
        try:
            trace = _validate_json(data)
        except pydantic.ValidationError as e:
            self.warnings.append(f"{where}: {describe_invalid(e, data)}, skipped")
            return
        try:
            self.batch.add_trace(trace, source=source, line=(text, key))
        except ValidationError as e:
            self.warnings.append(f"{where}: not a valid trace: {e}, skipped")
            return
        if trace.is_workload_only:
            self.workload_records += 1
        else:
            self.traces_read += 1


@dataclass(frozen=True)
class ParsedChunk:
    """What one chunk held: its rows and what was refused.

    Attributes:
        traces: Rows of ``traces`` (the store's Arrow schema), without repeats.
        workloads: Rows of ``workloads``, without repeats.
        duplicates: Traces left out because the chunk held the same trace before.
        traces_read: Evaluated traces accepted (repeats included).
        workload_records: Workload-only records accepted.
        warnings: One per refused line, in order.
    """

    traces: pa.Table
    workloads: pa.Table
    duplicates: int
    traces_read: int
    workload_records: int
    warnings: list[str]

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled (a worker's answer) with its tables in Arrow's stream format: read back
        # without a copy, where unpickling a table costs microseconds per row in the one
        # process that inserts.
        return (
            _parsed_from_wire,
            (
                _ipc(self.traces),
                _ipc(self.workloads),
                self.duplicates,
                self.traces_read,
                self.workload_records,
                self.warnings,
            ),
        )


def _ipc(table: pa.Table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _parsed_from_wire(
    traces: bytes,
    workloads: bytes,
    duplicates: int,
    traces_read: int,
    workload_records: int,
    warnings: list[str],
) -> ParsedChunk:
    import pyarrow as pa

    def table(data: bytes) -> pa.Table:
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()

    return ParsedChunk(table(traces), table(workloads), duplicates, traces_read, workload_records, warnings)


def parse_chunk(chunk: Chunk) -> ParsedChunk:
    """Check every line of a chunk and build its rows (blank lines are skipped silently).

    Raises:
        ChunkReadError: The chunk came without its bytes and the file changed.
    """
    batch = RowBatch()
    sink = LineSink(batch)
    number = chunk.first_line
    data = chunk.data if chunk.data or not chunk.size else read_chunk(chunk)
    present = chunk.present
    for i, raw in enumerate(io.BytesIO(data)):  # splits after each b"\n", as reading the file does
        if i in present:
            # A stored trace's canonical line: it would parse, pass every check and be found
            # stored by the insert; counted as that would count it.
            batch.duplicates += 1
            sink.traces_read += 1
        elif raw.strip():
            sink.line(f"{chunk.path}:{number}", raw, chunk.source)
        number += 1
    return ParsedChunk(
        traces=batch.arrow("traces"),
        workloads=batch.arrow("workloads"),
        duplicates=batch.duplicates,
        traces_read=sink.traces_read,
        workload_records=sink.workload_records,
        warnings=sink.warnings,
    )
