"""From a sweep config and a dataset to the list of tasks: definition x solution x workload.

Two steps: :func:`select` checks every filter of the config against the dataset and picks
the definitions and solutions (no hardware: a launcher runs it before it connects); :func:`build_plan` makes the tasks of that selection for one target.
:func:`expand` is both, for the config's own target.

All of it is pure: no file, device or network is touched, and the same config and dataset
always give the same tasks in the same order with the same ids. Order: definitions by name,
then solutions by name, then workloads in file order.

A config's ``hardware`` becomes a target in :func:`sweep.schema.hardware.config_target`.
``"auto"`` means "whatever this machine has"; finding that out needs torch, NVML or Ray,
which a pure plan must not touch, so :func:`expand` treats ``"auto"`` as ``"cpu"``. A
launcher that has looked at the cluster builds the plan for the real target instead
(``build_plan(selection, "H100")``), once.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sweep.config import ConfigOverrides, SweepConfig, apply_overrides, key_lines, load_config
from sweep.errors import PlanError, did_you_mean, shown
from sweep.plan.dataset import Dataset, load_dataset
from sweep.plan.params import check_params, param_points
from sweep.schema import Definition, Solution, Workload
from sweep.schema.hardware import CPU, config_target, hardware_problem, solution_targets_match
from sweep.schema.task import Task

__all__ = [
    "Exclusion",
    "Plan",
    "Selection",
    "Unavailable",
    "build_plan",
    "expand",
    "group_excluded",
    "plan_config",
    "select",
    "target_hardware",
    "with_lines",
]


@dataclass(frozen=True)
class Exclusion:
    """Something the config selected that the plan leaves out, and why.

    ``kind`` is ``"definition"`` or ``"solution"``; ``reason`` may name things (an operator,
    a definition); ``group`` is the reason without them, the same for every exclusion left
    out for the same cause (summaries count by it), ``reason`` when not given.
    """

    kind: str
    name: str
    reason: str
    group: str = field(default="", compare=False)

    @property
    def why(self) -> str:
        """The reason shared by every exclusion of this cause."""
        return self.group or self.reason


def group_excluded(excluded: Sequence[Exclusion]) -> list[tuple[str, str, list[Exclusion]]]:
    """``(kind, why, exclusions)`` per cause, the largest first (then by kind and why)."""
    groups: dict[tuple[str, str], list[Exclusion]] = {}
    for x in excluded:
        groups.setdefault((x.kind, x.why), []).append(x)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [(kind, why, xs) for (kind, why), xs in ordered]


@dataclass
class Plan:
    """The tasks of one sweep, and what was left out.

    ``hardware`` is the target the tasks were planned for (``"CPU"``, ``"H100"``...), the
    ``hardware`` of every task.
    """

    config: SweepConfig
    hardware: str
    tasks: list[Task]
    excluded: list[Exclusion] = field(default_factory=list)
    #: Things worth saying that do not stop the plan (a GPU type this version does not know).
    warnings: list[str] = field(default_factory=list)

    def count_by_definition(self) -> dict[str, int]:
        """Tasks per definition, in plan order."""
        return dict(Counter(t.definition.name for t in self.tasks))

    def count_by_solution(self) -> dict[str, int]:
        """Tasks per solution, in plan order."""
        return dict(Counter(t.solution.name for t in self.tasks))


#: Why a definition cannot run on a target (``None``: it can), asked by :func:`build_plan` of
#: every definition that would get tasks. The plan stays pure: a caller that may look at the
#: evaluating software passes one (the launch stage passes ``sweep.engine.operator_problem``,
#: which asks the installed torch whether it has an imported ATen operator, and a kernel of it
#: for the target's device); without one, every definition is assumed runnable.
Unavailable = Callable[[Definition, str], "str | None"]


def target_hardware(config: SweepConfig) -> str:
    """The config's target in short form; ``"auto"`` becomes ``"CPU"`` (see module doc)."""
    return config_target(config.hardware) or CPU


