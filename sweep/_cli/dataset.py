"""Dataset commands: validate, schema, plan."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import (
    AddressOpt,
    HardwareOpt,
    LimitOpt,
    NameOpt,
    NewHardwareOpt,
    ResultsDirOpt,
    SeedOpt,
    StoreOpt,
    make_overrides,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sweep.config import SweepConfig
    from sweep.plan import Exclusion, Plan
    from sweep.plan.dataset import Dataset

__all__ = [
    "VerboseOpt",
    "app",
    "plan_rows",
    "render_left_out",
    "render_plan",
    "render_plans",
    "render_validation",
    "validation_json",
]

VerboseOpt = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="List every definition and solution left out, not only counts."),
]


def render_left_out(
    excluded: Sequence[Exclusion], *, verbose: bool = False, title: str = "left out"
) -> list[str]:
    """What a plan leaves out (or, with another ``title``, what a launch could not place): a
    count per reason (``--verbose``: and each name under it, with its own reason)."""
    from sweep.plan import group_excluded

    if not excluded:
        return []
    more = "" if verbose else " (--verbose lists them)"
    lines = [f"{title}: {len(excluded)}{more}"]
    for kind, why, xs in group_excluded(excluded):
        lines.append(f"  {len(xs)} {kind}{'' if len(xs) == 1 else 's'}: {why}")
        if verbose:
            lines.extend(f"    {x.name}" + ("" if x.reason == why else f": {x.reason}") for x in xs)
    return lines


class RecordKind(str, Enum):
    """Records whose JSON Schema ``sweep schema`` prints."""

    definition = "definition"
    solution = "solution"
    workload = "workload"
    trace = "trace"


def render_validation(ds: Dataset, errors: list[str]) -> str:
    """The report ``sweep validate`` prints: counts, warnings, then every error."""
    lines = [f"roots: {', '.join(str(r) for r in ds.roots)}"]
    lines.append(f"definitions: {len(ds.definitions)}")
    lines.append(f"solutions: {ds.valid_solutions()}")
    lines.append(f"workloads: {ds.num_workloads()}")
    width = max((len(n) for n in ds.workloads), default=0)
    for name in sorted(ds.workloads):
        lines.append(f"  {name:<{width}}  {len(ds.workloads[name])}")
    lines.append(f"traces: {len(ds.traces)}")
    lines.extend(f"warning: {w}" for w in ds.warnings)
    lines.extend(f"error: {e}" for e in errors)
    n = len(errors)
    lines.append("ok: no errors" if n == 0 else f"{n} error{'s' if n != 1 else ''}")
    return "\n".join(lines)


def validation_json(ds: Dataset, errors: list[str]) -> str:
    """``sweep validate --json``: the counts, warnings and errors as one object."""
    data = {
        "roots": [str(r) for r in ds.roots],
        "definitions": len(ds.definitions),
        "solutions": ds.valid_solutions(),
        "workloads": ds.num_workloads(),
        "workloads_per_definition": {name: len(ds.workloads[name]) for name in sorted(ds.workloads)},
        "traces": len(ds.traces),
        "warnings": list(ds.warnings),
        "errors": list(errors),
        "ok": not errors,
    }
    return json.dumps(data, indent=2)


@app.command()
def validate(
    roots: Annotated[
        list[Path] | None,
        typer.Argument(help="Dataset roots (FlashInfer-Bench layout); default: the config's dataset."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="A sweep config: also check what it selects, and every parameter point it plans.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print counts, warnings and errors as JSON.")
    ] = False,
) -> None:
    """Load dataset roots and report every problem; exit 1 if there is any.

    Every parameter point of every solution is judged on every workload of its definition: a
    constraint that cannot be evaluated there is an error naming the file, the constraint, the
    point and the workload. With --config, the config's selection and spaces are checked too.

    Example: sweep validate . /data/flashinfer-trace; sweep validate --config sweep.yaml
    """
    from sweep.errors import ConfigError
    from sweep.plan.dataset import validate_roots
    from sweep.plan.params import dataset_constraint_errors

    loaded = _validation_config(config)
    if not roots and loaded is None:
        raise ConfigError("give dataset roots, or --config with a sweep config (its dataset is checked)")
    ds, errors = validate_roots(roots or [Path(r) for r in loaded.dataset])  # type: ignore[union-attr]
    errors = [*errors, *dataset_constraint_errors(ds)]
    if loaded is not None and config is not None:
        errors.extend(_config_errors(loaded, ds, config))
    echo(validation_json(ds, errors) if as_json else render_validation(ds, errors))
    if errors:
        raise typer.Exit(1)


def _validation_config(path: Path | None) -> SweepConfig | None:
    """The config ``sweep validate --config`` checks, loaded (its errors raised as they are)."""
    if path is None:
        return None
    from sweep.config import load_config

    return load_config(path)


def _config_errors(config: SweepConfig, ds: Dataset, path: Path) -> list[str]:
    """What the config selects that cannot be planned, each with the config's file and line."""
    from sweep.errors import PlanError
    from sweep.plan import select, with_lines

    try:
        select(config, ds)
    except PlanError as e:
        return str(with_lines(e, path)).splitlines()[1:] or [str(e)]
    return []


