#!/usr/bin/env bash
# The proof of "measurement you can trust", in one run on one GPU (the device machine, from the
# repository root): the engine's timers against do_bench and a flushed graph reference, kernels
# from ~1 us to ~3 ms (gpu_timing.py); the identity speedups over real BackendBench rows
# (gpu_backendbench.py); a GEMM that caches its output by content, and what fresh values cost
# (gpu_content_cache.py). Usage: bash bench/gpu_measurement.sh [OUTDIR]
set -euo pipefail
source "$(dirname "$0")/gpu_site.sh"
OUTDIR=${1:-${OUT:-/tmp}}
echo "== commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "== timers (bench/gpu_timing.py)"
python3 bench/gpu_timing.py
echo "== identity speedups over real BackendBench rows (bench/gpu_backendbench.py)"
python3 bench/gpu_backendbench.py --out "$OUTDIR/backendbench.jsonl"
echo "== a GEMM that caches by content; the cost of fresh values (bench/gpu_content_cache.py)"
python3 bench/gpu_content_cache.py