def _match_names(patterns: Sequence[str], names: Iterable[str]) -> set[str]:
    names = list(names)
    return {n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)}


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
    _check_used(("definitions", "names"), sel.names, defs, errors)
    _check_used(("definitions", "op_types"), sel.op_types, (d.op_type for d in defs.values()), errors)
    _check_used(("definitions", "tags"), sel.tags, (t for d in defs.values() for t in d.tags), errors)
    chosen = _match_names(sel.names, defs) if sel.names else set(defs)
    out = []
    for name in sorted(chosen):
        d = defs[name]
        if sel.op_types and not any(fnmatch.fnmatchcase(d.op_type, p) for p in sel.op_types):
            continue
        if sel.tags and not all(any(fnmatch.fnmatchcase(t, p) for t in d.tags) for p in sel.tags):
            continue
        out.append(d)
    return out


def _select_solutions(config: SweepConfig, ds: Dataset, errors: _Problems) -> list[Solution]:
    sel = config.solutions
    sols = ds.solutions
    _check_used(("solutions", "names"), sel.names, sols, errors)
    _check_used(("solutions", "authors"), sel.authors, (s.author for s in sols.values()), errors)
    languages = (s.spec.language.value for s in sols.values())
    _check_used(("solutions", "languages"), sel.languages, languages, errors)
    chosen = _match_names(sel.names, sols) if sel.names else set(sols)
    out = []
    for name in sorted(chosen):
        s = sols[name]
        if sel.authors and not any(fnmatch.fnmatchcase(s.author, p) for p in sel.authors):
            continue
        if sel.languages and s.spec.language.value not in sel.languages:
            continue
        out.append(s)
    return out


def _select_workloads(config: SweepConfig, ds: Dataset, defn: str, uuids: set[str]) -> list[Workload]:
    wls = ds.workloads.get(defn, [])
    if uuids:
        wls = [w for w in wls if w.uuid in uuids]
    limit = config.workloads.limit_per_definition
    return wls[:limit] if limit is not None else wls


