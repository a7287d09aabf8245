"""Loading datasets in the FlashInfer-Bench layout.

A dataset root holds any of::

    definitions/**/*.json     one Definition per file
    solutions/**/*.json       one Solution per file
    workloads/**/*.jsonl      workload-only Trace records, one per line
    traces/**/*.jsonl         evaluated Trace records, one per line

Several roots load into one :class:`Dataset`; names must be unique across all of them.
Every problem is reported with the file, the JSONL line number where there is one, the
field path and what was expected, all of them collected before anything is decided.
No torch import here: loading is plain ``json`` plus pydantic.

Two ways to load. :func:`validate_roots` (``sweep validate``) and :func:`load_dataset` treat
every problem as an error. :func:`load_runnable` (``sweep launch``, ``eval``, ``plan``) keeps
what can run: its problems are for the caller to warn about, once each, and it fails only when
nothing can run. Either way, a solution that cannot be evaluated as it is (a file that is no
Solution record, or a record the checks of :mod:`sweep.schema.solution_checks` find wrong)
stays, as a :class:`~sweep.plan.broken.BrokenSolution` whose tasks are COMPILE_ERROR traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sweep.errors import DatasetError, did_you_mean, shown
from sweep.plan._records import (
    LAYOUT,
    check_roots,
    escaping_paths,
    files,
    jsonl_lines,
    line_runs,
    parse,
    read_file_text,
)
from sweep.plan.broken import BrokenSolution, broken_file, broken_record
from sweep.schema import Definition, Solution, Trace, Workload, check_workload
from sweep.schema.solution_checks import solution_problems

__all__ = [
    "LAYOUT",
    "BrokenSolution",
    "Dataset",
    "Origin",
    "RecordKind",
    "error_list",
    "load_dataset",
    "load_runnable",
    "nothing_to_run",
    "validate_roots",
]

RecordKind = Literal["definition", "solution", "workload"]
_MAX_ERRORS_SHOWN = 200


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
            reports it); one the static checks found wrong too (it is also in ``broken``).
        workloads: By definition name, in file order (files sorted by path, then lines).
        traces: Evaluated traces found under ``traces/``.
        errors: Problems found (empty after a strict load; see :func:`validate_roots`).
        warnings: Things worth knowing that are not errors.
        broken: Solutions that cannot be evaluated as they are, by name (see
            :mod:`sweep.plan.broken`): their tasks are COMPILE_ERROR traces.
        failed_definitions: Definitions whose file did not load, by the name the file gives:
            the file.
    """

    roots: list[Path]
    definitions: dict[str, Definition] = field(default_factory=dict)
    solutions: dict[str, Solution] = field(default_factory=dict)
    workloads: dict[str, list[Workload]] = field(default_factory=dict)
    traces: list[Trace] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    broken: dict[str, BrokenSolution] = field(default_factory=dict)
    failed_definitions: dict[str, str] = field(default_factory=dict)
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

    def valid_solutions(self) -> int:
        """How many solutions loaded without an error."""
        return sum(1 for name in self.solutions if name not in self.broken)


