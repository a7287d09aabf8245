"""The driver loop at scale, without GPUs: the REAL loop (``sweep.cluster.scheduler.run_tasks``)
drives simulated workers (``sim_ray.py``: a stand-in for the ``ray`` module, on a virtual clock)
through ``--tasks`` evaluations of drawn durations, and the traces go through the real store
writer as ``sweep launch`` stores them (``sweep.launch._storing``: each delivery appended to its
JSONL log, synced by the writer's thread, counted once synced; DuckDB rows built and inserted
by the writer's follower process every ``STORE_FLUSH_S``).

What it reports, per run:

- driver CPU per task: ``time.process_time`` of the whole process (loop, trace records, store
  writer thread, the simulated Ray) over the tasks, and split: the driver's thread alone; in
  it, the simulated Ray's own work (deciding what is ready, building results: work real Ray
  does in its C++ core worker and on the workers), real Ray's CPU per call on the driver
  (measured, burnt by the stand-in), ``on_traces`` (the store writer's log path, or a tally)
  and the loop itself (packing tasks, parsing and stamping traces, its bookkeeping); the
  other threads (the store writer's rows and DuckDB inserts); and the capacity of one driver
  core that makes: traces a second for all of it but the simulated Ray's own work;
- achieved traces/s over the virtual run (first worker ready to last trace) against the rate the
  workers could deliver (``workers / mean duration``: 10,000/s for 1,000 GPUs at 100 ms);
- the GPU idle fraction: 1 - (evaluation seconds the workers delivered) / (seconds they were up,
  from ready to the last trace);
- the store's ingest lag: wall seconds from a trace's JSONL write to its DuckDB insert
  (mean, p99, max), and the backlog left for the final flush;
- the loop's counters (calls, tasks per call, retries after simulated worker deaths) and a
  check that every task got exactly one trace.

Runs (``--runs``): ``LOOP:STORE`` with LOOP ``current`` (this checkout) or ``baseline`` (the
loop of ``--baseline-rev``, read with ``git show`` and run against the same simulated cluster:
the before/after of the same run) and STORE ``real`` (the writer above), ``old`` (the
``ResultsWriter`` of ``--baseline-writer-rev``, read with ``git show`` over this checkout's store
modules, used as the launch used it then: ``write_many`` per delivery, its fsync on the driver's
thread, rows and inserts on its thread in the driver's process) or ``none`` (traces counted and
dropped: the loop's own capacity). A run that would outlast ``--budget-s`` of real time stops
there and reports what it did by then (marked ``stopped``). After a run with a store, the table
counts the rows of the store file and their distinct task ids (exactly one trace per task),
the traces counted done (durable), and the follower process's CPU per task (it is not on the
virtual clock: a process of its own, on another core).

``--tail``: a second table, the longest-first ordering against plan order on a small sweep with
heavy-tailed durations (few tasks per worker, where the last minutes are one GPU's tail): the
makespan and idle fraction of each, durations estimated with a drawn error.

Usage: ``.venv/bin/python bench/scheduler_sim.py [--tasks 1000000] [--workers 1000]
[--mean-ms 100] [--runs baseline:none current:none current:real] [--tail]``
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sim_ray import SimRay, TaskPlan

from sweep.cluster.connect import Pool
from sweep.cluster.scheduler import SchedulerOptions, SchedulerStats
from sweep.config import EvalSettings
from sweep.launch import STORE_FLUSH_S, Storing
from sweep.launch.progress import Tally
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import (
    Correctness,
    Definition,
    Environment,
    Evaluation,
    Performance,
    Solution,
    Status,
    Trace,
    Workload,
)
from sweep.schema.task import Task, task_id
from sweep.store import ResultsWriter, StoreContext

REPO = Path(__file__).resolve().parents[1]
HARDWARE = "H100"
RUN_ID = "20261124T000000Z-51m000"
CONFIG_HASH = "c0ffee0123456789"


class _Stop(Exception):
    """The run's real-time budget is spent."""


# -- the sweep --------------------------------------------------------------------------


def _definition(name: str) -> Definition:
    return Definition.model_validate(
        {
            "name": name,
            "op_type": "elementwise",
            "axes": {"n": {"type": "var"}},
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
            "reference": "def run(x):\n    return x + 1\n",
        }
    )


