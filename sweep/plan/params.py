"""Parameter spaces in a plan: which points of a solution run on a workload.

A solution's space is its ``params`` with the config's ``solutions.params`` lists over them
(:func:`param_space`); on a workload, a point runs when it satisfies every
``params_constraints`` with the workload's axes, and, with ``solutions.params_sample``, when
it is among the seeded sample of the valid points (:func:`param_points`). Pure.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Sequence

from sweep.config import SweepConfig
from sweep.errors import PlanError, did_you_mean, shown
from sweep.plan.dataset import Dataset
from sweep.schema import Definition, Solution, Workload
from sweep.schema.params import (
    CANNOT_EVALUATE,
    Point,
    constraint_kind_problems,
    constraint_name_problems,
    grid_violations,
    params_json,
    sample_points,
)

__all__ = [
    "check_constraint_points",
    "check_params",
    "dataset_constraint_errors",
    "param_points",
    "param_space",
    "selected_workloads",
]

#: The most points reported per solution whose constraints cannot be evaluated.
_MAX_REPORTED = 3

#: Problems of a config against a dataset, each with its place in the config.
_Problems = list[tuple[tuple[str | int, ...], str]]


def param_space(config: SweepConfig, solution: Solution) -> dict[str, list[bool | int | float | str]]:
    """The parameter space a config sweeps for ``solution``: the solution's own ``params``, with
    the lists of every matching glob of ``solutions.params`` (in order) replacing its own."""
    space = solution.param_space
    for glob, lists in config.solutions.params.items():
        if fnmatch.fnmatchcase(solution.name, glob):
            space.update(lists)
    return space


def check_params(
    config: SweepConfig, ds: Dataset, sols: Sequence[Solution], *, broken: Collection[str] = ()
) -> _Problems:
    """Every glob of ``solutions.params`` matches a selected solution, a name it restricts is one the
    solution declares (when it declares any), and every ``params_constraints`` names only
    parameters and axes of the solution's definition. A solution named in ``broken`` runs no
    point (its tasks are COMPILE_ERRORs, its problems warned about): only the globs matching it
    are checked."""
    errors: _Problems = []
    names = [s.name for s in sols]
    for glob, lists in config.solutions.params.items():
        where: tuple[str | int, ...] = ("solutions", "params", glob)
        matched = [s for s in sols if fnmatch.fnmatchcase(s.name, glob)]
        if not matched:
            hint = did_you_mean(glob, names)
            errors.append((where, f"solutions.params: {shown(glob)} matches no selected solution{hint}"))
        for s in matched:
            if s.name in broken:
                continue
            declared = list(s.param_space)
            for name in lists:
                if declared and name not in declared:
                    hint = did_you_mean(name, declared)
                    text = f"solutions.params.{glob}: {s.name} declares no parameter {shown(name)}{hint}"
                    errors.append(((*where, name), text))
    for s in sols:
        if s.name in broken:
            continue
        d = ds.definitions.get(s.definition)
        space = param_space(config, s)
        if d is None or not s.params_constraints:
            continue
        for problem in constraint_name_problems(space, s.params_constraints, d.axes):
            errors.append((("solutions",), f"solution {s.name}: {problem}"))
        # The config's lists may change the kinds a parameter takes: checked with them.
        if space != s.param_space:
            for problem in constraint_kind_problems(space, s.params_constraints):
                errors.append(
                    (("solutions", "params"), f"solution {s.name} with solutions.params: {problem}")
                )
    return errors


def selected_workloads(config: SweepConfig, ds: Dataset, defn: str) -> list[Workload]:
    """The workloads of a definition a config runs: ``workloads.uuids`` (when given), then at
    most ``workloads.limit_per_definition`` of them, in file order."""
    wls = ds.workloads.get(defn, [])
    uuids = set(config.workloads.uuids)
    if uuids:
        wls = [w for w in wls if w.uuid in uuids]
    limit = config.workloads.limit_per_definition
    return wls[:limit] if limit is not None else wls


def _unevaluable(
    space: dict[str, list[bool | int | float | str]], d: Definition, s: Solution, wls: Sequence[Workload]
) -> list[str]:
    """Each point of ``space`` on each of ``wls`` where a constraint of ``s`` cannot be
    evaluated, as ``"cannot evaluate <constraint>: <why> at the point <json> on workload <uuid>"``."""
    failures: list[str] = []
    for w in wls:
        axes = {**d.const_axes(), **w.axes}
        for point, violation in grid_violations(space, s.params_constraints or [], axes):
            if violation is not None and violation.startswith(CANNOT_EVALUATE):
                failures.append(f"{violation} at the point {params_json(point)} on workload {w.uuid}")
    return failures


def _reported(failures: list[str]) -> list[str]:
    """The first few failures, then how many more."""
    more = [f"and {len(failures) - _MAX_REPORTED} more points that cannot be evaluated"]
    return failures[:_MAX_REPORTED] + (more if len(failures) > _MAX_REPORTED else [])


def check_constraint_points(
    config: SweepConfig, ds: Dataset, sols: Sequence[Solution], *, broken: Collection[str] = ()
) -> _Problems:
    """Every point of every selected solution's space, on every workload the config runs of
    its definition, where a constraint cannot be evaluated (a value of the wrong kind, a
    division by zero, anything): one problem each, naming the solution, the constraint, the
    point and the workload (at most a few per solution, then how many more). A point that
    cannot be judged is never left out silently: the plan refuses to start."""
    errors: _Problems = []
    for s in sols:
        d = ds.definitions.get(s.definition)
        if s.name in broken or d is None or not s.params_constraints:
            continue
        failures = _unevaluable(param_space(config, s), d, s, selected_workloads(config, ds, d.name))
        errors.extend(
            (("solutions",), f"solution {s.name}: params_constraints: {t}") for t in _reported(failures)
        )
    return errors


def dataset_constraint_errors(ds: Dataset) -> list[str]:
    """The same check over every valid solution of a dataset, its own space on every workload
    of its definition, each message led by the solution's file (``sweep validate`` of roots)."""
    errors: list[str] = []
    for name, s in sorted(ds.solutions.items()):
        d = ds.definitions.get(s.definition)
        if name in ds.broken or d is None or not s.params_constraints:
            continue
        failures = _unevaluable(s.param_space, d, s, ds.workloads.get(d.name, []))
        where = ds.origin("solution", name)
        errors.extend(f"{where}: params_constraints: {t}" for t in _reported(failures))
    return errors


