"""``sweep launch``: plan a config, skip what is stored, run the rest on Ray, store each trace.

Order of work, so mistakes fail before anything slow starts: read the config (flags over
the YAML, :func:`sweep.config.load_config`), load the dataset
and check what the config selects (config and plan errors), connect to Ray (at the address
:func:`sweep.config.resolve_address` picks: flag, ``RAY_ADDRESS``, YAML), build one plan per
target, once (``hardware: auto`` is the cluster's one GPU type, ``all`` each GPU type it has,
a list the types named; an imported ATen operator the installed torch lacks, or has no kernel
of for the target's device, is left out with its reason: :func:`operator_check`), drop the
tasks already stored (unless ``force``; task ids include the target, so each target resumes
on its own), check the cluster has every target that has tasks left (else fail at once,
naming each missing type and what the cluster has: nothing runs), then run the tasks of
every target in one loop, each on workers of its own type, the longest tasks first where
earlier runs in the store tell how long they take (``_estimates``).

Against an existing cluster (an address) the workers are warm ones (``sweep.cluster.warm``):
reused from an earlier launch when they match, and left running for the next, unless the
config says ``ray.keep_workers: false`` (``--no-keep-workers``).
"""

from __future__ import annotations

import os
import secrets
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from sweep.cluster.connect import (
    ClusterInfo,
    Pool,
    RayConnection,
    auto_target,
    connect,
    gpu_targets,
    pools_for_targets,
)
from sweep.cluster.head_start import HEAD_START_HOLD_S, HeadStart
from sweep.cluster.scheduler import SchedulerOptions, SchedulerStats
from sweep.cluster.warm import WarmWorkers
from sweep.cluster.zygote_offers import ZygoteOffers, auto_is_cpu, offer_counts
from sweep.config import ConfigOverrides, SweepConfig, load_config, resolve_address
from sweep.errors import PlanError
from sweep.launch._placing import Placing, split_unplaceable
from sweep.launch._run import StartClock, StoreOpening, head_tasks, lend_kinds, run_sweep, start_head
from sweep.launch.progress import FailureGroup, Progress, SummaryRow, Tally
from sweep.plan import Exclusion, Plan, Selection, build_plan, combined_excluded, select, with_lines
from sweep.plan.dataset import load_runnable
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import Definition
from sweep.schema.hardware import CPU
from sweep.schema.task import Task

