"""A GEMM that caches its output by input content, on the device, against the engine; and
what fresh input values cost per timed call.

The cheat (a Triton kernel, ``x @ w.T`` in fp16): a first kernel compares 16 elements of
the inputs with those of the previous call and sets a flag, on the device, with no host
synchronization; the GEMM kernel then copies its remembered output when the flag is set
and computes (and remembers) otherwise. The honest kernel is the same GEMM, flag never set.
Both are evaluated with one input set (the case where rotating sets gives no protection)
under each timer; the table shows status, latency, speedup over ``torch.matmul`` and how
many calls the cache served (0 means every timed call computed: timed at its real cost).

Then the cost of the fresh values (``_fresh.Freshener``: a uniform draw into each input
drawn at random) against a copy of the same bytes, per call, for input sizes from 4 KB to
256 MB, with CUDA events (20 back-to-back calls between two events, median of 11).

Usage (on the device machine, from the repository root, after ``source bench/gpu_site.sh``):

    python3 bench/gpu_content_cache.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, EvalSettings, Solution, Task, Workload

KERNEL = """
import torch
import triton
import triton.language as tl

CACHE = {cache}
_state = {{}}


@triton.jit
def _fingerprint(x_ptr, w_ptr, fp_ptr, flag_ptr):
    offs = tl.arange(0, 8)
    vx = tl.load(x_ptr + offs).to(tl.float32)
    vw = tl.load(w_ptr + offs).to(tl.float32)
    same = tl.sum((vx == tl.load(fp_ptr + offs)).to(tl.int32), axis=0)
    same += tl.sum((vw == tl.load(fp_ptr + 8 + offs)).to(tl.int32), axis=0)
    tl.store(flag_ptr, (same == 16).to(tl.int32))
    tl.store(fp_ptr + offs, vx)
    tl.store(fp_ptr + 8 + offs, vw)


