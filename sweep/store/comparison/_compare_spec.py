"""What one side of ``sweep compare`` names, parsed from what the user wrote.

Syntax (documented in docs/comparing.md):

=================  ==========================================================================
``PATH``           a store file (``*.duckdb``), a results folder (its ``sweep.duckdb`` and
                   logs), a ``sweep export`` folder, or trace files/folders: everything in it
``run:ID``         the traces of one run (``provenance.run_id``) in ``--store``
``sweep:NAME``     the traces of every run of one sweep in ``--store``
``hw:NAME``        the traces on one hardware in ``--store`` (``H100``, ``NVIDIA_H100``, any
                   spelling); tasks are then matched across hardware
``hash:PREFIX``    the traces of the solution(s) whose content hash starts with ``PREFIX``
``NAME@PREFIX``    the traces of solution ``NAME`` whose content hash starts with ``PREFIX``
=================  ==========================================================================

An existing path always wins, so a file called ``run:x`` can still be compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sweep.errors import StoreError, did_you_mean, shown
from sweep.schema.hardware import record_name

__all__ = ["KINDS", "SideKind", "SideSpec", "parse_side"]

SideKind = Literal["path", "run", "sweep", "hw", "hash", "solution"]

#: The prefixes a side may carry, with an example for messages.
KINDS: dict[str, str] = {
    "run": "run:20260101T000000Z-3f9a1c",
    "sweep": "sweep:nightly",
    "hw": "hw:H100",
    "hash": "hash:3fa9c2",
}
_PREFIX = re.compile(r"^([A-Za-z_]{2,12}):(.*)$", re.DOTALL)
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_SOLUTION_AT = re.compile(r"^([^@/\\]+)@([^@/\\]*)$", re.DOTALL)
_MAX_VALUE = 200
SYNTAX = "PATH, run:ID, sweep:NAME, hw:NAME, hash:PREFIX or SOLUTION@PREFIX"


@dataclass(frozen=True)
class SideSpec:
    """One parsed side.

    Attributes:
        kind: What it names (module docstring).
        value: The path, run id, sweep name, hardware (normalized: ``NVIDIA_H100``) or hash
            prefix (lower case).
        solution: The solution name of ``NAME@PREFIX``; otherwise ``None``.
        text: What the user wrote (for labels and messages).
    """

    kind: SideKind
    value: str
    text: str
    solution: str | None = None

    @property
    def in_store(self) -> bool:
        """Whether it filters the ``--store`` (every kind but a path)."""
        return self.kind != "path"


def _check_value(text: str, kind: str, value: str) -> None:
    if not value.strip():
        raise StoreError(f"side {shown(text)} names no {kind}; write e.g. {KINDS.get(kind, 'NAME@3fa9c2')}")
    if len(value) > _MAX_VALUE or any(ord(c) < 32 for c in value):
        raise StoreError(f"side {shown(text)}: not a {kind} (too long, or control characters)")


def _hash_prefix(text: str, value: str) -> str:
    _check_value(text, "hash", value)
    if not _HEX.match(value):
        raise StoreError(
            f"side {shown(text)}: a solution hash is hexadecimal, got {shown(value)}; "
            'find hashes with: sweep query "SELECT DISTINCT solution, solution_hash FROM traces"'
        )
    return value.lower()


def parse_side(text: str) -> SideSpec:
    """Parse one side of ``sweep compare`` (syntax in the module docstring).

    Raises:
        StoreError: An unknown prefix (with "did you mean"), an empty or malformed value, or
            something that is neither a spec nor an existing path.
    """
    if not text.strip():
        raise StoreError(f"empty side; write one of {SYNTAX}")
    if any(ord(c) < 32 for c in text) or len(text) > 4096:
        raise StoreError(f"side {shown(text)} is not a path or a spec; write one of {SYNTAX}")
    if Path(text).exists():
        return SideSpec("path", text, text)
    m = _PREFIX.match(text)
    if m:
        prefix, value = m.group(1).lower(), m.group(2)
        if prefix == "hash":
            return SideSpec("hash", _hash_prefix(text, value), text)
        if prefix in ("run", "sweep"):
            _check_value(text, prefix, value)
            return SideSpec("run" if prefix == "run" else "sweep", value, text)
        if prefix == "hw":
            _check_value(text, "hw", value)
            return SideSpec("hw", record_name(value), text)
        hint = did_you_mean(prefix, KINDS)
        raise StoreError(
            f"unknown side kind {shown(prefix + ':')}{hint} in {shown(text)}; write one of {SYNTAX}"
        )
    at = _SOLUTION_AT.match(text)
    if at:
        name = at.group(1)
        _check_value(text, "solution", name)
        return SideSpec("solution", _hash_prefix(text, at.group(2)), text, solution=name)
    raise StoreError(f"no such file or folder: {shown(text)}; a side is one of {SYNTAX}")
