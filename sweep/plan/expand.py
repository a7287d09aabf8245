"""From a sweep config and a dataset to the list of tasks: definition x solution x workload.

Two steps: :func:`~sweep.plan.selection.select` checks every filter of the config against
the dataset and picks the definitions and solutions (no hardware: a launcher runs it before
it connects); :func:`build_plan` makes the tasks of that selection for one target.
:func:`expand` is both, for the config's own target; :func:`expand_targets` for each of
its targets (``hardware: [H100, H200]``: one plan per target, each task once per target).

All of it is pure: no file, device or network is touched, and the same config and dataset
always give the same tasks in the same order with the same ids. Order: definitions by name,
then solutions by name, then workloads in file order (and targets in the order written).

A config's ``hardware`` becomes targets in :func:`sweep.schema.hardware.hardware_choice`.
``"auto"`` means "whatever this machine has"; finding that out needs torch, NVML or Ray,
which a pure plan must not touch, so a plan treats ``"auto"`` as ``"cpu"``. ``"all"`` means
every GPU type of the cluster, which only a cluster can say: a plan refuses it
(:func:`plan_targets`). A launcher that has looked at the cluster builds the plans for the
real targets instead (``build_plan(selection, "H100")``), once each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from sweep.config import ConfigOverrides, SweepConfig, apply_overrides, load_config
from sweep.errors import PlanError, shown
from sweep.plan.dataset import Dataset, load_runnable
from sweep.plan.params import param_points, selected_workloads
from sweep.plan.selection import Selection, select, selectable_solutions, with_lines
from sweep.schema import Definition, Solution, Workload
from sweep.schema.hardware import CPU, solution_targets_match
from sweep.schema.task import Task

__all__ = [
    "ALL_NEEDS_A_CLUSTER",
    "Exclusion",
    "Plan",
    "Unavailable",
    "build_plan",
    "combined_excluded",
    "expand",
    "expand_targets",
    "group_excluded",
    "plan_config",
    "plan_config_targets",
    "plan_targets",
    "target_hardware",
]

#: Why a plan without a cluster refuses ``hardware: all``.
ALL_NEEDS_A_CLUSTER = (
    "hardware 'all' means every GPU type of the cluster, which a plan without a cluster cannot "
    "know: name the types instead (--hardware H100,H200, or 'hardware: [H100, H200]' in the "
    "config); 'sweep launch' connects first and plans one task per GPU type the cluster has"
)


#: Why a solution file that is no record and names no definition gets no task.
_UNPLANNED = "its file is not a valid record and names no definition (see the warnings)"


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
_P = TypeVar("_P")


def plan_targets(config: SweepConfig) -> list[str]:
    """The targets a plan without a cluster is built for: the config's named targets in the
    order written (short form: ``["H100", "H200"]``); ``"auto"`` is ``["CPU"]`` (module doc).

    Raises:
        PlanError: ``hardware: all``, which needs a cluster (:data:`ALL_NEEDS_A_CLUSTER`).
    """
    choice = config.hardware_choice()
    if choice.mode == "all":
        raise PlanError(ALL_NEEDS_A_CLUSTER)
    return list(choice.targets) if choice.mode == "named" else [CPU]


def target_hardware(config: SweepConfig) -> str:
    """The config's one target in short form; ``"auto"`` becomes ``"CPU"`` (see module doc).

    Raises:
        PlanError: The config names several targets (plan them with :func:`expand_targets`),
            or ``all`` (:func:`plan_targets`).
    """
    targets = plan_targets(config)
    if len(targets) > 1:
        raise PlanError(
            f"hardware names {len(targets)} targets ({', '.join(targets)}): one plan is for one "
            "target; plan each with expand_targets (sweep plan and sweep launch do)"
        )
    return targets[0]


def _own_target(config: SweepConfig) -> str | None:
    """The one target a config names by itself (``auto``: CPU, as a plan takes it); ``None``
    for ``all`` and for a list."""
    if not isinstance(config.hardware, str):
        return None
    choice = config.hardware_choice()
    if choice.mode == "all":
        return None
    return choice.targets[0] if choice.targets else CPU


def combined_excluded(plans: Sequence[Plan]) -> list[Exclusion]:
    """What the plans of several targets left out, each exclusion once, in plan order (a
    definition without workloads is left out of every target's plan for the same reason)."""
    return list(dict.fromkeys(x for p in plans for x in p.excluded))


def _select_workloads(config: SweepConfig, ds: Dataset, defn: str, uuids: set[str]) -> list[Workload]:
    return selected_workloads(config, ds, defn)


def build_plan(selection: Selection, target: str, *, unavailable: Unavailable | None = None) -> Plan:
    """The tasks of a selection on ``target``, and what was left out.

    ``target`` is normalised (``"CPU"``, ``"H100"``: from
    :func:`~sweep.schema.hardware.hardware_choice` or what the cluster has) and goes into every
    task as it is. When the config does not name that one target alone (``hardware: auto``
    decided by a launcher, ``all``, a list), the plan's config names it, so the tasks'
    ``config_hash`` says what ran.

    A definition with no selected solution or no workload, and a solution whose definition
    is not loaded or whose ``target_hardware`` excludes the target (unless the config's
    ``solutions.ignore_target_hardware`` ports it: the task then says so), are left out and
    listed in ``Plan.excluded``; so is a definition that ``unavailable`` says cannot run on the
    target, and each parameter point a constraint or sampling leaves out (one task per
    point otherwise: :mod:`sweep.plan.params`). An empty plan is not an error.

    A broken solution (``dataset.broken``) is planned like any other, one task per workload
    and no parameter point, each task carrying why (``Task.broken``): its traces are
    COMPILE_ERRORs, and nothing of it is built or run.
    """
    config, dataset = selection.config, selection.dataset
    if target != _own_target(config):
        # auto decided by a cluster, all, a list: the plan's config names the one target its
        # tasks run on, so their config_hash is the one a launch of 'hardware: <target>' gives.
        config = apply_overrides(config, ConfigOverrides(hardware=target))
    excluded = [Exclusion("solution", name, _UNPLANNED) for name in selection.unplanned]
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
    with_any = {s.definition for s in selectable_solutions(dataset).values()}
    with_selected = {s.definition for s in selection.solutions}
    settings = config.evaluation
    settings_hash = settings.settings_hash()  # once: every task of the plan has these settings
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
            broken = dataset.broken.get(s.name)
            for w in wls:
                # A broken solution runs no point: one COMPILE_ERROR task per workload.
                points, left_out = ([None], []) if broken else param_points(config, d, s, w)
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
                        broken=broken.reason if broken else None,
                        settings_hash=settings_hash,
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
        PlanError: As for :func:`select`; the config names several targets or ``all``
            (:func:`target_hardware`). An empty plan is not an error.
    """
    target = target_hardware(config)
    return build_plan(select(config, dataset), target, unavailable=unavailable)


def expand_targets(
    config: SweepConfig, dataset: Dataset, *, unavailable: Unavailable | None = None
) -> list[Plan]:
    """One plan per target of the config (:func:`plan_targets`), in the order written; a
    config of one target gives the one plan :func:`expand` gives. Pure and deterministic.

    Raises:
        PlanError: As for :func:`select`; ``hardware: all`` (:func:`plan_targets`).
    """
    targets = plan_targets(config)
    selection = select(config, dataset)
    return [build_plan(selection, t, unavailable=unavailable) for t in targets]


def plan_config(
    path: str | Path, overrides: ConfigOverrides | None = None, *, unavailable: Unavailable | None = None
) -> Plan:
    """Load a config and its dataset, and expand them into a plan (``unavailable``: see
    :data:`Unavailable`).

    Raises:
        ConfigError: The config is malformed.
        DatasetError: A dataset root is bad, or nothing of the dataset can run
            (:func:`~sweep.plan.dataset.load_runnable`; other problems of its records are the
            plan's warnings).
        PlanError: The config selects something the dataset does not have, or names several
            targets or ``all`` (:func:`plan_config_targets` plans those).
    """
    return _planned(path, overrides, lambda config, dataset: expand(config, dataset, unavailable=unavailable))


def plan_config_targets(
    path: str | Path, overrides: ConfigOverrides | None = None, *, unavailable: Unavailable | None = None
) -> list[Plan]:
    """Load a config and its dataset, and expand them into one plan per target
    (:func:`expand_targets`; ``unavailable``: see :data:`Unavailable`).

    Raises:
        ConfigError: The config is malformed.
        DatasetError: A dataset root is bad, or nothing of the dataset can run
            (:func:`~sweep.plan.dataset.load_runnable`; other problems of its records are the
            plan's warnings).
        PlanError: The config selects something the dataset does not have, or says
            ``hardware: all`` (which needs a cluster).
    """
    return _planned(
        path, overrides, lambda config, dataset: expand_targets(config, dataset, unavailable=unavailable)
    )


def _planned(
    path: str | Path, overrides: ConfigOverrides | None, plan: Callable[[SweepConfig, Dataset], _P]
) -> _P:
    """``plan`` of the config at ``path`` and its runnable dataset; a plan error names the
    config's lines."""
    config = load_config(path, overrides)
    dataset = load_runnable(config.dataset)
    try:
        return plan(config, dataset)
    except PlanError as e:
        raise with_lines(e, path) from None
