#!/usr/bin/env bash
# Is the plain loop's spread on a GPU host where its process runs (core placement) or the host
# drifting over time? The loop of bench/launch_overhead.py (1,000 evaluations), 5 rounds,
# alternately unpinned and pinned to core 5 (taskset). Run from the repository root on the
# device machine, with the offline bundle in .gpu/.
set -euo pipefail
source "$(dirname "$0")/gpu_site.sh"
python3 - <<'PY'
import sys, os, subprocess, tempfile, json, time
sys.path.insert(0, "bench")
from pathlib import Path
import launch_overhead as lo
import torch
from sweep.schema.hardware import short_name
t = short_name(torch.cuda.get_device_name(0))
tmp = Path(tempfile.mkdtemp())
lo.write_dataset(tmp/"data", 1000); cfg = tmp/"b.yaml"; lo.write_config(cfg, tmp/"data", tmp/"res", t, 1.0)
env = {**os.environ, "BENCH_DEVICE": "cuda", "BENCH_TARGET": t, "CUDA_VISIBLE_DEVICES": "0"}
res = {"free": [], "pinned": []}
for i in range(5):
    for mode in ("free", "pinned"):
        pre = ["taskset", "-c", "5"] if mode == "pinned" else []
        p = subprocess.run(pre + [sys.executable, "-c", lo._LOOP, str(cfg)], env=env, capture_output=True, text=True)
        res[mode].append(round(json.loads(p.stdout.strip().splitlines()[-1])["evals_s"], 3))
        print(mode, res[mode][-1], flush=True)
for k, v in res.items():
    print(k, sorted(v), "spread %.1f%%" % ((max(v)-min(v))/sorted(v)[2]*100))
PY
