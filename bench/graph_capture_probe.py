"""A process's first CUDA-graph capture against its later ones, through the timer's own
``capture_graph`` on its capture stream, in fresh processes (run on a GPU host).

Each process first makes the device ready as a task's process does (``start_process``'s
kernels, without a graph), then captures four graphs of eight small kernels each and replays
each twice. Prints, per process and graph: capture ms, first replay ms, second replay ms.

Usage: ``python3 bench/graph_capture_probe.py [--processes 3]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CODE = r"""
import json, time, torch
from sweep.engine.timing import capture_graph, capture_stream
x = torch.rand(4096, device="cuda"); y = torch.empty_like(x).fill_(float("nan")); y.copy_(x)
torch.softmax(x.view(64, 64), dim=-1).sum().item(); torch.cuda.current_blas_handle(); torch.cuda.synchronize()
out = []
for i in range(4):
    t0 = time.perf_counter()
    s = capture_stream()
    with torch.cuda.stream(s):
        y.add_(1.0)
    def body():
        for _ in range(8):
            y.add_(1.0)
    g = capture_graph(body, s, None)
    t1 = time.perf_counter()
    g.replay(); s.synchronize()
    t2 = time.perf_counter()
    g.replay(); s.synchronize()
    t3 = time.perf_counter()
    out.append([round((t1 - t0) * 1e3, 3), round((t2 - t1) * 1e3, 3), round((t3 - t2) * 1e3, 3)])
    del g
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=3)
    args = ap.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    for r in range(args.processes):
        p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, check=False)
        print(
            f"process {r + 1}: [capture ms, first replay ms, second replay ms] per graph:",
            p.stdout.strip() or p.stderr[-800:],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
