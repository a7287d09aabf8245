#!/usr/bin/env bash
# Engine and BackendBench proof on the lent GPU host, in one device call:
#   bash bench/gpu_engine_proof.sh   (from the repo root; bundle in .gpu/ or ../shared/gpu-host)
# Runs the GPU tests of the suite, bench/gpu_engine.py (shipped rmsnorm/gemm/softmax solutions,
# PyTorch/Triton/CUDA, plus wrong and cheating ones) and bench/gpu_backendbench.py (imported
# BackendBench rows with an ATen-identity solution). Logs go to $OUT.
set -uo pipefail
source "$(dirname "$0")/gpu_site.sh"
rc=0
echo "== GPU tests (pytest -m gpu)"
python3 -m pytest -q -m gpu -p no:cacheprovider tests/engine tests/backendbench 2>&1 | tee "$OUT/pytest_gpu.log" | tail -n 25 || rc=1
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
echo "== bench/gpu_engine.py"
python3 bench/gpu_engine.py --out "$OUT/engine_traces.jsonl" 2>&1 | tee "$OUT/gpu_engine.log" || rc=1
echo "== bench/gpu_backendbench.py"
python3 bench/gpu_backendbench.py --out "$OUT/bb_traces.jsonl" 2>&1 | tee "$OUT/gpu_backendbench.log" || rc=1
echo "gpu_engine_proof: rc=$rc"
exit $rc
