"""Chunks of JSONL logs parsed by worker processes, the results handed back in input order.

Checking a line (the schema's models, the store's checks, the canonical JSON its key is
hashed from) costs tens of microseconds of CPU in pydantic, which holds the GIL: threads would
not help, processes do. Each worker is a fresh interpreter running
``python -m sweep.store.ingestion._ingest_worker`` (never a fork of this process, which may hold
DuckDB's or Ray's threads, and never a re-run of the caller's ``__main__``, which
``multiprocessing`` would do), told over its stdin where a chunk lies in its file, and
answering on its stdout with the chunk's rows. Chunk ``i`` goes to worker ``i mod n`` and the
answers are read back in the same order, so they come in input order; at most
:data:`_IN_FLIGHT_PER_WORKER` chunks per worker are outstanding, so memory stays the same
whatever the size of the logs. Requests are a few hundred bytes, so writing one never waits
for a worker busy writing its answer.

Small ingests stay in this process: starting a worker costs about half a second.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple, TypeVar

from sweep._python import python_env, python_module
from sweep.errors import StoreError
from sweep.store.ingestion._jsonl_chunks import Chunk, ParsedChunk, parse_chunk

if TYPE_CHECKING:
    from sweep.store.ingestion._spool import SpooledChunk

__all__ = [
    "PARALLEL_MIN_BYTES",
    "ChunkFailed",
    "auto_workers",
    "parse_in_order",
    "read_frame",
    "usable_cpus",
    "write_frame",
]

#: Logs smaller than this (about 40,000 traces) are parsed in this process.
PARALLEL_MIN_BYTES = 32 << 20
#: Chunks outstanding per worker: one being parsed, one waiting, so none idles between them.
_IN_FLIGHT_PER_WORKER = 2
_LENGTH_BYTES = 8
_T = TypeVar("_T")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def auto_workers(log_bytes: int, chunk_bytes: int) -> int:
    """Processes to parse ``log_bytes`` of logs: one per usable CPU but one past two CPUs, at
    most one per chunk; 1 (this process) for small logs, or where no interpreter can be started.

    Past two CPUs, one is left to the process that writes: parsing costs several times what
    inserting does, so the workers keep up with it long before the CPUs run out, and then
    that one process bounds the rate. With two, both parse (the writer's share is small then).
    """
    if log_bytes < PARALLEL_MIN_BYTES or not sys.executable or multiprocessing.current_process().daemon:
        return 1
    cpus = usable_cpus()
    return max(1, min(cpus - 1 if cpus > 2 else cpus, -(-log_bytes // chunk_bytes)))


class ChunkFailed(NamedTuple):
    """A worker's answer when parsing its chunk raised (the other answer is a
    :class:`~sweep.store.ingestion._jsonl_chunks.ParsedChunk`)."""

    error: BaseException
    traceback: str


def write_frame(out: IO[bytes], payload: bytes) -> None:
    """One message: its length (8 bytes, big-endian), then the bytes."""
    out.write(len(payload).to_bytes(_LENGTH_BYTES, "big"))
    out.write(payload)
    out.flush()


def read_frame(inp: IO[bytes]) -> bytes | None:
    """The next message, or ``None`` at the end of the stream (also if it ends mid-message)."""
    head = inp.read(_LENGTH_BYTES)
    if len(head) < _LENGTH_BYTES:
        return None
    size = int.from_bytes(head, "big")
    body = inp.read(size)
    return body if len(body) == size else None


class _Worker:
    """One ``sweep.store.ingestion._ingest_worker`` process."""

    def __init__(self) -> None:
        # The very `sweep` this process runs, wherever it came from (not the working folder's).
        self.proc = subprocess.Popen(
            python_module("sweep.store.ingestion._ingest_worker"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=python_env(),
        )

    def send(self, chunk: Chunk) -> None:
        assert self.proc.stdin is not None
        write_frame(self.proc.stdin, pickle.dumps(chunk.without_data(), protocol=pickle.HIGHEST_PROTOCOL))

    def receive(self) -> ParsedChunk | SpooledChunk:
        assert self.proc.stdout is not None
        frame = read_frame(self.proc.stdout)
        if frame is None:
            code = self.proc.wait()
            raise StoreError(
                f"an ingest worker process (pid {self.proc.pid}) stopped with exit code {code} "
                "(its message, if any, is above); ingest again, or with workers=1 to parse here"
            )
        answer: ParsedChunk | SpooledChunk | ChunkFailed = pickle.loads(frame)  # our own child's answer
        if not isinstance(answer, ChunkFailed):
            return answer
        if isinstance(answer.error, StoreError):
            raise answer.error
        raise RuntimeError(f"an ingest worker failed:\n{answer.traceback}") from answer.error

    def close(self, *, kill: bool) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()  # end of requests: the worker exits
            except OSError:
                pass
        if kill:
            self.proc.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def parse_in_order(
    items: Iterable[Chunk | _T], workers: int, spool: Path | None = None
) -> Iterator[ParsedChunk | SpooledChunk | _T]:
    """Each :class:`Chunk` of ``items`` parsed, other items passed through, in input order.

    Args:
        items: Chunks, and markers (a log's end) that keep their place among them.
        workers: Processes that parse; 1 parses in this process, one chunk at a time.
        spool: With workers, a folder where they write each chunk's rows as Arrow files,
            named in input order, answering with a :class:`~sweep.store.ingestion._spool.SpooledChunk`
            (:mod:`sweep.store.ingestion._spool`); ``None``: the rows come back as Arrow.

    Raises:
        StoreError: A worker stopped, or a log changed while it was read.
    """
    if workers <= 1:
        for item in items:
            yield parse_chunk(item) if isinstance(item, Chunk) else item
        return
    pool: list[_Worker] = []
    done = False
    try:
        # In input order: the worker whose answer comes next, or a marker (as a 1-tuple).
        window: deque[_Worker | tuple[_T]] = deque()
        outstanding = 0
        turn = 0
        for item in items:
            if isinstance(item, Chunk):
                if len(pool) < workers:
                    # Started at its first chunk: a re-ingest whose lines are all stored
                    # (:mod:`sweep.store.ingestion._present_lines`) parses nothing and starts none.
                    pool.append(_Worker())
                worker = pool[turn % workers]
                if spool is not None:
                    # Zero-padded: the files' names sort in the order of the lines.
                    item = replace(item, spool=str(spool / f"{turn:010d}"))
                turn += 1
                worker.send(item)
                window.append(worker)
                outstanding += 1
            else:
                window.append((item,))
            while outstanding > workers * _IN_FLIGHT_PER_WORKER or (window and isinstance(window[0], tuple)):
                head = window.popleft()
                if isinstance(head, tuple):
                    yield head[0]
                else:
                    outstanding -= 1
                    yield head.receive()
        while window:
            head = window.popleft()
            yield head[0] if isinstance(head, tuple) else head.receive()
        done = True
    finally:
        # On an error, or a consumer that stops early, nothing outstanding is worth finishing.
        for worker in pool:
            worker.close(kill=not done)
