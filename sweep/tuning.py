"""Look up tuned parameters in a table written by ``sweep export-tuning``: plain JSON, no deps.

This module imports nothing of kernel-sweep and no third-party package, so a solution can copy
it beside its sources (or import it) and pick its parameters at run time::

    from sweep.tuning import lookup

    params = lookup("tuning.json", "gemm_n512_k512", "gemm_n512_k512_triton", "H100", {"M": 300})
    BLOCK_M = params.get("BLOCK_M", 64)

The table (format ``kernel-sweep-tuning``, version 1)::

    {"format": "kernel-sweep-tuning", "version": 1,
     "tables": {<definition>: {<solution>: {<hardware>: [
         {"axes": {"M": 256}, "params": {"BLOCK_M": 64, ...}, "latency_ms": ..., ...}, ...]}}}}

Nearest shape: an entry whose axes equal the query's wins; otherwise the entry with the
smallest *log-distance* — the square root of the sum, over every axis named by the query or
the entry, of ``(log2(1 + |a|) - log2(1 + |b|))**2``, where an axis missing on one side, or
not a number, counts :data:`MISSING_AXIS_PENALTY` — wins; ties go to the earlier entry.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "MISSING_AXIS_PENALTY", "VERSION", "axes_distance", "load_table", "lookup"]

FORMAT = "kernel-sweep-tuning"
VERSION = 1
#: The squared distance an axis adds when only one side names it (or it is not a number):
#: larger than any two sizes of one axis apart (log2 of 2**63 is 63).
MISSING_AXIS_PENALTY = 64.0**2


def _log(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return math.log2(1.0 + abs(v))


def axes_distance(a: Mapping[str, object], b: Mapping[str, object]) -> float:
    """The log-distance of two shapes (0 for equal numeric axes; see the module doc)."""
    total = 0.0
    for name in sorted(set(a) | set(b)):
        x, y = _log(a.get(name)), _log(b.get(name))
        if x is None or y is None:
            total += 0.0 if name in a and name in b and a[name] == b[name] else MISSING_AXIS_PENALTY
        else:
            total += (x - y) ** 2
    return math.sqrt(total)


#: The largest table file read (one entry per shape is a few hundred bytes).
MAX_TABLE_BYTES = 256 * 2**20


def _read_regular(path: str | Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_TABLE_BYTES`: a device or FIFO (also
    behind a link) is refused, never read, and the open cannot block. (The rule of
    ``sweep.schema.limits.read_bytes``, here again: this module imports nothing of ``sweep``.)"""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError(f"{path}: not a regular file (a folder, device, FIFO or socket)")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file (a folder, device, FIFO or socket)")
        raw = f.read(MAX_TABLE_BYTES + 1)
    if len(raw) > MAX_TABLE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_TABLE_BYTES:,} bytes; no tuning table is")
    return raw


def load_table(source: str | Path | Mapping[str, Any]) -> Mapping[str, Any]:
    """A tuning table from a path or an already-loaded dict; raises ``ValueError`` when it is
    not one (wrong format or version)."""
    if isinstance(source, Mapping):
        table = source
    else:
        table = json.loads(_read_regular(source))
    if not isinstance(table, Mapping) or table.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} table")
    if table.get("version") != VERSION:
        raise ValueError(f"{FORMAT} version {table.get('version')!r}, this reader knows {VERSION}")
    return table


def lookup(
    table: str | Path | Mapping[str, Any],
    definition: str,
    solution: str,
    hardware: str,
    axes: Mapping[str, object],
) -> dict[str, Any]:
    """The tuned parameters for ``axes`` on ``hardware``: those of the entry with equal axes,
    else of the nearest shape (log-distance); ``{}`` when the table has no entry for this
    definition, solution and hardware (the caller keeps its defaults).

    Raises:
        ValueError: ``table`` is not a tuning table.
        OSError: The file cannot be read.
    """
    entries = load_table(table).get("tables", {}).get(definition, {}).get(solution, {}).get(hardware, [])
    best: dict[str, Any] | None = None
    best_d = math.inf
    for entry in entries:
        d = axes_distance(axes, entry.get("axes", {}))
        if d < best_d:
            best, best_d = entry, d
    return dict(best.get("params", {})) if best is not None else {}
