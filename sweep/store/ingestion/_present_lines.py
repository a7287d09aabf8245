"""Lines of a log that are stored traces, found by hashing the raw line, not by parsing it.

A trace's key is the SHA-256 of its canonical serialisation (:func:`~sweep.store.rows._row_batch.trace_key`).
If the hash of a raw line (without its newline) is a stored key, the line *is* the canonical
record of that stored trace: parsing it would give the same trace, which passes every check
(it was stored through them) and which the insert would find stored. Such a line is counted
as read and present without being parsed, which is most of what a re-ingest of the same logs
does. A line that hashes to no stored key (a new trace, a non-canonical spelling of a stored
one, an invalid line) is parsed as before, so what is stored, counted and warned about is the
same either way; only the time differs.

Hashing costs about a microsecond per line and the lookup a scan of the stored keys, so only
the part of a log that the store already has is looked at: lines before the offset its
``log_progress`` mark records (a log never ingested, or the lines appended since, go straight
to parsing). Keys are looked up in groups of :data:`GROUP_LINES` lines (one scan each); a
group holds the keys and where the chunks lie, never their bytes, so memory stays flat.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sweep.store.ingestion._jsonl_chunks import Chunk, LogEnd, ParsedChunk
from sweep.store.rows import LogMark, RowBatch, trace_keys

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["GROUP_LINES", "PresentLookup", "mark_present"]

#: Lines whose keys are looked up together: each lookup scans the stored keys once (about
#: 15 MB of keys held at a time).
GROUP_LINES = 131_072

#: The stored keys among the keys given.
PresentLookup = Callable[[Sequence[str]], set[str]]


@dataclass(frozen=True)
class _Hashed:
    chunk: Chunk  # without its bytes: a worker reads them from the file
    keys: list[str]  # per line of the chunk, the key it would have if it were a canonical record


def _line_keys(data: bytes) -> list[str]:
    """The key of each line of a chunk (which ends with a newline), as if it were canonical."""
    lines = data.split(b"\n")
    lines.pop()  # the empty piece after the last newline
    return trace_keys(lines)


@functools.cache
def _no_rows() -> tuple[pa.Table, pa.Table]:
    """Empty ``traces`` and ``workloads`` (Arrow tables are immutable: one pair serves all)."""
    empty = RowBatch()
    return empty.arrow("traces"), empty.arrow("workloads")


def _resolved(item: _Hashed, stored: set[str]) -> Chunk | ParsedChunk:
    """The chunk with its present lines marked, or, if every line is present, what parsing
    it would give, made here."""
    if stored.issuperset(item.keys):
        # Nothing is left to parse (a blank line is never present: its hash is no key).
        traces, workloads = _no_rows()
        n = len(item.keys)
        return ParsedChunk(
            traces=traces,
            workloads=workloads,
            duplicates=n,
            traces_read=n,
            workload_records=0,
            warnings=[],
        )
    present = frozenset(itertools.compress(itertools.count(), map(stored.__contains__, item.keys)))
    return replace(item.chunk, present=present)


def mark_present(
    items: Iterable[Chunk | LogEnd], marks: dict[str, LogMark], lookup: PresentLookup
) -> Iterator[Chunk | ParsedChunk | LogEnd]:
    """``items`` in order, each chunk of a log's stored part with its present lines marked
    (or replaced by its parsed result when all its lines are present).

    Args:
        items: Chunks (with their bytes) and log ends, as :func:`~sweep.store.ingestion._jsonl_chunks.split_log` gives them.
        marks: The store's log progress, by absolute path.
        lookup: The stored keys among some keys.
    """
    pending: list[_Hashed | Chunk | LogEnd] = []
    lines = 0

    def flush() -> Iterator[Chunk | ParsedChunk | LogEnd]:
        nonlocal lines
        keys = [k for p in pending if isinstance(p, _Hashed) for k in p.keys]
        stored = lookup(keys) if keys else set()
        for p in pending:
            yield _resolved(p, stored) if isinstance(p, _Hashed) else p
        pending.clear()
        lines = 0

    for item in items:
        if isinstance(item, LogEnd):
            # Tiny, and its place among the chunks is kept.
            pending.append(item)
            continue
        mark = marks.get(item.source)
        if mark is not None and item.offset < mark.offset and item.data:
            hashed = _Hashed(replace(item, data=b""), _line_keys(item.data))
            pending.append(hashed)
            lines += len(hashed.keys)
            if lines >= GROUP_LINES:
                yield from flush()
        else:
            # A chunk past what the store has: parsed, after what came before it.
            yield from flush()
            yield item
    yield from flush()
