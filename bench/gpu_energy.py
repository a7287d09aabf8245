"""Energy per call (``evaluation.energy``) of compute-bound GEMMs and memory-bound softmaxes, two
sizes each, repeated; and a candidate that is faster than its reference but may cost more
energy (a split-K GEMM: the K dimension cut into slices computed as one batched GEMM on more
SMs, the partial results summed).

Each case is a definition whose reference is the plain PyTorch call, evaluated by
``sweep.engine.evaluate`` with ``evaluation.energy: true``: the identity cases (the solution is
the reference's code) must show an energy speedup near 1.00 (the baseline, measured in the
same evaluation); the split-K case shows its speedup and its energy speedup side by side.
Per case: joules per call of the solution (mean of the repeats) and the spread of the repeats
((max - min) / median), mean power and SM clock of the window, latency, speedup, energy
speedup, and the GPU's clocks of the timed samples (``clocks``).

On the CPU (``--device cpu``, small sizes) every evaluation PASSES with ``energy`` empty and
the reason printed: that path must work too.

Usage (on the device machine, from the repository root, after ``source bench/gpu_site.sh``):

    python3 bench/gpu_energy.py [--device cuda|cpu] [--repeats 3] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpu_timing import records as timing_records

from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, EvalSettings, Solution, Task, Tolerance, Trace, Workload

_GEMM = "return x @ w.T"
_SOFTMAX = "return torch.softmax(x, dim=-1)"
# K cut into S slices: one batched GEMM of S partial products (more blocks in flight), summed
# in float32.
_SPLITK = (
    "m, k = x.shape; n = w.shape[0]; s = 8\n"
    "    parts = torch.bmm(x.view(m, s, k // s).transpose(0, 1), w.view(n, s, k // s).permute(1, 2, 0))\n"
    "    return parts.sum(0, dtype=torch.float32).to(x.dtype)"
)

# name, kind, reference body, solution body, inputs {name: [shape, dtype]}, output shape/dtype
Case = tuple[str, str, str, str, dict[str, tuple[list[int], str]], tuple[list[int], str]]


def cases(device: str) -> list[Case]:
    """The GPU's cases, or small ones on the CPU (the path, not the figures, matters there)."""
    if device == "cpu":
        g, s, (m, n, k) = [64], [(64, 256)], (16, 64, 256)
    else:
        g, s, (m, n, k) = [4096, 8192], [(4096, 4096), (16384, 8192)], (64, 8192, 16384)
    out: list[Case] = []
    for size in g:
        shape = {"x": ([size, size], "float16"), "w": ([size, size], "float16")}
        out.append((f"gemm_f16_{size}^3", "compute", _GEMM, _GEMM, shape, ([size, size], "float16")))
    for rows, cols in s:
        shape = {"x": ([rows, cols], "float32")}
        out.append(
            (f"softmax_f32_{rows}x{cols}", "memory", _SOFTMAX, _SOFTMAX, shape, ([rows, cols], "float32"))
        )
    shape = {"x": ([m, k], "float16"), "w": ([n, k], "float16")}
    out.append((f"gemm_splitk8_f16_m{m}_n{n}_k{k}", "split-K", _GEMM, _SPLITK, shape, ([m, n], "float16")))
    return out


def records(case: Case) -> tuple[Definition, Solution, Workload]:
    """A definition with const axes, the case's solution, one workload (``gpu_timing.records``)."""
    name, _, ref_body, sol_body, inputs, out = case
    return timing_records(name, ref_body, inputs, out, solution_body=sol_body)


def _spread(values: list[float]) -> float | None:
    return (
        (max(values) - min(values)) / statistics.median(values)
        if len(values) > 1 and min(values) > 0
        else None
    )


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write every trace here (JSONL)")
    args = ap.parse_args()
    try:
        import pynvml  # noqa: F401

        nvml = "importable"
    except ImportError:
        nvml = "NOT importable (energy will be empty: see bench/gpu_energy.sh)"
    print(f"device {args.device}; pynvml {nvml}")
    settings = EvalSettings(energy=True, tolerance=Tolerance(atol=0.5, rtol=0.05), input_sets=2)
    cache = EngineCache()
    traces: list[Trace] = []
    header = (
        f"{'case':34} {'kind':8} {'sol mJ/call':>12} {'spread':>7} {'ref mJ/call':>12} {'E speedup':>9} "
        f"{'speedup':>8} {'lat ms':>9} {'W':>5} {'SM MHz':>7} {'mem MHz':>7} {'batching':>9}"
    )
    print(header)
    status = 0
    for case in cases(args.device):
        defn, sol, wl = records(case)
        task = Task.make(defn, sol, wl, settings, "bench")
        sol_j: list[float] = []
        ref_j: list[float] = []
        last: Trace | None = None
        for _ in range(args.repeats):
            trace = evaluate(task, device=args.device, cache=cache)
            traces.append(trace)
            last = trace
            ev = trace.evaluation
            assert ev is not None
            if ev.status.value != "PASSED":
                print(f"{case[0]}: {ev.status.value}: {ev.log.splitlines()[0] if ev.log else ''}")
                status = 1
                break
            energy = ev.energy
            if energy is None or energy.solution is None or energy.reference is None:
                continue
            if energy.solution.joules_per_call is not None and energy.reference.joules_per_call is not None:
                sol_j.append(energy.solution.joules_per_call)
                ref_j.append(energy.reference.joules_per_call)
        ev = last.evaluation if last is not None else None
        if ev is None or ev.status.value != "PASSED" or ev.performance is None:
            continue
        energy, clocks, perf = ev.energy, ev.clocks, ev.performance
        if not sol_j:
            why = (energy.problem if energy else None) or (
                (energy.solution.problem if energy and energy.solution else None) or "not measured"
            )
            print(f"{case[0]:34} {case[1]:8} energy empty: {why}")
            continue
        sol_mean, ref_mean = statistics.fmean(sol_j), statistics.fmean(ref_j)
        side = energy.solution if energy and energy.solution else None
        print(
            f"{case[0]:34} {case[1]:8} {sol_mean * 1e3:12.4f} {_fmt(_spread(sol_j), '7.1%')} "
            f"{ref_mean * 1e3:12.4f} {ref_mean / sol_mean:9.3f} {perf.speedup_factor:8.3f} "
            f"{perf.latency_ms:9.4f} {_fmt(side.mean_power_w if side else None, '5.0f')} "
            f"{_fmt(side.mean_sm_clock_mhz if side else None, '7.0f')} "
            f"{_fmt(clocks.mem_clock_mhz_mean if clocks else None, '7.0f')} {side.batching if side else '-':>9}"
        )
        if case[1] == "split-K":
            faster, costlier = perf.speedup_factor > 1.0, ref_mean / sol_mean < 1.0
            print(
                f"  split-K: faster {faster}, costs more energy {costlier} -> "
                f"{'faster but more energy: FOUND' if faster and costlier else 'not the faster-but-costlier case'}"
            )
    if traces and traces[-1].evaluation and traces[-1].evaluation.clocks:
        c = traces[-1].evaluation.clocks
        print(
            f"last trace's clocks: locked {c.clocks_locked}, power limit {c.power_limit_w} W, "
            f"temperature at start {c.temperature_c_start} C, SM min {c.sm_clock_mhz_min} MHz"
        )
    if args.out is not None:
        args.out.write_text("".join(t.to_json() + "\n" for t in traces))
        print(f"traces: {args.out}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
