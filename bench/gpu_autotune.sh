#!/usr/bin/env bash
# bench/gpu_autotune.py on a GPU host, in one device call (bundle in .gpu/ or ../shared/gpu-host):
#   bash bench/gpu_autotune.sh [--grid small|full] [--no-pool] [--m 8192]
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
source bench/gpu_site.sh
nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader || true
python3 bench/gpu_autotune.py --out "$OUT" "$@"
