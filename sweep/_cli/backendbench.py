"""BackendBench commands: import-backendbench, export-backendbench, import-backendbench-kernels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo

if TYPE_CHECKING:
    from sweep.backendbench import ExportReport, ImportReport, KernelImportReport

__all__ = [
    "app",
    "render_export",
    "render_import",
    "render_kernel_import",
    "split_ops",
]


def split_ops(text: str | None) -> list[str] | None:
    """``"relu,add.Tensor"`` -> ``["relu", "add.Tensor"]``; ``None`` for no filter."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    return names or None


def render_import(r: ImportReport) -> str:
    """What ``sweep import-backendbench`` prints."""
    head = (
        f"read {r.rows_read} rows; wrote {len(r.operators)} definitions and "
        f"{r.workloads_added} new workloads under {r.out}"
    )
    lines = [head]
    if r.workloads_present:
        lines.append(f"{r.workloads_present} workloads were already there (same uuid), left as they were")
    if r.skipped_synthetic:
        lines.append(f"skipped {r.skipped_synthetic} synthetic rows (cnt: 0); --include-synthetic keeps them")
    if r.skipped_unselected:
        lines.append(f"skipped {r.skipped_unselected} rows of operators not in --ops")
    lines.extend(f"warning: {w}" for w in r.warnings)
    return "\n".join(lines)


def render_export(r: ExportReport) -> str:
    """What ``sweep export-backendbench`` prints."""
    lines = [f"wrote {r.rows} rows of {r.operators} operators to {r.out}"]
    if r.skipped_definitions:
        lines.append(f"left out {len(r.skipped_definitions)} definitions that are not BackendBench imports")
    return "\n".join(lines)


def render_kernel_import(r: KernelImportReport) -> str:
    """What ``sweep import-backendbench-kernels`` prints."""
    lines = [f"wrote {len(r.solutions)} solutions under {r.out}"]
    lines.extend(f"skipped: {s}" for s in r.skipped)
    return "\n".join(lines)


@app.command("import-backendbench")
def import_backendbench_cmd(
    file: Annotated[Path, typer.Argument(help="A BackendBench operator trace file.")],
    out: Annotated[Path, typer.Option("--out", help="Dataset root to write into.")],
    ops: Annotated[
        str | None,
        typer.Option(
            "--ops",
            help="Comma-separated operators, by exact name: relu, relu.default or aten.relu.default.",
        ),
    ] = None,
    include_synthetic: Annotated[
        bool, typer.Option("--include-synthetic", help="Also import synthetic (cnt: 0) rows.")
    ] = False,
) -> None:
    """Import a BackendBench trace as Definitions and Workloads (parsed, never evaluated).

    Example: sweep import-backendbench backend_bench_problems.txt --out data --ops relu,add.Tensor
    """
    from sweep.backendbench import import_backendbench

    report = import_backendbench(file, out, ops=split_ops(ops), include_synthetic=include_synthetic)
    echo(render_import(report))


@app.command("export-backendbench")
def export_backendbench_cmd(
    root: Annotated[Path, typer.Argument(help="Dataset root holding imported BackendBench operators.")],
    out: Annotated[Path, typer.Option("--out", help="Trace file to write.")],
    ops: Annotated[
        str | None, typer.Option("--ops", help="Comma-separated operators to write, by exact name.")
    ] = None,
) -> None:
    """Write a dataset's BackendBench operators back as a trace file.

    Example: sweep export-backendbench data --out roundtrip.trace.txt
    """
    from sweep.backendbench import export_backendbench

    echo(render_export(export_backendbench(root, out, ops=split_ops(ops))))


@app.command("import-backendbench-kernels")
def import_backendbench_kernels_cmd(
    kernel_dir: Annotated[
        Path, typer.Argument(help="BackendBench kernel directory (<op__overload>/ folders).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Dataset root to write solutions into.")],
    author: Annotated[str, typer.Option("--author", help="Author of the solutions.")] = "backendbench",
) -> None:
    """Import a BackendBench kernel directory as Solutions (files read, never run).

    Example: sweep import-backendbench-kernels generated_kernels --out data --author my-agent
    """
    from sweep.backendbench import import_kernels

    echo(render_kernel_import(import_kernels(kernel_dir, out, author=author)))


@app.command("import-torch-profile")
def import_torch_profile_cmd(
    file: Annotated[
        Path, typer.Argument(help="A chrome trace torch.profiler exported (record_shapes=True).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Dataset root to write into.")],
    ops: Annotated[
        str | None, typer.Option("--ops", help="Comma-separated operators to import, by exact name.")
    ] = None,
) -> None:
    """Import the ATen calls of a model's profiler trace as BackendBench workloads, each weighted
    by how often the model made it (so 'sweep project' weighs time as the model spends it).

    Example: sweep import-torch-profile model.trace.json --out data
    """
    from sweep.backendbench import import_torch_profile

    echo(render_import(import_torch_profile(file, out, ops=split_ops(ops))))
