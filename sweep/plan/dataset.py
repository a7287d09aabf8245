"""Loading datasets in the FlashInfer-Bench layout.

A dataset root holds any of::

    definitions/**/*.json     one Definition per file
    solutions/**/*.json       one Solution per file
    workloads/**/*.jsonl      workload-only Trace records, one per line
    traces/**/*.jsonl         evaluated Trace records, one per line

Several roots load into one :class:`Dataset`; names must be unique across all of them.
Every problem is reported with the file, the JSONL line number where there is one, the
field path and what was expected; :func:`load_dataset` collects them all before raising.
No torch import here: loading is plain ``json`` plus pydantic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

import pydantic

from sweep.errors import DatasetError, clip, did_you_mean, format_validation_error, reason, shown
from sweep.schema import Definition, SafetensorsInput, Solution, Trace, Workload, check_workload
from sweep.schema.limits import load_json, read_text
from sweep.schema.solution_checks import solution_problems

__all__ = ["LAYOUT", "Dataset", "Origin", "RecordKind", "load_dataset", "validate_roots"]

RecordKind = Literal["definition", "solution", "workload"]
#: Sub-folder and file suffix of each kind of file in a dataset root.
LAYOUT: dict[str, tuple[str, str]] = {
    "definition": ("definitions", ".json"),
    "solution": ("solutions", ".json"),
    "workload": ("workloads", ".jsonl"),
    "trace": ("traces", ".jsonl"),
}
_MAX_ERRORS_SHOWN = 200
#: The largest dataset file read (a JSONL of workloads or traces can be large; a device or
#: a runaway file must not fill the memory).
MAX_FILE_BYTES = 512 * 2**20

_R = TypeVar("_R", bound=pydantic.BaseModel)


@dataclass(frozen=True)
class Origin:
    """Where a record was read: a file, and the 1-based line for JSONL files."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line is not None else self.path


@dataclass
class Dataset:
    """Every record of one or more dataset roots.

    Attributes:
        roots: The roots, absolute, in the order given.
        definitions: By name.
        solutions: By name (a solution may name a definition that is not loaded: the plan
            reports it).
        workloads: By definition name, in file order (files sorted by path, then lines).
        traces: Evaluated traces found under ``traces/``.
        errors: Problems found (empty after a strict load; see :func:`validate_roots`).
        warnings: Things worth knowing that are not errors.
    """

    roots: list[Path]
    definitions: dict[str, Definition] = field(default_factory=dict)
    solutions: dict[str, Solution] = field(default_factory=dict)
    workloads: dict[str, list[Workload]] = field(default_factory=dict)
    traces: list[Trace] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _origins: dict[tuple[str, str], tuple[Origin, Path]] = field(default_factory=dict, repr=False)

    def origin(self, kind: str, name: str) -> Origin:
        """The file (and line) a record came from.

        Args:
            kind: ``"definition"``, ``"solution"`` or ``"workload"``.
            name: The record's name; for a workload, its uuid.

        Raises:
            KeyError: No such record was loaded.
        """
        return self._origins[(kind, name)][0]

    def root_of(self, kind: str, name: str) -> Path:
        """The dataset root a record came from (safetensors paths are relative to it).

        Raises:
            KeyError: No such record was loaded.
        """
        return self._origins[(kind, name)][1]

    def workload(self, uuid: str) -> Workload:
        """The workload with this uuid.

        Raises:
            KeyError: No such workload was loaded.
        """
        for wls in self.workloads.values():
            for w in wls:
                if w.uuid == uuid:
                    return w
        raise KeyError(uuid)

    def num_workloads(self) -> int:
        """How many workloads were loaded, over all definitions."""
        return sum(len(v) for v in self.workloads.values())


def _files(root: Path, kind: str) -> list[Path]:
    folder, suffix = LAYOUT[kind]
    base = root / folder
    if not base.is_dir():
        return []
    # Not only regular files: a FIFO or a link to a device named like a record is reported
    # (reading checks the kind of file first and never opens those).
    return sorted(p for p in base.rglob(f"*{suffix}") if not p.is_dir())


def _read_text(path: Path, errors: list[str]) -> str | None:
    try:
        return read_text(path, MAX_FILE_BYTES)
    except (OSError, ValueError) as e:  # ValueError: FileRefused, UnicodeDecodeError
        errors.append(f"{path}: cannot read: {reason(e)}")
        return None