class _Loader:
    """Accumulates records and errors over several roots.

    ``lenient`` (:func:`load_runnable`): workload and trace lines naming a definition that is
    not loaded are one message per definition and file, not one per line.
    """

    def __init__(self, roots: list[Path], *, lenient: bool = False) -> None:
        self.ds = Dataset(roots=roots)
        self.errors = self.ds.errors
        self.lenient = lenient
        self._pending_workloads: list[tuple[Path, Path]] = []
        self._pending_traces: list[Path] = []
        self._pending_broken: list[tuple[Path, BrokenSolution]] = []
        self._failed_definition_files = 0
        # lenient: (definition, file, "workload" or "trace") -> the lines naming it
        self._orphans: dict[tuple[str, str, str], list[int]] = {}

    def _claim(self, kind: str, name: str, origin: Origin, root: Path, what: str) -> bool:
        prev = self.ds._origins.get((kind, name))
        if prev is not None:
            self.errors.append(f"{origin}: duplicate {what} {shown(name)}: also defined in {prev[0]}")
            return False
        self.ds._origins[(kind, name)] = (origin, root)
        return True

    def load_root(self, root: Path) -> None:
        for path in files(root, "definition"):
            text = read_file_text(path, self.errors)
            d, data = (None, None) if text is None else parse(Definition, text, path, None, self.errors)
            if d is None:
                self._failed_definition_files += 1
                if isinstance(data, dict) and isinstance(data.get("name"), str):
                    self.ds.failed_definitions.setdefault(data["name"], str(path))
                continue
            if self._claim("definition", d.name, Origin(str(path)), root, "definition"):
                self.ds.definitions[d.name] = d
        for path in files(root, "solution"):
            found: list[str] = []
            text = read_file_text(path, found)
            s, data = (None, None) if text is None else parse(Solution, text, path, None, found)
            self.errors.extend(found)
            if s is None:
                self._pending_broken.append((root, broken_file(path, text, data, found)))
            elif self._claim("solution", s.name, Origin(str(path)), root, "solution"):
                self.ds.solutions[s.name] = s
        self._pending_workloads.extend((root, p) for p in files(root, "workload"))
        self._pending_traces.extend(files(root, "trace"))

    def claim_broken(self) -> None:
        """Files that are no Solution record take their names after every record has, so a
        record is never refused for a broken file's name; one whose name is taken gets no task."""
        for root, entry in self._pending_broken:
            prev = self.ds._origins.get(("solution", entry.name))
            if prev is None:
                self.ds._origins[("solution", entry.name)] = (Origin(entry.path), root)
                self.ds.broken[entry.name] = entry
            elif self.lenient:
                self.errors.append(
                    f"{entry.path}: name: {shown(entry.name)} is also the name of the solution in "
                    f"{prev[0]}: this file gets no task"
                )

    def _orphan(self, kind: str, name: str, path: Path, lineno: int) -> None:
        """A line naming a definition that is not loaded: an error now, or (lenient) grouped."""
        if self.lenient:
            self._orphans.setdefault((name, str(path), kind), []).append(lineno)
        else:
            self.errors.append(self._unknown_definition(f"{path}:{lineno}", name))

    def report_orphans(self) -> None:
        """(lenient) One message per definition and file for the lines naming it."""
        for (name, path, kind), lines in self._orphans.items():
            where = f"{path}: line{'s' if len(lines) > 1 else ''} {line_runs(lines)}"
            left = f"{len(lines)} {kind}{'s' if len(lines) > 1 else ''} left out"
            self.errors.append(f"{self._unknown_definition(where, name)}; {left}")
        self._orphans.clear()

    def load_workloads(self) -> None:
        """Workloads last: every definition of every root must be known to check them."""
        for root, path in self._pending_workloads:
            for lineno, line in jsonl_lines(path, self.errors):
                where = f"{path}:{lineno}"
                t = parse(Trace, line, path, lineno, self.errors)[0]
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
                    self._orphan("workload", t.definition, path, lineno)
                    continue
                problems = check_workload(defn, t.workload) + escaping_paths(root, t.workload)
                if problems:
                    self.errors.extend(f"{where}: workload.{p}" for p in problems)
                    continue
                origin = Origin(str(path), lineno)
                if self._claim("workload", t.workload.uuid, origin, root, "workload uuid"):
                    self.ds.workloads.setdefault(t.definition, []).append(t.workload)

    def load_traces(self) -> None:
        for path in self._pending_traces:
            for lineno, line in jsonl_lines(path, self.errors):
                where = f"{path}:{lineno}"
                t = parse(Trace, line, path, lineno, self.errors)[0]
                if t is None:
                    continue
                if t.evaluation is None:
                    self.errors.append(
                        f"{where}: evaluation: a traces/ file holds evaluated traces; "
                        "put workload-only records under workloads/"
                    )
                    continue
                if t.definition not in self.ds.definitions:
                    self._orphan("trace", t.definition, path, lineno)
                    continue
                self.ds.traces.append(t)

    def _unknown_definition(self, where: str, name: str) -> str:
        if name in self.ds.failed_definitions:
            return f"{where}: definition: definition {shown(name)} did not load (its file has errors)"
        failed = self._failed_definition_files
        note = f" ({failed} definition file{'s' if failed != 1 else ''} failed to load)" if failed else ""
        return f"{where}: definition: unknown definition {shown(name)}{did_you_mean(name, self.ds.definitions)}{note}"

    def check_solutions(self) -> None:
        """The static checks of every record: a record with errors stays, and is broken too;
        a solution of a definition that did not load is an error when loading to run (what
        a broken definition leaves out is named), a warning otherwise (as one of a definition
        no root has)."""
        for name, sol in self.ds.solutions.items():
            where = self.ds.origin("solution", name)
            found = solution_problems(sol, self.ds.definitions.get(sol.definition))
            self.ds.warnings.extend(f"{where}: {p.message}" for p in found if not p.error)
            errors = [f"{where}: {p.message}" for p in found if p.error]
            if errors:
                self.errors.extend(errors)
                self.ds.broken[name] = broken_record(sol, where.path, errors)
            elif sol.definition in self.ds.failed_definitions and sol.definition not in self.ds.definitions:
                message = (
                    f"{where}: definition: solution {shown(name)} is for {shown(sol.definition)}, which "
                    f"did not load (its file has errors: {self.ds.failed_definitions[sol.definition]})"
                )
                (self.errors if self.lenient else self.ds.warnings).append(message)
            elif sol.definition not in self.ds.definitions:
                self.ds.warnings.append(
                    f"{where}: definition: solution {shown(name)} is for "
                    f"{shown(sol.definition)}, which no root defines"
                    f"{did_you_mean(sol.definition, self.ds.definitions)}"
                )


