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
from sweep.errors import did_you_mean, shown
from sweep.plan.dataset import Dataset
from sweep.schema import Definition, Solution, Workload
from sweep.schema.params import (
    Point,
    constraint_name_problems,
    grid_violations,
    params_json,
    sample_points,
)

__all__ = ["check_params", "param_points", "param_space"]

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
