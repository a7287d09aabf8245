"""Parsing what the profiling tools print: Nsight Compute's raw CSV page and
compute-sanitizer's text report, into the rows of the ``profiles`` and
``sanitizer_findings`` tables.

Both parsers are total over ``str``: any text gives rows or a :class:`ProfileParseError`
that says what was expected, never another exception.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

from sweep.errors import StoreError, clip

__all__ = [
    "NCU_METRICS",
    "KernelProfile",
    "ProfileParseError",
    "SanitizerFinding",
    "SanitizerReport",
    "parse_ncu_csv",
    "parse_sanitizer",
]


class ProfileParseError(StoreError):
    """A tool's output is not in the format expected."""


#: The metrics ``sweep profile`` asks ncu for (added to the section set) and reads back.
NCU_METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
)

_TIME_UNITS = {
    "nsecond": 1e-6,
    "ns": 1e-6,
    "usecond": 1e-3,
    "us": 1e-3,
    "msecond": 1.0,
    "ms": 1.0,
    "second": 1e3,
    "s": 1e3,
}
_BYTE_UNITS = {"byte": 1, "kbyte": 1000, "mbyte": 1000**2, "kibyte": 1024, "mibyte": 1024**2}
_MAX_TEXT = 64 << 20


@dataclass(frozen=True)
class KernelProfile:
    """One kernel launch profiled by ncu (``None``: not collected)."""

    launch: int
    kernel: str
    duration_ms: float | None
    sm_throughput_pct: float | None
    dram_throughput_pct: float | None
    memory_throughput_pct: float | None
    achieved_occupancy_pct: float | None
    registers_per_thread: int | None
    shared_mem_per_block: int | None
    grid_size: int | None
    block_size: int | None
    limiter: str | None


@dataclass(frozen=True)
class SanitizerFinding:
    """Errors of one kind in one kernel, as one compute-sanitizer tool reported them."""

    tool: str
    kind: str
    kernel: str
    count: int
    first_message: str


@dataclass(frozen=True)
class SanitizerReport:
    """A compute-sanitizer run: its findings and the error count of its summary."""

    tool: str
    errors: int
    findings: list[SanitizerFinding]


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A", "-"):
        return None
    try:
        value = float(t)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(value: float | None) -> int | None:
    return int(value) if value is not None and abs(value) < 2**62 else None


def _scaled(value: float | None, unit: str, table: dict[str, float] | dict[str, int]) -> float | None:
    if value is None:
        return None
    factor = table.get(unit.strip().lower())
    return None if factor is None else value * factor


def _limiter(sm: float | None, mem: float | None) -> str | None:
    if sm is None and mem is None:
        return None
    if mem is None or (sm is not None and sm >= mem):
        return "compute (SM)"
    return "memory"


def parse_ncu_csv(text: str) -> list[KernelProfile]:
    """The kernels of ``ncu --import FILE --csv --page raw`` output (one row per launch,
    a row of units under the header).

    Raises:
        ProfileParseError: ``text`` is not that page (no header with ``Kernel Name``, rows of
            another width, no units row).
    """
    if len(text) > _MAX_TEXT:
        raise ProfileParseError(f"ncu output is over {_MAX_TEXT >> 20} MiB")
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # ncu's own notes ("==PROF==") are not CSV
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines), newline=""), strict=True))
    except csv.Error as e:
        raise ProfileParseError(f"ncu output is not CSV: {e}") from None
    if not rows or "Kernel Name" not in rows[0]:
        raise ProfileParseError(
            "ncu output has no CSV header with a 'Kernel Name' column (expected --csv --page raw)"
        )
    header = rows[0]
    if len(rows) < 2 or any(len(r) != len(header) for r in rows[1:]):
        raise ProfileParseError(
            f"ncu output has rows of another width than its header ({len(header)} columns)"
        )
    col = {name: i for i, name in enumerate(header)}
    units = rows[1]
    out: list[KernelProfile] = []
    for n, row in enumerate(rows[2:]):

        def get(metric: str, row: list[str] = row) -> float | None:
            i = col.get(metric)
            return None if i is None else _number(row[i])

        def unit(metric: str) -> str:
            i = col.get(metric)
            return "" if i is None else units[i]

        dur = _scaled(get("gpu__time_duration.sum"), unit("gpu__time_duration.sum") or "nsecond", _TIME_UNITS)
        static = _scaled(
            get("launch__shared_mem_per_block_static"),
            unit("launch__shared_mem_per_block_static") or "byte",
            _BYTE_UNITS,
        )
        dynamic = _scaled(
            get("launch__shared_mem_per_block_dynamic"),
            unit("launch__shared_mem_per_block_dynamic") or "byte",
            _BYTE_UNITS,
        )
        shared = None if static is None and dynamic is None else (static or 0) + (dynamic or 0)
        sm = get("sm__throughput.avg.pct_of_peak_sustained_elapsed")
        mem = get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
        launch = _int(_number(row[col["ID"]])) if "ID" in col else None
        out.append(
            KernelProfile(
                launch=launch if launch is not None else n,
                kernel=clip(row[col["Kernel Name"]], 500),
                duration_ms=dur,
                sm_throughput_pct=sm,
                dram_throughput_pct=get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                memory_throughput_pct=mem,
                achieved_occupancy_pct=get("sm__warps_active.avg.pct_of_peak_sustained_active"),
                registers_per_thread=_int(get("launch__registers_per_thread")),
                shared_mem_per_block=_int(shared),
                grid_size=_int(get("launch__grid_size")),
                block_size=_int(get("launch__block_size")),
                limiter=_limiter(sm, mem),
            )
        )
    return out


