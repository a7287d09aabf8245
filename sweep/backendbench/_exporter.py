"""Dataset records back to a BackendBench trace file.

Reads the definitions tagged ``backendbench`` (operator from their ``aten:<op>.<overload>``
tag) and their workloads' ``backendbench_args`` inputs, and writes ``Operator:`` / ``cnt:``
lines. Rows come out in the order they were read (by source file, then line), with an
``Operator:`` line wherever the operator changes, so importing a file and exporting it gives
the file back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sweep.backendbench._format import format_row
from sweep.backendbench._ops import select_ops
from sweep.errors import DatasetError, clip, reason, shown
from sweep.schema import BackendBenchArgsInput, Definition, Workload
from sweep.schema.call_json import decode_call
from sweep.schema.files import write_atomic
from sweep.schema.op_tags import op_from_tags

__all__ = ["ExportReport", "export_backendbench", "export_text"]


@dataclass
class ExportReport:
    """What :func:`export_backendbench` wrote.

    Attributes:
        out: The trace file written.
        operators: Operators written.
        rows: Rows written.
        skipped_definitions: Definitions left out because they are not BackendBench imports.
    """

    out: Path
    operators: int = 0
    rows: int = 0
    skipped_definitions: list[str] = field(default_factory=list)


def _call_input(workload: Workload) -> BackendBenchArgsInput | None:
    for spec in workload.inputs.values():
        if isinstance(spec, BackendBenchArgsInput):
            return spec
    return None


def _cnt(workload: Workload, call: BackendBenchArgsInput, definition: str) -> int:
    w = workload.weight
    if w is None:
        return 0 if call.synthetic else 1
    if isinstance(w, float):
        if not w.is_integer():
            raise DatasetError(
                f"workload {shown(workload.uuid)} of {shown(definition)}: weight {w} is not a whole number, "
                "and a trace row's cnt must be"
            )
        return int(w)
    return w


def export_text(
    definitions: Sequence[Definition],
    workloads: Mapping[str, Sequence[Workload]],
    *,
    ops: Sequence[str] | None = None,
    report: ExportReport | None = None,
) -> str:
    """The trace text for BackendBench definitions and their workloads.

    Args:
        definitions: Definitions; those without an operator tag are skipped.
        workloads: Workloads by definition name.
        ops: Operators to write, by exact name (as for import); all when ``None``.
        report: Filled with counts when given.

    Raises:
        DatasetError: A workload of a BackendBench definition has no ``backendbench_args``
            input, or holds a malformed argument tree.
        ValidationError: A name in ``ops`` matches nothing.
    """
    rep = report if report is not None else ExportReport(out=Path("-"))
    named = []
    for d in definitions:
        op = op_from_tags(d.tags) if "backendbench" in d.tags else None
        if op is None:
            rep.skipped_definitions.append(d.name)
            continue
        named.append((op.qualified, d))
    keep = set(select_ops([q for q, _ in named], ops)) if ops else {q for q, _ in named}

    rows: list[tuple[tuple[str, int, int], str, str]] = []
    for qualified, d in named:
        if qualified not in keep:
            continue
        for w in workloads.get(d.name, ()):
            call = _call_input(w)
            if call is None:
                raise DatasetError(
                    f"workload {shown(w.uuid)} of BackendBench definition {shown(d.name)} has no "
                    "'backendbench_args' input"
                )
            try:
                args, kwargs = decode_call(call.args, call.kwargs)
            except ValueError as e:
                raise DatasetError(f"workload {shown(w.uuid)} of {shown(d.name)}: {e}") from None
            trailing = call.args_trailing_comma
            if trailing is None:
                trailing = len(args) == 1
            text = format_row(_cnt(w, call, d.name), args, kwargs, trailing_comma=trailing)
            src = call.source
            # Rows without a source (written by hand) keep their order, after the others.
            key = (src.file, src.line, 0) if src is not None else ("\uffff", 0, len(rows))
            rows.append((key, qualified, text))
    rows.sort(key=lambda r: r[0])

    lines: list[str] = []
    current = None
    ops_written: set[str] = set()
    for _, qualified, text in rows:
        if qualified != current:
            lines.append(f"Operator: {qualified}")
            current = qualified
            ops_written.add(qualified)
        lines.append(text)
    rep.operators = len(ops_written)
    rep.rows = len(rows)
    return "".join(line + "\n" for line in lines)


def export_backendbench(
    root: str | Path, out: str | Path, *, ops: Sequence[str] | None = None
) -> ExportReport:
    """Write the BackendBench definitions and workloads of a dataset root as a trace file.

    Args:
        root: A dataset root (e.g. written by ``sweep import-backendbench``).
        out: The trace file to write.
        ops: Operators to write, by exact name; all when ``None``.

    Raises:
        DatasetError: The dataset does not load, holds no BackendBench definition, or
            ``out`` cannot be written.
    """
    from sweep.plan.dataset import load_dataset

    ds = load_dataset([root])
    dest = Path(out)
    report = ExportReport(out=dest)
    text = export_text(list(ds.definitions.values()), ds.workloads, ops=ops, report=report)
    if len(report.skipped_definitions) == len(ds.definitions):
        raise DatasetError(
            f"{root}: no BackendBench definitions (tagged 'backendbench' with an "
            "'aten:<op>.<overload>' tag) to export; import a trace with 'sweep import-backendbench'"
        )
    try:
        write_atomic(dest, text)
    except (OSError, ValueError) as e:  # OutputRefused: a folder, a device, a store; a NUL
        raise DatasetError(f"cannot write {clip(str(dest))}: {reason(e)}") from None
    return report
