"""Evaluate every solution of the shipped dataset (and the engine's test fixtures) on this GPU.

Prints one row per evaluation: status against the expected one, latency of the solution and
of the reference measured in the same process on the same GPU (speedup = their ratio), the
spread of the timed samples, SM clocks around the timing, and the wall time the engine
spent. Solutions named ``*_wrong*`` or ``*_cached`` are wrong on purpose and must not pass.

Usage (on the device machine, from the repository root):

    python bench/gpu_engine.py --out $OUT/traces.jsonl

Exit status 1 when any status differs from the expected one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.config import EvalSettings
from sweep.engine import EngineCache, evaluate
from sweep.plan.dataset import load_dataset
from sweep.schema import Trace
from sweep.schema.hardware import short_name
from sweep.schema.task import Task


def expected_status(solution: str) -> str:
    """What a solution of the bench must get (by its name)."""
    return "INCORRECT_NUMERICAL" if ("_wrong" in solution or solution.endswith("_cached")) else "PASSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", action="append", default=None, help="dataset roots (default: repo + test data)"
    )
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=None, help="write every trace here, one JSON line each")
    parser.add_argument("--max-workloads", type=int, default=None, help="per solution")
    args = parser.parse_args()

    import torch

    roots = args.root or [str(REPO), str(REPO / "tests" / "data" / "engine")]
    ds = load_dataset(roots)
    settings = EvalSettings()
    device = args.device
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    hardware = short_name(gpu)
    cache = EngineCache()
    rows: list[list[str]] = []
    traces: list[Trace] = []
    surprises: list[str] = []
    started = time.perf_counter()
    for name, sol in sorted(ds.solutions.items(), key=lambda kv: (kv[1].definition, kv[0])):
        defn = ds.definitions.get(sol.definition)
        if defn is None:
            continue
        workloads = ds.workloads.get(defn.name, [])[: args.max_workloads]
        for wl in workloads:
            root = str(ds.root_of("workload", wl.uuid))
            task = Task.make(defn, sol, wl, settings, hardware, dataset_root=root, sweep="bench-gpu-engine")
            t0 = time.perf_counter()
            trace = evaluate(task, device=device, cache=cache)
            wall = time.perf_counter() - t0
            traces.append(trace)
            ev = trace.evaluation
            assert ev is not None
            want = expected_status(name)
            ok = ev.status.value == want
            if not ok:
                first = ev.log.splitlines()[0] if ev.log else ""
                surprises.append(f"{name} {wl.axes}: got {ev.status.value}, want {want}: {first[:300]}")
            perf, timing, clocks = ev.performance, ev.timing, ev.clocks
            rows.append(
                [
                    defn.name,
                    name,
                    sol.spec.language.value,
                    ",".join(f"{k}={v}" for k, v in wl.axes.items()),
                    ev.status.value + ("" if ok else " (!)"),
                    f"{perf.latency_ms * 1e3:.1f}" if perf else "-",
                    f"{perf.reference_latency_ms * 1e3:.1f}" if perf else "-",
                    f"{perf.speedup_factor:.2f}" if perf else "-",
                    f"{timing.cv:.2f}" if timing else "-",
                    f"{ev.reference_timing.cv:.2f}" if ev.reference_timing else "-",
                    f"{timing.iterations}" if timing else "-",
                    (
                        f"{clocks.sm_clock_mhz_before}/{clocks.sm_clock_mhz_after}"
                        if clocks and clocks.sm_clock_mhz_before is not None
                        else "-"
                    ),
                    f"{wall:.2f}",
                ]
            )
    header = [
        "definition",
        "solution",
        "lang",
        "axes",
        "status",
        "lat_us",
        "ref_us",
        "speedup",
        "cv",
        "ref_cv",
        "iters",
        "sm_mhz",
        "wall_s",
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    if args.out:
        Path(args.out).write_text("".join(t.to_json() + "\n" for t in traces))
    first_env = traces[0].evaluation.environment if traces and traces[0].evaluation else None
    print()
    print(
        f"GPU: {gpu}  ({first_env.hardware if first_env else '?'}; libs: "
        f"{', '.join(f'{k} {v}' for k, v in (first_env.libs if first_env else {}).items())})"
    )
    if traces and traces[0].evaluation and traces[0].evaluation.clocks:
        c = traces[0].evaluation.clocks
        print(
            f"SM clock max {c.sm_clock_mhz_max} MHz; settings: trials={settings.trials} "
            f"warmup_ms={settings.warmup_ms} rep_ms={settings.rep_ms} input_sets={settings.input_sets}, "
            "L2 flushed before every timed call; latencies are medians of the samples of the timer each trace names (timing.timer)"
        )
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    total = time.perf_counter() - started
    print(f"{len(rows)} evaluations in {total:.1f} s; cache: {cache!r}")
    if surprises:
        print("UNEXPECTED STATUSES:")
        for s in surprises:
            print("  " + s)
        return 1
    print("every status as expected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