__all__ = [
    "HardwareCounts",
    "LaunchOptions",
    "LaunchResult",
    "launch",
    "new_run_id",
    "operator_check",
    "plans_for",
    "portable_tasks",
    "sandbox_spec",
    "warm_workers_for",
]


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
        secret: Hidden workloads (``--secret-file``): every task a secret run
            (:meth:`sweep.schema.task.Task.with_secret`); never printed, logged or stored.
        confine: Each sandbox's seccomp filter and Landlock ruleset (``SandboxSpec.confine``).
            ``False`` only where a test makes a solution take its worker down, as a lost
            node would.
    """

    overrides: ConfigOverrides | None = None
    force: bool = False
    backend: str = "sweep.engine"
    preload: tuple[str, ...] = ("torch", "sweep.engine._evaluate")
    scheduler: SchedulerOptions = field(default_factory=SchedulerOptions)
    progress: TextIO | None = None
    quiet: bool = False
    secret: bytes | None = field(default=None, repr=False)
    confine: bool = True


@dataclass(frozen=True)
class HardwareCounts:
    """One target of a launch: its tasks planned, skipped (already stored) and run now."""

    hardware: str
    planned: int
    skipped: int
    ran: int
    #: Distributed tasks no node of the cluster could hold (neither skipped nor run).
    unplaced: int = 0


@dataclass
class LaunchResult:
    """What one launch did.

    ``hardware`` names the targets (``"H100"``; ``"H100, H200"`` for several), and
    ``per_hardware`` counts each one (every launch fills it, one entry per target).
    """

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
    #: Distributed tasks the cluster cannot place (``kind`` ``"task"``, ``name`` "definition /
    #: solution / workload", ``reason`` the task's own, ``group`` the cause shared by others):
    #: planned, neither skipped nor run (``planned == skipped + ran + len(unplaced)`` once
    #: every runnable task has its trace).
    unplaced: list[Exclusion] = field(default_factory=list)
    #: The most frequent failures of this run by status and reason (``Tally.top_failures``).
    failures: list[FailureGroup] = field(default_factory=list)
    per_hardware: list[HardwareCounts] = field(default_factory=list)
    #: The workers were warm ones, left running for the next launch.
    kept_workers: bool = False
    #: Stale warm workers this launch stopped and replaced, and why.
    replaced: list[str] = field(default_factory=list)
    #: Tasks evaluated by the head start, on this machine while Ray started (``head_start``).
    head_start: int = 0
    #: Seconds from the launch's start to its first worker ready to evaluate (``None`` when
    #: nothing ran): config, plan, Ray, the store and the worker.
    startup_s: float | None = None
    #: Steps of the start (``plan``, ``ray``, ``scheduler``, ``store``: taken once the workers
    #: are asked for, then the first worker's ``worker_process``, ``worker_actor``, ``zygote``,
    #: ``sandbox``, ``worker_ready``: :meth:`StartClock.mark_worker`) with the seconds since
    #: the launch began when each ended, in time order.
    phases: tuple[tuple[str, float], ...] = ()


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


def portable_tasks(tasks: list[Task], cwd: Path) -> list[Task]:
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


def sandbox_spec(config: SweepConfig, opts: LaunchOptions) -> SandboxSpec:
    """How a launch's workers start their sandboxes: the backend and preloads of ``opts``,
    the config's compile pool (``auto``: -1) and what its evaluation settings need in every
    sandbox's environment (``evaluation.cuda_max_connections``, set in its zygote's)."""
    ray = config.ray
    return SandboxSpec(
        backend=opts.backend,
        device_kind="auto",
        preload=opts.preload,
        compile_workers=-1 if ray.compile_workers == "auto" else ray.compile_workers,
        env=config.evaluation.process_env(),
        confine=opts.confine,
    )


def plans_for(selection: Selection, targets: Sequence[str], secret: bytes | None = None) -> list[Plan]:
    """One plan per target, in order; with a secret, every task a secret run."""
    plans = [build_plan(selection, t, unavailable=operator_check) for t in targets]
    if secret is not None:
        for p in plans:
            p.tasks = [t.with_secret(secret) for t in p.tasks]
    return plans


def _auto_head_tasks(selection: Selection, opts: LaunchOptions) -> Callable[[str], list[Task]]:
    """The head start's tasks of ``hardware: auto`` for the target a lane's GPU is: those a
    plan for it leaves to run (with their ceilings)."""

    def tasks(hardware: str) -> list[Task]:
        plans = plans_for(selection, [hardware], opts.secret)
        return head_tasks(plans, _pending(plans, opts.force))(hardware)

    return tasks


def _pending(plans: Sequence[Plan], force: bool) -> list[Task]:
    """The tasks of the plans without a stored trace (all of them with ``force``), in plan
    order. Task ids include the target, so each target's are skipped on their own."""
    if force:
        return [t for p in plans for t in p.tasks]
    from sweep.store import completed_task_ids

    out = plans[0].config.output
    done = completed_task_ids(Path(out.results_dir), Path(out.store_path()))
    return [t for p in plans for t in p.tasks if t.task_id not in done]


