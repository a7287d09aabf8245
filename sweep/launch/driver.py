"""``sweep launch``: plan a config, skip what is stored, run the rest on Ray, store each trace.

Order of work, so mistakes fail before anything slow starts: read the config (flags over
the YAML, :func:`sweep.config.load_config`), load the dataset
and check what the config selects (config and plan errors), connect to Ray (at the address
:func:`sweep.config.resolve_address` picks: flag, ``RAY_ADDRESS``, YAML), build the plan
once for its target (``hardware: auto`` is decided by what the cluster has; an imported
ATen operator the installed torch lacks, or has no kernel of for the target's device, is left
out with its reason: :func:`operator_check`), check the cluster has the target hardware (else
fail at once, listing what it has), drop the tasks already stored (unless ``force``), then run,
the longest tasks first where earlier runs in the store tell how long they take (``_estimates``).
"""

from __future__ import annotations

import os
import secrets
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from sweep.cluster.connect import ClusterInfo, Pool, RayConnection, auto_target, connect, pools_for
from sweep.cluster.sandbox import SandboxSpec
from sweep.cluster.scheduler import SchedulerOptions, SchedulerStats, run_tasks
from sweep.config import ConfigOverrides, SweepConfig, load_config, resolve_address
from sweep.errors import PlanError
from sweep.launch._estimates import estimate_durations
from sweep.launch.progress import Progress, SummaryRow, Tally
from sweep.plan import Exclusion, Plan, build_plan, select, with_lines
from sweep.plan.dataset import Dataset, load_dataset
from sweep.schema import Definition, Trace
from sweep.schema.hardware import config_target
from sweep.schema.task import Task

__all__ = ["STORE_FLUSH_S", "LaunchOptions", "LaunchResult", "launch", "new_run_id", "operator_check"]

#: Seconds between batched inserts into the DuckDB store during a launch.
STORE_FLUSH_S = 2.0


@dataclass(frozen=True)
class LaunchOptions:
    """How to launch.

    Attributes:
        overrides: Command-line overrides of the config, the Ray address included (it beats
            ``RAY_ADDRESS`` and the config's ``ray.address``: :func:`sweep.config.resolve_address`).
        force: Re-run tasks that already have a stored trace.
        backend: Module the sandboxes evaluate with (``sweep.engine``).
        preload: Modules each GPU's zygote imports once before forking sandboxes.
        scheduler: Driver-loop knobs.
        progress: Where the progress line goes (stderr when ``None``).
        quiet: No progress output at all.
    """

    overrides: ConfigOverrides | None = None
    force: bool = False
    backend: str = "sweep.engine"
    preload: tuple[str, ...] = ("torch", "sweep.engine._evaluate")
    scheduler: SchedulerOptions = field(default_factory=SchedulerOptions)
    progress: TextIO | None = None
    quiet: bool = False


@dataclass
class LaunchResult:
    """What one launch did."""

    run_id: str
    sweep: str
    hardware: str
    planned: int
    skipped: int
    ran: int
    statuses: Counter[str]
    rows: list[SummaryRow]
    wall_s: float
    results_dir: str
    store_path: str
    cluster: ClusterInfo | None
    stats: SchedulerStats
    excluded: list[Exclusion]
    warnings: list[str] = field(default_factory=list)


