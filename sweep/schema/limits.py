"""Bounds on what input may hold: integers, nesting, file sizes, relative paths.

Everything kernel-sweep reads comes from people or other programs: sweep configs, dataset
files, trace files. What is stored ends up in DuckDB and Parquet columns of 64-bit integers,
and what is parsed is walked by recursive code. So every reader applies the same bounds,
named here once:

- integers are strict (``true`` is not ``1``) and fit a signed 64-bit column
  (:data:`Int64`, :data:`NonNegInt64`, :data:`PosInt64`);
- JSON nests at most :data:`MAX_JSON_DEPTH` levels (the limit of pydantic's own parser, so
  the fast path and the fallback that explains errors refuse the same files);
- files are regular files, opened without blocking and checked again once open
  (:func:`open_regular`), read whole only under a size cap (:func:`read_bytes`,
  :func:`read_text`): ``/dev/zero`` or a FIFO given as a config, or linked from a folder
  that is read, is refused before a byte is read;
- relative paths in records stay inside their folder (:func:`relative_path_problem`).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Annotated, BinaryIO

from annotated_types import Ge, Le
from pydantic import Strict

from sweep.errors import shown

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_JSON_DEPTH",
    "NOT_REGULAR",
    "FileRefused",
    "Int64",
    "NonNegInt64",
    "PosInt64",
    "json_depth",
    "load_json",
    "open_regular",
    "read_bytes",
    "read_text",
    "regular_file_problem",
    "relative_path",
    "relative_path_problem",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: A strict integer (``true`` and ``1.0`` are refused) in the signed 64-bit range.
Int64 = Annotated[int, Strict(), Ge(INT64_MIN), Le(INT64_MAX)]
#: A strict integer from 0 to the largest signed 64-bit value.
NonNegInt64 = Annotated[int, Strict(), Ge(0), Le(INT64_MAX)]
#: A strict integer from 1 to the largest signed 64-bit value.
PosInt64 = Annotated[int, Strict(), Ge(1), Le(INT64_MAX)]

#: The deepest JSON a record may be: pydantic's JSON parser refuses deeper documents.
MAX_JSON_DEPTH = 200


class FileRefused(ValueError):
    """A file that is not read at all: not a regular file, or over its size cap."""


#: Why a file of a kind other than regular is not read (the words every reader uses).
NOT_REGULAR = "is not a regular file (a device, FIFO or socket)"
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)


def _kind_problem(mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return NOT_REGULAR
    return None


def regular_file_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a regular file to read (a folder, a device, FIFO or socket), or
    ``None``; links are followed (a link to a regular file is one). For walkers that skip such
    entries with a word; whoever reads opens with :func:`open_regular`, which checks again.

    Raises:
        OSError: The path cannot be looked at (missing, no permission...).
        ValueError: The path holds a NUL character.
    """
    return _kind_problem(os.stat(path).st_mode)


def open_regular(path: str | Path, max_bytes: int | None = None) -> BinaryIO:
    """``path`` opened for reading (binary), refused unless it is a regular file of at most
    ``max_bytes`` bytes (any size when ``None``; a caller reading it whole gives a cap).

    The kind is checked before opening (a device is never opened: opening some has effects)
    and again on the open descriptor (the path may have been swapped in between); the open
    itself does not block (``O_NONBLOCK``), so a FIFO put there meanwhile cannot hang it.

    Raises:
        FileRefused: Not a regular file, or larger than ``max_bytes``.
        OSError: The file cannot be opened (missing, no permission...).
        ValueError: The path holds a NUL character.
    """
    problem = regular_file_problem(path)
    if problem is not None:
        raise FileRefused(problem)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        problem = _kind_problem(st.st_mode)
        if problem is not None:
            raise FileRefused(problem)
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileRefused(f"is larger than {max_bytes:,} bytes, the most read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes (:func:`open_regular`); a
    file that grew past the cap while open is refused after reading ``max_bytes + 1`` bytes.

    Raises:
        FileRefused: Not a regular file, or larger than ``max_bytes``.
        OSError: The file cannot be opened or read (missing, no permission...).
        ValueError: The path holds a NUL character.
    """
    with open_regular(path, max_bytes) as f:
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise FileRefused(f"is larger than {max_bytes:,} bytes, the most read")
    return raw


def read_text(path: str | Path, max_bytes: int) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` bytes (:func:`read_bytes`).

    Devices, FIFOs, sockets and folders are refused before a byte is read (opening a FIFO
    would block, reading ``/dev/zero`` would never end); a longer file is refused after
    reading ``max_bytes + 1`` bytes, never more.

    Raises:
        FileRefused: Not a regular file, or larger than ``max_bytes``.
        OSError: The file cannot be opened or read (missing, no permission...).
        UnicodeDecodeError: The bytes are not UTF-8.
        ValueError: The path holds a NUL character.
    """
    return read_bytes(path, max_bytes).decode("utf-8")


def json_depth(value: object) -> int:
    """How deeply lists and objects nest in a parsed JSON value (a scalar is 0), iteratively."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((c, depth + 1) for c in children)
    return deepest


def load_json(text: str) -> object:
    """``json.loads`` that refuses what pydantic's parser refuses: nesting over
    :data:`MAX_JSON_DEPTH` and integers of more than 4,300 digits, as a :class:`ValueError`.

    Raises:
        json.JSONDecodeError: The text is not JSON (a :class:`ValueError` too).
        ValueError: Nested too deeply, or an integer too long.
    """
    try:
        data: object = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # Python's limit on converting long digit strings to int
        raise ValueError("holds an integer of more than 4,300 digits") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    return data


def relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a relative path that stays inside its folder, or ``None``.

    Refused: NUL and other control characters, absolute paths (``/x``, ``\\x``, ``C:x``) and
    any ``..`` part. Symbolic links are resolved where the file is opened.
    """
    if any(ord(c) < 32 for c in path):
        return "must not contain control characters (NUL, newline...)"
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        return "must be a relative path"
    if ".." in path.replace("\\", "/").split("/"):
        return "must not contain '..'"
    return None


def relative_path(path: str, note: str = "") -> str:
    """``path`` when :func:`relative_path_problem` finds nothing, for a record's validator.

    Raises:
        ValueError: The problem, then ``note`` (what the path must name), then the value.
    """
    problem = relative_path_problem(path)
    if problem:
        raise ValueError(f"{problem}{note}, got {shown(path)}")
    return path