def _parse(
    model: type[_R], text: str, path: Path, line: int | None, errors: list[str]
) -> tuple[_R | None, object]:
    """One record from JSON text: ``(record, None)``, or ``(None, data)`` with errors added.

    The fast path is pydantic's own JSON parser. Only when it fails is the text parsed again
    with ``json`` to say exactly where and what (``data`` is then the parsed object, or
    ``None`` when the text is not JSON).
    """
    try:
        return model.model_validate_json(text), None
    except pydantic.ValidationError:
        pass
    where = f"{path}:{line}" if line is not None else str(path)
    try:
        data: object = load_json(text)
    except json.JSONDecodeError as e:
        where = f"{path}:{line if line is not None else e.lineno}"
        errors.append(f"{where}: not valid JSON: {e.msg} (column {e.colno})")
        return None, None
    except ValueError as e:  # nested too deeply, an integer too long
        errors.append(f"{where}: not accepted as JSON: {e}")
        return None, None
    if not isinstance(data, dict):
        errors.append(f"{where}: expected a JSON object, got {type(data).__name__}")
        return None, data
    try:
        return model.model_validate(data), None
    except pydantic.ValidationError as e:
        errors.extend(format_validation_error(e, data, prefix=where))
        return None, data


def _jsonl_lines(path: Path, errors: list[str]) -> Iterator[tuple[int, str]]:
    text = _read_text(path, errors)
    if text is None:
        return
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and other characters that
    # splitlines() takes for line ends, and line numbers must be the file's.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield lineno, line


class _Loader:
    """Accumulates records and errors over several roots."""

    def __init__(self, roots: list[Path]) -> None:
        self.ds = Dataset(roots=roots)
        self.errors = self.ds.errors
        self._pending_workloads: list[tuple[Path, Path]] = []
        self._pending_traces: list[Path] = []
        # Definitions whose files failed: their workloads get a clearer message.
        self._failed_definitions: set[str] = set()
        self._failed_definition_files = 0

    def _claim(self, kind: str, name: str, origin: Origin, root: Path, what: str) -> bool:
        prev = self.ds._origins.get((kind, name))
        if prev is not None:
            self.errors.append(f"{origin}: duplicate {what} {shown(name)}: also defined in {prev[0]}")
            return False
        self.ds._origins[(kind, name)] = (origin, root)
        return True

    def load_root(self, root: Path) -> None:
        for path in _files(root, "definition"):
            text = _read_text(path, self.errors)
            d, data = (None, None) if text is None else _parse(Definition, text, path, None, self.errors)
            if d is None:
                self._failed_definition_files += 1
                if isinstance(data, dict) and isinstance(data.get("name"), str):
                    self._failed_definitions.add(data["name"])
                continue
            if self._claim("definition", d.name, Origin(str(path)), root, "definition"):
                self.ds.definitions[d.name] = d
        for path in _files(root, "solution"):
            text = _read_text(path, self.errors)
            s = None if text is None else _parse(Solution, text, path, None, self.errors)[0]
            if s is not None and self._claim("solution", s.name, Origin(str(path)), root, "solution"):
                self.ds.solutions[s.name] = s
        self._pending_workloads.extend((root, p) for p in _files(root, "workload"))
        self._pending_traces.extend(_files(root, "trace"))

    def load_workloads(self) -> None:
        """Workloads last: every definition of every root must be known to check them."""
        for root, path in self._pending_workloads:
            for lineno, line in _jsonl_lines(path, self.errors):
                where = f"{path}:{lineno}"
                t = _parse(Trace, line, path, lineno, self.errors)[0]
                if t is None:
                    continue
                if not t.is_workload_only:
                    self.errors.append(
                        f"{where}: a workloads/ file holds workload-only records "
                        "(solution and evaluation null); put evaluated traces under traces/"
                    )
                    continue
                defn = self.ds.definitions.get(t.definition)
                if defn is None:
                    self.errors.append(self._unknown_definition(where, t.definition))
                    continue
                problems = check_workload(defn, t.workload) + _escaping_paths(root, t.workload)
                if problems:
                    self.errors.extend(f"{where}: workload.{p}" for p in problems)
                    continue
                origin = Origin(str(path), lineno)
                if self._claim("workload", t.workload.uuid, origin, root, "workload uuid"):
                    self.ds.workloads.setdefault(t.definition, []).append(t.workload)

    def load_traces(self) -> None:
        for path in self._pending_traces:
            for lineno, line in _jsonl_lines(path, self.errors):
                where = f"{path}:{lineno}"
                t = _parse(Trace, line, path, lineno, self.errors)[0]
                if t is None:
                    continue
                if t.evaluation is None:
                    self.errors.append(
                        f"{where}: evaluation: a traces/ file holds evaluated traces; "
                        "put workload-only records under workloads/"
                    )
                    continue
                if t.definition not in self.ds.definitions:
                    self.errors.append(self._unknown_definition(where, t.definition))
                    continue
                self.ds.traces.append(t)

    def _unknown_definition(self, where: str, name: str) -> str:
        if name in self._failed_definitions:
            return f"{where}: definition: definition {shown(name)} did not load (its file has errors)"
        failed = self._failed_definition_files
        note = f" ({failed} definition file{'s' if failed != 1 else ''} failed to load)" if failed else ""
        return f"{where}: definition: unknown definition {shown(name)}{did_you_mean(name, self.ds.definitions)}{note}"

    def check_solutions(self) -> None:
        for name, sol in list(self.ds.solutions.items()):
            where = self.ds.origin("solution", name)
            found = solution_problems(sol, self.ds.definitions.get(sol.definition))
            self.ds.warnings.extend(f"{where}: {p.message}" for p in found if not p.error)
            if any(p.error for p in found):
                self.errors.extend(f"{where}: {p.message}" for p in found if p.error)
                del self.ds.solutions[name]
                continue
            if sol.definition not in self.ds.definitions:
                self.ds.warnings.append(
                    f"{self.ds.origin('solution', name)}: definition: solution {shown(name)} is for "
                    f"{shown(sol.definition)}, which no root defines"
                    f"{did_you_mean(sol.definition, self.ds.definitions)}"
                )