@app.command()
def schema(
    kind: Annotated[RecordKind, typer.Argument(help="Which record.")],
) -> None:
    """Print the JSON Schema of a record: definition, solution, workload or trace.

    Example: sweep schema trace
    """
    from pydantic import BaseModel

    from sweep import schema as records

    models: dict[RecordKind, type[BaseModel]] = {
        RecordKind.definition: records.Definition,
        RecordKind.solution: records.Solution,
        RecordKind.workload: records.Workload,
        RecordKind.trace: records.Trace,
    }
    echo(json.dumps(models[kind].model_json_schema(), indent=2))


def plan_rows(plan: Plan) -> list[dict[str, str]]:
    """One JSON-ready row per task (what ``sweep plan --json`` prints); a broken solution's task
    says why (``broken``: its COMPILE_ERROR message)."""
    from sweep.schema.params import params_json

    return [
        {
            "task_id": t.task_id,
            "definition": t.definition.name,
            "solution": t.solution.name,
            "solution_hash": t.solution.content_hash,
            "workload": t.workload.uuid,
            "hardware": t.hardware,
            **({"solution_params": params_json(t.params)} if t.params is not None else {}),
            **({"broken": t.broken} if t.broken is not None else {}),
        }
        for t in plan.tasks
    ]


def _counts(plan: Plan) -> list[str]:
    """Tasks per definition and per solution."""
    lines = []
    for title, counts in (
        ("definitions", plan.count_by_definition()),
        ("solutions", plan.count_by_solution()),
    ):
        lines.append(f"{title}: {len(counts)}")
        width = max((len(n) for n in counts), default=0)
        lines.extend(f"  {name:<{width}}  {n} tasks" for name, n in counts.items())
    return lines


def render_plan(plan: Plan, *, verbose: bool = False) -> str:
    """The summary ``sweep plan`` prints: counts per definition and solution, and exclusions."""
    cfg = plan.config
    hw = plan.hardware
    how = f" (hardware {cfg.hardware!r} -> {hw})" if cfg.hardware_choice().mode == "auto" else ""
    lines = [f"sweep {cfg.name!r} on {hw}{how}"]
    lines.extend(f"warning: {w}" for w in plan.warnings)
    lines.extend(_counts(plan))
    lines.extend(render_left_out(plan.excluded, verbose=verbose))
    lines.append(f"total: {len(plan.tasks)} tasks")
    return "\n".join(lines)


def render_plans(plans: Sequence[Plan], *, verbose: bool = False) -> str:
    """:func:`render_plan` of one plan; of several (one per target), the counts of each
    target under its name, what was left out (each once) and the total per target."""
    from sweep.plan import combined_excluded

    if len(plans) == 1:
        return render_plan(plans[0], verbose=verbose)
    targets = ", ".join(p.hardware for p in plans)
    lines = [f"sweep {plans[0].config.name!r} on {len(plans)} targets: {targets}"]
    lines.extend(f"warning: {w}" for w in dict.fromkeys(w for p in plans for w in p.warnings))
    for p in plans:
        lines.append(f"{p.hardware}: {len(p.tasks)} tasks")
        lines.extend(f"  {line}" for line in _counts(p))
    lines.extend(render_left_out(combined_excluded(plans), verbose=verbose))
    each = ", ".join(f"{p.hardware} {len(p.tasks)}" for p in plans)
    lines.append(f"total: {sum(len(p.tasks) for p in plans)} tasks ({each})")
    return "\n".join(lines)


@app.command()
def plan(
    config: Annotated[Path, typer.Argument(help="Sweep config (YAML).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the task list as JSON.")] = False,
    name: NameOpt = None,
    hardware: HardwareOpt = None,
    new_hardware: NewHardwareOpt = False,
    address: AddressOpt = None,
    results_dir: ResultsDirOpt = None,
    store: StoreOpt = None,
    seed: SeedOpt = None,
    limit_per_definition: LimitOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Expand a sweep config into tasks (definition x solution x workload); runs nothing.

    Several GPU types (--hardware H100,H200) plan each task once per type. 'hardware: all'
    (every type of a cluster) needs a cluster: name the types here instead.

    Example: sweep plan configs/local.yaml --hardware H100 --json
    """
    from sweep.launch.driver import operator_check
    from sweep.plan import plan_config_targets

    overrides = make_overrides(
        name=name,
        hardware=hardware,
        new_hardware=new_hardware,
        address=address,
        results_dir=results_dir,
        store=store,
        seed=seed,
        limit_per_definition=limit_per_definition,
    )
    plans = plan_config_targets(config, overrides, unavailable=operator_check)
    if as_json:
        echo(json.dumps([row for p in plans for row in plan_rows(p)], indent=2))
    else:
        echo(render_plans(plans, verbose=verbose))
