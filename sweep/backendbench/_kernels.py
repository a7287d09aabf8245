"""A BackendBench kernel directory as Solutions, so existing kernels sweep unchanged.

BackendBench's directory backend reads ``<op__overload>/<op__overload>_implementation*.py``,
each defining ``<op__overload>_kernel_impl`` called like the ATen overload itself. Each such
file becomes one Solution of the definition named ``<op__overload>`` (the name the trace
importer gives), with ``destination_passing_style`` false. Files are read as text and parsed
with ``ast`` to find the function; nothing is imported or run.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from sweep.errors import DatasetError, clip, reason, shown
from sweep.schema import BuildSpec, Language, Solution, SourceFile
from sweep.schema.files import name_problem, write_atomic
from sweep.schema.limits import read_text
from sweep.schema.op_tags import BACKENDBENCH_OP_TYPE

__all__ = ["KernelImportReport", "import_kernels", "solution_from_file"]

# ``<op>__<overload>``: the op may itself end in ``_`` (``fill___Tensor``) or be a dunder
# (``__and____Tensor``); an overload never starts with ``_`` nor holds ``__``.
_FOLDER = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)__([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*)$")
#: The largest kernel file read.
MAX_SOURCE_BYTES = 16 * 2**20
_TRITON = re.compile(r"^\s*(import triton|from triton\b)|@triton\.(jit|autotune)", re.MULTILINE)
_CUDA = re.compile(r"load_inline|\.cuda\(|device=['\"]cuda|torch\.cuda\.", re.MULTILINE)


@dataclass
class KernelImportReport:
    """What :func:`import_kernels` did.

    Attributes:
        out: The dataset root written.
        solutions: Paths of the solution files written.
        skipped: ``"<path>: <reason>"`` for each file or folder left out.
    """

    out: Path
    solutions: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _defines(source: str, symbol: str, path: Path) -> bool:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise ValueError(f"not valid Python: {e.msg} (line {e.lineno})") from None
    except (RecursionError, MemoryError, ValueError):
        # Python's parser gives up on very deep code this way (MemoryError: its own stack).
        raise ValueError("not valid Python: nested too deeply for Python's parser") from None
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == symbol for n in tree.body
    ) or any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == symbol for t in n.targets)
        for n in tree.body
    )


def solution_from_file(path: Path, folder: str, *, author: str) -> Solution:
    """One implementation file as a Solution of definition ``folder``.

    Raises:
        ValueError: The file is not valid Python, does not define ``<folder>_kernel_impl``,
            is not a regular file, is larger than :data:`MAX_SOURCE_BYTES` or is not UTF-8.
        OSError: The file cannot be read.
    """
    source = read_text(path, MAX_SOURCE_BYTES)
    symbol = f"{folder}_kernel_impl"
    if not _defines(source, symbol, path):
        raise ValueError(f"defines no top-level {symbol!r}")
    triton = bool(_TRITON.search(source))
    language = Language.triton if triton else Language.python
    # A pure-torch kernel runs wherever torch does; Triton and CUDA ones need a GPU.
    targets = ["cuda"] if triton or _CUDA.search(source) else ["*"]
    return Solution(
        name=path.stem,
        definition=folder,
        author=author,
        description=f"BackendBench kernel {folder}/{path.name}",
        spec=BuildSpec(
            language=language,
            target_hardware=targets,
            entry_point=f"{path.name}::{symbol}",
            destination_passing_style=False,
        ),
        sources=[SourceFile(path=path.name, content=source)],
    )


def import_kernels(
    kernel_dir: str | Path, out: str | Path, *, author: str = "backendbench"
) -> KernelImportReport:
    """Import every kernel of a BackendBench kernel directory as Solutions.

    Writes ``<out>/solutions/<author>/backendbench/<op__overload>/<file stem>.json``.

    Args:
        kernel_dir: The directory holding ``<op__overload>/`` folders.
        out: The dataset root to write.
        author: The solutions' author.

    Raises:
        DatasetError: ``kernel_dir`` is not a directory, holds no kernel at all, ``out``
            cannot be written, or ``author`` is not a plain name (it names a folder).
    """
    # The author names a folder of the dataset: one plain name, never a way out of it.
    problem = name_problem(author)
    if problem is not None:
        raise DatasetError(f"--author {shown(author)}: must be a plain name: it {problem}")
    src = Path(kernel_dir)
    try:
        is_dir = src.is_dir()
    except (OSError, ValueError):  # a NUL in the path
        is_dir = False
    if not is_dir:
        raise DatasetError(f"{clip(str(src))}: not a directory (expected a BackendBench kernel directory)")
    root = Path(out)
    report = KernelImportReport(out=root)
    for folder in sorted(p for p in src.iterdir() if p.is_dir() and not p.name.startswith((".", "__py"))):
        if not _FOLDER.match(folder.name):
            report.skipped.append(
                f"{folder}: folder name must be <op>__<overload> (e.g. add__Tensor, relu__default)"
            )
            continue
        files = sorted(folder.glob(f"{folder.name}_implementation*.py"))
        if not files:
            report.skipped.append(f"{folder}: no {folder.name}_implementation*.py file")
            continue
        for f in files:
            try:
                sol = solution_from_file(f, folder.name, author=author)
            except (ValueError, OSError) as e:  # not Python, too large, not a regular file...
                report.skipped.append(f"{f}: {reason(e)}")
                continue
            problem = name_problem(f"{sol.name}.json")
            if problem is not None:
                report.skipped.append(
                    f"{f}: the solution name {shown(sol.name)} cannot name a file: it {problem}"
                )
                continue
            dest = root / "solutions" / author / BACKENDBENCH_OP_TYPE / folder.name / f"{sol.name}.json"
            try:
                write_atomic(dest, json.dumps(sol.to_json_obj(), indent=2) + "\n", inside=root)
            except (OSError, ValueError) as e:  # OutputRefused: a link out of the root; a NUL
                raise DatasetError(f"cannot write {clip(str(dest))}: {reason(e)}") from None
            report.solutions.append(dest)
    if not report.solutions:
        detail = "; ".join(report.skipped[:5])
        raise DatasetError(
            f"{src}: no kernels found (expected <op__overload>/<op__overload>_implementation*.py"
            f" defining <op__overload>_kernel_impl){': ' + detail if detail else ''}"
        )
    return report