def _solution(name: str, definition: str) -> Solution:
    return Solution.model_validate(
        {
            "name": name,
            "definition": definition,
            "author": "bench",
            "spec": {"language": "python", "target_hardware": ["*"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"def run(x, y):  # {name}\n    y.copy_(x + 1)\n"}],
        }
    )


def _evaluation_json() -> bytes:
    ev = Evaluation(
        status=Status.PASSED,
        environment=Environment(hardware="NVIDIA_H100", libs={"torch": "2.11.0", "triton": "3.6.0"}),
        timestamp="2026-11-24T00:00:00Z",
        correctness=Correctness(max_absolute_error=0.0, max_relative_error=0.0),
        performance=Performance(latency_ms=0.0123, reference_latency_ms=0.0234, speedup_factor=1.9),
    )
    return ev.model_dump_json(exclude_none=True).encode()


@dataclass
class Sweep:
    """The tasks, in plan order, what the simulated workers know of each, and the store context."""

    tasks: list[Task]
    plans: dict[str, TaskPlan]
    context: StoreContext
    evaluation_json: bytes


def make_sweep(n: int, definitions: int, solutions: int, draw: Callable[[random.Random], float]) -> Sweep:
    """``n`` tasks: definitions x solutions x workloads (as many workloads as it takes), each
    with a duration drawn by ``draw``; plan order is definition, solution, workload."""
    rng = random.Random(1)
    per_def = math.ceil(n / definitions)
    n_wl = math.ceil(per_def / solutions)
    settings = EvalSettings()
    s_hash = settings.settings_hash()
    defs = [_definition(f"add_{i}") for i in range(definitions)]
    sols = {d.name: [_solution(f"{d.name}_s{j}", d.name) for j in range(solutions)] for d in defs}
    wls = [
        Workload.model_validate({"uuid": f"w{k}", "axes": {"n": 16 + k}, "inputs": {"x": {"type": "random"}}})
        for k in range(n_wl)
    ]
    wl_json = [w.model_dump_json(exclude_none=True).encode() for w in wls]
    tasks: list[Task] = []
    plans: dict[str, TaskPlan] = {}
    for d in defs:
        for s in sols[d.name]:
            h = s.content_hash
            for k, w in enumerate(wls):
                if len(tasks) == n:
                    break
                tid = task_id(d.name, h, w.uuid, s_hash, HARDWARE)
                tasks.append(
                    Task.model_construct(
                        task_id=tid,
                        definition=d,
                        solution=s,
                        workload=w,
                        settings=settings,
                        hardware=HARDWARE,
                        sweep="sim",
                        config_hash=CONFIG_HASH,
                    )
                )
                # The trace as the engine writes it: its provenance carries the identity.
                prov = (
                    f'"provenance":{{"task_id":"{tid}","sweep":"sim","solution_hash":"{h}",'
                    f'"config_hash":"{CONFIG_HASH}","settings_hash":"{s_hash}"}}'
                )
                prefix = f'{{"definition":"{d.name}","solution":"{s.name}",{prov},"workload":'.encode()
                plans[tid] = TaskPlan(draw(rng), prefix, wl_json[k])
    context = StoreContext(
        definitions={d.name: d for d in defs},
        solutions={s.name: s for ss in sols.values() for s in ss},
        workloads={d.name: wls for d in defs},
    )
    return Sweep(tasks, plans, context, _evaluation_json())


def lognormal(mean: float, sigma: float) -> Callable[[random.Random], float]:
    """Draws of a log-normal duration with this mean."""
    mu = math.log(mean) - sigma * sigma / 2
    return lambda rng: rng.lognormvariate(mu, sigma)


# -- real Ray's cost per call on the driver ---------------------------------------------


@dataclass(frozen=True)
class RayCosts:
    """Driver CPU of real Ray per evaluation call (``remote`` and ``get``) and per reference
    in a ``wait``, measured on this machine."""

    remote_s: float
    get_s: float
    wait_per_ref_s: float


