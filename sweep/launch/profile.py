"""``sweep profile``: re-run chosen tasks of a sweep under ncu and/or compute-sanitizer.

Which tasks: by default the best PASSED solution per definition x workload x hardware (the
store's ``best`` view); ``where`` filters the ``latest`` view instead; ``task_ids`` names
them. Each task is planned again from the config (so it is the very task the sweep ran, same
settings and seed) and run in a process of its own, ``python -m sweep.engine.profile_main``,
under each tool in turn (``sweep.sandbox.profile_tools``: own process group, killed at
``profile.timeout_s``). Each task is a Ray task on one GPU of the sweep's cluster
(``sweep.cluster.gpu_tasks``: the address a launch would use, or an embedded local Ray),
which looks the tools up and checks its GPU there and sends its rows back; only this
driver writes the store. ``local``: one after another in this process, on this node's GPU.
Artifacts go to
``<results>/profiles/<task_id>/``; the parsed rows to the store's ``profiles`` and
``sanitizer_findings`` tables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sweep._python import python_module
from sweep.cluster.gpu_tasks import GpuTaskFailure, NoGpuError, run_each_on_a_gpu
from sweep.config import ConfigOverrides, SweepConfig, load_config, resolve_address
from sweep.errors import DistributedTaskError, ProfileError, shown
from sweep.launch._profile_run import ncu_problem, run_ncu, run_sanitizer
from sweep.launch.driver import operator_check
from sweep.plan import build_plan, select, with_lines
from sweep.plan.dataset import load_runnable
from sweep.sandbox.profile_tools import find_tool
from sweep.schema.distributed import outside_gang
from sweep.schema.files import name_problem, write_atomic
from sweep.schema.hardware import short_name
from sweep.schema.task import Task
from sweep.store import KernelProfile, SanitizerReport

__all__ = [
    "SANITIZER_TOOLS",
    "ProfileOptions",
    "ProfileResult",
    "TaskProfile",
    "choose_task_ids",
    "find_tools",
    "ncu_problem",
    "profile",
    "profile_on_worker",
    "profile_task",
]

#: The compute-sanitizer tools ``sweep profile`` runs, in order.
SANITIZER_TOOLS: tuple[str, ...] = ("memcheck", "racecheck", "initcheck", "synccheck")
_TOOLS = {"ncu": ("ncu", "SWEEP_NCU"), "sanitizer": ("compute-sanitizer", "SWEEP_COMPUTE_SANITIZER")}


@dataclass
class ProfileOptions:
    """What ``sweep profile`` runs: which tasks (``where`` on ``latest``, or ``task_ids``;
    default the ``best`` view), which tool (``ncu``, ``sanitizer``, ``both``), ncu's set."""

    where: str | None = None
    task_ids: list[str] = field(default_factory=list)
    tool: str = "both"
    ncu_set: str = "basic"
    overrides: ConfigOverrides | None = None
    device: str | None = None
    #: In this process on this node's GPU, one task after another, not through Ray.
    local: bool = False
    #: Told each step (``sweep profile`` prints them); ``None``: silent.
    on_step: Callable[[str], None] | None = None


