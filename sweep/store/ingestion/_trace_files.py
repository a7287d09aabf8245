"""Reading trace files: JSONL logs (from an offset, whole lines only), JSON records, folders.

A JSONL log is appended one whole line per trace; a process killed mid-write leaves a last
line without its newline. :class:`LogReader` stops before such a line and hands it over as
:attr:`LogReader.torn`: a reader takes it as a record only if it parses (no proper prefix of a
JSON object does, so a write cut short never does), and once later lines follow it, a line
that does not parse is reported and skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pydantic_core

from sweep.errors import StoreError, reason
from sweep.schema import Definition, Solution, Trace
from sweep.schema.limits import open_regular, read_bytes, regular_file_problem

__all__ = [
    "EXPORT_FORMAT",
    "MAX_LINE_BYTES",
    "MAX_MANIFEST_BYTES",
    "MAX_RECORD_FILE_BYTES",
    "Line",
    "LogReader",
    "Source",
    "file_problem",
    "find_sources",
    "head_hash",
    "is_json",
    "log_files",
    "parse_json_record",
]

#: ``format`` of the manifest that marks a Parquet export folder.
EXPORT_FORMAT = "kernel-sweep-export"
#: The longest line of a trace log read (a trace with its samples and log is well under a
#: megabyte); a longer one ends the reading of its file, with a warning.
MAX_LINE_BYTES = 64 * 2**20
#: The largest ``*.json`` record file read whole (as a dataset's files).
MAX_RECORD_FILE_BYTES = 512 * 2**20
#: The largest export manifest read (one is a few hundred bytes).
MAX_MANIFEST_BYTES = 2**20
_EXPORT_TABLES = ("definitions", "solutions", "workloads", "traces")
_HEAD_BYTES = 4096


def head_hash(path: Path, offset: int) -> str:
    """Hash of the first ``min(offset, 4096)`` bytes of a file.

    Raises:
        FileRefused: Not a regular file.
        OSError: It cannot be read.
    """
    with open_regular(path) as f:
        return hashlib.sha256(f.read(min(offset, _HEAD_BYTES))).hexdigest()[:16]


def is_json(data: bytes) -> bool:
    """Whether ``data`` is one whole JSON value (a last line that is not was cut short)."""
    try:
        pydantic_core.from_json(data)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Line:
    """One whole line of a log: 1-based number (0 when reading from an offset), the byte
    offset just past its newline, and its bytes."""

    number: int
    end: int
    data: bytes


@dataclass
class LogReader:
    """Whole lines of a JSONL file from ``start``; see :attr:`torn` after iterating.

    Attributes:
        path: The file.
        start: Byte offset to begin at (the start of a line).
        end: After iteration, the offset just past the last whole line.
        torn: After iteration, the trailing bytes without a newline, if any (a write in
            progress, or one cut short by a kill).
        overlong: After iteration, whether it stopped at a line longer than
            :data:`MAX_LINE_BYTES` (not read; nothing after it either).
    """

    path: Path
    start: int = 0
    end: int = 0
    torn: bytes = b""
    overlong: bool = False

    def __iter__(self) -> Iterator[Line]:
        """Raises :class:`~sweep.schema.limits.FileRefused` for a file that is not regular; a
        line longer than :data:`MAX_LINE_BYTES` ends the reading (:attr:`overlong`)."""
        offset = self.start
        number = 0
        with open_regular(self.path) as f:
            f.seek(self.start)
            while raw := f.readline(MAX_LINE_BYTES + 1):
                if len(raw) > MAX_LINE_BYTES:
                    self.overlong = True
                    break
                if not raw.endswith(b"\n"):
                    self.torn = raw
                    break
                offset += len(raw)
                number += 1
                self.end = offset
                yield Line(number if self.start == 0 else 0, offset, raw)
        self.end = offset


@dataclass(frozen=True)
class Source:
    """One input of an ingest: a JSONL file, a JSON file, or a Parquet export folder."""

    kind: Literal["jsonl", "json", "export"]
    path: Path


def _is_export(folder: Path) -> bool:
    """A folder ``sweep export`` wrote: its manifest says so, or (a manifest damaged) it has
    the manifest beside Parquet files of a table; :func:`sweep.store.ingestion._ingest_export.read_manifest`
    then says what is wrong, rather than the folder being read as loose files."""
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return False
    if any((folder / t).is_dir() and any((folder / t).rglob("*.parquet")) for t in _EXPORT_TABLES):
        return True
    try:
        data = json.loads(read_bytes(manifest, MAX_MANIFEST_BYTES))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == EXPORT_FORMAT


def file_problem(path: Path) -> str | None:
    """Why ``path`` is no file to read (a folder, a device, FIFO or socket, also behind a link;
    missing or unreadable), or ``None``."""
    try:
        return regular_file_problem(path)
    except (OSError, ValueError) as e:
        return f"cannot be read ({reason(e)})"


def _walk(folder: Path, out: list[Source], skipped: list[str], seen: set[tuple[int, int]]) -> None:
    try:
        st = folder.stat()
    except OSError:
        return
    if (st.st_dev, st.st_ino) in seen:  # a link back up the tree: walked already
        return
    seen.add((st.st_dev, st.st_ino))
    if _is_export(folder):
        out.append(Source("export", folder))
        return
    for child in sorted(folder.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            _walk(child, out, skipped, seen)
        elif child.suffix in (".jsonl", ".json"):
            problem = file_problem(child)
            if problem is not None:
                skipped.append(f"{child}: {problem}, skipped (ingest reads regular files only)")
            else:
                out.append(Source("jsonl" if child.suffix == ".jsonl" else "json", child))


def find_sources(paths: list[Path], skipped: list[str] | None = None) -> list[Source]:
    """Every trace file and export folder under ``paths`` (files are taken as given).

    Only regular files are read: in a folder, a device, FIFO or socket (also behind a link)
    named like a trace file is left out, with a line in ``skipped``; named as a path, it is
    refused. Folders linked back up the tree are walked once.

    Raises:
        StoreError: A path does not exist, is of an unknown kind or no regular file, or a
            folder holds nothing to ingest.
    """
    out: list[Source] = []
    skips: list[str] = [] if skipped is None else skipped
    for p in paths:
        if not p.exists():
            raise StoreError(f"no such file or folder: {p}")
        if p.is_dir():
            before, skipped_before = len(out), len(skips)
            _walk(p, out, skips, set())
            if len(out) == before:
                also = (
                    f" ({len(skips) - skipped_before} left out: not regular files)"
                    if len(skips) > skipped_before
                    else ""
                )
                raise StoreError(
                    f"nothing to ingest under {p}: no *.jsonl or *.json files and no Parquet "
                    f"export (a folder with manifest.json written by 'sweep export'){also}"
                )
            continue
        if p.suffix in (".jsonl", ".json", ".parquet") and p.name != "manifest.json":
            problem = file_problem(p)
            if problem is not None:
                raise StoreError(f"{p}: {problem}; ingest reads regular files only")
        if p.name == "manifest.json" and _is_export(p.parent):
            out.append(Source("export", p.parent))
        elif p.suffix == ".jsonl":
            out.append(Source("jsonl", p))
        elif p.suffix == ".json":
            out.append(Source("json", p))
        elif p.suffix == ".parquet":
            raise StoreError(
                f"{p}: ingest a whole Parquet export, not one of its files: give the folder "
                "that holds manifest.json"
            )
        else:
            raise StoreError(f"{p}: not a trace file; expected *.jsonl, *.json or an export folder")
    return out


def log_files(results_dir: Path) -> list[Path]:
    """The JSONL logs a sweep writes: ``<results>/traces/**/*.jsonl``, sorted (whatever they
    are: a reader opens them with :func:`~sweep.schema.limits.open_regular`)."""
    base = results_dir / "traces"
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*.jsonl") if not any(s.startswith(".") for s in p.parts))


def parse_json_record(obj: object) -> Definition | Solution | Trace:
    """A JSON object as the record it is: a definition, a solution or a trace.

    Raises:
        TypeError: The value is not a JSON object.
        ValueError: The object is none of them (message says why).
        pydantic.ValidationError: It looks like one but breaks the schema.
    """
    if not isinstance(obj, dict):
        raise TypeError(f"expected a JSON object, got {type(obj).__name__}")
    if "workload" in obj:
        return Trace.model_validate(obj)
    if "spec" in obj and "sources" in obj:
        return Solution.model_validate(obj)
    if "reference" in obj and "op_type" in obj:
        return Definition.model_validate(obj)
    keys = ", ".join(sorted(obj)[:8])
    raise ValueError(f"not a trace, definition or solution (keys: {keys})")