def _load(roots: Sequence[str | Path], *, lenient: bool) -> Dataset:
    loader = _Loader(check_roots(roots), lenient=lenient)
    for root in loader.ds.roots:
        loader.load_root(root)
    loader.claim_broken()
    loader.load_workloads()
    loader.load_traces()
    loader.report_orphans()
    loader.check_solutions()
    return loader.ds


def validate_roots(roots: Sequence[str | Path]) -> tuple[Dataset, list[str]]:
    """Load every root, collecting record errors instead of raising.

    Records with errors are left out of the returned dataset, except solutions: one that
    cannot be evaluated as it is is in ``Dataset.broken`` (a record the static checks found
    wrong stays in ``Dataset.solutions`` too).

    Returns:
        The dataset and every error message (empty when all is well).

    Raises:
        DatasetError: A root is missing or is not a dataset folder.
    """
    ds = _load(roots, lenient=False)
    return ds, ds.errors


def error_list(errors: Sequence[str], what: str = "dataset has") -> str:
    """``dataset has N errors:`` and the errors, one a line (the first 200, then how many more)."""
    first = list(errors[:_MAX_ERRORS_SHOWN])
    more = len(errors) - len(first)
    tail = f"\n... and {more} more" if more else ""
    noun = "error" if len(errors) == 1 else "errors"
    body = "\n".join(f"  {x}" for x in first)
    return f"{what} {len(errors)} {noun}:\n{body}{tail}"


def load_dataset(roots: Sequence[str | Path], *, strict: bool = True) -> Dataset:
    """Load one or more dataset roots.

    Args:
        roots: Dataset folders in the FlashInfer-Bench layout.
        strict: Raise when any record is bad (the default). When false, bad records are
            left out (broken solutions kept, as :func:`validate_roots` does) and their
            messages kept in ``Dataset.errors``.

    Raises:
        DatasetError: A root is not a dataset folder, or (strict) any record is bad; the
            message lists every error found, one per line.
    """
    ds, errors = validate_roots(roots)
    if strict and errors:
        raise DatasetError(error_list(errors))
    return ds


def load_runnable(roots: Sequence[str | Path]) -> Dataset:
    """Load dataset roots to run what can run (``sweep launch``, ``eval``, ``plan``).

    Every problem :func:`validate_roots` finds is in ``Dataset.errors``, for the caller to warn
    about, once each; what it concerns is left out, except a solution that cannot be evaluated
    as it is: it stays, in ``Dataset.broken``, and its tasks are COMPILE_ERROR traces. Lines of
    a workload or trace file that name a definition that did not load are one message per
    definition and file. A solution of such a definition is named in a message of its own.

    Raises:
        DatasetError: A root is not a dataset folder; or the dataset has errors and nothing is
            left to run (no loaded definition with both workloads and a solution): the message
            says why and lists every error.
    """
    ds = _load(roots, lenient=True)
    why = nothing_to_run(ds) if ds.errors else None
    if why:
        raise DatasetError(f"nothing to run: {why}; " + error_list(ds.errors, "the dataset has"))
    return ds


def nothing_to_run(ds: Dataset) -> str | None:
    """Why no task can come of ``ds`` (no loaded definition with both workloads and a solution,
    broken ones included), or ``None``."""
    if not ds.definitions:
        return "no definition loaded"
    with_workloads = {name for name in ds.definitions if ds.workloads.get(name)}
    if not with_workloads:
        return "no loaded definition has a workload"
    planned = [s.definition for s in ds.solutions.values()]
    planned += [
        b.definition for b in ds.broken.values() if b.definition is not None and b.solution is not None
    ]
    if not any(d in with_workloads for d in planned):
        return "no solution is for a loaded definition with workloads"
    return None