def launch(config_path: str | Path, options: LaunchOptions | None = None) -> LaunchResult:
    """Run a sweep: every planned task not yet stored gets exactly one trace, stored at once.

    With several targets (``hardware: [H100, H200]`` or ``all``) every task is planned once
    per target and runs only on workers of its target's type, so one launch on a mixed
    cluster fills the store's ``cross_hardware``.

    Args:
        config_path: The sweep config (YAML).
        options: See :class:`LaunchOptions`.

    A record of the dataset with a problem does not stop it: the problem is one of the result's
    ``warnings``, what it concerns is left out, and a broken solution's tasks are COMPILE_ERROR
    traces (:mod:`sweep.plan.broken`), run and counted like any others.

    Raises:
        ConfigError, PlanError: The config or the plan is wrong.
        DatasetError: A dataset root is wrong, or nothing of the dataset can run.
        ClusterError: Ray cannot be reached or started, the cluster lacks a target hardware
            that has tasks to run (``all``: it has no GPU), or no worker can run the
            remaining tasks.
        StoreError: The results cannot be written.
    """
    opts = options or LaunchOptions()
    clock = StartClock()
    config: SweepConfig = load_config(config_path, opts.overrides)
    dataset = load_runnable(config.dataset)  # problems: warnings; broken solutions: COMPILE_ERRORs
    try:
        selection = select(config, dataset)  # every plan error, before Ray
    except PlanError as e:
        raise with_lines(e, config_path) from None
    choice = config.hardware_choice()  # auto, all: the cluster decides
    run_id = new_run_id()
    plans: list[Plan] = []
    opening: StoreOpening | None = None
    flag = opts.overrides.address if opts.overrides is not None else None
    address = resolve_address(flag, config)
    # auto on an embedded Ray without GPUs can only be CPU: planned now, as a named target
    # is, so Ray starts (and zygotes are offered for) only the workers its tasks fill.
    early = choice.targets if choice.mode == "named" else [CPU] if auto_is_cpu(config, address) else []
    if early:
        plans = plans_for(selection, early, opts.secret)
        todo = _pending(plans, opts.force)
        if not todo:
            return _result(run_id, plans, todo, Tally(), clock, None, SchedulerStats())
        # The store opens while Ray starts (each takes a good part of a second or more).
        opening = StoreOpening(config, dataset, run_id, todo)
    clock.mark("plan")
    spec = sandbox_spec(config, opts)
    offers: ZygoteOffers | None = None
    head: HeadStart | None = None
    try:
        # An embedded Ray's workers adopt zygotes started now, whose imports overlap Ray's start.
        gpus, cpus = offer_counts(config, address, todo if plans else None)
        if gpus or cpus:
            lend_gpus, lend_cpus = lend_kinds(config)
            offers = ZygoteOffers.start(spec, gpus, cpus, lend_gpus=lend_gpus, lend_cpus=lend_cpus)
            clock.mark("zygotes_offered")
            # Lanes evaluate while Ray starts: the plan's tasks, or (auto on this machine's GPUs)
            # those of a plan for the GPU model a lane finds, which is what Ray will say.
            tasks = head_tasks(plans, todo) if plans else _auto_head_tasks(selection, opts)
            head = start_head(tasks, offers, spec, run_id, opening.estimates_now if opening else dict)
        conn: RayConnection = connect(config, address)
        clock.mark("ray")
        if head is not None:
            alive = conn.info.nodes
            head.close(alive[0].node_id if len(alive) == 1 else None, hold_s=HEAD_START_HOLD_S)
        try:
            if not plans:
                targets = [auto_target(conn.info)] if choice.mode == "auto" else gpu_targets(conn.info)
                plans = plans_for(selection, targets, opts.secret)
                todo = _pending(plans, opts.force)
                if head is not None and not head.targets <= set(targets):
                    head.abort()  # a lane's device is not what Ray says: its tasks are not this plan's
                    head = None
                if not todo:
                    return _result(run_id, plans, todo, Tally(), clock, conn.info, SchedulerStats())
                opening = StoreOpening(config, dataset, run_id)
            # Only targets with tasks left need workers (a target whose tasks are all stored
            # needs no node, as a launch of that one target would not connect at all).
            nodes = [(n.gpus, n.accelerator_types) for n in conn.info.nodes]
            placing = split_unplaceable(todo, nodes)  # counted, not run
            runnable = placing.runnable
            if not runnable:
                return _result(run_id, plans, todo, Tally(), clock, conn.info, SchedulerStats(), placing)
            left = Counter(t.hardware for t in runnable)
            work = {p.hardware: left[p.hardware] for p in plans if left[p.hardware]}
            pools = pools_for_targets(work, conn.info)
            if conn.portable_paths:
                runnable = portable_tasks(runnable, Path(os.getcwd()).resolve())
            warm = warm_workers_for(config, address, conn, run_id)
            progress = _progress(config, run_id, plans, todo, runnable, pools, opts)
            assert opening is not None
            tally, stats = run_sweep(
                run_id,
                plans,
                runnable,
                opening,
                pools,
                (spec, opts.scheduler, progress),
                warm,
                clock,
                (offers, head),
            )
            result = _result(run_id, plans, todo, tally, clock, conn.info, stats, placing)
            result.head_start = head.evaluated if head is not None else 0
            if warm is not None:
                result.kept_workers, result.replaced = True, list(warm.replaced)
            return result
        finally:
            conn.close()
    finally:
        if head is not None:  # a launch that failed: its lanes stopped (else done already)
            head.abort()
        if offers is not None:  # after Ray's end: adopted ones exit with their workers
            offers.close()
        if opening is not None:
            opening.discard()


