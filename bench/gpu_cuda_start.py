"""A task's CUDA start and end as GPUs are added: what the workers of one host share.

Each task of a sweep runs in a fresh process (``sweep.sandbox``), so each makes a CUDA context
when it starts and tears it down when it is killed. This bench does just that, without Ray or
the engine's evaluation: per GPU, a parent process (``CUDA_VISIBLE_DEVICES`` one GPU, torch
imported, no CUDA context: as a sandbox's zygote) forks ``--tasks`` children one after the
other. Each child makes its device ready (a variant's work, below), says so on a pipe and
holds ``--hold`` seconds (a task's evaluation); the parent then kills it and reaps it, as the
supervisor does. Timed per task: the start (fork to ready) and the end (the kill sent to the
child reaped, most of it the driver tearing the context down).

The same loop runs on 1 GPU alone, then on N GPUs at once (a parent each), variant by variant
in one run; the table gives the medians and the ratio of N GPUs to 1. A ratio well above 1 is
work the GPUs' processes share (the driver, not the GPU).

Variants:

- ``engine``: ``sweep.engine.start_process("cuda")``, what a sandbox does before it is ready
  (context, the allocator's first block, a few kernels, the cuBLAS handle);
- ``context``: a one-element tensor on the GPU (the context and the allocator's first block);
- ``no-blas``: the engine's work without the cuBLAS handle;
- any of them with ``-qN``, e.g. ``engine-q1``: with ``CUDA_DEVICE_MAX_CONNECTIONS=N`` (the
  hardware queues a context sets up; 8 by default).

Usage (GPU host, after ``source bench/gpu_site.sh``):
``python3 bench/gpu_cuda_start.py --gpus 4 --tasks 12``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VARIANTS = ("engine", "context", "no-blas", "engine-q1", "engine-q4")


def child_work(variant: str) -> None:
    """What a forked child does to make its device ready."""
    import torch

    variant = variant.split("-q")[0]
    if variant == "context":
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        return
    if variant == "engine":
        from sweep.engine import start_process

        start_process("cuda")
        return
    # no-blas: the engine's kernels, no cuBLAS handle
    x = torch.rand(4096, device="cuda")
    y = torch.empty_like(x).fill_(float("nan"))
    y.copy_(x)
    torch.softmax(x.view(64, 64), dim=-1).sum().item()
    torch.cuda.synchronize()


def parent(variant: str, tasks: int, hold: float, start_at: float) -> None:
    """One GPU's loop (run in a process of its own); prints its figures as one JSON line."""
    from sweep.engine import preload, prepare_process

    prepare_process("cuda")  # as the zygote: torch and the engine imported, no context
    preload("cuda")

    starts: list[float] = []
    ends: list[float] = []
    time.sleep(max(0.0, start_at - time.time()))  # the GPUs' loops begin together
    for _ in range(tasks + 1):  # the first is not counted
        r, w = os.pipe()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child_work(variant)
            os.write(w, b"1")
            time.sleep(3600)
            os._exit(0)
        os.close(w)
        if os.read(r, 1) != b"1":
            raise SystemExit(f"child {pid} died before it was ready")
        t1 = time.monotonic()
        time.sleep(hold)
        t2 = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        t3 = time.monotonic()
        os.close(r)
        starts.append(t1 - t0)
        ends.append(t3 - t2)
    print(json.dumps({"start": starts[1:], "end": ends[1:]}), flush=True)


def run(variant: str, gpus: list[int], tasks: int, hold: float, stagger: float) -> dict[str, list[float]]:
    """``variant``'s loop on each of ``gpus`` at once, the i-th begun ``i * stagger`` seconds
    after the first; every task's start and end seconds."""
    first = time.time() + 8.0  # after every parent has imported torch and the engine
    procs = []
    for i, g in enumerate(gpus):
        start_at = first + i * stagger
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(g))
        env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
        if "-q" in variant:
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = variant.split("-q")[1]
        args = [sys.executable, __file__, "--parent", variant, "--tasks", str(tasks), "--hold", str(hold)]
        procs.append(subprocess.Popen([*args, "--start-at", str(start_at)], env=env, stdout=subprocess.PIPE))
    out: dict[str, list[float]] = {"start": [], "end": []}
    for p in procs:
        stdout, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a GPU's loop failed (exit {p.returncode})")
        got = json.loads(stdout.decode().strip().splitlines()[-1])
        out["start"] += got["start"]
        out["end"] += got["end"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--gpus", type=int, default=4, help="how many GPUs at once, against 1")
    ap.add_argument("--tasks", type=int, default=12, help="tasks per GPU (after one not counted)")
    ap.add_argument(
        "--hold", type=float, default=0.7, help="seconds a task holds its process (its evaluation)"
    )
    ap.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}"
    )
    ap.add_argument(
        "--stagger", type=float, default=0.25, help="seconds between the GPUs' first tasks (0: in step)"
    )
    ap.add_argument("--json", type=Path, help="also write every task's figures here")
    ap.add_argument("--parent", help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parent:
        parent(args.parent, args.tasks, args.hold, args.start_at)
        return

    import torch

    have = torch.cuda.device_count()
    if have < 1:
        raise SystemExit("no CUDA GPU visible: this bench needs one")
    n = min(args.gpus, have)
    print(f"{have} x {torch.cuda.get_device_name(0)}; {os.cpu_count()} CPU cores; {n} GPUs at once against 1")
    print(
        f"{args.tasks} tasks per GPU, each holding its process {args.hold} s; GPUs begun {args.stagger} s apart"
    )
    rows = []
    figures: dict[str, dict[str, dict[str, list[float]]]] = {}
    for v in args.variants.split(","):
        one = run(v, [0], args.tasks, args.hold, 0.0)
        many = run(v, list(range(n)), args.tasks, args.hold, args.stagger)
        figures[v] = {"1": one, str(n): many}
        for what in ("start", "end"):
            a, b = statistics.median(one[what]), statistics.median(many[what])
            rows.append((v, what, a, b, b / a, max(many[what])))
    print()
    print(f"{'variant':<10} {'':<6} {'1 GPU ms':>9} {f'{n} GPUs ms':>10} {'ratio':>6} {f'max on {n}':>9}")
    for v, what, a, b, r, m in rows:
        print(f"{v:<10} {what:<6} {1000 * a:>9.0f} {1000 * b:>10.0f} {r:>5.2f}x {1000 * m:>9.0f}")
    print(
        "start: fork to ready (the context made); end: the kill sent to the child reaped (its context torn down)"
    )
    if args.json:
        args.json.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
