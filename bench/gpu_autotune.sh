#!/usr/bin/env bash
# bench/gpu_autotune.py on a GPU host, in one device call (bundle in .gpu/ or ../shared/gpu-host):
#   bash bench/gpu_autotune.sh [--grid small|full] [--no-pool] [--m 8192]
set -uo pipefail
source "$(dirname "$0")/gpu_site.sh"
nproc; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader || true
echo "== GPU tests of compile ahead (pytest -m gpu tests/engine/test_gpu_compile_ahead.py)"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/engine/test_gpu_compile_ahead.py 2>&1 | tail -n 15
rc=${PIPESTATUS[0]}
python3 bench/gpu_autotune.py --out "$OUT" "$@" || rc=1
exit $rc
