"""Reading the files of a dataset root: which files, their text (bounded), one record from
JSON with every problem said where, JSONL lines with the file's own line numbers, and
safetensors paths that lead out of the root. :mod:`sweep.plan.dataset` loads with these."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pydantic

from sweep.errors import DatasetError, clip, format_validation_error, reason, shown
from sweep.schema import SafetensorsInput, Workload
from sweep.schema.limits import load_json, read_text

__all__ = [
    "LAYOUT",
    "MAX_FILE_BYTES",
    "check_roots",
    "escaping_paths",
    "files",
    "jsonl_lines",
    "line_runs",
    "parse",
    "read_file_text",
]

#: Sub-folder and file suffix of each kind of file in a dataset root.
LAYOUT: dict[str, tuple[str, str]] = {
    "definition": ("definitions", ".json"),
    "solution": ("solutions", ".json"),
    "workload": ("workloads", ".jsonl"),
    "trace": ("traces", ".jsonl"),
}
#: The largest dataset file read (a JSONL of workloads or traces can be large; a device or
#: a runaway file must not fill the memory).
MAX_FILE_BYTES = 512 * 2**20

_R = TypeVar("_R", bound=pydantic.BaseModel)


def files(root: Path, kind: str) -> list[Path]:
    """The files of one kind (a key of :data:`LAYOUT`) under ``root``, sorted by path."""
    folder, suffix = LAYOUT[kind]
    base = root / folder
    if not base.is_dir():
        return []
    # Not only regular files: a FIFO or a link to a device named like a record is reported
    # (reading checks the kind of file first and never opens those).
    return sorted(p for p in base.rglob(f"*{suffix}") if not p.is_dir())


def read_file_text(path: Path, errors: list[str]) -> str | None:
    """The text of a dataset file, or ``None`` with the reason added to ``errors``."""
    try:
        return read_text(path, MAX_FILE_BYTES)
    except (OSError, ValueError) as e:  # ValueError: FileRefused, UnicodeDecodeError
        errors.append(f"{path}: cannot read: {reason(e)}")
        return None


def parse(
    model: type[_R], text: str, path: Path, line: int | None, errors: list[str]
) -> tuple[_R | None, object]:
    """One record from JSON text: ``(record, None)``, or ``(None, data)`` with errors added.

    The fast path is pydantic's own JSON parser. Only when it fails is the text parsed again
    with ``json`` to say exactly where and what (``data`` is then the parsed object, or
    ``None`` when the text is not JSON).
    """
    try:
        return model.model_validate_json(text), None
    except pydantic.ValidationError:
        pass
    where = f"{path}:{line}" if line is not None else str(path)
    try:
        data: object = load_json(text)
    except json.JSONDecodeError as e:
        where = f"{path}:{line if line is not None else e.lineno}"
        errors.append(f"{where}: not valid JSON: {e.msg} (column {e.colno})")
        return None, None
    except ValueError as e:  # nested too deeply, an integer too long
        errors.append(f"{where}: not accepted as JSON: {e}")
        return None, None
    if not isinstance(data, dict):
        errors.append(f"{where}: expected a JSON object, got {type(data).__name__}")
        return None, data
    try:
        return model.model_validate(data), None
    except pydantic.ValidationError as e:
        errors.extend(format_validation_error(e, data, prefix=where))
        return None, data


def jsonl_lines(path: Path, errors: list[str]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSONL file with their 1-based line numbers (none, with the
    reason in ``errors``, when it cannot be read)."""
    text = read_file_text(path, errors)
    if text is None:
        return
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and other characters that
    # splitlines() takes for line ends, and line numbers must be the file's.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield lineno, line


def escaping_paths(root: Path, workload: Workload) -> list[str]:
    """Safetensors inputs whose file, with symbolic links followed, is outside ``root``.

    The record itself refuses absolute paths and ``..``; a link inside the dataset that
    points elsewhere is found only here. The engine refuses such paths too (later).
    """
    base = root.resolve()
    out = []
    for name, spec in workload.inputs.items():
        if isinstance(spec, SafetensorsInput) and not (base / spec.path).resolve().is_relative_to(base):
            out.append(
                f"inputs.{clip(name)}.path: {shown(spec.path)} leads outside the dataset root {base} "
                "(through a symbolic link); safetensors files must be inside the root"
            )
    return out


def check_roots(roots: Sequence[str | Path]) -> list[Path]:
    """The roots, absolute, each checked to be a dataset folder (once).

    Raises:
        DatasetError: No root, or one that is no usable path, no folder, not in the
            FlashInfer-Bench layout, or given twice.
    """
    if not roots:
        raise DatasetError("no dataset root given")
    out: list[Path] = []
    for r in roots:
        name = shown(str(r))
        try:
            p = Path(r).expanduser().resolve()
            is_dir = p.is_dir()
        except (OSError, ValueError, RuntimeError) as e:
            # ValueError: a NUL in the path; RuntimeError: '~user' with no such user.
            raise DatasetError(f"dataset root {name} is not a usable path: {reason(e)}") from None
        if not is_dir:
            raise DatasetError(f"dataset root {name} is not a folder ({clip(str(p))})")
        if not any((p / LAYOUT[k][0]).is_dir() for k in LAYOUT):
            raise DatasetError(
                f"dataset root {name} has none of definitions/, solutions/, workloads/, traces/ "
                "(expected the FlashInfer-Bench layout)"
            )
        if p in out:
            raise DatasetError(f"dataset root {name} is given twice")
        out.append(p)
    return out


def line_runs(lines: list[int]) -> str:
    """``1-3, 7``: line numbers (ascending) as runs, at most 10 runs, then how many more."""
    runs: list[list[int]] = []
    for n in lines:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = [f"{a}-{b}" if b > a else str(a) for a, b in runs[:10]]
    more = f", and {len(runs) - 10} more run(s)" if len(runs) > 10 else ""
    return ", ".join(text) + more