def _check_roots(roots: Sequence[str | Path]) -> list[Path]:
    if not roots:
        raise DatasetError("no dataset root given")
    out: list[Path] = []
    for r in roots:
        name = shown(str(r))
        try:
            p = Path(r).expanduser().resolve()
            is_dir = p.is_dir()
        except (OSError, ValueError, RuntimeError) as e:
            # ValueError: a NUL in the path; RuntimeError: '~user' with no such user.
            raise DatasetError(f"dataset root {name} is not a usable path: {reason(e)}") from None
        if not is_dir:
            raise DatasetError(f"dataset root {name} is not a folder ({clip(str(p))})")
        if not any((p / LAYOUT[k][0]).is_dir() for k in LAYOUT):
            raise DatasetError(
                f"dataset root {name} has none of definitions/, solutions/, workloads/, traces/ "
                "(expected the FlashInfer-Bench layout)"
            )
        if p in out:
            raise DatasetError(f"dataset root {name} is given twice")
        out.append(p)
    return out


def validate_roots(roots: Sequence[str | Path]) -> tuple[Dataset, list[str]]:
    """Load every root, collecting record errors instead of raising.

    Records with errors are left out of the returned dataset.

    Returns:
        The dataset and every error message (empty when all is well).

    Raises:
        DatasetError: A root is missing or is not a dataset folder.
    """
    loader = _Loader(_check_roots(roots))
    for root in loader.ds.roots:
        loader.load_root(root)
    loader.load_workloads()
    loader.load_traces()
    loader.check_solutions()
    return loader.ds, loader.ds.errors


def load_dataset(roots: Sequence[str | Path], *, strict: bool = True) -> Dataset:
    """Load one or more dataset roots.

    Args:
        roots: Dataset folders in the FlashInfer-Bench layout.
        strict: Raise when any record is bad (the default). When false, bad records are
            left out and their messages kept in ``Dataset.errors``.

    Raises:
        DatasetError: A root is not a dataset folder, or (strict) any record is bad; the
            message lists every error found, one per line.
    """
    ds, errors = validate_roots(roots)
    if strict and errors:
        shown = errors[:_MAX_ERRORS_SHOWN]
        more = len(errors) - len(shown)
        tail = f"\n... and {more} more" if more else ""
        noun = "error" if len(errors) == 1 else "errors"
        body = "\n".join(f"  {x}" for x in shown)
        raise DatasetError(f"dataset has {len(errors)} {noun}:\n{body}{tail}")
    return ds


def _escaping_paths(root: Path, workload: Workload) -> list[str]:
    """Safetensors inputs whose file, with symbolic links followed, is outside ``root``.

    The record itself refuses absolute paths and ``..``; a link inside the dataset that
    points elsewhere is found only here. The engine refuses such paths too (later).
    """
    base = root.resolve()
    out = []
    for name, spec in workload.inputs.items():
        if isinstance(spec, SafetensorsInput) and not (base / spec.path).resolve().is_relative_to(base):
            out.append(
                f"inputs.{clip(name)}.path: {shown(spec.path)} leads outside the dataset root {base} "
                "(through a symbolic link); safetensors files must be inside the root"
            )
    return out
