"""BackendBench trace rows to Definitions and Workloads in the dataset layout.

One Definition per operator overload (``op_type`` ``backendbench``, named like BackendBench's
kernel folders: ``add__Tensor``), with no axes and no declared inputs or outputs: each
Workload carries the whole argument tree in one ``backendbench_args`` input named ``call``,
because rows of one operator differ in arity, rank and argument kinds. Nothing is lost: every
tensor's shape, dtype, stride and device, every other argument, the kwargs, ``cnt`` (as the
workload's ``weight``), the synthetic flag, and the file and line the row came from.
"""

from __future__ import annotations

import functools
import json
import keyword
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from sweep.backendbench._ops import mutation_tags, select_ops
from sweep.backendbench._parser import MAX_FILE_BYTES, TraceRow, parse_trace_file
from sweep.errors import DatasetError, TraceParseError, clip, format_validation_error, reason, shown
from sweep.schema import BackendBenchSource, Definition, Workload
from sweep.schema.call_args import OpName, parse_op_name
from sweep.schema.call_json import Json, encode_call
from sweep.schema.files import name_problem, write_atomic
from sweep.schema.limits import load_json, read_text
from sweep.schema.op_tags import BACKENDBENCH_OP_TYPE, CALL_INPUT, op_tag
from sweep.schema.trace import workload_line

__all__ = [
    "ImportReport",
    "ImportedOp",
    "build_records",
    "import_backendbench",
    "op_expression",
    "reference_source",
    "write_ops",
]

_UUID_NAMESPACE = uuid.UUID("6f1c2a56-1b7e-4d0e-9a51-3c8e0f5b7d21")


@dataclass(frozen=True)
class ImportedOp:
    """One operator's Definition and its Workloads, ready to write.

    Attributes:
        op: The operator's qualified name.
        definition: Its Definition.
        records: Each workload as the JSON object written, every value checked (by the
            parser, or by the Workload model for rows made by hand).
    """

    op: str
    definition: Definition
    records: list[dict[str, Any]]

    @functools.cached_property
    def workloads(self) -> list[Workload]:
        """The workloads as records (validated, tree included, on first use: the import
        command writes :attr:`records` and never builds them)."""
        return [Workload.model_validate(r) for r in self.records]


@dataclass
class ImportReport:
    """What :func:`import_backendbench` did.

    Attributes:
        out: The dataset root written.
        operators: Qualified names of the operators written, in file order.
        rows_read: Rows in the trace file.
        workloads_added: New workload lines written.
        workloads_present: Rows whose workload was already in the dataset (same uuid).
        skipped_synthetic: ``cnt: 0`` rows left out (no ``--include-synthetic``).
        skipped_unselected: Rows of operators not selected by ``--ops``.
        warnings: Things worth knowing (e.g. an operator this torch does not have).
    """

    out: Path
    operators: list[str] = field(default_factory=list)
    rows_read: int = 0
    workloads_added: int = 0
    workloads_present: int = 0
    skipped_synthetic: int = 0
    skipped_unselected: int = 0
    warnings: list[str] = field(default_factory=list)


def op_expression(op: OpName) -> str:
    """Python for the ``torch.ops`` overload: ``torch.ops.aten.add.Tensor``, through ``getattr``
    for a name that is a Python keyword (``getattr(torch.ops.aten.random_, 'from')``)."""
    text = "torch.ops"
    for part in (op.namespace, op.packet, op.overload):
        text = f"getattr({text}, {part!r})" if keyword.iskeyword(part) else f"{text}.{part}"
    return text


def reference_source(op: OpName) -> str:
    """The definition's reference: a ``run`` that calls the ATen overload itself."""
    return f"import torch\n\n\ndef run(*args, **kwargs):\n    return {op_expression(op)}(*args, **kwargs)\n"


def _definition(op: OpName, source_file: str, tags: list[str]) -> Definition:
    return Definition(
        name=op.folder,
        op_type=BACKENDBENCH_OP_TYPE,
        description=(
            f"ATen operator {op.qualified}, imported from the BackendBench trace {source_file}. "
            f"Each workload's '{CALL_INPUT}' input holds the whole argument list."
        ),
        tags=["backendbench", op_tag(op), *tags],
        axes={},
        inputs={},
        outputs={},
        reference=reference_source(op),
    )


