"""PyTorch profiler traces -> BackendBench-style workloads, weighted by how often a model called
each operator with each shape.

The file is the chrome-trace JSON ``torch.profiler`` exports with ``record_shapes=True``:
``traceEvents`` whose ``cpu_op`` events name an ATen operator (``aten::addmm``) and carry,
per argument, its kind (``Input type``: a dtype for a tensor, ``Scalar``, ``ScalarList``, ``""``
for None), its shape and strides, and the value of a scalar (``Concrete Inputs``). Only the
outermost ATen call of each nest counts (``aten::linear`` and not the ``aten::addmm`` inside
it), so each call of the model counts once and no time is counted twice. Identical calls
(operator, argument kinds, shapes, strides, scalars) become one workload whose ``weight`` is
their number. The overload (``softmax.int``) is the first whose schema takes the recorded
argument kinds (the engine asks torch: :func:`sweep.engine.pick_overload`).

The file comes from anywhere: it is read under a size cap with bounded JSON nesting, every
field is checked, and anything unexpected is a :class:`~sweep.errors.TraceParseError` naming
the file, the event and the fix. Calls this format cannot describe whole (a list of tensors,
whose dtypes the profiler does not record; an argument kind it does not know; a scalar
without its value) are skipped and counted, never guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.backendbench._importer import ImportReport, build_records, write_ops
from sweep.backendbench._parser import TraceRow
from sweep.errors import TraceParseError, clip, reason, shown
from sweep.schema.call_args import ArgValue, TensorArg
from sweep.schema.limits import INT64_MAX, load_json, read_bytes

__all__ = [
    "MAX_PROFILE_BYTES",
    "ProfileSummary",
    "ProfiledCall",
    "import_torch_profile",
    "parse_torch_profile",
    "profile_rows",
]

#: The largest profiler trace read.
MAX_PROFILE_BYTES = 512 * 2**20
#: The most events looked at (a trace of millions of events is a whole training run).
MAX_EVENTS = 5_000_000
_MAX_DIMS = 64
_MAX_LIST = 4096
_PACKET = re.compile(r"^aten::([A-Za-z_][A-Za-z0-9_]{0,127})$")

# The names the profiler gives tensor dtypes (c10's), as the records' dtype names.
_DTYPES = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "long int": "int64",
    "int": "int32",
    "short int": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
}


@dataclass(frozen=True)
class ProfiledCall:
    """Identical calls of one operator: its packet, argument kinds and values, and how often."""

    packet: str
    kinds: tuple[str, ...]
    args: tuple[ArgValue, ...]
    count: int
    first_event: int


@dataclass
class ProfileSummary:
    """What :func:`parse_torch_profile` read: the calls, and what it skipped and why."""

    calls: list[ProfiledCall] = field(default_factory=list)
    aten_events: int = 0
    nested: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


class _Skip(Exception):
    """A call this format cannot describe whole; the message says why."""


def _fail(filename: str, where: str, problem: str) -> TraceParseError:
    return TraceParseError(
        f"{filename}: {where}: {problem}; export the trace with torch.profiler.profile(record_shapes=True) "
        "and prof.export_chrome_trace(path)"
    )


def _int_list(value: object, what: str) -> list[int]:
    if not isinstance(value, list) or len(value) > _MAX_DIMS:
        raise ValueError(f"{what} is not a list of at most {_MAX_DIMS} integers")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT64_MAX:
            raise ValueError(f"{what} holds {shown(v)}, not a size or stride (an integer >= 0)")
    return list(value)


def _scalar(text: object) -> ArgValue:
    if not isinstance(text, str) or not text:
        raise _Skip("a scalar without its value (Concrete Inputs)")
    if text in ("True", "False"):
        return text == "True"
    try:
        return (
            int(text, 10)
            if re.fullmatch(r"-?\d{1,19}", text) and abs(int(text)) <= INT64_MAX
            else float(text)
        )
    except ValueError:
        raise _Skip(f"a scalar {clip(text, 40)!r} that is not a number") from None


def _scalar_list(text: object) -> ArgValue:
    if not isinstance(text, str) or not text.startswith("["):
        raise _Skip("a list of scalars without its values")
    try:
        value = load_json(text[: 64 * _MAX_LIST])
    except ValueError:
        raise _Skip("a list of scalars that is not a list of numbers") from None
    if not isinstance(value, list) or len(value) > _MAX_LIST:
        raise _Skip("a list of scalars that is not a list of numbers")
    out: list[ArgValue] = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Skip("a list of scalars that is not a list of numbers")
        if isinstance(v, int) and abs(v) > INT64_MAX:
            raise _Skip("a list of scalars with an integer over 64 bits")
        if isinstance(v, float) and not math.isfinite(v):
            raise _Skip("a list of scalars with a number that is not finite")
        out.append(v)
    return out


def _argument(kind: object, dims: object, strides: object, concrete: object) -> tuple[str, ArgValue]:
    if not isinstance(kind, str):
        raise TypeError(f"an Input type of {shown(kind)}, not a string")
    if kind == "":
        return "none", None
    if kind == "Scalar":
        return "scalar", _scalar(concrete)
    if kind == "ScalarList":
        return "scalar_list", _scalar_list(concrete)
    if kind in ("TensorList", "GenericList"):
        raise _Skip("a list of tensors (the profiler records no dtypes for them)")
    dtype = _DTYPES.get(kind)
    if dtype is None:
        raise _Skip(f"an argument of kind {clip(kind, 40)!r}")
    shape = _int_list(dims, "Input Dims")
    stride = _int_list(strides, "Input Strides") if isinstance(strides, list) and strides else None
    if stride is not None and len(stride) != len(shape):
        raise ValueError(f"strides {shown(stride)} do not match the shape {shown(shape)}")
    arg = TensorArg(tuple(shape), dtype, tuple(stride) if stride is not None else None)
    return "tensor", arg


def _events(data: object, filename: str) -> list[Any]:
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise _fail(filename, "the file", "is not a chrome trace (no traceEvents list)")
    if len(events) > MAX_EVENTS:
        raise _fail(filename, "the file", f"holds {len(events):,} events; at most {MAX_EVENTS:,} are read")
    return events


def _number(e: dict[str, Any], key: str, where: str, filename: str) -> float:
    v = e.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise _fail(filename, where, f"'{key}' is {shown(v)}, not a finite time >= 0")
    return float(v)


def parse_torch_profile(text: str, *, filename: str = "<string>") -> ProfileSummary:
    """The outermost ATen calls of a profiler trace, identical calls counted together.

    Raises:
        TraceParseError: Not JSON, not a chrome trace, or an ATen event with missing or
            malformed fields (the message names the event and the fix).
    """
    try:
        data = load_json(text)
    except ValueError as err:
        raise _fail(filename, "the file", f"is not JSON: {reason(err)}") from None
    events = _events(data, filename)
    aten: list[tuple[int, Any, Any, float, float, str, dict[str, Any]]] = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("cat") != "cpu_op" or e.get("ph") != "X":
            continue
        name = e.get("name")
        m = _PACKET.match(name) if isinstance(name, str) else None
        if m is None:
            continue
        where = f"event {i} ({clip(str(name), 60)})"
        args = e.get("args")
        if not isinstance(args, dict):
            raise _fail(filename, where, "has no 'args' object")
        start, dur = _number(e, "ts", where, filename), _number(e, "dur", where, filename)
        thread = (repr(e.get("pid")), repr(e.get("tid")))
        aten.append((i, *thread, start, start + dur, m.group(1), args))
    summary = ProfileSummary(aten_events=len(aten))
    # Outermost calls only: an event that lies inside an open ATen event of its thread is
    # part of that call (the longer one first when two start together).
    aten.sort(key=lambda x: (x[1], x[2], x[3], -x[4]))
    counts: dict[tuple[str, str], list[Any]] = {}
    open_end: dict[tuple[Any, Any], float] = {}
    for i, pid, tid, start, end, packet, args in aten:
        if start < open_end.get((pid, tid), -1.0):
            summary.nested += 1
            continue
        open_end[(pid, tid)] = end
        where = f"event {i} (aten::{packet})"
        kinds_in, dims = args.get("Input type"), args.get("Input Dims")
        if not isinstance(kinds_in, list) or not isinstance(dims, list) or len(kinds_in) != len(dims):
            raise _fail(
                filename,
                where,
                "has no 'Input type' and 'Input Dims' lists of one length (shapes not recorded)",
            )
        strides = args.get("Input Strides")
        concrete = args.get("Concrete Inputs")
        n = len(kinds_in)
        strides = strides if isinstance(strides, list) and len(strides) == n else [None] * n
        concrete = concrete if isinstance(concrete, list) and len(concrete) == n else [""] * n
        try:
            parts = [_argument(kinds_in[k], dims[k], strides[k], concrete[k]) for k in range(n)]
        except _Skip as s:
            why = f"aten::{packet}: {s}"
            summary.skipped[why] = summary.skipped.get(why, 0) + 1
            continue
        except (ValueError, TypeError) as err:
            raise _fail(filename, where, str(err)) from None
        kinds = tuple(k for k, _ in parts)
        values = tuple(v for _, v in parts)
        key = (packet, repr((kinds, values)))
        if key in counts:
            counts[key][0] += 1
        else:
            counts[key] = [1, i, kinds, values]
    summary.calls = [ProfiledCall(p, c[2], c[3], c[0], c[1]) for (p, _), c in counts.items()]
    return summary


def profile_rows(
    summary: ProfileSummary, pick: Callable[[str, Sequence[str]], str | None]
) -> tuple[list[TraceRow], list[str]]:
    """BackendBench trace rows of the calls (``cnt`` = how often), each with the overload
    ``pick(packet, kinds)`` chose; calls no overload takes are left out, with a warning."""
    rows, warnings = [], []
    for c in summary.calls:
        overload = pick(c.packet, c.kinds)
        if overload is None:
            warnings.append(
                f"aten::{c.packet} with arguments ({', '.join(c.kinds)}): no overload of this torch takes "
                f"them; {c.count} calls left out"
            )
            continue
        rows.append(TraceRow(f"aten.{c.packet}.{overload}", c.count, c.args, {}, c.first_event + 1))
    return rows, warnings


def import_torch_profile(
    path: str | Path,
    out: str | Path,
    *,
    ops: Sequence[str] | None = None,
    pick: Callable[[str, Sequence[str]], str | None] | None = None,
) -> ImportReport:
    """Import a torch.profiler chrome trace into a dataset root as BackendBench workloads,
    each weighted by its number of calls (written as ``sweep import-backendbench`` writes).

    Args:
        path: The trace (``prof.export_chrome_trace``, with ``record_shapes=True``).
        out: The dataset root to write (created if missing).
        ops: Operators to import, by exact name; all when ``None``.
        pick: Chooses an overload (default: the engine's, which asks torch).

    Raises:
        TraceParseError: The file is too large, not a profiler trace, or malformed.
        ValidationError: A name in ``ops`` matches nothing in the file.
        DatasetError: ``out`` cannot be written.
    """
    src, root = Path(path), Path(out)
    try:
        raw = read_bytes(src, MAX_PROFILE_BYTES)
    except (OSError, ValueError) as e:
        raise TraceParseError(f"{clip(str(src))}: cannot read: {reason(e)}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceParseError(f"{clip(str(src))}: not UTF-8 text; a chrome trace is JSON") from None
    summary = parse_torch_profile(text, filename=src.name)
    if pick is None:
        from sweep.engine import pick_overload

        pick = pick_overload
    rows, warnings = profile_rows(summary, pick)
    report = ImportReport(out=root)
    report.warnings.extend(warnings)
    report.warnings.extend(f"skipped {n} calls of {why}" for why, n in sorted(summary.skipped.items()))
    items = build_records(rows, source_file=src.name, ops=ops, report=report)
    return write_ops(root, items, report)
