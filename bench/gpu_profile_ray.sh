#!/usr/bin/env bash
# Proof of `sweep profile` through the Ray path on a GPU host, in one device call:
#   bash bench/gpu_profile_ray.sh   (from the repo root; bundle in .gpu/ or ../shared/gpu-host)
# 1. `sweep launch` of the shipped rmsnorm/softmax/gemm solutions plus the planted out-of-bounds
#    CUDA rmsnorm (tests/data/profile/solutions), one workload per definition, embedded Ray.
# 2. `sweep profile CONFIG --tool both`: the default choice (best PASSED per definition x
#    workload x hardware), each task a Ray task on one GPU, under ncu and compute-sanitizer.
# 3. `sweep profile CONFIG --tool sanitizer --where "solution = 'rmsnorm_h1024_cuda_oob'"`.
# 4. bench/gpu_profile_ray_check.py reads the store: ncu rows for every chosen task (duration
#    against the sweep's latency), no sanitizer errors on the correct kernels, memcheck
#    findings on the planted one. Exit status non-zero when a step or check fails.
set -uo pipefail
source "$(dirname "$0")/gpu_site.sh"
cuda_tools_on_path
cat > "$OUT/profile-ray.yaml" <<YAML
name: gpu-profile-ray
dataset: [$REPO, $REPO/tests/data/profile]
hardware: auto
solutions:
  params:
    gemm_n512_k512_triton: {BLOCK_M: [32], BLOCK_N: [128], BLOCK_K: [64], num_warps: [4], num_stages: [3]}
    softmax_f32_triton: {BLOCK: [0], num_warps: [4]}
workloads: {limit_per_definition: 1}
output: {results_dir: $OUT/results}
YAML
rc=0
step() { echo "== $*"; "$@" 2>&1 | tee -a "$OUT/steps.log"; local s=${PIPESTATUS[0]}; echo "exit $s"; [ "$s" -eq 0 ] || rc=1; }
step python3 -m sweep.cli launch "$OUT/profile-ray.yaml"
step python3 -m sweep.cli profile "$OUT/profile-ray.yaml" --tool both
step python3 -m sweep.cli profile "$OUT/profile-ray.yaml" --tool sanitizer --where "solution = 'rmsnorm_h1024_cuda_oob'"
step python3 bench/gpu_profile_ray_check.py "$OUT/results/sweep.duckdb"
find "$OUT/results/profiles" -maxdepth 2 | head -40
echo "gpu_profile_ray: rc=$rc"
exit $rc