def measure_ray(sweep: Sweep, batch: int = 2, calls: int = 2000) -> RayCosts:
    """Time real Ray on this machine: an actor whose ``evaluate_batch`` returns ``batch`` ready
    results (``Done``, as a worker's) for ``batch`` real envelopes; driver CPU per ``remote()``
    of a call, per ``get()`` of its result, and per reference in ``wait`` (1,000 ready refs)."""
    import ray

    from sweep.sandbox import Done, TaskPacker
    from sweep.schema import Provenance

    # "local": a Ray of our own, even when another one runs on this machine.
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        stamp = Provenance(run_id=RUN_ID, node_id="n", gpu_id="0", started_at="2026-11-24T00:00:00+00:00")
        tail = b',"evaluation":' + sweep.evaluation_json + b"}"
        plans = [sweep.plans[t.task_id] for t in sweep.tasks[:batch]]
        out = [Done(p.prefix + p.workload + tail, stamp) for p in plans]

        class Echo:
            def evaluate_batch(self, envelopes: list[Any]) -> tuple[list[Done], float]:
                return out, 0.2

        actor = ray.remote(Echo).remote()
        ray.get(actor.evaluate_batch.remote([]))
        packer = TaskPacker()
        envs = [packer.pack(t) for t in sweep.tasks[: calls * batch]]
        c = time.process_time()
        refs = [actor.evaluate_batch.remote(envs[i * batch : (i + 1) * batch]) for i in range(calls)]
        remote = (time.process_time() - c) / calls
        ray.wait(refs, num_returns=len(refs))
        c = time.process_time()
        for r in refs:
            ray.get(r)
        get = (time.process_time() - c) / calls
        some = refs[:1000]
        c = time.process_time()
        for _ in range(20):
            ray.wait(some, num_returns=len(some), timeout=0)
        wait = (time.process_time() - c) / 20 / len(some)
        return RayCosts(remote, get, wait)
    finally:
        ray.shutdown()


# -- the loop under test ----------------------------------------------------------------


