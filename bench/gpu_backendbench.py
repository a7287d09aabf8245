"""Imported BackendBench rows through ``sweep.engine.evaluate`` on one GPU, in one process.

Two sweeps, one engine cache:

1. ``bench/data/backendbench_gpu.trace.txt`` (40 real rows of 10 operators from BackendBench's
   traces: the four most frequent rows of each) with an ATen-identity solution per operator,
   made here (``torch.ops.aten.<op>(*args, **kwargs)``): every row must pass, and since the
   solution is the reference itself, the median speedup says how even-handed the timer is
   (1.00 is the right answer);
2. the example dataset ``examples/backendbench/dataset`` (5 operators, 18 rows): author
   ``aten`` must pass, author ``wrong`` must fail with the status its kernel is built to get.

Prints one line per (operator, author): rows, statuses, median (min..max) speedup, median
latency of solution and reference, wall time. Exit status 1 when any status is unexpected.

Usage (on the device machine, from the repository root; needs only torch, numpy, pydantic):

    PYTHONPATH=. python3 bench/gpu_backendbench.py [--out $OUT/traces.jsonl] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.backendbench import build_records, op_expression, parse_op_name, parse_trace_file
from sweep.config import EvalSettings, Tolerance
from sweep.engine import EngineCache, evaluate, prepare_process
from sweep.plan.dataset import load_dataset
from sweep.schema import Definition, Solution, Trace, Workload
from sweep.schema.hardware import short_name
from sweep.schema.task import Task

GPU_TRACE = REPO / "bench" / "data" / "backendbench_gpu.trace.txt"
EXAMPLE = REPO / "examples" / "backendbench" / "dataset"
#: What each wrong kernel of the example is built to get.
WRONG = {
    "relu__default": "INCORRECT_NUMERICAL",
    "mul__Tensor": "INCORRECT_SHAPE",
    "sum__default": "INCORRECT_DTYPE",
    "_softmax__default": "INCORRECT_NUMERICAL",
    "add___Tensor": "INCORRECT_NUMERICAL",
}


def aten_identity(defn: Definition, op: str) -> Solution:
    """A solution that calls the operator itself (what the reference does); the other
    BackendBench benches (``backendbench_identity``, ``gpu_scaling``) take theirs from here."""
    src = f"import torch\n\n\ndef kernel_impl(*args, **kwargs):\n    return {op_expression(parse_op_name(op))}(*args, **kwargs)\n"
    return Solution.model_validate(
        {
            "name": f"{defn.name}_aten",
            "definition": defn.name,
            "author": "aten",
            "spec": {
                "language": "python",
                "target_hardware": ["*"],
                "entry_point": "impl.py::kernel_impl",
                "destination_passing_style": False,
            },
            "sources": [{"path": "impl.py", "content": src}],
        }
    )


def gpu_tasks(settings: EvalSettings, hardware: str) -> list[tuple[Task, str]]:
    """The 40 rows of the GPU trace, each with its operator's ATen-identity solution."""
    out = []
    for item in build_records(parse_trace_file(GPU_TRACE), source_file=GPU_TRACE.name):
        sol = aten_identity(item.definition, item.op)
        for wl in item.workloads:
            out.append(
                (Task.make(item.definition, sol, wl, settings, hardware, sweep="bench-gpu-bb"), "PASSED")
            )
    return out


def example_tasks(settings: EvalSettings, hardware: str) -> list[tuple[Task, str]]:
    """The example dataset: every solution on every workload of its operator."""
    ds = load_dataset([EXAMPLE])
    out = []
    for _, sol in sorted(ds.solutions.items()):
        defn = ds.definitions[sol.definition]
        want = "PASSED" if sol.author == "aten" else WRONG[defn.name]
        wls: list[Workload] = ds.workloads.get(defn.name, [])
        for wl in wls:
            out.append((Task.make(defn, sol, wl, settings, hardware, sweep="bench-gpu-bb-example"), want))
    return out