@dataclass(frozen=True)
class Selection:
    """What a config selects from a dataset, every filter checked; no hardware chosen yet."""

    config: SweepConfig
    dataset: Dataset
    definitions: list[Definition]
    solutions: list[Solution]
    warnings: list[str] = field(default_factory=list)


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

    Raises:
        PlanError: A name, glob, op_type, tag, author, language, uuid or tolerance key in the config
            matches nothing in the dataset (with "did you mean").
    """
    errors: _Problems = []
    defs = _select_definitions(config, dataset, errors)
    sols = _select_solutions(config, dataset, errors)
    _check_tolerances(config, dataset, errors)
    errors.extend(check_params(config, dataset, sols))
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
    # unless declared new (--new-hardware), so here it is one more unknown name to warn about.
    warning = hardware_problem(config.hardware, new=True)[1]
    return Selection(
        config=config,
        dataset=dataset,
        definitions=defs,
        solutions=sols,
        warnings=[warning] if warning else [],
    )


def build_plan(selection: Selection, target: str, *, unavailable: Unavailable | None = None) -> Plan:
    """The tasks of a selection on ``target``, and what was left out.

    ``target`` is normalised (``"CPU"``, ``"H100"``: from
    :func:`~sweep.schema.hardware.config_target` or what the cluster has) and goes into every
    task as it is. When it is not the config's own target (``hardware: auto`` decided by a
    launcher), the plan's config names it, so the tasks' ``config_hash`` says what ran.

    A definition with no selected solution or no workload, and a solution whose definition
    is not loaded or whose ``target_hardware`` excludes the target (unless the config's
    ``solutions.ignore_target_hardware`` ports it: the task then says so), are left out and
    listed in ``Plan.excluded``; so is a definition that ``unavailable`` says cannot run on the
    target, and each parameter point a constraint or sampling leaves out (one task per
    point otherwise: :mod:`sweep.plan.params`). An empty plan is not an error.
    """
    config, dataset = selection.config, selection.dataset
    if target != target_hardware(config):
        config = apply_overrides(config, ConfigOverrides(hardware=target))
    excluded: list[Exclusion] = []
    by_def: dict[str, list[Solution]] = {}
    ported: set[str] = set()  # solutions run although their target_hardware excludes the target
    porting = config.solutions.ignore_target_hardware
    chosen_defs = {d.name for d in selection.definitions}
    for s in selection.solutions:
        if s.definition not in dataset.definitions:
            excluded.append(
                Exclusion(
                    "solution",
                    s.name,
                    f"its definition {shown(s.definition)} is not in the dataset",
                    "its definition is not in the dataset",
                )
            )
        elif s.definition not in chosen_defs:
            continue  # its definition is not selected: out of scope, not an exclusion
        elif not solution_targets_match(target, s.spec.target_hardware) and porting:
            ported.add(s.name)
            by_def.setdefault(s.definition, []).append(s)
        elif not solution_targets_match(target, s.spec.target_hardware):
            excluded.append(
                Exclusion(
                    "solution",
                    s.name,
                    f"target_hardware [{', '.join(s.spec.target_hardware)}] does not include {target}",
                    f"target_hardware does not include {target}",
                )
            )
        else:
            by_def.setdefault(s.definition, []).append(s)

    uuids = set(config.workloads.uuids)
    with_any = {s.definition for s in dataset.solutions.values()}
    with_selected = {s.definition for s in selection.solutions}
    settings = config.evaluation
    config_hash = config.config_hash()
    tasks: list[Task] = []
    for d in selection.definitions:
        wls = _select_workloads(config, dataset, d.name, uuids)
        candidates = by_def.get(d.name, [])
        if not wls:
            reason = "no selected workload" if uuids else "no workloads in the dataset"
            excluded.append(Exclusion("definition", d.name, reason))
            continue
        if not candidates:
            if d.name not in with_any:
                reason = "no solution in the dataset"
            elif d.name not in with_selected:
                reason = "no solution selected by the config"
            else:
                reason = f"no selected solution runs on {target}"
            excluded.append(Exclusion("definition", d.name, reason))
            continue
        problem = unavailable(d, target) if unavailable is not None else None
        if problem:
            excluded.append(
                Exclusion(
                    "definition", d.name, f"cannot run on {target}: {problem}", f"cannot run on {target}"
                )
            )
            continue
        for s in candidates:
            for w in wls:
                points, left_out = param_points(config, d, s, w)
                excluded.extend(Exclusion("params point", name, why) for name, why in left_out)
                tasks.extend(
                    Task.make(
                        d,
                        s,
                        w,
                        settings,
                        target,
                        dataset_root=str(dataset.root_of("workload", w.uuid)),
                        sweep=config.name,
                        config_hash=config_hash,
                        ported=s.name in ported,
                        params=point,
                    )
                    for point in points
                )
    return Plan(
        config=config, hardware=target, tasks=tasks, excluded=excluded, warnings=list(selection.warnings)
    )


def expand(config: SweepConfig, dataset: Dataset, *, unavailable: Unavailable | None = None) -> Plan:
    """Expand a config over a dataset into tasks for its own target. Pure and deterministic.

    :func:`select`, then :func:`build_plan` for :func:`target_hardware` (``"auto"`` is CPU),
    with ``unavailable`` (see :data:`Unavailable`).

    Raises:
        PlanError: As for :func:`select`. An empty plan is not an error.
    """
    return build_plan(select(config, dataset), target_hardware(config), unavailable=unavailable)


def plan_config(
    path: str | Path, overrides: ConfigOverrides | None = None, *, unavailable: Unavailable | None = None
) -> Plan:
    """Load a config and its dataset, and expand them into a plan (``unavailable``: see
    :data:`Unavailable`).

    Raises:
        ConfigError: The config is malformed.
        DatasetError: A dataset root or record is bad.
        PlanError: The config selects something the dataset does not have.
    """
    config = load_config(path, overrides)
    dataset = load_dataset(config.dataset)
    try:
        return expand(config, dataset, unavailable=unavailable)
    except PlanError as e:
        raise with_lines(e, path) from None


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