@triton.jit
def _gemm(x_ptr, w_ptr, out_ptr, memo_ptr, flag_ptr, hits_ptr, M, N, K,
          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    if tl.load(flag_ptr) == 1:
        tl.store(out_ptr + offs, tl.load(memo_ptr + offs, mask=mask), mask=mask)
        if (pid_m == 0) & (pid_n == 0):
            tl.atomic_add(hits_ptr, 1)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(x_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
            b = tl.load(w_ptr + rn[None, :] * K + (k + rk)[:, None], mask=rn[None, :] < N, other=0.0)
            acc += tl.dot(a, b)
        c = acc.to(tl.float16)
        tl.store(out_ptr + offs, c, mask=mask)
        tl.store(memo_ptr + offs, c, mask=mask)


def run(x, w):
    M, K = x.shape
    N = w.shape[0]
    if "memo" not in _state:
        _state["memo"] = torch.empty((M, N), dtype=torch.float16, device=x.device)
        _state["fp"] = torch.full((16,), float("nan"), device=x.device)
        _state["flag"] = torch.zeros(1, dtype=torch.int32, device=x.device)
        _state["hits"] = torch.zeros(1, dtype=torch.int32, device=x.device)
    out = torch.empty((M, N), dtype=torch.float16, device=x.device)
    if CACHE:
        _fingerprint[(1,)](x, w, _state["fp"], _state["flag"])
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    _gemm[grid](x, w, out, _state["memo"], _state["flag"], _state["hits"], M, N, K,
                BM=128, BN=128, BK=32, num_warps=8, num_stages=3)
    return out
"""

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (512, 512, 512)]
TIMERS = ("auto", "events", "cudagraph")


def records(m: int, n: int, k: int, cache: bool) -> tuple[Definition, Solution, Workload]:
    """The GEMM definition (reference ``torch.matmul``), the Triton solution, one workload."""
    name = f"gemm_f16_m{m}_n{n}_k{k}"
    defn = Definition.model_validate(
        {
            "name": name,
            "op_type": "gemm",
            "axes": {
                "M": {"type": "const", "value": m},
                "N": {"type": "const", "value": n},
                "K": {"type": "const", "value": k},
            },
            "inputs": {
                "x": {"shape": ["M", "K"], "dtype": "float16"},
                "w": {"shape": ["N", "K"], "dtype": "float16"},
            },
            "outputs": {"out": {"shape": ["M", "N"], "dtype": "float16"}},
            "reference": "import torch\n\ndef run(x, w):\n    return x @ w.T\n",
            "flops": "2 * M * N * K",
        }
    )
    sol = Solution.model_validate(
        {
            "name": f"{name}_{'content_cache' if cache else 'honest'}",
            "definition": name,
            "author": "bench",
            "spec": {
                "language": "triton",
                "target_hardware": ["gpu"],
                "entry_point": "main.py::run",
                "destination_passing_style": False,
            },
            "sources": [{"path": "main.py", "content": KERNEL.format(cache=cache)}],
        }
    )
    wl = Workload.model_validate(
        {"uuid": f"bench-{name}", "axes": {}, "inputs": {"x": {"type": "random"}, "w": {"type": "random"}}}
    )
    return defn, sol, wl


def fresh_cost() -> list[list[str]]:
    """Per call: a fresh uniform draw into a tensor against a copy of its bytes."""
    import torch

    from sweep.engine.timing import Freshener

    fresh = Freshener(torch.device("cuda"), 0)
    rows = [["input bytes", "fresh draw", "copy", "draw/copy"]]
    for size in (4 << 10, 256 << 10, 4 << 20, 64 << 20, 256 << 20):
        t = torch.empty(size // 2, dtype=torch.float16, device="cuda")
        src = torch.empty_like(t)
        times: dict[str, float] = {}
        work = {
            "draw": lambda t=t: fresh.uniform(t, -1.0, 1.0),
            "copy": lambda t=t, src=src: t.copy_(src),
        }
        for what, fn in work.items():
            for _ in range(5):
                fn()
            samples = []
            for _ in range(11):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(20):  # back to back: the device time of one, not the launch gap
                    fn()
                b.record()
                b.synchronize()
                samples.append(a.elapsed_time(b) / 20)
            times[what] = statistics.median(samples)
        rows.append(
            [
                f"{size / (1 << 20):.3f} MiB",
                f"{times['draw'] * 1e3:.1f} us",
                f"{times['copy'] * 1e3:.1f} us",
                f"{times['draw'] / times['copy']:.2f}",
            ]
        )
    return rows


def show(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def main() -> int:
    import torch

    from sweep.schema.hardware import short_name

    hardware = short_name(torch.cuda.get_device_name())
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    rows = [["kernel", "timer", "status", "latency", "speedup", "TFLOP/s", "cache hits", "calls checked"]]
    for m, n, k in SHAPES:
        for cache in (False, True):
            defn, sol, wl = records(m, n, k, cache)
            for timer in TIMERS:
                engine_cache = EngineCache()
                task = Task.make(
                    defn, sol, wl, EvalSettings(timer=timer, input_sets=1), hardware, sweep="bench"
                )
                trace = evaluate(task, device="cuda", cache=engine_cache)
                ev = trace.evaluation
                assert ev is not None
                fn = next(b.fn for key, b in engine_cache.solutions.items() if key.startswith("sol:"))  # type: ignore[union-attr]
                state = fn.__globals__["_state"]
                hits = int(state["hits"].item()) if "hits" in state else -1
                perf, tm = ev.performance, ev.timing
                first = ev.log.splitlines()[0] if ev.log else ""
                checked = (
                    first.split(" timed call(s)")[0].rsplit(" ", 1)[-1] if "timed call(s)" in first else "-"
                )
                rows.append(
                    [
                        sol.name,
                        f"{timer}->{tm.timer}" if tm else timer,
                        ev.status.value,
                        f"{perf.latency_ms * 1e3:.1f} us" if perf else "-",
                        f"{perf.speedup_factor:.3f}" if perf else "-",
                        f"{perf.tflops:.0f}" if perf and perf.tflops else "-",
                        str(hits),
                        checked,
                    ]
                )
                if ev.status.value != "PASSED":
                    print(f"{sol.name} {timer}: {first[:300]}")
                del engine_cache
                torch.cuda.empty_cache()
    show(rows)
    print()
    print("cost of fresh values per timed call (outside the timed window), fp16 tensors:")
    show(fresh_cost())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
