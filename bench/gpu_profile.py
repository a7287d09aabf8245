"""Proof of ``sweep profile`` on a GPU, through the library (no Ray, no store query).

For rmsnorm_h1024 (definitions/, the shipped solutions) it evaluates, then profiles in
processes of their own (``sweep.launch.profile.profile_task``, the function ``sweep profile``
runs per task):

- ``rmsnorm_h1024_cuda`` and ``rmsnorm_h1024_triton`` on a large workload under ncu: the
  duration per call ncu measured (the kernels in the profiled range are the solution's only)
  against the latency the evaluation measured; within 10% passes;
- the same two and the planted ``rmsnorm_h1024_cuda_oob`` (tests/data/profile/solutions: one
  element past the end) on a small workload under compute-sanitizer's four tools: the planted
  one must have memcheck findings ("Invalid __global__ read"), the correct ones none at all.

Exit status 0 when every check holds. Artifacts (reports, logs, profile.duckdb) under --out.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLANTED = REPO / "tests" / "data" / "profile" / "solutions" / "rmsnorm_h1024_cuda_oob.json"
CORRECT = ("rmsnorm_h1024_cuda", "rmsnorm_h1024_triton")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--big", type=int, default=65536, help="batch_size of the ncu workload")
    parser.add_argument("--small", type=int, default=256, help="batch_size of the sanitizer workload")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=240.0, help="per tool run")
    args = parser.parse_args()

    import torch

    from sweep.engine import EngineCache, evaluate
    from sweep.launch.profile import find_tools, profile_task
    from sweep.plan.dataset import load_dataset
    from sweep.schema import EvalSettings, Solution, Workload
    from sweep.schema.hardware import short_name
    from sweep.schema.task import Task

    ds = load_dataset([str(REPO)])
    defn = ds.definitions["rmsnorm_h1024"]
    planted = Solution.model_validate_json(PLANTED.read_text(encoding="utf-8"))
    hardware = short_name(torch.cuda.get_device_name())
    settings = EvalSettings()
    cache = EngineCache()
    store = args.out / "profile.duckdb"
    ncu_tools = find_tools("ncu")
    san_tools = find_tools("sanitizer")
    failures: list[str] = []

    def workload(batch: int) -> Workload:
        return Workload.model_validate(
            {
                "uuid": f"bench-profile-b{batch}",
                "axes": {"batch_size": batch},
                "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
            }
        )

    def task(sol: Solution, batch: int) -> Task:
        return Task.make(
            defn, sol, workload(batch), settings, hardware, dataset_root=str(REPO), sweep="bench-profile"
        )

    def step(text: str) -> None:
        print(f"  .. {text}", flush=True)

    print(f"== ncu: duration per call against the sweep's latency (batch_size {args.big}, {hardware})")
    for name in CORRECT:
        t = task(ds.solutions[name], args.big)
        ev = evaluate(t, device="cuda", cache=cache).evaluation
        assert ev is not None
        if ev.status.value != "PASSED" or ev.performance is None:
            failures.append(f"{name}: evaluation {ev.status.value}: {ev.log[:300]}")
            continue
        t0 = time.perf_counter()
        prof = profile_task(
            t,
            ncu_tools,
            args.out / "profiles" / t.task_id,
            calls=args.calls,
            timeout_s=args.timeout,
            store_path=store,
            on_step=step,
        )
        kernels = prof.kernels or []
        per_call = sum(k.duration_ms or 0.0 for k in kernels) / args.calls
        latency = ev.performance.latency_ms
        ratio = per_call / latency if latency else float("inf")
        longest = max((k.duration_ms or 0.0 for k in kernels), default=0.0)
        print(
            f"{name}: {len(kernels)} kernel launch(es) in the range, ncu {per_call:.4f} ms per call "
            f"(longest kernel {longest * 1000:.1f} us), sweep latency {latency:.4f} ms, ratio {ratio:.3f} "
            f"[{time.perf_counter() - t0:.0f} s]"
        )
        for k in kernels[:1]:
            print(
                f"   {k.kernel[:70]}  SM {k.sm_throughput_pct}%  DRAM {k.dram_throughput_pct}%  "
                f"occupancy {k.achieved_occupancy_pct}%  regs {k.registers_per_thread}  smem {k.shared_mem_per_block}  "
                f"grid {k.grid_size} block {k.block_size}  {k.limiter}"
            )
        for p in prof.problems:
            print(f"   problem: {p}")
        if len(kernels) != args.calls:
            failures.append(f"{name}: {len(kernels)} kernels profiled, expected one per call ({args.calls})")
        if longest < 0.05:
            failures.append(f"{name}: longest kernel {longest * 1000:.1f} us < 50 us; use a larger --big")
        if not 0.9 <= ratio <= 1.1:
            failures.append(
                f"{name}: ncu {per_call:.4f} ms vs latency {latency:.4f} ms (ratio {ratio:.3f}, not within 10%)"
            )

    print(f"== compute-sanitizer: memcheck, racecheck, initcheck, synccheck (batch_size {args.small})")
    for sol in [*(ds.solutions[n] for n in CORRECT), planted]:
        t = task(sol, args.small)
        if sol.name == planted.name:
            # Not in this process: a read past the end of a caching-allocator segment may be an
            # illegal address, which would leave this process's CUDA context unusable.
            print(f"{sol.name}: not evaluated here (planted out-of-bounds read)")
        else:
            ev = evaluate(t, device="cuda", cache=cache).evaluation
            assert ev is not None
            print(f"{sol.name}: evaluation {ev.status.value}")
        t0 = time.perf_counter()
        prof = profile_task(
            t,
            san_tools,
            args.out / "profiles" / t.task_id,
            calls=2,
            timeout_s=args.timeout,
            store_path=store,
            on_step=step,
        )
        for r in prof.sanitizer:
            print(f"   {r.tool}: {r.errors} error(s)")
            for f in r.findings:
                print(f"     {f.count} x {f.kind} in {f.kernel}: {f.first_message}")
        for p in prof.problems:
            print(f"   problem: {p}")
        print(f"   [{time.perf_counter() - t0:.0f} s]")
        tools = {r.tool: r for r in prof.sanitizer}
        if sol.name == planted.name:
            memcheck = tools.get("memcheck")
            found = memcheck is not None and any(
                f.kind.startswith("Invalid __global__ read") for f in memcheck.findings
            )
            if not found:
                failures.append(f"{sol.name}: memcheck did not report the planted out-of-bounds read")
        else:
            if len(tools) != 4:
                failures.append(f"{sol.name}: {len(tools)} of 4 sanitizer reports parsed: {prof.problems}")
            noisy = [f"{r.tool}: {r.errors}" for r in prof.sanitizer if r.errors]
            if noisy:
                failures.append(f"{sol.name}: errors reported for a correct kernel ({', '.join(noisy)})")

    print("== verdict")
    for f in failures:
        print(f"FAIL {f}")
    print("gpu_profile: all checks hold" if not failures else f"gpu_profile: {len(failures)} check(s) failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
