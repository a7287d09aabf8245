"""What a command of the store writes beside it: never over the store.

A tuning table, a report page or an export folder goes where the user says, through
:mod:`sweep.schema.files` (a fresh temporary file renamed over the target), and never over
the store file, its write-ahead log, or the results folder's logs (:func:`store_paths`), nor
over a folder, a device, a FIFO or any DuckDB file.
"""

from __future__ import annotations

from pathlib import Path

from sweep.errors import StoreError, clip, reason
from sweep.schema.files import OutputRefused, output_problem, protected_problem, write_atomic

__all__ = ["check_output", "output_folder_problem", "store_paths", "write_output"]


def store_paths(store_path: Path, results_dir: Path | None = None) -> list[Path]:
    """What no output may write over or into: the store file (and so its ``.wal``) and the
    results folder's logs (``traces/``; the results folder is the store's by default)."""
    results = results_dir if results_dir is not None else Path(store_path).parent
    return [Path(store_path), Path(results) / "traces"]


def check_output(path: Path, *, store_path: Path, results_dir: Path | None = None, flag: str) -> None:
    """Refuse ``path`` as a command's output before any work: what :func:`write_output` would.

    Raises:
        StoreError: ``path`` is the store, its write-ahead log, inside its logs, a folder, a
            device, a FIFO or another store.
    """
    problem = output_problem(Path(path), protected=store_paths(store_path, results_dir))
    if problem is not None:
        raise StoreError(f"cannot write {clip(str(path), 300)}: it {problem}; give {flag} a new file's path")


def write_output(
    path: Path, data: str | bytes, *, store_path: Path, results_dir: Path | None = None, flag: str
) -> None:
    """Write a command's output file (:func:`sweep.schema.files.write_atomic`), never over the
    store (:func:`store_paths`).

    Args:
        path: The file to write.
        data: Its content.
        store_path: The store the command read.
        results_dir: Its results folder, when given.
        flag: The option that named ``path`` (for the fix in a message).

    Raises:
        StoreError: ``path`` is the store, its write-ahead log, inside its logs, a folder, a
            device, a FIFO or another store, or cannot be written; nothing was written.
    """
    where = clip(str(path), 300)
    try:
        write_atomic(Path(path), data, protected=store_paths(store_path, results_dir))
    except OutputRefused as e:
        raise StoreError(f"cannot write {where}: it {e}; give {flag} a new file's path") from None
    except (OSError, ValueError) as e:
        raise StoreError(f"cannot write {where}: {reason(e)}; give {flag} a path you can write") from None


def output_folder_problem(folder: Path, store_path: Path, results_dir: Path | None = None) -> str | None:
    """Why ``folder`` cannot receive a folder of outputs (an export), or ``None``: it must be
    missing or an empty folder (not a link to one), and not the store nor inside its logs."""
    try:
        if folder.is_symlink():
            return "is a link; give a new folder"
        if folder.is_dir():
            if any(folder.iterdir()):
                return "is not empty; give a new folder or empty it first"
        elif folder.exists() or folder.is_fifo():
            return "is a file; give a new folder"
    except OSError as e:
        return f"cannot be looked at ({reason(e)})"
    problem = protected_problem(folder, store_paths(store_path, results_dir))
    return f"{problem}; give a new folder" if problem is not None else None
