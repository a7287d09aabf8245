"""Measured task durations replayed through the driver loop: how a first sweep's order and the
compile pools' reservations set where a sweep on several GPUs ends.

The tasks are the 90 BackendBench rows of ``gpu_scaling.py --per-op 1`` (ATen identity
solutions); each takes the seconds it took on one GPU of a real host (a JSON of durations by
definition, ``bench/data/``; rows it lacks take its median) plus the time between two tasks
measured there. The driver loop (``sweep.cluster.scheduler.run_tasks``) runs them on simulated
GPU workers (``sim_ray.py``: a virtual clock, every worker ready at the same time), each
reporting a compile pool of ``--compile-workers`` processes, as ``compile_workers: auto`` gives
a worker of a 64-core host with 4 GPUs. The variants switch one thing each, in this process:

- ``plan order`` / ``input order``: the loop told estimates that fall along the plan (so its
  longest-first order is plan order, as a first sweep's was), or nothing (largest inputs first,
  ``sweep.schema.sizes.input_bytes``: what a first sweep's launch does now);
- ``reserve all`` / ``reserve compiled``: a compile pool's reservation takes every task of the
  queue's next ones, or only those worth compiling (``worth_compiling``: what the loop does);
- ``true durations``: the loop told each task's real seconds, longest first (what a second
  sweep's estimates approach);
- with ``--compiled`` every solution counts as Triton (a parameter sweep's case): ``blocks``, each
  reservation the queue's next tasks (before), or ``interleaved``, every Nth of them for a pool
  of N workers (what the loop does).

It prints each variant's end (the last trace, from the workers' start), against the ideal (the
work split evenly) and against one GPU (the work end to end): the evaluation phase's ratio.

Usage: ``python3 bench/order_replay.py [--gpus 4] [--compile-workers 8] [--durations FILE]
[--between-tasks-s S] [--compiled]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from gpu_scaling import write_dataset
from scheduler_sim import _evaluation_json
from sim_ray import SimRay, TaskPlan

import sweep.cluster.scheduler as scheduler_mod
from sweep.cluster.connect import Pool
from sweep.cluster.scheduler import SchedulerOptions, run_tasks
from sweep.plan import load_dataset
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import EvalSettings, Language, Task, Trace

DURATIONS = REPO / "bench" / "data" / "2026-11-28-h200-identity-durations.json"
RUN_ID = "replay"


def make_tasks(root: Path) -> list[Task]:
    """The 90 rows, each with its identity solution, in plan order (definition name)."""
    write_dataset(root, 1)
    ds = load_dataset([root / "data"])
    settings = EvalSettings()
    out = []
    for name in sorted(ds.definitions):
        sol = next(s for s in ds.solutions.values() if s.definition == name)
        for wl in ds.workloads[name]:
            out.append(Task.make(ds.definitions[name], sol, wl, settings, "H200", sweep="replay"))
    return out


def plans(tasks: Sequence[Task], seconds: dict[str, float], gap_s: float) -> dict[str, TaskPlan]:
    """What the simulated workers know of each task: its seconds (and the time between tasks)."""
    fill = statistics.median(seconds.values())
    out = {}
    for t in tasks:
        prov = f'"provenance":{{"task_id":"{t.task_id}","sweep":"replay"}}'
        prefix = f'{{"definition":"{t.definition.name}","solution":"{t.solution.name}",{prov},"workload":'
        out[t.task_id] = TaskPlan(
            seconds.get(t.definition.name, fill) + gap_s,
            prefix.encode(),
            t.workload.model_dump_json(exclude_none=True).encode(),
        )
    return out


@contextmanager
def patched(changes: Sequence[tuple[str, Any]]) -> Iterator[None]:
    """The loop with some of its choices (names of ``sweep.cluster.scheduler``) switched back."""
    saved = [(name, getattr(scheduler_mod, name)) for name, _ in changes]
    for name, value in changes:
        setattr(scheduler_mod, name, value)
    try:
        yield
    finally:
        for name, value in saved:
            setattr(scheduler_mod, name, value)


def compiled(task: Task) -> Task:
    """``task`` with its solution in Triton: worth compiling ahead, so reserved for the pools."""
    sol = task.solution
    triton = sol.model_copy(update={"spec": sol.spec.model_copy(update={"language": Language.triton})})
    return Task.make(task.definition, triton, task.workload, task.settings, task.hardware, sweep="replay")


def replay(
    tasks: list[Task],
    taskplans: dict[str, TaskPlan],
    gpus: int,
    compile_workers: int,
    estimated: dict[str, float] | None,
) -> tuple[float, dict[int, list[str]]]:
    """The end of the sweep (seconds after the workers were ready) and each worker's tasks."""
    sim = SimRay(taskplans, _evaluation_json(), RUN_ID, ready_s=(1.0, 1.0), compile_workers=compile_workers)
    ends: list[float] = []
    by_worker: dict[int, list[str]] = {}

    def on_traces(traces: Sequence[Trace]) -> None:
        ends.append(sim.clock.now())
        for t in traces:
            p = t.provenance
            assert p is not None
            by_worker.setdefault(int(p.gpu_id or 0), []).append(str(t.definition))

    run_tasks(
        tasks,
        [Pool(target="H200", size=gpus, num_gpus=1, num_cpus=0)],
        SandboxSpec(backend="unused", preload=()),
        run_id=RUN_ID,
        on_traces=on_traces,
        options=SchedulerOptions(),
        ray_api=sim,
        estimated_s=estimated,
    )
    first_ready = min(a.ready_at for a in sim.actors)
    return max(ends) - first_ready, by_worker


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--compile-workers", type=int, default=8, help="each worker's compile pool (auto: 8)")
    ap.add_argument("--durations", type=Path, default=DURATIONS)
    ap.add_argument("--compiled", action="store_true", help="every solution in Triton: all reservable")
    ap.add_argument(
        "--between-tasks-s", type=float, default=None, help="the time between two tasks (default: the file's)"
    )
    args = ap.parse_args()

    data = json.loads(args.durations.read_text())
    seconds: dict[str, float] = data["durations_s"]
    gap = (
        args.between_tasks_s if args.between_tasks_s is not None else float(data.get("between_tasks_s", 0.0))
    )
    with tempfile.TemporaryDirectory(prefix="sweep-replay-") as tmp:
        tasks = make_tasks(Path(tmp))
    if args.compiled:
        tasks = [compiled(t) for t in tasks]
    taskplans = plans(tasks, seconds, gap)
    work = sum(p.duration_s for p in taskplans.values())
    longest = sorted(seconds, key=lambda n: -seconds[n])[:4]
    print(f"durations: {args.durations.name} ({data.get('source', '')})")
    print(
        f"{len(tasks)} tasks, {work:.1f} s of work with {gap:.3f} s between tasks; {args.gpus} GPUs, "
        f"compile pools of {args.compile_workers}; ideal end {work / args.gpus:.1f} s"
    )
    print(f"the longest: {', '.join(f'{n} {seconds[n]:.1f} s' for n in longest)}")
    truth = {t.task_id: taskplans[t.task_id].duration_s for t in tasks}
    # Plan order: estimates that fall along the plan (longest first then keeps it as it is).
    plan = {t.task_id: float(len(tasks) - i) for i, t in enumerate(tasks)}
    every = ("worth_compiling", lambda _t: True)  # every task reservable (before)
    blocks = ("_MAX_STRIDE", 1)  # each reservation a block of the queue's next tasks (before)
    before, now, interleaved = [every, blocks], [], []
    variants: list[tuple[str, dict[str, float] | None, list[tuple[str, Any]]]] = (
        [
            ("plan order, reserve all (before)", plan, before),
            ("input order, reserve all", None, before),
            ("plan order, reserve compiled", plan, now),
            ("input order, reserve compiled (now)", None, now),
            ("true durations, reserve compiled", truth, now),
        ]
        if not args.compiled
        else [
            ("plan order, blocks (before)", plan, [blocks]),
            ("input order, blocks", None, [blocks]),
            ("true durations, blocks", truth, [blocks]),
            ("plan order, interleaved", plan, interleaved),
            ("input order, interleaved (now)", None, interleaved),
            ("true durations, interleaved", truth, interleaved),
        ]
    )
    print(f"\n{'variant':36s} {'end s':>7s} {'vs ideal':>9s} {'vs 1 GPU':>9s}  where the 4 longest ran")
    for label, estimated, changes in variants:
        with patched(changes):
            end, by_worker = replay(tasks, taskplans, args.gpus, args.compile_workers, estimated)
        where = [next((w for w, names in by_worker.items() if n in names), -1) for n in longest]
        print(f"{label:36s} {end:7.1f} {end / (work / args.gpus):8.2f}x {work / end:8.2f}x  GPUs {where}")


if __name__ == "__main__":
    main()
