"""The engine's timers side by side with two reference timers, kernels from ~1 us to ~3 ms.

For each kernel (a plain PyTorch call, evaluated by ``sweep.engine.evaluate`` as a solution
that is its own reference), in one process on one GPU:

- the engine's latency of the solution with ``evaluation.timer`` = ``events``, ``cudagraph``
  and ``auto`` (which timer ``auto`` chose, the relative error reached, the wall time of the
  whole evaluation), and ``cupti`` when ``cupti-python`` is importable (the device time of the
  kernels, which the graph reference should match);
- ``triton.testing.do_bench`` (CUDA events around each call, 256 MB flushed before each: what
  the events timer should match, launch overhead included);
- a flushed CUDA-graph timer written here: a graph of K x [zero the flush buffer, call] and
  one of K x [zero the flush buffer], replayed alternately; per call = (with - without) / K,
  median over replays (what the cudagraph timer should match: the kernel's device time with
  a cold L2, no launch overhead).

Prints one row per kernel with the ratios engine/do_bench (events) and engine/graph
(cudagraph), and the identity speedup the engine reports under each timer (1.00 is right).

Usage (on the device machine, from the repository root, after ``source bench/gpu_site.sh``):

    python3 bench/gpu_timing.py [--out $OUT/timing.jsonl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, EvalSettings, Solution, Task, Trace, Workload

# name, reference/solution body, inputs {name: (shape, dtype)}, output (shape, dtype)
KERNELS: list[tuple[str, str, dict[str, tuple[list[int], str]], tuple[list[int], str]]] = [
    *(
        (
            f"vadd_f32_2^{p}",
            "return x + y",
            {"x": ([1 << p], "float32"), "y": ([1 << p], "float32")},
            ([1 << p], "float32"),
        )
        for p in (12, 16, 20, 23, 25, 27)
    ),
    (
        "gemm_f16_m16_n4096_k4096",
        "return x @ w.T",
        {"x": ([16, 4096], "float16"), "w": ([4096, 4096], "float16")},
        ([16, 4096], "float16"),
    ),
    (
        "softmax_f32_64x4096",
        "return torch.softmax(x, dim=-1)",
        {"x": ([64, 4096], "float32")},
        ([64, 4096], "float32"),
    ),
    (
        "gemm_f16_4096^3",
        "return x @ w.T",
        {"x": ([4096, 4096], "float16"), "w": ([4096, 4096], "float16")},
        ([4096, 4096], "float16"),
    ),
    (
        "vadd_f32_2^29",
        "return x + y",
        {"x": ([1 << 29], "float32"), "y": ([1 << 29], "float32")},
        ([1 << 29], "float32"),
    ),
    (
        "gemm_f16_8192x8192x16384",
        "return x @ w.T",
        {"x": ([8192, 16384], "float16"), "w": ([8192, 16384], "float16")},
        ([8192, 8192], "float16"),
    ),
]
TIMERS: tuple[str, ...] = ("events", "cudagraph", "auto")


def records(
    name: str,
    body: str,
    inputs: dict[str, tuple[list[int], str]],
    out: tuple[list[int], str],
    solution_body: str | None = None,
) -> tuple[Definition, Solution, Workload]:
    """A definition with const axes, one workload, and a solution: the reference's own code
    (``<name>_same``), or ``solution_body`` (``<name>_variant``) when it differs."""
    axes: dict[str, object] = {}
    specs: dict[str, object] = {}
    for arg, (shape, dtype) in [*inputs.items(), ("out", out)]:
        dims = []
        for i, size in enumerate(shape):
            axis = f"{arg}_d{i}"
            axes[axis] = {"type": "const", "value": size}
            dims.append(axis)
        specs[arg] = {"shape": dims, "dtype": dtype}
    args = ", ".join(inputs)
    code = f"import torch\n\ndef run({args}):\n    {body}\n"
    sol_body = body if solution_body is None else solution_body
    defn = Definition.model_validate(
        {
            "name": name.replace("^", "p"),
            "op_type": "bench",
            "axes": axes,
            "inputs": {k: specs[k] for k in inputs},
            "outputs": {"out": specs["out"]},
            "reference": code,
        }
    )
    sol = Solution.model_validate(
        {
            "name": f"{defn.name}_{'same' if sol_body == body else 'variant'}",
            "definition": defn.name,
            "author": "bench",
            "spec": {
                "language": "python",
                "target_hardware": ["gpu"],
                "entry_point": "main.py::run",
                "destination_passing_style": False,
            },
            "sources": [
                {"path": "main.py", "content": f"import torch\n\ndef run({args}):\n    {sol_body}\n"}
            ],
        }
    )
    wl = Workload.model_validate(
        {"uuid": f"bench-{defn.name}", "axes": {}, "inputs": {k: {"type": "random"} for k in inputs}}
    )
    return defn, sol, wl


def graph_timer(fn: Callable[[], object], flush: object, k: int = 20, reps: int = 30) -> float:
    """Median ms per call of ``fn`` with a cold L2: graphs of k x [flush, call] and k x [flush]."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    with_call, without = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(with_call):
        for _ in range(k):
            flush.zero_()  # type: ignore[attr-defined]
            fn()
    with torch.cuda.graph(without):
        for _ in range(k):
            flush.zero_()  # type: ignore[attr-defined]
    per_call = []
    for _ in range(reps):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        ev[0].record()
        without.replay()
        ev[1].record()
        with_call.replay()
        ev[2].record()
        torch.cuda.synchronize()
        per_call.append(max(0.0, ev[1].elapsed_time(ev[2]) - ev[0].elapsed_time(ev[1])) / k)
    return statistics.median(per_call)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="write every trace here, one JSON line each")
    parser.add_argument("--only", default="", help="kernel names, comma-separated (default: every kernel)")
    args = parser.parse_args()
    only = {k for k in args.only.split(",") if k}

    import torch
    import triton.testing

    from sweep.schema.hardware import short_name

    global TIMERS
    import importlib.util

    if importlib.util.find_spec("cupti") is not None:
        TIMERS = (*TIMERS, "cupti")
    hardware = short_name(torch.cuda.get_device_name())
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, timers {', '.join(TIMERS)}")
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    cache = EngineCache()
    traces: list[Trace] = []
    header = [
        "kernel",
        "do_bench",
        "graph ref",
        "events",
        "/do_bench",
        "cudagraph",
        "/graph",
        "auto (timer)",
        "cupti",
        "/graph",
        "speedup " + "/".join(t[:2] for t in TIMERS),
        "rel.err ev/cg",
        "eval s " + "/".join(t[:2] for t in TIMERS),
    ]
    rows = [header]
    print("  ".join(header), flush=True)
    for name, body, inputs, out in KERNELS:
        if only and name not in only:
            continue
        defn, sol, wl = records(name, body, inputs, out)
        gen = torch.Generator(device="cuda").manual_seed(0)
        tensors = {
            k: torch.rand(shape, generator=gen, device="cuda", dtype=getattr(torch, dtype)) * 2 - 1
            for k, (shape, dtype) in inputs.items()
        }
        ns: dict[str, object] = {"torch": torch}
        exec(compile(f"def run({', '.join(inputs)}):\n    {body}\n", name, "exec"), ns)  # noqa: S102
        run = ns["run"]
        assert callable(run)

        def call(run: Callable[..., object] = run, tensors: dict[str, torch.Tensor] = tensors) -> object:
            return run(*tensors.values())

        bench_ms = float(triton.testing.do_bench(call))
        graph_ms = graph_timer(call, flush)
        got: dict[str, tuple[float, float, float, str, float | None, float]] = {}
        for timer in TIMERS:
            settings = EvalSettings(timer=timer)  # type: ignore[arg-type]
            task = Task.make(defn, sol, wl, settings, hardware, sweep="bench-gpu-timing")
            t0 = time.perf_counter()
            trace = evaluate(task, device="cuda", cache=cache)
            wall = time.perf_counter() - t0
            traces.append(trace)
            ev = trace.evaluation
            assert ev is not None
            if ev.status.value != "PASSED" or ev.performance is None or ev.timing is None:
                print(f"{name} {timer}: {ev.status.value}: {ev.log.splitlines()[0] if ev.log else ''}")
                got[timer] = (float("nan"), float("nan"), wall, "-", None, float("nan"))
                continue
            tm = ev.timing
            got[timer] = (
                ev.performance.latency_ms,
                ev.performance.speedup_factor,
                wall,
                tm.timer or tm.clock,
                tm.rel_error,
                float(tm.iterations),
            )
        ev_ms, cg_ms, au = got["events"][0], got["cudagraph"][0], got["auto"]

        def err(v: float | None) -> str:
            return "-" if v is None else f"{v * 100:.2f}%"

        rows.append(
            [
                name,
                f"{bench_ms * 1e3:.2f} us",
                f"{graph_ms * 1e3:.2f} us",
                f"{ev_ms * 1e3:.2f} us",
                f"{ev_ms / bench_ms:.3f}",
                f"{cg_ms * 1e3:.2f} us",
                f"{cg_ms / graph_ms:.3f}" if graph_ms > 0 else "-",
                f"{au[0] * 1e3:.2f} us ({au[3]})",
                f"{got['cupti'][0] * 1e3:.2f} us" if "cupti" in got else "-",
                f"{got['cupti'][0] / graph_ms:.3f}" if "cupti" in got and graph_ms > 0 else "-",
                "/".join(f"{got[t][1]:.3f}" for t in TIMERS),
                f"{err(got['events'][4])}/{err(got['cudagraph'][4])}",
                "/".join(f"{got[t][2]:.2f}" for t in TIMERS),
            ]
        )
        print("  ".join(rows[-1]), flush=True)  # as it comes: a long run cut short keeps its rows
        del tensors
    print()
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    if args.out:
        Path(args.out).write_text("".join(json.dumps(t.to_json_obj()) + "\n" for t in traces))
        print(f"wrote {len(traces)} traces to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