def _workload(
    row: TraceRow, source_file: str, uid: str, args: list[Json], kwargs: dict[str, Json]
) -> dict[str, Any]:
    """The workload's JSON object for a row whose arguments encode to ``args``, ``kwargs``."""
    call: dict[str, Any] = {"type": "backendbench_args", "args": args, "kwargs": kwargs}
    if row.args_trailing_comma != (len(row.args) == 1):
        call["args_trailing_comma"] = row.args_trailing_comma
    call["synthetic"] = row.synthetic
    call["source"] = {"file": source_file, "line": row.line}
    # Keys in the order of the models' fields, as Workload.to_json_obj() gives them.
    record = {"uuid": uid, "axes": {}, "inputs": {CALL_INPUT: call}, "weight": row.cnt}
    if row.checked:
        # One decode per row: the parser checked every value as it read it (count, line and
        # every node of the tree), and the encoding of checked values is a valid tree (the
        # tests read every record written back through the full check), so validating the
        # record again would only repeat the parser's work. The uuid is made here, and the
        # source's file name was checked once for the whole file (_checked_source).
        return record
    # A row made by hand: the full check, the tree included.
    return Workload.model_validate(record).to_json_obj()


def _checked_source(source_file: str) -> None:
    """Refuse a source file name no record can hold (once per file, not per row)."""
    try:
        source_file.encode("utf-8")
        BackendBenchSource(file=source_file, line=1)
    except pydantic.ValidationError as e:
        problems = format_validation_error(e, None, prefix="source file name")
        raise TraceParseError("; ".join(problems)) from None
    except UnicodeEncodeError:
        # A file name of bytes that are not UTF-8 reads as lone surrogates, which JSON cannot hold.
        raise TraceParseError(
            f"source file name {source_file.encode('utf-8', 'replace').decode()!r} is not valid "
            "UTF-8; rename the file"
        ) from None


def build_records(
    rows: Sequence[TraceRow],
    *,
    source_file: str,
    ops: Sequence[str] | None = None,
    include_synthetic: bool = False,
    report: ImportReport | None = None,
) -> list[ImportedOp]:
    """Definitions and Workloads for parsed trace rows (nothing written, nothing allocated).

    Args:
        rows: Parsed rows (:func:`~sweep.backendbench.parse_trace_file`).
        source_file: The trace file's name, recorded in each workload.
        ops: Operators to keep, by exact name (see :func:`~sweep.backendbench.select_ops`);
            all when ``None``.
        include_synthetic: Keep ``cnt: 0`` rows.
        report: Filled with counts and warnings when given.

    Raises:
        ValidationError: A name in ``ops`` matches no operator of the rows.
    """
    rep = report if report is not None else ImportReport(out=Path("."))
    _checked_source(source_file)
    order = list(dict.fromkeys(r.op for r in rows))
    keep = set(select_ops(order, ops) if ops else order)
    by_op: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        rep.rows_read += 1
        if row.op not in keep:
            rep.skipped_unselected += 1
            continue
        if row.synthetic and not include_synthetic:
            rep.skipped_synthetic += 1
            continue
        args, kwargs = encode_call(row.args, row.kwargs)
        canonical = json.dumps([args, kwargs], sort_keys=True, separators=(",", ":"))
        # Same file, operator, arguments and occurrence give the same uuid: re-importing a
        # file is idempotent, while identical rows (which real traces have) stay distinct
        # workloads. Occurrences are counted by what the uuid is made of, so no two rows share
        # one (rows whose dicts differ only in key order have the same canonical form).
        key = (row.op, canonical)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        uid = uuid.uuid5(_UUID_NAMESPACE, f"{source_file}\n{row.op}\n{canonical}\n{occurrence}")
        try:
            workload = _workload(row, source_file, str(uid), args, kwargs)
        except pydantic.ValidationError as e:
            # The parser refuses what the records refuse; this keeps a gap between the two
            # a clean error with the row's line instead of a traceback.
            problems = format_validation_error(e, None, prefix=f"{source_file}:{row.line}")
            raise TraceParseError("; ".join(problems)) from None
        by_op.setdefault(row.op, []).append(workload)
    out = []
    for name in order:
        if name not in by_op:
            continue
        tags, warning = mutation_tags(name)
        if warning:
            rep.warnings.append(f"{name}: {warning}")
        out.append(ImportedOp(name, _definition(parse_op_name(name), source_file, tags), by_op[name]))
    return out


