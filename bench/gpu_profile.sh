#!/usr/bin/env bash
# Proof of `sweep profile` on the lent GPU host, in one device call (no Ray):
#   bash bench/gpu_profile.sh   (from the repo root; bundle in .gpu/ or ../shared/gpu-host)
# Needs torch, triton, ncu and compute-sanitizer on the host (ray/duckdb/pydantic come from
# the bundle via bench/gpu_site.sh). Runs the GPU tests of profile mode, then
# bench/gpu_profile.py: ncu's duration per call of the shipped CUDA and Triton rmsnorm against
# the sweep's latency (within 10%), and compute-sanitizer's four tools on them (no errors) and
# on a planted out-of-bounds kernel (memcheck reports it). Logs and reports go to $OUT.
set -uo pipefail
source "$(dirname "$0")/gpu_site.sh"
cuda_tools_on_path
rc=0
echo "== GPU tests (pytest -m gpu tests/engine/test_gpu_profile.py)"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/engine/test_gpu_profile.py 2>&1 | tee "$OUT/pytest_gpu_profile.log" | tail -n 15
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
echo "== bench/gpu_profile.py"
python3 bench/gpu_profile.py --out "$OUT" 2>&1 | tee "$OUT/gpu_profile.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
echo "gpu_profile: rc=$rc"
exit $rc
