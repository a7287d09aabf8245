"""Where one evaluation's time goes, phase by phase, on the real path (sandbox + engine).

Each case runs ``--tasks`` evaluations, one after the other, through a
:class:`~sweep.sandbox.Sandbox` as a launch's worker runs them (a fresh process per task,
forked from the zygote, the next one forked while a task runs), at the default evaluation
settings unless ``--short``. The phase clock the engine and the sandbox keep
(``sweep/engine/run/_clock.py``: a monotonic timestamp at the end of each phase, sent back
beside the trace and kept in ``Sandbox.stats.timelines``) says how long each phase took; the
receiver's parse of the trace (``Done.trace``, what a launch's worker does) is timed here.

The cases:

- ``backendbench``: the ATen-identity solution of ``add.Tensor`` on its first row
  (``examples/backendbench/dataset``);
- ``triton``: the shipped ``softmax_f32_triton`` on its first workload (on a CPU under the
  Triton interpreter, ``TRITON_INTERPRET=1``, which the sandbox's zygote sets; skipped with a
  line saying so when triton is not installed);
- ``gemm``: the shipped ``gemm_n512_k512_torch`` at ``M = --gemm-m``.

Per case, a table of the median seconds of each phase over the tasks and its share of the
turn (a worker's time per evaluation: from taking the sandbox to the trace parsed), the
timing budget (the warm-up and timed windows of both sides, what ``warmup_ms`` and ``rep_ms``
ask for) apart from the rest. The fork of the next task's sandbox runs beside the task
(prefork) and is shown apart, not in the turn.

``--first`` also prints the first evaluation (a zygote's first sandbox, as a launch's first
task runs), which the medians leave out; ``--per-task`` each task's timed windows with the
samples and error its stopping rule reached; ``--no-prefork`` runs without a spare (each
task's sandbox forked and started when its turn comes), to tell what the spare costs.

Usage: ``python bench/eval_phases.py [--device cpu|cuda] [--tasks 5] [--cases backendbench,triton,gemm] [--first]``
(on a GPU host after ``source bench/gpu_site.sh``).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.plan import load_dataset
from sweep.sandbox import Sandbox, SandboxSpec
from sweep.sandbox.packing import Envelope
from sweep.schema import EvalSettings, Evaluation, Workload
from sweep.schema.hardware import CPU, short_name
from sweep.schema.task import Task

BUDGET_SUFFIXES = ("warm-up", "timed")  # as sweep/engine/run/_clock.py names the windows
SHORT = EvalSettings(trials=1, warmup_ms=1, rep_ms=5, min_iterations=4, max_iterations=64, input_sets=2)
CASES = ("backendbench", "triton", "gemm")


def case_task(case: str, hardware: str, settings: EvalSettings, gemm_m: int) -> Task:
    """The task of ``case`` (see the module's docstring)."""
    if case == "backendbench":
        root = REPO / "examples" / "backendbench" / "dataset"
        ds = load_dataset([root])
        sol = ds.solutions["add___Tensor_implementation"]
        defn = ds.definitions[sol.definition]
        wl = ds.workloads[defn.name][0]
        return Task.make(defn, sol, wl, settings, hardware, dataset_root=str(root))
    ds = load_dataset([REPO])
    if case == "triton":
        sol = ds.solutions["softmax_f32_triton"]
        defn = ds.definitions[sol.definition]
        return Task.make(defn, sol, ds.workloads[defn.name][0], settings, hardware, dataset_root=str(REPO))
    sol = ds.solutions["gemm_n512_k512_torch"]
    defn = ds.definitions[sol.definition]
    base = ds.workloads[defn.name][0]
    wl = Workload.model_validate(
        {**base.model_dump(), "uuid": f"eval-phases-gemm-m{gemm_m}", "axes": {"M": gemm_m}}
    )
    return Task.make(defn, sol, wl, settings, hardware, dataset_root=str(REPO))


def intervals(timeline: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """``(phase, seconds)`` from consecutive marks; a phase named twice in one task (the
    integrity checks) is summed under its first place."""
    out: dict[str, float] = {}
    for (_, t0), (name, t1) in itertools.pairwise(timeline):
        out[name] = out.get(name, 0.0) + (t1 - t0)
    return list(out.items())


def run_case(
    sandbox: Sandbox, task: Task, n: int
) -> tuple[list[dict[str, float]], list[str], list[str], list[Evaluation]]:
    """Per task: seconds per phase (the receiver's parse included), the phases in order,
    the statuses and the evaluations (each side's timing stats)."""
    env = Envelope.of(task)
    rows: list[dict[str, float]] = []
    order: list[str] = []
    statuses: list[str] = []
    evals: list[Evaluation] = []
    for _ in range(n):
        done = sandbox.run_batch([env])[0]
        t0 = time.monotonic()
        trace = done.trace(task)
        parse = time.monotonic() - t0
        assert trace.evaluation is not None
        statuses.append(trace.evaluation.status.value)
        evals.append(trace.evaluation)
        phases = intervals(sandbox.stats.timelines[-1])
        phases.append(("trace parsed by the receiver", parse))
        for name, _ in phases:
            if name not in order:
                order.append(name)
        rows.append(dict(phases))
    return rows, order, statuses, evals


def side_lines(evals: list[Evaluation]) -> list[str]:
    """One line per side: the timer, and the medians of the samples kept and of the error the
    stopping rule reached, with how often it met its target (why a window ran past rep_ms)."""
    out = []
    for side in ("reference_timing", "timing"):
        stats = [s for e in evals if (s := getattr(e, side)) is not None]
        if not stats:
            continue
        errors = [s.rel_error for s in stats if s.rel_error is not None]
        met = sum(1 for s in stats if s.target_met)
        timers = sorted({s.timer or "-" for s in stats})
        out.append(
            f"{'reference' if side == 'reference_timing' else 'solution':9s} timer {'/'.join(timers)}: "
            f"samples median {statistics.median(s.iterations for s in stats):g}, rel. error median "
            f"{statistics.median(errors) if errors else float('nan'):.4%}, target met {met}/{len(stats)}, "
            f"p50 {statistics.median(s.p50_ms for s in stats) * 1e3:.2f} us"
        )
    speedups = sorted(e.performance.speedup_factor for e in evals if e.performance is not None)
    if speedups:
        out.append(
            f"speedup (the same operator on both sides: 1.00 is right) median "
            f"{statistics.median(speedups):.3f}, {speedups[0]:.3f}..{speedups[-1]:.3f}"
        )
    return out


def task_lines(rows: list[dict[str, float]], evals: list[Evaluation]) -> list[str]:
    """One line per task: its turn, its timed windows and what each side's stopping rule
    reached (samples, error): why a window ran past ``rep_ms``."""
    out = []
    for i, (r, e) in enumerate(zip(rows, evals)):
        parts = [f"task {i}: turn {sum(r.values()):.3f} s"]
        for side, stats in (("reference", e.reference_timing), ("solution", e.timing)):
            timed = r.get(f"{side} timed", float("nan"))
            if stats is None:
                parts.append(f"{side} timed {timed:.3f} s")
                continue
            err = float("nan") if stats.rel_error is None else stats.rel_error
            parts.append(
                f"{side} timed {timed:.3f} s, {stats.iterations} samples, error {err:.3%}"
                f"{'' if stats.target_met else ' (target not met)'}, p50 {stats.p50_ms * 1e3:.2f} us"
            )
        out.append("; ".join(parts))
    return out


def table(
    case: str, rows: list[dict[str, float]], order: list[str], prefork: list[float]
) -> dict[str, float]:
    """Print one case's table; return its figures."""

    def med(name: str) -> float:
        return statistics.median(r.get(name, 0.0) for r in rows)

    turns = [sum(r.values()) for r in rows]
    budgets = [sum(v for k, v in r.items() if k.endswith(BUDGET_SUFFIXES)) for r in rows]
    turn = statistics.median(turns)
    budget = statistics.median(budgets)
    rest = statistics.median(t - b for t, b in zip(turns, budgets))
    print(f"\n== {case}: {len(rows)} evaluations, median turn {turn:.3f} s per evaluation per worker")
    print(f"{'phase':58s} {'seconds':>9s} {'share':>7s}")
    for name in order:
        if name.endswith(BUDGET_SUFFIXES):
            continue
        print(f"{name:58s} {med(name):9.4f} {med(name) / turn:7.1%}")
    print(f"{'-- the rest (every phase above)':58s} {rest:9.4f} {rest / turn:7.1%}")
    for name in order:
        if name.endswith(BUDGET_SUFFIXES):
            print(f"{'   ' + name:58s} {med(name):9.4f} {med(name) / turn:7.1%}")
    print(f"{'-- timing budget (warm-up + rep_ms windows)':58s} {budget:9.4f} {budget / turn:7.1%}")
    print(f"{'== turn (per evaluation per worker)':58s} {turn:9.4f} {1:7.1%}")
    if prefork:
        print(f"{'(beside the task) fork of the next sandbox':58s} {statistics.median(prefork):9.4f}")
    return {"turn_s": turn, "budget_s": budget, "rest_s": rest, **{n: med(n) for n in order}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--tasks", type=int, default=5, help="evaluations per case (after one not counted)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument(
        "--gemm-m", type=int, default=0, help="M of the GEMM case (default 8192 on cuda, 2048 on cpu)"
    )
    ap.add_argument("--short", action="store_true", help="short timing settings instead of the defaults")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--first", action="store_true", help="also print the first evaluation's phases (not counted)"
    )
    ap.add_argument("--per-task", action="store_true", help="also print each task's timed windows")
    ap.add_argument(
        "--no-prefork", action="store_true", help="fork each task's sandbox when its turn comes (no spare)"
    )
    args = ap.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; the cases are {', '.join(CASES)}")
    if "triton" in cases and importlib.util.find_spec("triton") is None:
        print("triton case skipped: triton is not installed here")
        cases.remove("triton")
    gemm_m = args.gemm_m or (8192 if args.device == "cuda" else 2048)
    settings = SHORT if args.short else EvalSettings()
    figures: dict[str, dict[str, float]] = {}
    print(
        f"host {platform.node()}, device {args.device}, {'short' if args.short else 'default'} settings "
        f"(warmup_ms {settings.warmup_ms:g}, rep_ms {settings.rep_ms:g}, trials {settings.trials})"
    )
    for case in cases:
        with Sandbox(SandboxSpec(device_kind=args.device, prefork=not args.no_prefork)) as sandbox:
            info = sandbox.start()
            hardware = short_name(info.device_name) if info.device_name else CPU
            if case == "triton" and args.device == "cpu":
                print("triton case: on the CPU under the Triton interpreter (TRITON_INTERPRET=1)")
            task = case_task(case, hardware, settings, gemm_m)
            first, first_order, _, _ = run_case(sandbox, task, 1)  # the first: not counted
            if args.first:
                table(f"{case} (the first evaluation of this sandbox's zygote)", first, first_order, [])
            rows, order, statuses, evals = run_case(sandbox, task, args.tasks)
            prefork = list(sandbox.stats.prefork_seconds)[-args.tasks :]
        bad = [s for s in statuses if s != "PASSED"]
        figures[case] = table(case, rows, order, prefork)
        for line in side_lines(evals):
            print(line)
        if args.per_task:
            for line in task_lines(rows, evals):
                print(line)
        if bad:
            print(f"!! {len(bad)} of {len(statuses)} evaluations did not pass: {sorted(set(bad))}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