@dataclass
class TaskProfile:
    """One task profiled: the kernels ncu saw, each sanitizer tool's report, what went wrong."""

    task_id: str
    definition: str
    solution: str
    workload: str
    folder: Path
    kernels: list[KernelProfile] | None = None
    sanitizer: list[SanitizerReport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class ProfileResult:
    """Every task profiled, where the rows went, and tasks asked for that the plan lacks."""

    store_path: Path
    profiles: list[TaskProfile]
    missing: list[str] = field(default_factory=list)


def _tools(tool: str) -> list[str]:
    if tool not in ("ncu", "sanitizer", "both"):
        raise ProfileError(f"--tool must be ncu, sanitizer or both (got {shown(tool)})")
    return ["ncu", "sanitizer"] if tool == "both" else [tool]


def find_tools(tool: str) -> dict[str, str]:
    """The executables ``--tool TOOL`` needs (``ncu``, ``sanitizer``, ``both``), by tool.

    Raises:
        ProfileError: ``tool`` is none of those, or an executable is missing.
    """
    return _executables(_tools(tool), tool)


def _executables(tools: list[str], flag: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for tool in tools:
        name, env_var = _TOOLS[tool]
        path = find_tool(name, env_var)
        if path is None:
            where = (
                f"${env_var} ({shown(os.environ[env_var])}) is not an executable"
                if os.environ.get(env_var)
                else "it is not on PATH"
            )
            raise ProfileError(
                f"{name} is needed for --tool {flag} but {where}; install the CUDA toolkit's {name} or set ${env_var}"
            )
        found[tool] = path
    return found


def choose_task_ids(
    store_path: Path, results_dir: Path, where: str | None, task_ids: Sequence[str]
) -> list[str]:
    """The task ids to profile, in order (see the module)."""
    from sweep.store import query

    if task_ids:
        return list(dict.fromkeys(task_ids))
    if where:
        sql = f"SELECT DISTINCT task_id FROM (SELECT * FROM latest WHERE {where}) WHERE task_id IS NOT NULL ORDER BY task_id"
    else:
        sql = (
            "SELECT DISTINCT t.task_id FROM best b JOIN traces t USING (trace_key) "
            "WHERE t.task_id IS NOT NULL ORDER BY t.task_id"
        )
    return [str(r[0]) for r in query(store_path, sql, results_dir=results_dir).rows]


def _plan_tasks(config: SweepConfig, config_path: str | Path, hardware: set[str]) -> dict[str, Task]:
    from sweep.errors import PlanError

    dataset = load_runnable(config.dataset)
    try:
        selection = select(config, dataset)
    except PlanError as e:
        raise with_lines(e, config_path) from None
    tasks: dict[str, Task] = {}
    for target in sorted(hardware):
        for task in build_plan(selection, target, unavailable=operator_check).tasks:
            if task.broken is None:  # a broken solution has nothing to profile
                tasks[task.task_id] = task
    return tasks


def _hardware_of(store_path: Path, results_dir: Path, ids: list[str]) -> set[str]:
    from sweep.store import query, sql_literal

    quoted = ", ".join(sql_literal(i) for i in ids)
    res = query(
        store_path,
        f"SELECT DISTINCT hardware FROM traces WHERE task_id IN ({quoted})",
        results_dir=results_dir,
    )
    # Stored as records spell it (NVIDIA_H100); a plan's target, and so a task id, is H100.
    return {short_name(str(r[0])) for r in res.rows if r[0]}


def profile(config_path: str | Path, options: ProfileOptions | None = None) -> ProfileResult:
    """Profile the chosen tasks of the sweep at ``config_path`` (see the module).

    Raises:
        ProfileError: No GPU here (``local`` or an embedded Ray) or in the cluster, a tool
            missing or unusable (counters not readable).
        ConfigError, DatasetError, PlanError, StoreError, ClusterError: As for a launch.
        DistributedTaskError: Every chosen task is of a distributed definition (one call by
            several ranks; each such task of a larger choice is reported, not profiled).
    """
    import sweep.engine

    opts = options or ProfileOptions()
    tools = _tools(opts.tool)
    if opts.ncu_set not in ("basic", "full"):
        raise ProfileError(f"--ncu-set must be basic or full (got {shown(opts.ncu_set)})")
    config = load_config(config_path, opts.overrides)
    address = resolve_address(opts.overrides.address if opts.overrides else None, config)
    if opts.local or address is None:  # this node runs the tasks: refuse here, before anything
        problem = sweep.engine.gpu_problem()
        if problem is not None:
            raise ProfileError(f"sweep profile needs a CUDA GPU: {problem}")
        _executables(tools, opts.tool)
    results_dir = Path(config.output.results_dir)
    store_path = Path(config.output.store_path())
    ids = choose_task_ids(store_path, results_dir, opts.where, opts.task_ids)
    if not ids:
        raise ProfileError("no task to profile: the store has no trace that the selection picks")
    choice = config.hardware_choice()  # auto, all: the store's traces say
    if choice.mode == "named":
        hardware = set(choice.targets)
    else:
        hardware = _hardware_of(store_path, results_dir, ids)
    planned = _plan_tasks(config, config_path, hardware)
    result = ProfileResult(store_path, [], [i for i in ids if i not in planned])
    # a call by several ranks cannot run in the profiler's one process: reported, not profiled
    gangs = [t for tid, t in planned.items() if tid in ids and t.definition.distributed is not None]
    for task in gangs:
        done = _empty(task, _profile_folder(results_dir, task.task_id))
        done.problems.append(f"not profiled: {_gang_refusal(task)}")
        result.profiles.append(done)
    if gangs and all(planned[i].definition.distributed is not None for i in ids if i in planned):
        raise _gang_refusal(gangs[0])
    planned = {tid: t for tid, t in planned.items() if t.definition.distributed is None}
    jobs = [
        _Job(
            planned[tid],
            tools,
            opts.tool,
            _profile_folder(results_dir, tid),
            config.profile.calls,
            config.profile.timeout_s,
            opts.ncu_set,
            opts.device if opts.local else None,
            sweep.engine.gpu_problem,
        )
        for tid in ids
        if tid in planned
    ]
    say = opts.on_step or (lambda _text: None)
    if not jobs:
        raise ProfileError(
            f"none of the {len(ids)} chosen task(s) is in this config's plan for "
            f"{', '.join(sorted(hardware)) or 'no hardware'} (first: {shown(ids[0])}): the solution, "
            "workload or settings changed since they ran. Launch the sweep again, then profile"
        )
    if opts.local:
        exe = _executables(tools, opts.tool)
        for job in jobs:
            done = _run_job(job, exe, opts.on_step)
            _save(store_path, done)
            result.profiles.append(done)
        return result
    # every tool run may take its deadline: ncu twice (profile, read back), sanitizer four times
    runs = (2 if "ncu" in tools else 0) + (len(SANITIZER_TOOLS) if "sanitizer" in tools else 0)
    deadline = config.profile.timeout_s * runs + _SLACK_S
    for job in jobs:
        say(f"{job.task.task_id}: queued for a GPU worker ({', '.join(tools)})")
    try:
        for index, got in run_each_on_a_gpu(
            profile_on_worker, jobs, config=config, address=address, timeout_s=deadline
        ):
            job = jobs[index]
            if isinstance(got, GpuTaskFailure):
                done = _empty(job.task, job.folder)
                done.problems.append(f"not profiled: {got.message}")
            else:
                done = got
                _save(store_path, done)
            say(
                f"{job.task.task_id}: done" + (f" ({len(done.problems)} problem(s))" if done.problems else "")
            )
            result.profiles.append(done)
    except NoGpuError as e:
        raise ProfileError(f"sweep profile needs a CUDA GPU: {e}") from None
    return result


_SLACK_S = 120.0


def _gang_refusal(task: Task) -> DistributedTaskError:
    assert task.definition.distributed is not None
    return outside_gang(
        task.definition.name, task.definition.distributed, [task.workload.axes], "sweep profile"
    )


@dataclass(frozen=True)
class _Job:
    """One task to profile, as sent to a worker (picklable)."""

    task: Task
    tools: list[str]
    flag: str
    folder: Path
    calls: int
    timeout_s: float
    ncu_set: str
    device: str | None
    gpu_check: Callable[[], str | None]


def _profile_folder(results_dir: Path, task_id: str) -> Path:
    """Where a task's profile goes: ``<results>/profiles/<task id>``, the id one plain name."""
    problem = name_problem(task_id)
    if problem is not None:
        raise ProfileError(f"task id {shown(task_id)} cannot name a folder: it {problem}")
    return results_dir / "profiles" / task_id


def _empty(task: Task, folder: Path) -> TaskProfile:
    return TaskProfile(task.task_id, task.definition.name, task.solution.name, task.workload.uuid, folder)


def _run_job(job: _Job, exe: dict[str, str], on_step: Callable[[str], None] | None) -> TaskProfile:
    return profile_task(
        job.task,
        exe,
        job.folder,
        calls=job.calls,
        timeout_s=job.timeout_s,
        ncu_set=job.ncu_set,
        device=job.device,
        store_path=None,
        on_step=on_step,
    )


def profile_on_worker(job: _Job) -> TaskProfile:
    """What a GPU worker does for one task: check its GPU, find the tools there, run them
    (rows come back in the result; the driver stores them).

    Raises:
        ProfileError: A tool is missing on the worker, or ncu cannot read the counters.
    """
    problem = job.gpu_check()
    if problem is not None:
        done = _empty(job.task, job.folder)
        done.problems.append(f"not profiled: the worker has no usable CUDA GPU: {problem}")
        return done
    return _run_job(job, _executables(job.tools, job.flag), None)


def _save(store_path: Path, done: TaskProfile) -> None:
    from sweep.store import save_profile_results

    save_profile_results(
        store_path,
        done.task_id,
        kernels=done.kernels,
        ncu_report=str(done.folder / "profile.ncu-rep"),
        sanitizer=[(r, str(done.folder / f"sanitizer-{r.tool}.txt")) for r in done.sanitizer],
    )


def profile_task(
    task: Task,
    tools: dict[str, str],
    folder: Path,
    *,
    calls: int = 5,
    timeout_s: float = 600.0,
    ncu_set: str = "basic",
    device: str | None = None,
    store_path: Path | None = None,
    on_step: Callable[[str], None] | None = None,
) -> TaskProfile:
    """Profile one task, in processes of its own, into ``folder``: under ncu and/or each
    compute-sanitizer tool (``tools``: ``{"ncu": path, "sanitizer": path}``, as
    :func:`find_tools` gives), rows to ``store_path`` when given.

    Raises:
        ProfileError: ncu cannot read the GPU's counters.
        StoreError: The store cannot be written.
    """
    task_file = folder / "task.json"
    write_atomic(task_file, task.model_dump_json())
    # The very `sweep` this process runs, not the working folder's (run_ncu/run_sanitizer: its env).
    target = [*python_module("sweep.engine.profile_main"), str(task_file), str(calls)]
    if device:
        target.append(device)
    out = _empty(task, folder)
    env_over = dict(task.settings.process_env())  # as its evaluation's process had them
    say = on_step or (lambda _text: None)
    if "ncu" in tools:
        say(f"{task.task_id}: ncu ({ncu_set}) on {task.solution.name} / {task.workload.uuid}")
        out.kernels = run_ncu(tools["ncu"], target, folder, ncu_set, timeout_s, out.problems, env_over)
    if "sanitizer" in tools:
        for tool in SANITIZER_TOOLS:
            say(f"{task.task_id}: compute-sanitizer --tool {tool}")
            report = run_sanitizer(
                tools["sanitizer"], tool, target, folder, timeout_s, out.problems, env_over
            )
            if report is not None:
                out.sanitizer.append(report)
    if store_path is not None:
        _save(store_path, out)
    return out
