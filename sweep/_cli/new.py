"""``sweep new solution`` and ``sweep new definition``: write records from source files and
skeletons, at the paths of the dataset layout."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import RootsOpt
from sweep.schema import Language

__all__ = ["new_app"]

new_app = typer.Typer(
    help="Write a new record: a solution packed from source files, or a definition skeleton.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(new_app, name="new")

ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")]
PrintOpt = Annotated[bool, typer.Option("--print", help="Print the JSON to stdout; write no file.")]


@new_app.command("solution")
def new_solution(
    definition: Annotated[str, typer.Argument(help="Definition name (found in the dataset roots).")],
    files: Annotated[list[Path], typer.Argument(help="Source files; the entry file among them.")],
    name: Annotated[
        str | None, typer.Option("--name", help="Solution name (default: the entry file's stem).")
    ] = None,
    author: Annotated[str | None, typer.Option("--author", help="Author (default: $USER).")] = None,
    language: Annotated[
        Language | None,
        typer.Option(
            "--language",
            help="Default: triton if a source imports triton, cuda with a .cu, cpp with a .cpp, else python.",
        ),
    ] = None,
    entry: Annotated[
        str | None,
        typer.Option(
            "--entry",
            help="FILE::FUNCTION (default: the only top-level run, or only function, of the first .py).",
        ),
    ] = None,
    dps: Annotated[
        bool | None,
        typer.Option(
            "--dps/--no-dps",
            help="Outputs passed as trailing arguments to write (--dps) or returned (--no-dps); default: from the signature.",
        ),
    ] = None,
    target_hardware: Annotated[
        list[str] | None,
        typer.Option(
            "--target-hardware",
            "-t",
            help="Repeatable: cpu, gpu, H100... (default: cpu and gpu; gpu for cuda).",
        ),
    ] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="One line about the solution.")
    ] = None,
    root: RootsOpt = None,
    force: ForceOpt = False,
    print_only: PrintOpt = False,
) -> None:
    """Pack source files into a Solution at solutions/<author>/<op_type>/<definition>/<name>.json.

    The entry point's signature is read (not imported) and checked against the definition;
    it decides destination_passing_style. C++/CUDA entry points are not read: pass --dps/--no-dps.

    Example: sweep new solution rmsnorm_h1024 my_kernel.py --author me
    """
    from sweep.plan.new_records import pack_solution
    from sweep.plan.record_files import record_text, write_record

    packed = pack_solution(
        root or [Path(".")],
        definition,
        files,
        name=name,
        author=author,
        language=language.value if language is not None else None,
        entry=entry,
        dps=dps,
        target_hardware=target_hardware,
        description=description,
    )
    text = record_text(packed.solution.to_json_obj())
    if print_only:
        echo(text, nl=False)
        return
    write_record(packed.path, text, force=force, root=packed.root)
    echo(f"wrote {packed.path}")
    for note in packed.notes:
        echo(f"  {note}")
    roots = [str(r) for r in root or [Path(".")]]
    flags = "".join(f" -r {shlex.quote(r)}" for r in roots) if root else ""
    echo(
        f"next: sweep validate {' '.join(shlex.quote(r) for r in roots)}; "
        f"sweep eval {shlex.quote(definition)} {shlex.quote(packed.solution.name)}{flags}"
    )


@new_app.command("definition")
def new_definition(
    name: Annotated[str, typer.Argument(help="Definition name.")],
    op_type: Annotated[
        str | None, typer.Option("--op-type", help="Operation type (default: NAME up to its first '_').")
    ] = None,
    root: Annotated[
        Path, typer.Option("--root", "-r", help="Dataset root to write under (default: .).")
    ] = Path("."),
    force: ForceOpt = False,
    print_only: PrintOpt = False,
) -> None:
    """Write a Definition skeleton to definitions/<op_type>/<name>.json: valid JSON that loads
    as it is (an example elementwise add), whose descriptions say what to fill in.

    Example: sweep new definition layernorm_h4096 --op-type layernorm
    """
    from sweep.plan.new_definition import GUIDE, definition_skeleton
    from sweep.plan.record_files import definition_path, name_part, record_text, write_record

    name_part(name, "definition name")
    op = name_part(op_type or name.split("_", 1)[0], "op_type", "--op-type")
    text = record_text(definition_skeleton(name, op))
    if print_only:
        echo(text, nl=False)
        return
    path = definition_path(root, op, name)
    write_record(path, text, force=force, root=root)
    echo(f"wrote {path}")
    echo(GUIDE)


@new_app.command("workload")
def new_workload(
    definition: Annotated[str, typer.Argument(help="Definition name (found in the dataset roots).")],
    axis: Annotated[
        list[str] | None,
        typer.Option("--axis", "-a", help="NAME=VALUE of a variable axis (repeatable; every variable axis)."),
    ] = None,
    scalar: Annotated[
        list[str] | None,
        typer.Option("--scalar", help="NAME=VALUE of a scalar input (repeatable; every scalar input)."),
    ] = None,
    root: RootsOpt = None,
) -> None:
    """Add a shape to a definition: one workload (random tensors, the scalars given) appended
    to workloads/<op_type>/<definition>.jsonl of the root that holds the definition.

    Exit codes: 0 added; 1 an axis or scalar unknown or missing, or that shape is there already.

    Example: sweep new workload softmax_f32 --axis batch_size=16 --axis dim=2048
    """
    from sweep.plan.new_workload import add_workload, parse_assignments

    roots = root or [Path(".")]
    added = add_workload(
        roots,
        definition,
        parse_assignments(axis or [], "--axis"),
        parse_assignments(scalar or [], "--scalar"),
    )
    axes = ", ".join(f"{k}={v}" for k, v in added.workload.axes.items())
    echo(f"added workload {added.workload.uuid} ({axes}) to {added.path}")
    flags = "".join(f" -r {shlex.quote(str(r))}" for r in root or [])
    echo(f"next: sweep eval {shlex.quote(definition)} SOLUTION -w {added.workload.uuid[:8]}{flags}")
