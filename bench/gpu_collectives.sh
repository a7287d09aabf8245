#!/usr/bin/env bash
# The shipped collectives on this host's GPUs (2, and 4 when there are): sweep's statuses,
# latencies and bus bandwidth beside torch.distributed's own figures, then a wrong result, a
# crash and a hang on rank 1. Writes $OUT/collectives.log and $OUT/collectives.json (or into
# bench/results/ when OUT is unset). NVLink multicast stays off (NCCL_NVLS_ENABLE=0, also in
# every process started); what else the host sets for NCCL and torch is left as it is.
set -euo pipefail
OUT=${OUT:-$(cd "$(dirname "$0")" && pwd)/results}  # absolute: gpu_site.sh changes folder
source "$(dirname "$0")/gpu_site.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
WORLDS=2
if [ "$GPUS" -ge 4 ]; then WORLDS=2,4; fi
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    env | grep -E '^(NCCL|TORCH|NVSHMEM)_' | sort || true
    python3 bench/gpu_collectives.py --device cuda --worlds "$WORLDS" --json "$OUT/collectives.json" "$@"
} 2>&1 | tee "$OUT/collectives.log"