def param_points(
    config: SweepConfig, d: Definition, s: Solution, w: Workload
) -> tuple[list[Point | None], list[tuple[str, str]]]:
    """The parameter points of ``s`` to run on ``w`` (``[None]`` for a solution without any),
    in grid order, and ``(name, reason)`` of each point a constraint or the sampling leaves out."""
    excluded: list[tuple[str, str]] = []
    space = param_space(config, s)
    if not space:
        return [None], excluded
    axes = {**d.const_axes(), **w.axes}
    valid: list[Point] = []
    # Constraints compiled once, each evaluated as soon as its names are bound (grid_violations).
    for point, violation in grid_violations(space, s.params_constraints or [], axes):
        if violation and violation.startswith(CANNOT_EVALUATE):
            # select() refuses these first; never a point dropped without a verdict.
            text = f"solution {s.name}: params_constraints: {violation} at the point {params_json(point)} on {w.uuid}"
            raise PlanError(text, [(("solutions",), text)])
        if violation:
            excluded.append((f"{s.name} {params_json(point)} on {w.uuid}", violation))
        else:
            valid.append(point)
    sample = config.solutions.params_sample
    if sample is None:
        return list(valid), excluded
    chosen = sample_points(valid, sample.max_points, f"{sample.seed}:{s.content_hash}:{w.uuid}")
    kept = {params_json(p) for p in chosen}
    why = f"not sampled (params_sample.max_points {sample.max_points})"
    for point in valid:
        if params_json(point) not in kept:
            excluded.append((f"{s.name} {params_json(point)} on {w.uuid}", why))
    return list(chosen), excluded
