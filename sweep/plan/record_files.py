"""Where ``sweep new`` puts records, and how it writes them.

Every part of a record's path comes from a name (an author, an op type, a definition, a
solution): each must be one plain name (:func:`name_part`), and the whole path must stay
inside the dataset root once links are followed (:func:`record_path`). The file is written
through a fresh temporary file renamed over it (:func:`sweep.schema.files.write_atomic`):
never through a link planted beside it, never half a file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sweep.errors import ValidationError, clip, reason, shown
from sweep.plan.dataset import LAYOUT
from sweep.schema.files import OutputRefused, inside_problem, name_problem, write_atomic

__all__ = ["definition_path", "name_part", "record_path", "record_text", "write_record"]

_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,199}")


def name_part(value: str, what: str, flag: str = "", *, fix: str = "") -> str:
    """``value`` if it is usable as one folder or file name, else a :class:`ValidationError`
    naming it and the fix (``flag`` to pass, or ``fix`` in words)."""
    if not _PART.fullmatch(value) or value in (".", "..") or name_problem(value) is not None:
        how = f"; pass {flag}" if flag else (f"; {fix}" if fix else "")
        raise ValidationError(
            f"{what} {shown(value)} cannot name a file: use letters, digits and _ . + - "
            f"(at most 200, not starting with . or -){how}"
        )
    return value


def record_path(root: Path, kind: str, *parts: str) -> Path:
    """Where the dataset layout puts a record of ``kind`` under ``root``: its folder, then
    ``parts`` (the last one the file name), each one plain name; inside ``root`` once links
    are followed.

    Raises:
        ValidationError: A part is no plain name, or a folder on the way is a link that leads
            out of ``root``.
    """
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            raise ValidationError(
                f"{shown(part)} cannot be part of a path under {clip(str(root), 300)}: it {problem}"
            )
    path = root.joinpath(LAYOUT[kind][0], *parts)
    problem = inside_problem(root, path)
    if problem is not None:
        raise ValidationError(
            f"{clip(str(path), 300)} {problem}: write records inside the dataset root (remove the link, "
            "or pass --root where it leads)"
        )
    return path


def record_text(record: dict[str, Any]) -> str:
    """A record as the dataset's files hold it: indented JSON, one trailing newline."""
    return json.dumps(record, indent=2, ensure_ascii=False) + "\n"


def write_record(path: Path, text: str, *, force: bool, root: Path) -> None:
    """Write ``text`` to ``path`` inside ``root``, creating its folders; an existing file only
    with ``force``. Through a fresh temporary file renamed over ``path``
    (:func:`sweep.schema.files.write_atomic`): never through a link, never half a file.

    Raises:
        ValidationError: The file exists and ``force`` is false, it is no file to write (a
            folder, a device, a store), the path leads out of ``root``, or it cannot be written.
    """
    where = clip(str(path), 300)
    try:
        write_atomic(path, text, overwrite=force, inside=root)
    except FileExistsError:
        raise ValidationError(f"{where} exists: pass --force to overwrite it") from None
    except OutputRefused as e:
        raise ValidationError(f"cannot write {where}: it {e}; give another --root or --name") from None
    except (OSError, ValueError) as e:
        raise ValidationError(f"cannot write {where}: {reason(e)}") from None


def definition_path(root: Path, op_type: str, name: str) -> Path:
    """Where the dataset layout puts a definition (:func:`record_path`: inside ``root``).

    Raises:
        ValidationError: As for :func:`record_path`.
    """
    return record_path(root, "definition", op_type, f"{name}.json")