def write_ops(root: Path, items: list[ImportedOp], report: ImportReport) -> ImportReport:
    """Write each of ``items`` as a dataset under ``root``, counting them in ``report``.

    Raises:
        DatasetError: A file cannot be written.
    """
    try:
        for item in items:
            _write_op(root, item, report)
            report.operators.append(item.op)
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise DatasetError(f"cannot write the dataset under {clip(str(root))}: {reason(e)}") from None
    return report


def _write_op(root: Path, item: ImportedOp, report: ImportReport) -> None:
    name = item.definition.name
    dpath = root / "definitions" / BACKENDBENCH_OP_TYPE / f"{name}.json"
    wpath = root / "workloads" / BACKENDBENCH_OP_TYPE / f"{name}.jsonl"
    problem = name_problem(f"{name}.json")
    if problem is not None:
        raise DatasetError(f"the operator {shown(name)} cannot name a file: it {problem}")
    write_atomic(dpath, json.dumps(item.definition.to_json_obj(), indent=2) + "\n", inside=root)
    present: set[str] = set()
    existing = ""
    if wpath.exists() or wpath.is_symlink():
        try:
            existing = read_text(wpath, MAX_FILE_BYTES)
        except (OSError, ValueError) as e:  # ValueError: not a regular file, too large, not UTF-8
            raise DatasetError(f"{wpath}: cannot read: {reason(e)}") from None
        for lineno, line in enumerate(existing.split("\n"), 1):
            if not line.strip():
                continue
            try:
                present.add(str(load_json(line)["workload"]["uuid"]))  # type: ignore[index]
            except (ValueError, KeyError, TypeError):
                raise DatasetError(
                    f"{wpath}:{lineno}: not a workload line; fix or remove the file before importing"
                ) from None
    lines = []
    for record in item.records:
        uid = record["uuid"]
        if uid in present:
            report.workloads_present += 1
            continue
        present.add(uid)
        lines.append(workload_line(name, record) + b"\n")
    if lines:
        # The whole file again, through a fresh one renamed over it: never half a line.
        head = existing.encode() + (b"\n" if existing and not existing.endswith("\n") else b"")
        write_atomic(wpath, head + b"".join(lines), inside=root)
    report.workloads_added += len(lines)


def import_backendbench(
    path: str | Path,
    out: str | Path,
    *,
    ops: Sequence[str] | None = None,
    include_synthetic: bool = False,
) -> ImportReport:
    """Import a BackendBench trace file into a dataset root.

    Writes ``<out>/definitions/backendbench/<op__overload>.json`` and adds new workloads
    to ``<out>/workloads/backendbench/<op__overload>.jsonl`` (each file written whole through a
    fresh one renamed over it, never through a link, never out of ``out``) (workloads already there, by
    uuid, are kept and not duplicated, so importing twice changes nothing).

    Args:
        path: The trace file.
        out: The dataset root to write (created if missing).
        ops: Operators to import, by exact name; all when ``None``.
        include_synthetic: Also import ``cnt: 0`` rows.

    Raises:
        TraceParseError: The file holds text outside the trace grammar.
        ValidationError: A name in ``ops`` matches nothing in the file.
        DatasetError: ``out`` cannot be written.
    """
    src = Path(path)
    root = Path(out)
    rows = parse_trace_file(src)
    report = ImportReport(out=root)
    items = build_records(
        rows, source_file=src.name, ops=ops, include_synthetic=include_synthetic, report=report
    )
    return write_ops(root, items, report)
