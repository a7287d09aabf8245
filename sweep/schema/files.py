"""Writing files: every output lands whole or not at all, never through a link, never over a
store; paths made of names stay inside their root.

Everything kernel-sweep writes (records, exports, tuning tables, reports, calibrations) goes
through :func:`write_atomic` (one file; :func:`atomic_output` to stream one) or :func:`fresh_folder` and :func:`publish_folder` (a
folder of files), so:

- the bytes go to a fresh temporary file beside the target, created exclusively with a name
  nobody can guess and without following a link (``O_CREAT | O_EXCL | O_NOFOLLOW``), then
  renamed over the target: a link planted beside the target is never written through, and a
  reader never sees half a file;
- an output that is an existing folder, device, FIFO or socket, or a DuckDB store (a file
  whose header says so, or a path the caller names as its store or the store's write-ahead
  log), is refused before anything is written (:func:`output_problem`);
- a path built from names (a definition's, an author's) is checked part by part: one plain
  name each, nothing that climbs out (:func:`name_problem`), and no link on the way that
  leads out of the root (:func:`inside_problem`).

Reading is :mod:`sweep.schema.limits`'s (regular files only, under a size cap).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "MAX_NAME_BYTES",
    "OutputRefused",
    "atomic_output",
    "fresh_folder",
    "inside_problem",
    "name_problem",
    "output_problem",
    "protected_problem",
    "publish_folder",
    "write_atomic",
]

#: The longest file name most file systems take (bytes of UTF-8).
MAX_NAME_BYTES = 255
#: What a DuckDB database file holds at bytes 8..12 (after a checksum).
_DUCKDB_MAGIC = b"DUCK"
_WRITE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


class OutputRefused(ValueError):
    """An output that is not written: the message says what the path is (a folder, a store...)."""


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be one file or folder name inside a root, or ``None``.

    Refused: empty, ``.`` and ``..``, a path separator (``/``, ``\\``), NUL and other control
    characters, a drive (``C:``), and more than :data:`MAX_NAME_BYTES` bytes.
    """
    if not name:
        return "is empty"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "holds a control character (NUL, newline...)"
    if name in (".", ".."):
        return "is '.' or '..', which name no file"
    if "/" in name or "\\" in name:
        return "holds a path separator ('/' or '\\'): a name is one part of a path"
    if len(name) > 1 and name[1] == ":":
        return "starts with a drive ('C:')"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes, the longest file name"
    return None


def inside_problem(root: Path, path: Path) -> str | None:
    """Why ``path`` is not inside ``root`` once links are followed (a folder on the way that is
    a link leading out of the root, an absolute path, ``..``), or ``None``.

    Parts that do not exist yet are taken as they are written.
    """
    try:
        real_root = Path(os.path.realpath(root))
        real = Path(os.path.realpath(path))
    except (OSError, ValueError) as e:  # a link loop, a NUL
        return f"cannot be resolved ({e})"
    if real != real_root and real_root not in real.parents:
        return f"leads out of {root} (to {real}): a link or '..' on the way"
    return None