def load_loop(which: str, baseline_rev: str) -> ModuleType:
    """``sweep.cluster.scheduler`` of this checkout, or of ``baseline_rev`` (its source from git,
    loaded as a module of its own beside this checkout's ``sweep``, with that revision's
    ``TaskPacker``)."""
    if which == "current":
        import sweep.cluster.scheduler as mod

        return mod
    src = subprocess.run(
        ["git", "show", f"{baseline_rev}:sweep/cluster/scheduler.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mod = _module_from(f"scheduler_at_{baseline_rev}", src, f"{baseline_rev}:sweep/cluster/scheduler.py")
    # ... with the task packing of that revision too (it is on the driver's path per task).
    packing = subprocess.run(
        ["git", "show", f"{baseline_rev}:sweep/sandbox/packing.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mod.TaskPacker = _module_from(f"packing_at_{baseline_rev}", packing, "_packing.py").TaskPacker
    return mod


def _module_from(name: str, source: str, filename: str) -> ModuleType:
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    exec(compile(source, filename, "exec"), mod.__dict__)  # noqa: S102 - our own source, from git
    return mod


@dataclass
class RunResult:
    label: str
    tasks: int
    done: int
    stopped: bool
    workers: int
    mean_s: float
    makespan_s: float
    idle: float
    cpu_s: float
    main_cpu_s: float
    sim_cpu_s: float
    ray_cost_s: float
    on_traces_s: float
    wall_s: float
    stats: SchedulerStats
    duplicates: int
    missing: int
    lags: list[tuple[float, int]]
    close_s: float
    waits: int
    refs_per_wait: float
    killed: int
    tallied: int = 0
    stored: tuple[int, int] = (0, 0)
    child_cpu_s: float = 0.0


def run_once(
    label: str,
    loop: ModuleType,
    sweep: Sweep,
    workers: int,
    store: str,
    *,
    kills: int,
    budget_s: float,
    workdir: Path,
    options: SchedulerOptions,
    ray_costs: RayCosts | None = None,
    estimated_s: dict[str, float] | None = None,
    old_rev: str = "",
) -> RunResult:
    """One run of ``loop`` over the sweep on ``workers`` simulated workers (see the module doc)."""
    costs = (ray_costs.remote_s, ray_costs.get_s) if ray_costs is not None else (0.0, 0.0)
    sim = SimRay(sweep.plans, sweep.evaluation_json, RUN_ID, call_cpu_s=costs)
    seen: set[str] = set()
    dup = 0
    last = [0.0]
    writes: deque[tuple[float, int]] = deque()
    lags: list[tuple[float, int]] = []
    kill_every = len(sweep.tasks) // (kills + 1) if kills else 0
    next_kill = [kill_every, kills]  # the next kill's trace count, and kills left
    wall0 = time.monotonic()
    tally = Tally()
    real_fsync = os.fsync
    os.fsync = sim.clock.blocking(real_fsync)  # the writer's group commit blocks the driver

    def check(traces: Sequence[Trace]) -> None:
        nonlocal dup
        for t in traces:
            tid = t.provenance.task_id if t.provenance else None
            if tid in seen:
                dup += 1
            seen.add(str(tid))
        last[0] = sim.clock.now()
        if next_kill[1] and len(seen) >= next_kill[0]:
            next_kill[0] += kill_every
            next_kill[1] -= sim.kill_one()
        if time.monotonic() - wall0 > budget_s:
            raise _Stop

    def tick() -> None:
        if storing is not None:
            storing.on_tick()
        if time.monotonic() - wall0 > budget_s:
            raise _Stop

    writer: Any = None
    storing: Storing | None = None
    if store in ("real", "old"):
        results = workdir / label.replace(":", "-")
        shutil.rmtree(results, ignore_errors=True)
        if store == "real":
            writer = ResultsWriter(
                results,
                results / "sweep.duckdb",
                sweep="sim",
                run_id=RUN_ID,
                context=sweep.context,
                flush_interval_s=STORE_FLUSH_S,
                on_stored=lambda lag, n: lags.append((lag, n)),
            )
            storing = Storing(writer, tally, None, {})
            s = storing

            def on_traces(traces: Sequence[Trace]) -> None:
                s.on_traces(traces)  # what the launch driver does with each delivery
                check(traces)

        else:
            writer = old_writer(results, sweep.context, old_rev)
            w = writer
            add = w.store.add

            def timed_add(batch: Any, marks: Any = None, *, timeout_s: float | None = None) -> Any:
                out = add(batch, marks, timeout_s=timeout_s)
                t, n = time.monotonic(), batch.count("traces")
                while n > 0 and writes:  # the pending traces are stored oldest first
                    t_w, k = writes[0]
                    take = min(k, n)
                    lags.append((t - t_w, take))
                    n -= take
                    if take == k:
                        writes.popleft()
                    else:
                        writes[0] = (t_w, k - take)
                return out

            w.store.add = timed_add

            def on_traces(traces: Sequence[Trace]) -> None:
                w.write_many(traces)  # what the launch driver did with each delivery
                writes.append((time.monotonic(), len(traces)))
                for trace in traces:
                    tally.add(trace)
                check(traces)

    else:

        def on_traces(traces: Sequence[Trace]) -> None:
            for trace in traces:
                tally.add(trace)
            check(traces)

    on_traces_cpu = [0.0]
    inner = on_traces

    def on_traces(traces: Sequence[Trace]) -> None:  # the one above, timed
        t = time.thread_time()
        try:
            inner(traces)
        finally:
            on_traces_cpu[0] += time.thread_time() - t

    pool = Pool(target=HARDWARE, size=workers, num_gpus=1, num_cpus=0)
    spec = SandboxSpec(backend="sim", device_kind="cuda", preload=())
    gc.collect()
    stats: SchedulerStats = SchedulerStats()
    stopped = False
    cpu0, main0 = time.process_time(), time.thread_time()
    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    kwargs: dict[str, Any] = {"estimated_s": estimated_s} if estimated_s is not None else {}
    try:
        stats = loop.run_tasks(
            sweep.tasks,
            [pool],
            spec,
            run_id=RUN_ID,
            on_traces=on_traces,
            options=options,
            on_tick=tick,
            ray_api=sim,
            **kwargs,
        )
        if storing is not None:
            storing.drain()  # the last syncs: the run's traces are durable
    except _Stop:
        stopped = True
    finally:
        os.fsync = real_fsync
    cpu_loop, main_cpu = time.process_time() - cpu0, time.thread_time() - main0
    wall = time.monotonic() - wall0
    close_s = 0.0
    stored = (0, 0)
    if writer is not None:
        t = time.monotonic()
        writer.close()
        close_s = time.monotonic() - t
        stored = _stored_rows(writer.store.path)
    child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (child1.ru_utime + child1.ru_stime) - (child0.ru_utime + child0.ru_stime)
    end = last[0]
    first_ready = min((a.ready_at for a in sim.actors), default=0.0)
    up = sum(max(0.0, min(a.died_at if a.died_at is not None else end, end) - a.ready_at) for a in sim.actors)
    busy = sum(a.busy_s for a in sim.actors)
    mean_s = statistics.fmean(p.duration_s for p in sweep.plans.values())
    return RunResult(
        label=label,
        tasks=len(sweep.tasks),
        done=len(seen),
        stopped=stopped,
        workers=workers,
        mean_s=mean_s,
        makespan_s=end - first_ready,
        idle=1 - busy / up if up > 0 else 0.0,
        cpu_s=cpu_loop,
        main_cpu_s=main_cpu,
        sim_cpu_s=sim.sim_cpu_s,
        ray_cost_s=sim.spun_s,
        on_traces_s=on_traces_cpu[0],
        wall_s=wall,
        stats=stats,
        duplicates=dup,
        missing=0 if stopped else len(sweep.tasks) - len(seen),
        lags=lags,
        close_s=close_s,
        waits=sim.waits,
        refs_per_wait=sim.refs_waited / max(1, sim.waits),
        killed=sim.killed,
        tallied=sum(tally.statuses.values()),
        stored=stored,
        child_cpu_s=child_cpu,
    )


def _stored_rows(db: Path) -> tuple[int, int]:
    """Rows of ``traces`` in the store file, and distinct task ids among them."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT count(*), count(DISTINCT task_id) FROM traces").fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), int(row[1])


def old_writer(results: Path, context: StoreContext, rev: str) -> Any:
    """The ``ResultsWriter`` of ``rev`` (its ``_writer.py`` from git, over this checkout's store
    modules), as the launch used it: ``write_many`` per delivery, an fsync on the driver's
    thread, rows and inserts on the writer's thread."""
    src = subprocess.run(
        ["git", "show", f"{rev}:sweep/store/write/_writer.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mod = _module_from(f"writer_at_{rev}", src, f"{rev}:sweep/store/write/_writer.py")
    flush = subprocess.run(
        ["git", "show", f"{rev}:sweep/launch/driver.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    interval = float(flush.split("STORE_FLUSH_S = ", 1)[1].split()[0])
    return mod.ResultsWriter(
        results,
        results / "sweep.duckdb",
        sweep="sim",
        run_id=RUN_ID,
        context=context,
        flush_interval_s=interval,
    )


# -- report -----------------------------------------------------------------------------


def _weighted_quantile(pairs: list[tuple[float, int]], q: float) -> float:
    if not pairs:
        return math.nan
    pairs = sorted(pairs)
    total = sum(n for _, n in pairs)
    acc = 0
    for v, n in pairs:
        acc += n
        if acc >= q * total:
            return v
    return pairs[-1][0]


def _us(seconds: float, tasks: int) -> str:
    return f"{seconds / max(1, tasks) * 1e6:.1f}"


def table(results: list[RunResult]) -> str:
    """One column per run, one row per figure."""
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, f: Callable[[RunResult], str]) -> None:
        rows.append((name, [f(r) for r in results]))

    row("tasks done / planned", lambda r: f"{r.done:,}/{r.tasks:,}" + (" (stopped)" if r.stopped else ""))
    row("workers, mean evaluation", lambda r: f"{r.workers:,}, {r.mean_s * 1e3:.0f} ms")
    row("needed traces/s (workers / mean)", lambda r: f"{r.workers / r.mean_s:,.0f}")
    row("achieved traces/s (virtual)", lambda r: f"{r.done / r.makespan_s:,.0f}" if r.makespan_s > 0 else "-")
    row(
        "achieved / needed",
        lambda r: f"{r.done / r.makespan_s / (r.workers / r.mean_s):.3f}" if r.makespan_s > 0 else "-",
    )
    row("GPU idle fraction", lambda r: f"{r.idle:.3f}")
    row("makespan (virtual s)", lambda r: f"{r.makespan_s:.1f}")
    row("real time of the run (s)", lambda r: f"{r.wall_s:.1f}")
    row("driver CPU per task, all (us)", lambda r: _us(r.cpu_s, r.done))
    row("  driver thread (us)", lambda r: _us(r.main_cpu_s, r.done))
    row("    simulated Ray (us)", lambda r: _us(r.sim_cpu_s - r.ray_cost_s, r.done))
    row("    real Ray's per-call cost, burnt (us)", lambda r: _us(r.ray_cost_s, r.done))
    row("    on_traces: tally, or the writer's log (us)", lambda r: _us(r.on_traces_s, r.done))
    row("    the loop itself (us)", lambda r: _us(r.main_cpu_s - r.sim_cpu_s - r.on_traces_s, r.done))
    row("  other threads: store writer (us)", lambda r: _us(r.cpu_s - r.main_cpu_s, r.done))
    row(
        "capacity of one driver core (traces/s)",
        lambda r: f"{r.done / max(1e-9, r.cpu_s - r.sim_cpu_s + r.ray_cost_s):,.0f}",
    )
    row(
        "calls, tasks per call",
        lambda r: f"{r.stats.calls:,}, {r.stats.submitted / max(1, r.stats.calls):.2f}",
    )
    row("ray.wait calls, refs per wait", lambda r: f"{r.waits:,}, {r.refs_per_wait:.0f}")
    row(
        "worker deaths, retried, requeued",
        lambda r: f"{r.killed}, {r.stats.retried}, {r.stats.requeued}",
    )
    row("duplicate traces, missing", lambda r: f"{r.duplicates}, {r.missing}")
    row(
        "counted done (durable), stored rows / task ids",
        lambda r: f"{r.tallied:,}, {r.stored[0]:,}/{r.stored[1]:,}",
    )
    row("store process CPU per task (us)", lambda r: _us(r.child_cpu_s, r.done) if r.child_cpu_s else "-")
    row(
        "store ingest lag mean/p99/max (s)",
        lambda r: (
            f"{sum(v * n for v, n in r.lags) / sum(n for _, n in r.lags):.2f}/"
            f"{_weighted_quantile(r.lags, 0.99):.2f}/{max(v for v, _ in r.lags):.2f}"
            if r.lags
            else "-"
        ),
    )
    row("store: final flush at close (s)", lambda r: f"{r.close_s:.2f}" if r.lags else "-")
    head = ["figure", *[r.label for r in results]]
    widths = [max(len(head[i]), *(len(v[i - 1]) if i else len(n) for n, v in rows)) for i in range(len(head))]
    out = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    for name, vals in rows:
        out.append(" | ".join(c.ljust(w) for c, w in zip([name, *vals], widths, strict=True)))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=1000)
    ap.add_argument("--mean-ms", type=float, default=100.0)
    ap.add_argument("--sigma", type=float, default=0.5, help="log-normal spread of the durations")
    ap.add_argument("--definitions", type=int, default=10)
    ap.add_argument("--solutions", type=int, default=100)
    ap.add_argument("--runs", nargs="+", default=["baseline:none", "current:none", "current:real"])
    ap.add_argument("--baseline-rev", default="3b77342", help="the loop before the hot-spot fixes")
    ap.add_argument(
        "--baseline-writer-rev",
        default="d552367",
        help="the store writer of runs 'LOOP:old' (before the follower)",
    )
    ap.add_argument("--kills", type=int, default=10, help="simulated worker deaths, spread over the run")
    ap.add_argument("--budget-s", type=float, default=900.0, help="real seconds a run may take")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--tail", action="store_true", help="also the longest-first table")
    ap.add_argument("--tail-tasks", type=int, default=2000)
    ap.add_argument("--tail-workers", type=int, default=64)
    ap.add_argument("--tail-mean-s", type=float, default=1.0)
    ap.add_argument("--tail-sigma", type=float, default=1.0)
    ap.add_argument("--tail-error", type=float, default=0.5, help="log-normal sigma of the estimates' error")
    ap.add_argument(
        "--ray-costs",
        default="measure",
        help="'measure' (real Ray on this machine, first), 'none', or 'REMOTE_US,GET_US'",
    )
    args = ap.parse_args()

    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()}, "
        f"python {platform.python_version()}; commit {sha.stdout.strip()}; baseline loop {args.baseline_rev}"
    )
    t = time.monotonic()
    sweep = make_sweep(
        args.tasks, args.definitions, args.solutions, lognormal(args.mean_ms / 1e3, args.sigma)
    )
    print(f"planned {len(sweep.tasks):,} tasks in {time.monotonic() - t:.1f} s", flush=True)
    ray_costs: RayCosts | None = None
    if args.ray_costs == "measure":
        ray_costs = measure_ray(sweep)
    elif args.ray_costs != "none":
        r_us, g_us = (float(x) for x in args.ray_costs.split(","))
        ray_costs = RayCosts(r_us / 1e6, g_us / 1e6, math.nan)
    if ray_costs is not None:
        print(
            f"real Ray's driver CPU per evaluation call of 2 tasks: remote() {ray_costs.remote_s * 1e6:.0f} us, "
            f"get() {ray_costs.get_s * 1e6:.0f} us (burnt by the simulated Ray on every call); "
            f"wait: {ray_costs.wait_per_ref_s * 1e9:.0f} ns per reference",
            flush=True,
        )
    work = Path(tempfile.mkdtemp(prefix="scheduler-sim-", dir=args.workdir))
    results = []
    try:
        for run in args.runs:
            which, store = run.split(":")
            if store not in ("real", "old", "none"):
                raise SystemExit(f"unknown store {store!r} in {run!r}: real, old or none")
            loop = load_loop(which, args.baseline_rev)
            r = run_once(
                run,
                loop,
                sweep,
                args.workers,
                store,
                kills=args.kills,
                budget_s=args.budget_s,
                workdir=work,
                options=SchedulerOptions(),
                ray_costs=ray_costs,
                old_rev=args.baseline_writer_rev,
            )
            results.append(r)
            print(
                f"[{run}] {r.done:,} traces in {r.wall_s:.1f} s real, {r.makespan_s:.1f} s virtual"
                + (" (stopped at the budget)" if r.stopped else ""),
                flush=True,
            )
            shutil.rmtree(work / run.replace(":", "-"), ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(table(results))
    by = {r.label.split(":")[0] + ":" + r.label.split(":")[1]: r for r in results}
    base, cur = by.get("baseline:none"), by.get("current:none")
    if base is not None and cur is not None:

        def own(r: RunResult) -> float:
            return (r.main_cpu_s - r.sim_cpu_s - r.on_traces_s) / max(1, r.done)

        print(
            f"\nthe loop's own CPU per task, current / baseline (same run, no store): "
            f"{own(cur) / own(base):.3f}; achieved traces/s, current / baseline: "
            f"{(cur.done / cur.makespan_s) / (base.done / base.makespan_s):.3f}"
        )
    if args.tail:
        print()
        print(tail_table(args))
    print(f"\npeak memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.1f} GB")


def tail_table(args: argparse.Namespace) -> str:
    """Plan order against longest first (durations estimated exactly, and with a drawn error)
    on a sweep with few, heavy-tailed tasks per worker: ``--tail-tasks`` on ``--tail-workers``."""
    sweep = make_sweep(args.tail_tasks, 4, 25, lognormal(args.tail_mean_s, args.tail_sigma))
    rng = random.Random(7)
    exact = {tid: p.duration_s for tid, p in sweep.plans.items()}
    noisy = {tid: d * rng.lognormvariate(0, args.tail_error) for tid, d in exact.items()}
    loop = load_loop("current", args.baseline_rev)
    work = Path(tempfile.mkdtemp(prefix="scheduler-sim-tail-"))
    runs = []
    try:
        for label, est in (
            ("plan order", None),
            ("longest first, exact", exact),
            ("longest first, noisy", noisy),
        ):
            r = run_once(
                label,
                loop,
                sweep,
                args.tail_workers,
                "none",
                kills=0,
                budget_s=args.budget_s,
                workdir=work,
                options=SchedulerOptions(),
                estimated_s=est,
            )
            runs.append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ideal = sum(exact.values()) / args.tail_workers
    lines = [
        (
            f"tail: {args.tail_tasks:,} tasks on {args.tail_workers} workers, log-normal durations "
            f"(mean {args.tail_mean_s:g} s, sigma {args.tail_sigma:g}; longest {max(exact.values()):.1f} s); "
            f"noisy estimates: true x log-normal(0, {args.tail_error:g}); work / workers = {ideal:.1f} s"
        ),
        "order                  | makespan (virtual s) | / plan order | GPU idle fraction | done",
        "-----------------------+----------------------+--------------+-------------------+------",
    ]
    base = runs[0].makespan_s
    for r in runs:
        lines.append(
            f"{r.label:<22} | {r.makespan_s:>20.1f} | {r.makespan_s / base:>12.3f} | {r.idle:>17.3f} | "
            f"{r.done}/{r.tasks}" + (" dup!" if r.duplicates else "")
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