_PREFIX = "========="
_SUMMARY = re.compile(r"^ERROR SUMMARY: (\d{1,18}) errors?\b")
# racecheck's own summary; on a clean run (compute-sanitizer 2025, H100) it is the only one
_RACE_SUMMARY = re.compile(
    r"^RACECHECK SUMMARY: \d{1,18} hazards? displayed \((\d{1,18}) errors?, \d{1,18} warnings?\)"
)
_AT = re.compile(r"^at (?:0x[0-9a-fA-F]+ in )?(.+?)(?:\+0x[0-9a-fA-F]+)?$")
_NOISE = re.compile(r" of size \d+ bytes?| at 0x[0-9a-fA-F]+| \(\d+,\d+,\d+\)|0x[0-9a-fA-F]+")
_NOT_FINDINGS = ("COMPUTE-SANITIZER", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application returned")


def parse_sanitizer(text: str, tool: str) -> SanitizerReport:
    """The findings of one compute-sanitizer run (``--tool TOOL``), grouped by kind and kernel.

    A finding starts at an unindented ``========= `` line (``Invalid __global__ read of size
    4 bytes``, ``Error: Race reported between ...``, ``Program hit cudaError...``); its kernel
    is the first indented ``at KERNEL+0x..`` line under it.

    Raises:
        ProfileParseError: ``text`` has no ``ERROR SUMMARY`` line (nor, for racecheck, its
            ``RACECHECK SUMMARY``): the tool did not finish.
    """
    if len(text) > _MAX_TEXT:
        raise ProfileParseError(f"compute-sanitizer output is over {_MAX_TEXT >> 20} MiB")
    total: int | None = None
    groups: dict[tuple[str, str], list[object]] = {}
    current: list[str] | None = None  # [header, kernel]
    order: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        body = raw[len(_PREFIX) :]
        if not body.strip():
            current = None
            continue
        if body.startswith(" ") and not body.startswith("  "):
            line = body[1:]
            m = _SUMMARY.match(line)
            race = _RACE_SUMMARY.match(line)
            if m:
                total = int(m.group(1))
                current = None
            elif race:
                total = max(total or 0, int(race.group(1)))
                current = None
            elif line.startswith(_NOT_FINDINGS) or line.startswith(" "):
                current = None
            else:
                current = [line.strip(), ""]
                order.append(current)
        elif current is not None and not current[1]:
            m = _AT.match(body.strip())
            if m:
                current[1] = m.group(1).strip()
    if total is None:
        raise ProfileParseError(
            f"compute-sanitizer output ({tool}) has no 'ERROR SUMMARY' line; the tool did not finish"
        )
    for header, found in order:
        head, _, rest = header.partition(" at ")
        kernel = found
        if not kernel and rest:
            m = _AT.match("at " + rest)
            kernel = m.group(1).strip() if m else ""
        kind = clip(_NOISE.sub("", head).strip().rstrip(".:") or "error", 200)
        key = (kind, clip(kernel, 500) or "(no kernel)")
        if key not in groups:
            groups[key] = [0, clip(header, 500)]
        groups[key][0] = int(str(groups[key][0])) + 1
    findings = [
        SanitizerFinding(tool, kind, kernel, int(str(v[0])), str(v[1]))
        for (kind, kernel), v in groups.items()
    ]
    if total and not findings:
        findings.append(
            SanitizerFinding(tool, "unparsed", "(no kernel)", total, f"ERROR SUMMARY: {total} errors")
        )
    return SanitizerReport(tool=tool, errors=total, findings=findings)