def new_run_id() -> str:
    """A sortable, unique run id: ``20261122T010203Z-3f9a1c``."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def operator_check(definition: Definition, target: str) -> str | None:
    """The plan's ``unavailable`` check (:data:`sweep.plan.Unavailable`): why the installed
    torch cannot run the ATen operator ``definition`` was imported for on ``target``
    (:func:`sweep.engine.operator_problem`), or ``None``.

    It asks this process's torch, which is the workers' in an embedded cluster and in the
    usual one-environment cluster; a worker with another torch still reports what it lacks
    at evaluation time (RUNTIME_ERROR). Without torch here nothing is left out.
    """
    try:
        from sweep.engine import operator_problem

        return operator_problem(definition, target)
    except ImportError:
        return None


def _portable(tasks: list[Task], cwd: Path) -> list[Task]:
    """Dataset roots under ``cwd`` made relative: under ``ray job submit --working-dir``
    the working dir is the current directory of every worker, wherever it was unpacked."""
    out = []
    for t in tasks:
        root = t.dataset_root
        if root and Path(root).is_absolute():
            try:
                rel = Path(root).resolve().relative_to(cwd)
            except ValueError:
                out.append(t)
                continue
            t = t.model_copy(update={"dataset_root": str(rel) if str(rel) != "." else "."})
        out.append(t)
    return out


def _pending(plan: Plan, force: bool) -> tuple[list[Task], int]:
    if force:
        return list(plan.tasks), 0
    from sweep.store import completed_task_ids

    out = plan.config.output
    done = completed_task_ids(Path(out.results_dir), Path(out.store_path()))
    todo = [t for t in plan.tasks if t.task_id not in done]
    return todo, len(plan.tasks) - len(todo)


def launch(config_path: str | Path, options: LaunchOptions | None = None) -> LaunchResult:
    """Run a sweep: every planned task not yet stored gets exactly one trace, stored at once.

    Args:
        config_path: The sweep config (YAML).
        options: See :class:`LaunchOptions`.

    Raises:
        ConfigError, DatasetError, PlanError: The config, dataset or plan is wrong.
        ClusterError: Ray cannot be reached or started, the cluster lacks the target
            hardware, or no worker can run the remaining tasks.
        StoreError: The results cannot be written.
    """
    opts = options or LaunchOptions()
    t0 = time.monotonic()
    config: SweepConfig = load_config(config_path, opts.overrides)
    dataset = load_dataset(config.dataset)
    try:
        selection = select(config, dataset)  # every plan error, before Ray
    except PlanError as e:
        raise with_lines(e, config_path) from None
    target = config_target(config.hardware)  # None: hardware auto, the cluster decides
    run_id = new_run_id()
    plan: Plan | None = None
    if target is not None:
        plan = build_plan(selection, target, unavailable=operator_check)
        todo, skipped = _pending(plan, opts.force)
        if not todo:
            return _result(run_id, plan, skipped, Tally(), t0, None, SchedulerStats())
    flag = opts.overrides.address if opts.overrides is not None else None
    conn: RayConnection = connect(config, resolve_address(flag, config))
    try:
        if plan is None:
            plan = build_plan(selection, auto_target(conn.info), unavailable=operator_check)
            todo, skipped = _pending(plan, opts.force)
            if not todo:
                return _result(run_id, plan, skipped, Tally(), t0, conn.info, SchedulerStats())
        pools = pools_for(plan.hardware, conn.info, max_workers=len(todo))
        if conn.portable_paths:
            todo = _portable(todo, Path(os.getcwd()).resolve())
        tally, stats = _run(run_id, plan, todo, dataset, pools, opts, skipped)
        return _result(run_id, plan, skipped, tally, t0, conn.info, stats)
    finally:
        conn.close()


def _run(
    run_id: str,
    plan: Plan,
    todo: list[Task],
    dataset: Dataset,
    pools: list[Pool],
    opts: LaunchOptions,
    skipped: int,
) -> tuple[Tally, SchedulerStats]:
    from sweep.store import ResultsWriter, StoreContext

    out = plan.config.output
    tally = Tally()
    stats = SchedulerStats()
    progress = None if opts.quiet else Progress(len(todo), opts.progress)
    if progress is not None:
        workers = sum(p.size for p in pools)
        progress.note(
            f"sweep {plan.config.name!r} run {run_id}: {len(todo)} task(s) on {workers} {plan.hardware} "
            f"worker(s)" + (f", {skipped} already stored (skipped; --force re-runs them)" if skipped else "")
        )
    todo = _with_ceilings(todo, Path(out.results_dir), plan.hardware, progress)
    estimated = _estimated(todo, Path(out.results_dir), Path(out.store_path()), progress)
    spec = SandboxSpec(backend=opts.backend, device_kind="auto", preload=opts.preload)
    context = StoreContext.from_dataset(dataset)
    # The traces the scheduler hands over together are in the JSONL log (one fsync per log
    # file for the group) before the next ones are handled; DuckDB gets them in batches every
    # STORE_FLUSH_S (readers merge the log tail meanwhile). Flushing every 0.25 s cost ~2 ms
    # of driver CPU per trace on a 2-core box, every 2 s ~0.85 ms.
    with ResultsWriter(
        Path(out.results_dir),
        Path(out.store_path()),
        sweep=plan.config.name,
        run_id=run_id,
        context=context,
        flush_interval_s=STORE_FLUSH_S,
    ) as w:

        def on_traces(traces: Sequence[Trace]) -> None:
            w.write_many(traces)
            for trace in traces:
                tally.add(trace)
                if progress is not None:
                    progress.update(trace)

        try:
            stats = run_tasks(
                todo,
                pools,
                spec,
                run_id=run_id,
                on_traces=on_traces,
                options=opts.scheduler,
                on_tick=progress.tick if progress is not None else None,
                estimated_s=estimated,
            )
        finally:
            if progress is not None:
                progress.finish()
    return tally, stats


def _estimated(todo: list[Task], results: Path, store: Path, progress: Progress | None) -> dict[str, float]:
    """Seconds each task should take, from earlier runs in the store (``_estimates``): the
    scheduler starts the longest first."""
    from sweep.store import earlier_durations

    estimated = estimate_durations(todo, earlier_durations(results, store, {t.definition.name for t in todo}))
    if estimated and progress is not None:
        progress.note(f"longest first: {len(estimated)} of {len(todo)} task(s) timed by earlier runs")
    return estimated


def _with_ceilings(todo: list[Task], results: Path, hardware: str, progress: Progress | None) -> list[Task]:
    """The tasks, carrying the newest ceilings calibrated on ``hardware`` (``sweep calibrate``)
    when there are some: the engine then gives fractions of what the nodes reach."""
    from sweep.store import calibration_for

    ceilings = calibration_for(results, hardware)
    if ceilings is None:
        return todo
    if progress is not None:
        progress.note(f"fractions of peak against the ceilings {ceilings.source}")
    return [t.model_copy(update={"ceilings": ceilings}) for t in todo]


def _result(
    run_id: str,
    plan: Plan,
    skipped: int,
    tally: Tally,
    t0: float,
    cluster: ClusterInfo | None,
    stats: SchedulerStats,
) -> LaunchResult:
    out = plan.config.output
    return LaunchResult(
        run_id=run_id,
        sweep=plan.config.name,
        hardware=plan.hardware,
        planned=len(plan.tasks),
        skipped=skipped,
        ran=sum(tally.statuses.values()),
        statuses=tally.statuses,
        rows=tally.sorted_rows(),
        wall_s=time.monotonic() - t0,
        results_dir=out.results_dir,
        store_path=out.store_path(),
        cluster=cluster,
        stats=stats,
        excluded=list(plan.excluded),
        warnings=list(plan.warnings),
    )
