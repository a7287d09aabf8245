"""The price of a fresh process per task: what each task pays for not sharing a process.

Every task now runs in a sandbox process of its own, forked from a zygote that imported torch
and the engine (``sweep.sandbox.supervisor``). This runs the same short tasks (the shipped
``softmax_f32`` and ``rmsnorm_h1024`` torch solutions over their workloads, at settings short
enough that fixed costs dominate) three ways, in this one process:

- ``in-process``: ``sweep.engine.evaluate`` with one shared engine cache: what a reused process
  paid before (the baseline; no isolation at all);
- ``fresh, prefork``: a :class:`~sweep.cluster.Sandbox` as a launch's worker runs it (the
  default): each task in a new process, the next one forked while a task runs;
- ``fresh, no prefork``: the same with the fork and the process's start (CUDA's initialisation
  on a GPU) on each task's critical path;
- ``fresh, no filter`` (with ``--no-filter``): the default mode without the seccomp filter each
  sandbox installs (``sweep.sandbox._confine``), to show what the filter costs (the process's
  scan of ``/proc``, a check of a few instructions on every system call) and that the latencies
  it reports do not move.

Each mode runs every task ``--rounds`` times, the modes interleaved round by round. The table
gives the median wall time per task, its difference from in-process (the cost of a fresh
process per task; the in-process baseline also reuses its engine cache from round to round:
builds, inputs, reference results), for the sandbox modes the median time from a task's start
to its process being ready (fork, imports already done, CUDA initialised), and the median of
the evaluation's own time as its process stamped it. It also gives the median reported latency
and, on a GPU, the median lowest SM clock while timed, to show whether a fresh process moves
them.

Usage: ``python bench/sandbox_cost.py [--device cpu|cuda] [--rounds 3] [--no-filter]`` (on a GPU host, after
``source bench/gpu_site.sh``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.plan import load_dataset
from sweep.sandbox import Sandbox, SandboxSpec
from sweep.schema import EvalSettings, Trace
from sweep.schema.hardware import CPU
from sweep.schema.task import Task

SHORT = EvalSettings(trials=1, warmup_ms=1, rep_ms=5, min_iterations=4, max_iterations=64, input_sets=2)


def tasks(hardware: str, settings: EvalSettings) -> list[Task]:
    ds = load_dataset([REPO])
    out = []
    for name in ("softmax_f32_torch", "rmsnorm_h1024_torch"):
        sol = ds.solutions[name]
        defn = ds.definitions[sol.definition]
        for wl in ds.workloads[defn.name]:
            out.append(Task.make(defn, sol, wl, settings, hardware, dataset_root=str(REPO)))
    return out


def in_process(batch: list[Task], device: str) -> tuple[list[float], list[Trace]]:
    from sweep.engine import EngineCache, evaluate, prepare_process

    prepare_process(device)
    cache = EngineCache()
    times, traces = [], []
    for task in batch:
        t0 = time.perf_counter()
        traces.append(evaluate(task, device=device if device == "cpu" else "cuda", cache=cache))
        times.append(time.perf_counter() - t0)
    return times, traces


def in_sandbox(sandbox: Sandbox, batch: list[Task]) -> tuple[list[float], list[Trace]]:
    times, traces = [], []
    for task in batch:
        t0 = time.perf_counter()
        traces.append(sandbox.run(task))
        times.append(time.perf_counter() - t0)
    return times, traces


def latency(traces: list[Trace]) -> float | None:
    values = [
        t.evaluation.performance.latency_ms
        for t in traces
        if t.evaluation is not None and t.evaluation.performance is not None
    ]
    return statistics.median(values) if values else None


def evaluate_s(traces: list[Trace]) -> float | None:
    """Median seconds of the evaluation itself, as its process stamped it (start to end)."""
    values = []
    for t in traces:
        p = t.provenance
        if p is not None and p.started_at and p.finished_at:
            values.append(
                (datetime.fromisoformat(p.finished_at) - datetime.fromisoformat(p.started_at)).total_seconds()
            )
    return statistics.median(values) if values else None


def sm_clock(traces: list[Trace]) -> float | None:
    """Median of the lowest SM clock NVML read while each task was timed (GPU only)."""
    values = [
        t.evaluation.clocks.sm_clock_mhz_min
        for t in traces
        if t.evaluation is not None
        and t.evaluation.clocks is not None
        and t.evaluation.clocks.sm_clock_mhz_min
    ]
    return statistics.median(values) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--default-settings", action="store_true", help="the default evaluation settings, not short ones"
    )
    ap.add_argument(
        "--no-filter", action="store_true", help="also the default mode without the seccomp filter"
    )
    args = ap.parse_args()
    kind = args.device
    sandboxes = {
        "fresh, prefork": Sandbox(SandboxSpec(device_kind=kind)),
        "fresh, no prefork": Sandbox(SandboxSpec(device_kind=kind, prefork=False)),
    }
    if args.no_filter:
        sandboxes["fresh, no filter"] = Sandbox(SandboxSpec(device_kind=kind, confine=False))
    infos = {mode: sb.start() for mode, sb in sandboxes.items()}
    name = next(iter(infos.values())).device_name
    from sweep.schema.hardware import short_name

    # The zygotes are processes of their own (never forked from this one), so the in-process
    # baseline may take the GPU here.
    settings = EvalSettings() if args.default_settings else SHORT
    batch = tasks(short_name(name) if name else CPU, settings)
    times: dict[str, list[float]] = {"in-process": [], **{m: [] for m in sandboxes}}
    lat: dict[str, list[Trace]] = {m: [] for m in times}
    ready: dict[str, list[float]] = {m: [] for m in sandboxes}
    for _ in range(args.rounds):
        for mode, sb in sandboxes.items():
            before = len(sb.stats.start_seconds)
            t, traces = in_sandbox(sb, batch)
            times[mode] += t
            lat[mode] += traces
            ready[mode] += sb.stats.start_seconds[before:]
        t, traces = in_process(batch, kind)
        times["in-process"] += t
        lat["in-process"] += traces
    for sb in sandboxes.values():
        sb.close()
    base = statistics.median(times["in-process"])
    print(
        f"host {platform.node()}, device {name or 'cpu'}, {len(batch)} tasks x {args.rounds} rounds, "
        f"{'default' if args.default_settings else 'short'} settings"
    )
    print(
        f"{'mode':20s} {'tasks':>6s} {'s/task':>8s} {'vs in-process':>14s} {'ready wait s':>13s} "
        f"{'evaluate s':>11s} {'latency ms':>11s} {'SM MHz min':>11s}"
    )
    rows = {}

    def cell(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    for mode, values in times.items():
        med = statistics.median(values)
        wait = statistics.median(ready[mode]) if ready.get(mode) else None
        lat_ms, ev_s, mhz = latency(lat[mode]), evaluate_s(lat[mode]), sm_clock(lat[mode])
        rows[mode] = {
            "tasks": len(values),
            "s_per_task": med,
            "extra_s": med - base,
            "ready_wait_s": wait,
            "evaluate_s": ev_s,
            "latency_ms": lat_ms,
            "sm_mhz_min": mhz,
        }
        print(
            f"{mode:20s} {len(values):6d} {med:8.3f} {med - base:+14.3f} {cell(wait, '.3f'):>13s} "
            f"{cell(ev_s, '.3f'):>11s} {cell(lat_ms, '.4f'):>11s} {cell(mhz, '.0f'):>11s}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