def _fmt(values: list[float], spec: str = ".3f") -> str:
    return format(statistics.median(values), spec) if values else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=None, help="write every trace here, one JSON line each")
    parser.add_argument("--quick", action="store_true", help="short timing (10 ms warm-up, 25 ms rep)")
    args = parser.parse_args()

    import torch

    prepare_process(args.device)
    gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    hardware = short_name(gpu)
    settings = EvalSettings(
        # BackendBench's own tolerance for its operators.
        op_type_tolerance={"backendbench": Tolerance(atol=1e-2, rtol=1e-2)},
        **({"warmup_ms": 10, "rep_ms": 25} if args.quick else {}),
    )
    tasks = gpu_tasks(settings, hardware) + example_tasks(settings, hardware)
    print(
        f"{gpu} | torch {torch.__version__} | {len(tasks)} evaluations | trials {settings.trials}, "
        f"input sets {settings.input_sets}, warm-up {settings.warmup_ms} ms, rep {settings.rep_ms} ms"
    )
    cache = EngineCache()
    groups: dict[tuple[str, str, str], list[tuple[Trace, float]]] = defaultdict(list)
    surprises: list[str] = []
    traces: list[Trace] = []
    started = time.perf_counter()
    for task, want in tasks:
        t0 = time.perf_counter()
        trace = evaluate(task, device=args.device, cache=cache)
        wall = time.perf_counter() - t0
        traces.append(trace)
        ev = trace.evaluation
        assert ev is not None
        source = "example" if task.sweep.endswith("example") else "gpu-trace"
        groups[(source, task.definition.name, task.solution.author)].append((trace, wall))
        if ev.status.value != want:
            first = ev.log.splitlines()[0] if ev.log else ""
            surprises.append(
                f"{task.solution.name} {task.workload.uuid[:8]}: got {ev.status.value}, want {want}: {first[:300]}"
            )
    total = time.perf_counter() - started

    header = [
        "rows of",
        "op",
        "author",
        "rows",
        "statuses",
        "speedup (median)",
        "min..max",
        "latency ms",
        "ref ms",
        "wall s",
    ]
    lines = []
    for (source, op, author), items in groups.items():
        evs = [t.evaluation for t, _ in items if t.evaluation is not None]
        counts = Counter(e.status.value for e in evs)
        perf = [e.performance for e in evs if e.performance is not None]
        speed = [p.speedup_factor for p in perf]
        lines.append(
            [
                source,
                op,
                author,
                str(len(items)),
                ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
                _fmt(speed),
                f"{min(speed):.3f}..{max(speed):.3f}" if speed else "-",
                _fmt([p.latency_ms for p in perf], ".4f"),
                _fmt([p.reference_latency_ms for p in perf], ".4f"),
                f"{sum(w for _, w in items):.1f}",
            ]
        )
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    for row in [header, *lines]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    all_speed = [
        t.evaluation.performance.speedup_factor
        for (_, _, author), items in groups.items()
        if author == "aten"
        for t, _ in items
        if t.evaluation is not None and t.evaluation.performance is not None
    ]
    if all_speed:
        print(
            f"ATen identity over {len(all_speed)} rows: median speedup {statistics.median(all_speed):.3f} "
            f"(min {min(all_speed):.3f}, max {max(all_speed):.3f}; 1.000 is the right answer)"
        )
    real = sorted(
        t.evaluation.performance.speedup_factor
        for (source, _, author), items in groups.items()
        if author == "aten" and source == "gpu-trace"
        for t, _ in items
        if t.evaluation is not None and t.evaluation.performance is not None
    )
    if len(real) >= 2:
        p10, p50, p90 = (statistics.quantiles(real, n=10, method="inclusive")[i] for i in (0, 4, 8))
        print(
            f"ATen identity over the {len(real)} real trace rows: p10 {p10:.3f}, p50 {p50:.3f}, "
            f"p90 {p90:.3f} (min {real[0]:.3f}, max {real[-1]:.3f})"
        )
    print(
        f"total wall {total:.1f} s for {len(tasks)} evaluations "
        f"({total / max(len(tasks), 1):.2f} s each, input generation on the host included)"
    )
    if args.out:
        Path(args.out).write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
        print(f"wrote {len(traces)} traces to {args.out}")
    for s in surprises:
        print("UNEXPECTED:", s)
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