def _kind(mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None


def _same_file(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _is_duckdb(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.pread(fd, 12, 0)[8:12] == _DUCKDB_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def protected_problem(path: Path, protected: Iterable[Path]) -> str | None:
    """Why ``path`` is one of ``protected`` (a store, a folder a store reads), a protected
    store's write-ahead log (``<store>.wal``) or a path inside a protected folder, also through
    a link or a second name; or ``None``."""
    for p in protected:
        for guarded in (Path(p), Path(f"{p}.wal")):
            if _same_file(path, guarded):
                return f"is the store {guarded}"
        real = Path(os.path.realpath(p))
        if real in Path(os.path.realpath(path)).parents:
            return f"is inside {p}, which the store reads"
    return None


def output_problem(path: Path, *, protected: Iterable[Path] = ()) -> str | None:
    """Why ``path`` must not be written as an output file, or ``None``.

    Refused: one of ``protected`` (a store the command reads, a folder of logs a store reads)
    or a path inside one, or a protected store's write-ahead log (``<store>.wal``), also
    through a link or a second name; an existing folder, device, FIFO or socket (also behind a
    link); a DuckDB database file, or the write-ahead log beside one. A missing path, or a
    regular file of other content, may be written (over).
    """
    problem = protected_problem(path, protected)
    if problem is not None:
        return problem
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:  # a link loop, a NUL, no permission
        return f"cannot be looked at ({e.strerror if isinstance(e, OSError) and e.strerror else e})"
    kind = _kind(st.st_mode)
    if kind is not None:
        return f"is {kind}, not a regular file"
    if _is_duckdb(path):
        return "is a DuckDB store"
    name = os.path.realpath(path)
    if name.endswith(".wal") and _is_duckdb(Path(name[: -len(".wal")])):
        return f"is the write-ahead log of the DuckDB store {name[: -len('.wal')]}"
    return None


def _make_folder(folder: Path) -> None:
    """``folder`` and those above it, made where missing (a file in the way: ``ENOTDIR``)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder)) from None


def _fresh_file(folder: Path, name: str) -> tuple[int, Path]:
    """A new empty file in ``folder`` opened for writing, created exclusively (never a link)."""
    stem = _stem(name)
    for _ in range(100):
        tmp = folder / f".{stem}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, _WRITE_FLAGS, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no fresh temporary name in {folder}")


@contextlib.contextmanager
def atomic_output(
    path: Path,
    *,
    overwrite: bool = True,
    protected: Iterable[Path] = (),
    inside: Path | None = None,
) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s content into, in full or not at all, never through a
    link: a fresh temporary file beside ``path`` (created exclusively, not following a link),
    renamed over ``path`` when the block ends without an error (``overwrite``), or linked to it
    only if nothing is there (without); removed otherwise.

    Args:
        path: The file to write; its folders are created.
        overwrite: Replace a file that is there; else :class:`FileExistsError` at the end.
        protected: Stores the command reads: never written over (:func:`output_problem`).
        inside: A root the file must stay inside, links followed (:func:`inside_problem`),
            checked once its folders exist.

    Raises:
        OutputRefused: ``path`` is no file to write (:func:`output_problem`), or leaves ``inside``.
        FileExistsError: ``path`` exists and ``overwrite`` is false.
        OSError: A folder or the file cannot be written.
        ValueError: The path holds a NUL character.
    """
    problem = output_problem(path, protected=protected)
    if problem is None and inside is not None:
        problem = inside_problem(inside, path)  # before a folder is made outside
    if problem is not None:
        raise OutputRefused(problem)
    folder = path.parent
    _make_folder(folder)
    if inside is not None:
        problem = inside_problem(inside, path)  # a link put on the way meanwhile
        if problem is not None:
            raise OutputRefused(problem)
    fd, tmp = _fresh_file(folder, path.name)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_atomic(
    path: Path,
    data: str | bytes,
    *,
    overwrite: bool = True,
    protected: Iterable[Path] = (),
    inside: Path | None = None,
) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through :func:`atomic_output` (same arguments,
    same errors): all of it or nothing, never through a link, never over a store."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_output(path, overwrite=overwrite, protected=protected, inside=inside) as f:
        f.write(raw)


def _link_new(tmp: Path, path: Path) -> None:
    """``tmp`` under the name ``path`` only if nothing is there (atomically, where links exist)."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        raise FileExistsError(f"{path} exists") from None
    except OSError:  # a file system without hard links: reserve the name, then rename over it
        os.close(os.open(path, _WRITE_FLAGS, 0o666))
        os.replace(tmp, path)


def _stem(name: str) -> str:
    """The start of ``name`` for a temporary name beside it: at most 100 bytes, so the whole
    temporary name stays within :data:`MAX_NAME_BYTES`."""
    return name.encode("utf-8", "surrogatepass")[:100].decode("utf-8", "ignore")


def fresh_folder(target: Path) -> Path:
    """A new empty folder beside ``target`` to write a folder of outputs into, then
    :func:`publish_folder` it. Created by this call alone (an unguessable name, never one that
    was there), with the permissions the umask gives, so only its owner can plant anything in
    it meanwhile.

    Raises:
        OSError: The folder above ``target`` cannot be created or written.
    """
    _make_folder(target.parent)
    for _ in range(100):
        tmp = target.parent / f".{_stem(target.name)}.{secrets.token_hex(6)}.tmp"
        try:
            os.mkdir(tmp, 0o777)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no fresh temporary name in {target.parent}")


def publish_folder(tmp: Path, target: Path) -> None:
    """Rename the folder ``tmp`` (from :func:`fresh_folder`) to ``target``, which must be missing
    or an empty folder (replaced as a whole); ``tmp`` is removed if that fails.

    Raises:
        OSError: ``target`` is not empty, not a folder, or cannot be replaced.
    """
    try:
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
