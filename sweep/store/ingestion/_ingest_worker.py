"""An ingest worker process: ``python -m sweep.store.ingestion._ingest_worker``.

Reads requests (a pickled :class:`~sweep.store.ingestion._jsonl_chunks.Chunk`, where its lines lie in
their file) from stdin and answers each on stdout with the parsed chunk (or, for a chunk with a ``spool``, where its rows
were written: :mod:`sweep.store.ingestion._spool`), or with the exception
it raised and its traceback (a ``ChunkFailed``); exits at the end of stdin. See :mod:`sweep.store.ingestion._ingest_pool`.
Nothing imports this module; it only runs as a program.
"""

from __future__ import annotations

import pickle
import signal
import sys
import traceback

from sweep.store.ingestion._ingest_pool import ChunkFailed, read_frame, write_frame
from sweep.store.ingestion._jsonl_chunks import parse_chunk
from sweep.store.ingestion._spool import spool_chunk

__all__ = ["main"]


def main() -> None:
    """Serve requests until stdin ends."""
    # Ctrl-C reaches the whole process group: the parent decides, and closes or kills us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not break the frames on stdout
    while (frame := read_frame(requests)) is not None:
        chunk = pickle.loads(frame)  # our parent's request
        try:
            # Rows written to the spool folder when the parent asks so, else sent back.
            answer: object = spool_chunk(chunk) if chunk.spool else parse_chunk(chunk)
        except Exception as e:  # noqa: BLE001 - handed to the parent, which raises it
            answer = ChunkFailed(e, traceback.format_exc())
        try:
            payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an exception that cannot be pickled: its text then
            payload = pickle.dumps(ChunkFailed(RuntimeError(str(answer)), traceback.format_exc()))
        write_frame(answers, payload)


if __name__ == "__main__":
    main()
