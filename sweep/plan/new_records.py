"""Writing new records: a Solution packed from source files, a Definition skeleton.

``sweep new solution`` and ``sweep new definition`` call :func:`pack_solution` /
:func:`definition_skeleton` and then :func:`write_record`. Nothing is imported or built:
the entry point's signature is read with :mod:`ast` (:mod:`sweep.schema.entry_signature`,
the rule the engine applies at evaluation), so a packed solution is called the way it is
written. C++/CUDA entry points are not read: their calling style is the flag's, or the
default.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from sweep.errors import (
    DatasetError,
    ValidationError,
    clip,
    did_you_mean,
    format_validation_error,
    listing,
    shown,
)
from sweep.plan.dataset import validate_roots
from sweep.plan.record_files import name_part, record_path
from sweep.schema import Definition, Solution
from sweep.schema.entry_signature import dps_choice, signature_problem, static_entry, top_level_functions
from sweep.schema.hardware import (
    ANY_GPU_WORDS,
    ANY_WORDS,
    CPU,
    KNOWN_MODELS,
    short_name,
    solution_target_problem,
)
from sweep.schema.limits import FileRefused, read_text
from sweep.schema.solution_checks import solution_problems

__all__ = [
    "Packed",
    "infer_language",
    "pack_solution",
]

#: The largest source file packed into a solution.
MAX_SOURCE_BYTES = 16 * 2**20
_CPP = (".cpp", ".cc", ".cxx", ".c")
_CUDA = (".cu", ".cuh")


@dataclass(frozen=True)
class Packed:
    """A solution ready to write.

    Attributes:
        solution: The record.
        path: Where the dataset layout puts it.
        root: The dataset root it goes under (the definition's).
        notes: What was inferred and how (language, entry point, calling style).
    """

    solution: Solution
    path: Path
    root: Path
    notes: list[str] = field(default_factory=list)


def _imports(source: str, module: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == module for a in node.names):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[0] == module
            and not node.level
        ):
            return True
    return False


def infer_language(files: dict[str, str]) -> str:
    """``triton`` (or ``tilelang``) when a Python source imports it, ``cuda`` with a ``.cu``
    source, ``cpp`` with a C++ source, else ``python``."""
    py = [text for path, text in files.items() if path.endswith(".py")]
    if any(_imports(t, "triton") for t in py):
        return "triton"
    if any(_imports(t, "tilelang") for t in py):
        return "tilelang"
    if any(p.endswith(_CUDA) for p in files):
        return "cuda"
    if any(p.endswith(_CPP) for p in files):
        return "cpp"
    return "python"


def _read_sources(files: list[Path]) -> tuple[dict[str, str], dict[Path, str]]:
    """Each file's text under its path relative to the files' common folder; and the map
    from each resolved file to that path."""
    if not files:
        raise ValidationError("no source file given")
    resolved: list[Path] = []
    for f in files:
        try:
            p = f.expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as e:
            raise ValidationError(f"source {shown(str(f))} is not a usable path: {e}") from None
        if not p.is_file():
            raise ValidationError(f"source {shown(str(f))} is not a file")
        if p in resolved:
            raise ValidationError(f"source {shown(str(f))} is given twice")
        resolved.append(p)
    base = Path(os.path.commonpath([str(p.parent) for p in resolved]))
    texts: dict[str, str] = {}
    rel: dict[Path, str] = {}
    for p in resolved:
        name = p.relative_to(base).as_posix()
        try:
            texts[name] = read_text(p, MAX_SOURCE_BYTES)
        except UnicodeDecodeError:
            raise ValidationError(f"source {shown(str(p))} is not UTF-8 text") from None
        except (OSError, FileRefused) as e:
            raise ValidationError(f"source {shown(str(p))}: cannot read: {e}") from None
        rel[p] = name
    return texts, rel


def _entry_file(given: str, texts: dict[str, str], rel: dict[Path, str]) -> str:
    if given in texts:
        return given
    try:
        p = Path(given).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        p = None
    if p is not None and p in rel:
        return rel[p]
    by_name = [r for r in texts if r.rsplit("/", 1)[-1] == given]
    if len(by_name) == 1:
        return by_name[0]
    raise ValidationError(
        f"--entry: file {shown(given)} is not among the sources ({listing(texts)}){did_you_mean(given, texts)}"
    )


def _default_entry(texts: dict[str, str]) -> str:
    py = [p for p in texts if p.endswith(".py")]
    if not py:
        raise ValidationError(
            f"no .py file among the sources ({listing(texts)}): pass --entry FILE::FUNCTION "
            "(e.g. --entry kernel.cu::run); C++/CUDA entry points are not read here"
        )
    first = py[0]
    try:
        functions = top_level_functions(texts[first], first)
    except ValueError as e:
        raise ValidationError(str(e)) from None
    if "run" in functions:
        return f"{first}::run"
    plain = [n for n, f in functions.items() if not f.decorated and not n.startswith("_")]
    if len(plain) == 1:
        return f"{first}::{plain[0]}"
    raise ValidationError(
        f"{first} defines {len(plain)} public undecorated top-level functions ({listing(plain)}) and "
        f"none named 'run': pass --entry {first}::FUNCTION"
    )


def _flag(dps: bool) -> str:
    return "--dps" if dps else "--no-dps"


def _calling_style(
    entry: str, texts: dict[str, str], definition: Definition, dps: bool | None, notes: list[str]
) -> bool:
    file, _, symbol = entry.partition("::")
    inputs, outputs = list(definition.inputs), list(definition.outputs)
    if "backendbench" in definition.tags:
        # An imported ATen operator is called like the operator: arguments in, result returned.
        if dps:
            raise ValidationError(
                f"definition {shown(definition.name)} is a BackendBench operator, called like the ATen "
                "operator (arguments in, result returned): drop --dps (or pass --no-dps)"
            )
        notes.append("destination_passing_style: false (a BackendBench operator returns its result)")
        return False
    if not file.endswith(".py"):
        style = True if dps is None else dps
        notes.append(
            f"destination_passing_style: {str(style).lower()} ({'--dps/--no-dps' if dps is not None else 'the default'}; "
            f"the signature of {entry} is not checked until it is built)"
        )
        return style
    try:
        found = static_entry(texts[file], symbol, file)
        functions = top_level_functions(texts[file], file)
    except ValueError as e:
        raise ValidationError(str(e)) from None
    if found is None:
        if symbol not in functions and dps is None:
            raise ValidationError(
                f"{file} has no top-level function {shown(symbol)}{did_you_mean(symbol, functions)} "
                f"(functions: {listing(functions)}); if it is imported or assigned there, say how it is "
                "called with --dps (inputs, then outputs to write) or --no-dps (inputs; returns outputs)"
            )
        style = True if dps is None else dps
        notes.append(f"{entry} is not a plain top-level def: its signature is not checked")
        return style
    ins, outs = f"({', '.join(inputs)})", f"({', '.join(outputs)})"
    if dps is not None:
        problem = signature_problem(found.params, inputs, outputs, dps, _flag)
        if problem:
            raise ValidationError(f"{entry}: {problem}")
        notes.append(f"destination_passing_style: {str(dps).lower()} (as asked)")
        return dps
    choice = dps_choice(found.params, inputs, outputs)
    if choice is None:
        both = all(signature_problem(found.params, inputs, outputs, d) is None for d in (True, False))
        if both:
            raise ValidationError(
                f"{entry} takes {found.params.shown}, which fits both calling styles of the definition "
                f"{shown(definition.name)} (inputs {ins}, outputs {outs}): pass --dps if it takes "
                f"({', '.join(inputs + outputs)}) and writes the outputs, or --no-dps if it takes {ins} "
                "and returns them"
            )
        raise ValidationError(
            f"{entry} takes {found.params.shown}, which fits neither calling style of the definition "
            f"{shown(definition.name)} (inputs {ins}, outputs {outs}): make it take "
            f"({', '.join(inputs + outputs)}) and write the outputs (--dps), or take {ins} and return "
            "them (--no-dps)"
        )
    how = "inputs, then outputs to write" if choice else "inputs; returns the outputs"
    notes.append(
        f"destination_passing_style: {str(choice).lower()} ({entry} takes {found.params.shown}: {how})"
    )
    return choice


def _targets(given: list[str], notes: list[str]) -> list[str]:
    """``--target-hardware`` values checked: each names hardware a solution can run on (an
    empty one, ``auto`` or a name of no model is refused); a GPU type not known is a warning."""
    for entry in given:
        problem = solution_target_problem(entry)
        if problem:
            raise ValidationError(f"--target-hardware: {problem}")
        word = entry.strip().lower()
        short = short_name(entry)
        if word in ANY_WORDS or word in ANY_GPU_WORDS or short == CPU or short in KNOWN_MODELS:
            continue
        notes.append(
            f"warning: target {shown(entry)} is no GPU type kernel-sweep knows"
            f"{did_you_mean(short, KNOWN_MODELS)}: the solution runs only where the target is {short}"
        )
    return list(given)


def _find_definition(roots: list[Path], name: str) -> tuple[Definition, Path, Any]:
    ds, errors = validate_roots(roots)
    definition = ds.definitions.get(name)
    if definition is None:
        note = (
            f"; {len(errors)} file(s) of the roots have errors ('sweep validate' lists them)"
            if errors
            else ""
        )
        raise DatasetError(
            f"no definition {shown(name)} in {listing(str(r) for r in ds.roots)}"
            f"{did_you_mean(name, ds.definitions)}{note}"
        )
    return definition, ds.root_of("definition", name), ds


def pack_solution(
    roots: list[Path],
    definition_name: str,
    files: list[Path],
    *,
    name: str | None = None,
    author: str | None = None,
    language: str | None = None,
    entry: str | None = None,
    dps: bool | None = None,
    target_hardware: list[str] | None = None,
    description: str | None = None,
    check_name: bool = True,
) -> Packed:
    """Pack source files into a Solution of ``definition_name``, found in ``roots``.

    Defaults: ``entry`` the only top-level ``run`` (or the only function) of the first
    ``.py`` file; ``name`` the entry file's stem; ``author`` ``$USER``; ``language`` from the
    sources (:func:`infer_language`); ``dps`` from the entry point's signature;
    ``target_hardware`` ``["gpu"]`` for CUDA, else ``["cpu", "gpu"]``. ``check_name=False``
    lets the name be another solution's (a solution evaluated from its file, never written).

    Raises:
        DatasetError: The definition is not in the roots.
        ValidationError: A file cannot be read, the entry point is not found or its signature
            fits no calling style (the message says which flag to pass), a name cannot name a
            file, or another solution of the dataset has that name.
    """
    definition, root, ds = _find_definition(roots, definition_name)
    texts, rel = _read_sources(files)
    notes: list[str] = []
    if entry is None:
        entry = _default_entry(texts)
        notes.append(f"entry point: {entry} (pass --entry FILE::FUNCTION for another)")
    else:
        file, sep, symbol = entry.rpartition("::")
        if not sep or not file or not symbol:
            raise ValidationError(f"--entry: expected FILE::FUNCTION, got {shown(entry)}")
        entry = f"{_entry_file(file, texts, rel)}::{symbol}"
    entry_file = entry.partition("::")[0]
    lang = language or infer_language(texts)
    if language is None:
        notes.append(f"language: {lang} (from the sources; pass --language to choose)")
    style = _calling_style(entry, texts, definition, dps, notes)
    who = author or os.environ.get("USER") or ""
    if not who:
        raise ValidationError("no author: pass --author (or set $USER)")
    stem = entry_file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    sol_name = name_part(name or stem, "solution name", "" if name else "--name")
    targets = (
        _targets(target_hardware, notes)
        if target_hardware
        else (["gpu"] if lang == "cuda" else ["cpu", "gpu"])
    )
    spec: dict[str, Any] = {
        "language": lang,
        "target_hardware": targets,
        "entry_point": entry,
        "dependencies": [],
        "destination_passing_style": style,
    }
    if not entry_file.endswith(".py") and any(
        m in t for t in texts.values() for m in ("PYBIND11_MODULE", "TORCH_LIBRARY")
    ):
        spec["binding"] = "torch"
        notes.append("binding: torch (the sources define a PYBIND11_MODULE; else tvm-ffi)")
    data: dict[str, Any] = {
        "name": sol_name,
        "definition": definition.name,
        "author": name_part(who, "author", "--author"),
        "description": description or f"{sol_name}: a {lang} solution of {definition.name}.",
        "spec": spec,
        "sources": [{"path": p, "content": t} for p, t in texts.items()],
    }
    try:
        solution = Solution.model_validate(data)
    except pydantic.ValidationError as e:
        raise ValidationError("; ".join(format_validation_error(e, data))) from None
    errors = [p.message for p in solution_problems(solution, definition) if p.error]
    if errors:
        raise ValidationError("; ".join(errors))
    fix = f"rename it in the definition's file ({clip(ds.origin('definition', definition.name).path)})"
    op_type = name_part(definition.op_type, "the definition's op_type", fix=fix)
    def_name = name_part(definition.name, "the definition's name", fix=fix)
    path = record_path(root, "solution", solution.author, op_type, def_name, f"{sol_name}.json")
    taken = sol_name in ds.solutions or sol_name in ds.broken  # a broken file keeps its name too
    if check_name and taken and Path(ds.origin("solution", sol_name).path).resolve() != path.resolve():
        raise ValidationError(
            f"a solution named {shown(sol_name)} already exists ({clip(ds.origin('solution', sol_name).path)}): "
            "pass --name"
        )
    return Packed(solution, path, root, notes)
