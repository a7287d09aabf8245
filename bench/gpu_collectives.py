"""Collectives and fused communication kernels: sweep's figures beside torch.distributed's own.

For every shipped distributed definition (definitions/collective/), every solution and every
workload of the world sizes asked for, the task runs as sweep runs it (``run_gang``: one sandbox
process per rank, lockstep timing, the slowest rank's latency, nccl-tests' algbw and busbw).
Beside it, the bench times the definition's collective alone at the same message size with
plain ``torch.distributed`` in processes of its own, as nccl-tests does (warm-up, then
``--iters`` calls back to back between two barriers, the mean per call, the slowest rank's),
and prints both bus bandwidths and their ratio. Then one task per failure kind (a wrong result,
a crash and a hang on rank 1) shows the status and the rank blamed.

NCCL_NVLS_ENABLE=0 (and torch's and NVSHMEM's multicast switches) are set for this process and
so for every process it starts; every other NCCL/torch variable the host sets is inherited as
it is. No multicast object is ever made.

    python bench/gpu_collectives.py --device cpu --worlds 2          # gloo, small sizes (CI-sized)
    bash bench/gpu_collectives.sh                                    # GPUs: NCCL, all sizes
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sweep.sandbox.gang import MULTICAST_OFF_ENV

os.environ.update(dict(MULTICAST_OFF_ENV))  # before anything could start NCCL, here or in children

_FAILING = {
    "wrong_on_1": "    y.copy_(x)\n    dist.all_reduce(y)\n    if dist.get_rank() == 1:\n        y.add_(1.0)\n",
    "crash_on_1": "    if dist.get_rank() == 1:\n        os._exit(3)\n    y.copy_(x)\n    dist.all_reduce(y)\n",
    "hang_on_1": "    if dist.get_rank() == 1:\n        time.sleep(3600)\n    y.copy_(x)\n    dist.all_reduce(y)\n",
}


def _settings(device: str, run_s: float):  # type: ignore[no-untyped-def]
    from sweep.schema import EvalSettings, Timeouts

    if device == "cpu":
        return EvalSettings(
            trials=1, warmup_ms=0, rep_ms=5, min_iterations=3, max_iterations=10, input_sets=1,
            timeouts=Timeouts(compile_s=60, run_s=run_s),
        )  # fmt: skip
    return EvalSettings(
        trials=2, warmup_ms=50, rep_ms=200, min_iterations=10, max_iterations=200, input_sets=1,
        timeouts=Timeouts(compile_s=120, run_s=run_s),
    )  # fmt: skip


def _tasks(device: str, worlds: list[int], run_s: float, names: list[str], max_bytes: float | None):  # type: ignore[no-untyped-def]
    from sweep.cluster.gang_sched import placement_problem
    from sweep.plan.dataset import load_dataset
    from sweep.schema.distributed import full_axes
    from sweep.schema.expr import eval_number
    from sweep.schema.task import Task

    ds = load_dataset([REPO])
    hardware = "CPU" if device == "cpu" else _gpu_name()
    out, skipped = [], []
    for d in sorted(ds.definitions.values(), key=lambda d: d.name):
        if d.distributed is None or (names and d.name not in names):
            continue
        sols = sorted((s for s in ds.solutions.values() if s.definition == d.name), key=lambda s: s.name)
        for w in ds.workloads[d.name]:
            if w.axes.get("W") not in worlds:
                continue
            if (
                max_bytes is not None
                and eval_number(d.distributed.message_bytes or "0", full_axes(d.distributed, w.axes))
                > max_bytes
            ):
                continue
            for s in sols:
                task = Task.make(d, s, w, _settings(device, run_s), hardware)
                problem = placement_problem(task, None)
                if problem is None:
                    out.append((task, problem))
                elif s is sols[0]:  # said once per workload
                    skipped.append((task, problem))
    return out, skipped


def _gpu_name() -> str:
    import torch

    from sweep.schema.hardware import short_name

    return short_name(torch.cuda.get_device_name(0))


def _failing_tasks(device: str, world: int):  # type: ignore[no-untyped-def]
    from sweep.plan.dataset import load_dataset
    from sweep.schema import Solution
    from sweep.schema.task import Task

    ds = load_dataset([REPO])
    d = ds.definitions["all_reduce_sum_f32"]
    w = next(w for w in ds.workloads[d.name] if w.axes == {"n": 1024, "W": world})
    out = []
    for kind, body in _FAILING.items():
        src = "import os\nimport time\n\nimport torch.distributed as dist\n\n\ndef run(x, y):\n" + body
        sol = Solution.model_validate(
            {
                "name": f"ar_{kind}", "definition": d.name, "author": "bench",
                "spec": {"language": "python", "target_hardware": ["*"], "entry_point": "main.py::run",
                         "destination_passing_style": True},
                "sources": [{"path": "main.py", "content": src}],
            }
        )  # fmt: skip
        hardware = "CPU" if device == "cpu" else _gpu_name()
        out.append((kind, Task.make(d, sol, w, _settings(device, 15.0), hardware)))
    return out


# -- plain torch.distributed, nccl-tests style ------------------------------------------------


def _plain_rank(
    rank: int, world: int, store: str, device: str, jobs: list[tuple[str, int]], iters: int, q
) -> None:  # type: ignore[no-untyped-def]
    import torch
    import torch.distributed as dist

    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda":
        torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank) if device == "cuda" else torch.device("cpu")
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    results = {}
    for collective, size in jobs:
        dtype = torch.float32 if collective == "all_reduce" else torch.bfloat16
        count = size // (4 if dtype == torch.float32 else 2)
        if collective == "all_reduce":
            buf = torch.ones(count, dtype=dtype, device=dev)
            call = functools.partial(dist.all_reduce, buf)
        elif collective == "all_gather":  # size: the gathered buffer, as nccl-tests counts it
            out = torch.empty(count, dtype=dtype, device=dev)
            inp = torch.ones(count // world, dtype=dtype, device=dev)
            call = functools.partial(gather, out, inp)
        else:  # reduce_scatter: size is the input
            inp = torch.ones(count, dtype=dtype, device=dev)
            out = torch.empty(count // world, dtype=dtype, device=dev)
            call = functools.partial(dist.reduce_scatter_tensor, out, inp)
        for _ in range(3):
            call()
        if device == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        if device == "cuda":
            torch.cuda.synchronize()
        per_call = (time.perf_counter() - t0) / iters
        t = torch.tensor([per_call], dtype=torch.float64, device=dev if backend == "nccl" else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        results[f"{collective}:{size}"] = float(t.item())
    dist.destroy_process_group()
    if rank == 0:
        q.put(results)


def plain_times(device: str, world: int, jobs: list[tuple[str, int]], iters: int) -> dict[str, float]:
    """Seconds per call of each (collective, size) by torch.distributed alone, slowest rank."""
    import multiprocessing as mp

    from sweep.sandbox.gang import meeting_file

    ctx = mp.get_context("spawn")  # children inherit this process's environment (multicast off)
    q = ctx.Queue()
    with meeting_file() as store:
        procs = [
            ctx.Process(target=_plain_rank, args=(r, world, str(store), device, jobs, iters, q))
            for r in range(world)
        ]
        for p in procs:
            p.start()
        try:
            got: dict[str, float] = q.get(timeout=1800)
        finally:
            for p in procs:
                p.join(timeout=60)
                if p.is_alive():
                    p.kill()
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--worlds", default="2", help="world sizes, comma-separated (e.g. 2,4)")
    ap.add_argument(
        "--iters", type=int, default=20, help="timed calls of the plain torch.distributed baseline"
    )
    ap.add_argument("--run-s", type=float, default=300.0, help="each rank's run deadline")
    ap.add_argument("--definitions", default="", help="only these definitions, comma-separated")
    ap.add_argument("--max-bytes", type=float, help="only workloads whose message is at most this many bytes")
    ap.add_argument("--no-failures", action="store_true", help="skip the wrong/crash/hang cases")
    ap.add_argument("--json", type=Path, help="write every row here as JSON too")
    args = ap.parse_args(argv)
    worlds = [int(w) for w in args.worlds.split(",") if w]
    if args.device == "cuda":
        import torch

        have = torch.cuda.device_count()
        if have < max(worlds):
            print(f"only {have} GPUs visible; world sizes above it left out")
            worlds = [w for w in worlds if w <= have]
    from sweep.sandbox.gang import GangZygote, run_gang
    from sweep.sandbox.supervisor import SandboxSpec
    from sweep.schema.distributed import bus_factor

    spec = SandboxSpec(device_kind=args.device)
    print(f"device={args.device} worlds={worlds} NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}")
    names = [n for n in args.definitions.split(",") if n]
    tasks, skipped = _tasks(args.device, worlds, args.run_s, names, args.max_bytes)
    for task, why in skipped:
        print(f"left out {task.definition.name} {task.workload.axes}: {why}")
    rows = []
    with GangZygote(spec) as zygote:
        for task, _ in tasks:
            t0 = time.monotonic()
            trace = run_gang(task, spec, zygote=zygote)
            ev = trace.evaluation
            d = ev.distributed if ev else None
            rows.append(
                {
                    "definition": task.definition.name, "solution": task.solution.name,
                    "world": d.world_size if d else None, "collective": d.collective if d else None,
                    "bytes": d.message_bytes if d else None, "status": ev.status.value if ev else "?",
                    "latency_ms": ev.performance.latency_ms if ev and ev.performance else None,
                    "ref_ms": ev.performance.reference_latency_ms if ev and ev.performance else None,
                    "busbw": d.busbw_gbps if d else None, "straggler": d.straggler_rank if d else None,
                    "wall_s": round(time.monotonic() - t0, 1),
                    "axes": dict(task.workload.axes),
                    # the whole merged log (the failing rank's, then the others'), clipped
                    "log": ev.log[:8000] if ev and ev.status.value != "PASSED" else "",
                }
            )  # fmt: skip
        baseline: dict[tuple[int, str, float], float] = {}
        for world in worlds:
            jobs = sorted(
                {(r["collective"], int(r["bytes"])) for r in rows if r["world"] == world and r["bytes"]}
            )
            for key, secs in plain_times(args.device, world, jobs, args.iters).items():
                coll, size = key.split(":")
                baseline[(world, coll, float(size))] = float(size) / secs / 1e9 * bus_factor(coll, world)
        print()
        head = f"{'definition':<20} {'solution':<26} {'W':>2} {'size':>11} {'status':<20} {'latency_ms':>11} {'ref_ms':>10} {'busbw GB/s':>10} {'torch.dist busbw':>16} {'ratio':>6}"
        print(head)
        print("-" * len(head))
        for r in rows:
            plain = baseline.get((r["world"], r["collective"], r["bytes"]))
            r["torch_busbw"] = plain
            ratio = r["busbw"] / plain if r["busbw"] and plain else None
            print(
                f"{r['definition']:<20} {r['solution']:<26} {r['world'] or '':>2} {_size(r['bytes']):>11} {r['status']:<20} "
                f"{_num(r['latency_ms']):>11} {_num(r['ref_ms']):>10} {_num(r['busbw']):>10} {_num(plain):>16} {_num(ratio):>6}"
            )
        print("\nbusbw: sweep's (the slowest rank's median call, whole fused kernel for ag_gemm/gemm_rs);"
              " torch.dist busbw: the collective alone at the same size, mean of back-to-back calls (nccl-tests style)")  # fmt: skip
        failed = [r for r in rows if r["status"] != "PASSED"]
        if failed:
            print("\nwhy each failure failed (the failing rank's log, its first lines):")
        for r in failed:
            lines = [ln.strip() for ln in r["log"].splitlines() if ln.strip()]
            print(f"  {r['solution']} {r['axes']}: " + " | ".join(x[:200] for x in lines[:6]))
        if not args.no_failures:
            print("\nfailing on rank 1 (all_reduce_sum_f32, 4 KiB):")
            for kind, task in _failing_tasks(args.device, min(worlds)):
                t0 = time.monotonic()
                trace = run_gang(task, spec, zygote=zygote, grace_s=3.0)
                ev = trace.evaluation
                d = ev.distributed if ev else None
                print(
                    f"  {kind:<11} status={ev.status.value if ev else '?':<20} failed_rank={d.failed_rank if d else None} "
                    f"in {time.monotonic() - t0:.1f}s  log: {(ev.log.splitlines() or [''])[0][:150] if ev else ''}"
                )
                rows.append({"case": kind, "status": ev.status.value if ev else None, "failed_rank": d.failed_rank if d else None})  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _size(b: float | None) -> str:
    if not b:
        return "-"
    for unit, n in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= n:
            return f"{b / n:g} {unit}"
    return f"{b:g} B"


if __name__ == "__main__":
    raise SystemExit(main())
