"""Capturing what an evaluation prints, down to the file descriptors."""

from __future__ import annotations

import ctypes
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Captured", "capture_output"]


@dataclass
class Captured:
    """Text printed inside :func:`capture_output`; filled in when the block exits."""

    text: str = ""


def _flush_c_stdio() -> None:
    # printf from a C extension sits in libc's buffer (full buffering when fd 1 is a file):
    # flush it before the descriptors are switched back, or it lands in the wrong place.
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


@contextmanager
def capture_output() -> Iterator[Captured]:
    """Send fds 1 and 2, and ``sys.stdout``/``sys.stderr``, to a temporary file.

    Catches Python prints, C/C++ ``printf`` and subprocess output (compilers) alike.
    Everything is restored on exit, also when the block raises.
    """
    result = Captured()
    tmp = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - closed in the finally below
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _flush_c_stdio()
    saved = (os.dup(1), os.dup(2))
    old_streams = (sys.stdout, sys.stderr)
    text_stream = io.TextIOWrapper(
        open(tmp.fileno(), "wb", buffering=0, closefd=False),  # noqa: SIM115 - closed below
        encoding="utf-8",
        errors="replace",
        line_buffering=True,
        write_through=True,
    )
    try:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        sys.stdout = sys.stderr = text_stream
        yield result
    finally:
        try:
            text_stream.flush()
        except (OSError, ValueError):
            pass
        _flush_c_stdio()
        sys.stdout, sys.stderr = old_streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        tmp.seek(0)
        result.text = tmp.read().decode("utf-8", errors="replace")
        text_stream.detach()
        tmp.close()