def warm_workers_for(
    config: SweepConfig, address: str | None, conn: RayConnection, run_id: str, *, rounds: bool = False
) -> WarmWorkers | None:
    """Warm workers for a launch on an existing cluster (``ray.keep_workers``); ``None``
    on an embedded Ray, which ends with the command, unless the command runs ``rounds`` of
    launches (``sweep tune``): each round then reuses the workers of the round before instead
    of starting its own (a worker start is a Ray worker, a zygote and a sandbox)."""
    if not config.ray.keep_workers:
        return None
    if not rounds and (not address or conn.info.embedded):
        return None
    return WarmWorkers(run_id, idle_timeout_s=config.ray.idle_timeout_s)


def _progress(
    config: SweepConfig,
    run_id: str,
    plans: Sequence[Plan],
    todo: Sequence[Task],
    runnable: Sequence[Task],
    pools: Sequence[Pool],
    opts: LaunchOptions,
) -> Progress | None:
    """The progress line, after its first note (what runs where, what is skipped, how many
    tasks cannot be placed: the summary says why)."""
    if opts.quiet:
        return None
    progress = Progress(len(runnable), opts.progress)
    skipped = sum(len(p.tasks) for p in plans) - len(todo)
    unplaced = len(todo) - len(runnable)
    workers: Counter[str] = Counter()
    for pool in pools:
        workers[pool.target] += pool.size
    on = " + ".join(f"{n} {target}" for target, n in workers.items())
    progress.note(
        f"sweep {config.name!r} run {run_id}: {len(runnable)} task(s) on {on} worker(s)"
        + (f", {skipped} already stored (skipped; --force re-runs them)" if skipped else "")
        + (f", {unplaced} cannot be placed on this cluster (see the summary)" if unplaced else "")
    )
    return progress


def _startup_s(clock: StartClock, stats: SchedulerStats) -> float | None:
    """Seconds from the launch's start to its first worker ready (the loop's clock starts once
    the distributed tasks, which run first, are done)."""
    marks = dict(clock.phases)
    started = marks.get("gangs", marks.get("scheduler"))
    if started is None or stats.first_ready_s is None:
        return None
    return started + stats.first_ready_s


def _result(
    run_id: str,
    plans: Sequence[Plan],
    todo: Sequence[Task],
    tally: Tally,
    clock: StartClock,
    cluster: ClusterInfo | None,
    stats: SchedulerStats,
    placing: Placing | None = None,
) -> LaunchResult:
    """What the launch did: ``todo`` the tasks it had to run (the rest were stored), of which
    ``placing.unplaced`` could not be placed (``_placing``)."""
    config = plans[0].config
    out = config.output
    left = Counter(t.hardware for t in todo)
    lost = Counter(t.hardware for t in placing.unplaced) if placing else Counter[str]()
    per_hardware = [
        HardwareCounts(
            hardware=p.hardware,
            planned=len(p.tasks),
            skipped=len(p.tasks) - left[p.hardware],
            ran=tally.by_hardware[p.hardware],
            unplaced=lost[p.hardware],
        )
        for p in plans
    ]
    return LaunchResult(
        run_id=run_id,
        sweep=config.name,
        hardware=", ".join(p.hardware for p in plans),
        planned=sum(c.planned for c in per_hardware),
        skipped=sum(c.skipped for c in per_hardware),
        ran=sum(tally.statuses.values()),
        statuses=tally.statuses,
        rows=tally.sorted_rows(),
        failures=tally.top_failures(),
        wall_s=clock.elapsed(),
        startup_s=_startup_s(clock, stats),
        phases=clock.phases,
        results_dir=out.results_dir,
        store_path=out.store_path(),
        cluster=cluster,
        stats=stats,
        excluded=combined_excluded(plans),
        unplaced=placing.excluded if placing else [],
        warnings=list(dict.fromkeys(w for p in plans for w in p.warnings)),
        per_hardware=per_hardware,
    )
