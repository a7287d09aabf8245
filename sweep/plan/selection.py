"""What a config selects from a dataset, every filter checked; no hardware chosen yet.

:func:`select` checks each name, glob, op_type, tag, author, language, uuid, parameter space
and tolerance key of the config against the dataset (one that matches nothing is an error
with a "did you mean") and picks the definitions and solutions. A launcher runs it before it
connects, so every plan error comes before anything slow starts; the tasks of the selection
for a target are :func:`sweep.plan.expand.build_plan`'s.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from sweep.config import SweepConfig, key_lines
from sweep.errors import PlanError, did_you_mean, shown
from sweep.plan.dataset import Dataset, error_list
from sweep.plan.params import check_constraint_points, check_params
from sweep.schema import Definition, Solution
from sweep.schema.hardware import hardware_entries, hardware_problem

__all__ = ["Selection", "select", "selectable_solutions", "with_lines"]

_R = TypeVar("_R")


def _match_names(patterns: Sequence[str], names: Iterable[str]) -> set[str]:
    names = list(names)
    return {n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)}


def _selected(names: Sequence[str], records: Mapping[str, _R], keep: Callable[[_R], bool]) -> list[_R]:
    """The records whose name matches a glob of ``names`` (every record when there is none)
    and that ``keep`` accepts, in the order of their names."""
    chosen = _match_names(names, records) if names else set(records)
    return [records[name] for name in sorted(chosen) if keep(records[name])]


#: Problems of a config against a dataset, each with its place in the config.
_Problems = list[tuple[tuple[str | int, ...], str]]
_HEADING = "the config selects things the dataset does not have"


def _check_used(
    what: tuple[str, str], wanted: Sequence[str], available: Iterable[str], errors: _Problems
) -> None:
    """Every entry of a filter must match something in the dataset."""
    pool = sorted(set(available))
    for i, w in enumerate(wanted):
        if not any(fnmatch.fnmatchcase(a, w) for a in pool):
            hint = did_you_mean(w, pool)
            errors.append(((*what, i), f"{'.'.join(what)}: {shown(w)} matches nothing in the dataset{hint}"))


def _select_definitions(config: SweepConfig, ds: Dataset, errors: _Problems) -> list[Definition]:
    sel = config.definitions
    defs = ds.definitions
    # A name whose file did not load is the dataset's problem (a warning), not the config's.
    _check_used(("definitions", "names"), sel.names, [*defs, *ds.failed_definitions], errors)
    _check_used(("definitions", "op_types"), sel.op_types, (d.op_type for d in defs.values()), errors)
    _check_used(("definitions", "tags"), sel.tags, (t for d in defs.values() for t in d.tags), errors)

    def keep(d: Definition) -> bool:
        if sel.op_types and not any(fnmatch.fnmatchcase(d.op_type, p) for p in sel.op_types):
            return False
        return not sel.tags or all(any(fnmatch.fnmatchcase(t, p) for t in d.tags) for p in sel.tags)

    return _selected(sel.names, defs, keep)


def selectable_solutions(ds: Dataset) -> dict[str, Solution]:
    """Every solution a config may select, by name: the records (broken ones too) and the
    stand-ins of files that are no record but name a definition (:mod:`sweep.plan.broken`)."""
    out = dict(ds.solutions)
    for name, b in ds.broken.items():
        if b.stand_in is not None:
            out[name] = b.stand_in
    return out


def _select_solutions(config: SweepConfig, ds: Dataset, errors: _Problems) -> list[Solution]:
    sel = config.solutions
    sols = selectable_solutions(ds)
    # A broken file's name is known even when it names no definition (it is warned about).
    _check_used(("solutions", "names"), sel.names, [*sols, *ds.broken], errors)
    _check_used(("solutions", "authors"), sel.authors, (s.author for s in sols.values()), errors)
    languages = (s.spec.language.value for s in sols.values())
    _check_used(("solutions", "languages"), sel.languages, languages, errors)

    def keep(s: Solution) -> bool:
        if sel.authors and not any(fnmatch.fnmatchcase(s.author, p) for p in sel.authors):
            return False
        return not sel.languages or s.spec.language.value in sel.languages

    return _selected(sel.names, sols, keep)


@dataclass(frozen=True)
class Selection:
    """What a config selects from a dataset, every filter checked; no hardware chosen yet.

    ``solutions`` holds broken ones too (``dataset.broken``: the plan makes their tasks
    COMPILE_ERRORs); ``warnings`` the dataset's problems (a dataset loaded to run keeps them in
    ``Dataset.errors``) and hardware names this version does not know.
    """

    config: SweepConfig
    dataset: Dataset
    definitions: list[Definition]
    solutions: list[Solution]
    warnings: list[str] = field(default_factory=list)
    #: Selected solution files that are no record and name no definition: no task can be
    #: made of them (the plan lists them as left out).
    unplanned: list[str] = field(default_factory=list)


def _check_tolerances(config: SweepConfig, ds: Dataset, errors: _Problems) -> None:
    """Every key of the tolerance maps must name something the dataset has: a key that
    matches nothing would silently leave the default tolerance in force."""
    ev = config.evaluation
    op_types = sorted({d.op_type for d in ds.definitions.values()})
    for key in ev.op_type_tolerance:
        if key not in op_types:
            hint = did_you_mean(key, op_types)
            where = ("evaluation", "op_type_tolerance", key)
            errors.append(
                (where, f"evaluation.op_type_tolerance: {shown(key)} is no op_type of the dataset{hint}")
            )
    for key in ev.definition_tolerance:
        if key not in ds.definitions:
            hint = did_you_mean(key, ds.definitions)
            where = ("evaluation", "definition_tolerance", key)
            text = f"evaluation.definition_tolerance: {shown(key)} is no definition of the dataset{hint}"
            errors.append((where, text))


def select(config: SweepConfig, dataset: Dataset) -> Selection:
    """Check every filter of the config against the dataset and pick what it selects.

    Hardware plays no part: the selection is the same for every target.

    The dataset's problems (``Dataset.errors`` of a dataset loaded to run:
    :func:`~sweep.plan.dataset.load_runnable`) become the selection's warnings; a filter entry
    that matches only records that failed to load is no config error (their problems say why).

    Raises:
        PlanError: A name, glob, op_type, tag, author, language, uuid or tolerance key in the config
            matches nothing in the dataset (with "did you mean"); or the dataset has problems and
            the config selects nothing that can run (the message lists them).
    """
    errors: _Problems = []
    defs = _select_definitions(config, dataset, errors)
    sols = _select_solutions(config, dataset, errors)
    _check_tolerances(config, dataset, errors)
    errors.extend(check_params(config, dataset, sols, broken=dataset.broken))
    if not errors:  # the points are evaluated only once the space itself is sound
        errors.extend(check_constraint_points(config, dataset, sols, broken=dataset.broken))
    all_uuids = [w.uuid for wls in dataset.workloads.values() for w in wls]
    known = set(all_uuids)
    for i, u in enumerate(config.workloads.uuids):
        if u not in known:
            hint = did_you_mean(u, all_uuids)
            errors.append(
                (
                    ("workloads", "uuids", i),
                    f"workloads.uuids: {shown(u)} matches nothing in the dataset{hint}",
                )
            )
    if errors:
        raise PlanError(f"{_HEADING}:\n" + "\n".join(text for _, text in errors), errors)
    # The config's own hardware, as written: a near miss was refused when it was loaded,
    # unless declared new (--new-hardware), so here each is one more unknown name to warn about.
    if dataset.errors and not _runnable(dataset, defs, sols):
        raise PlanError(
            "nothing to run: the config selects no definition that has both workloads and a "
            "solution; " + error_list(dataset.errors, "the dataset has")
        )
    found = (hardware_problem(entry, new=True)[1] for entry in hardware_entries(config.hardware))
    warnings = [*dataset.errors, *(w for w in found if w)]
    sel = config.solutions
    unplanned = [
        name
        for name, b in sorted(dataset.broken.items())
        if b.solution is None
        and not (sel.authors or sel.languages)  # neither is known of a file that is no record
        and (not sel.names or _match_names(sel.names, [name]))
    ]
    return Selection(
        config=config,
        dataset=dataset,
        definitions=defs,
        solutions=sols,
        warnings=warnings,
        unplanned=unplanned,
    )


def _runnable(ds: Dataset, defs: Sequence[Definition], sols: Sequence[Solution]) -> bool:
    """Whether a selection has a definition with workloads and a selected solution of it."""
    with_workloads = {d.name for d in defs if ds.workloads.get(d.name)}
    return any(s.definition in with_workloads for s in sols)


def with_lines(err: PlanError, path: str | Path) -> PlanError:
    """``err`` with each problem prefixed by ``file:line`` of the config it came from.

    Args:
        err: Raised by :func:`select` (its ``problems`` say where each one is).
        path: The config file that was loaded.
    """
    if not err.problems:
        return err
    lines = key_lines(path, [loc for loc, _ in err.problems])
    body = [
        f"{path}:{line}: {text}" if line else f"{path}: {text}"
        for line, (_, text) in zip(lines, err.problems)
    ]
    return PlanError(f"{_HEADING}:\n" + "\n".join(body), err.problems)
