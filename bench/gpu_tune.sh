#!/usr/bin/env bash
# bench/tune_strategies.py on a 4-GPU host in one device call (issue 33, point 5), each stage under
# a timeout of its own so a slow one cannot eat the others (a cut stage is named):
#   1. the large space's grid (8,496 points): compiled by a CPU process pool, timed on 4 GPUs,
#      saved to $OUT/large-grid.json (the deadline saves what is measured by then);
#   2. the shipped space (227 points) live on 1, 2 and 4 GPUs (its configs are a subset of the
#      large space's, so Triton's cache is warm; each run precompiles in a pool first anyway);
#   3. the replay of every strategy against the saved large grid (on this host's CPU).
# Kernel Tuner's rows come from the replay on any CPU afterwards (`--replay FILE
# --kernel-tuner-path DIR`), as it is not installed on the GPU host.
#   bash bench/gpu_tune.sh [--size 4096] [--budget 560]
set -uo pipefail
SIZE=4096
BUDGET=560
while [ $# -gt 0 ]; do
    case "$1" in
        --size) SIZE=$2; shift 2 ;;
        --budget) BUDGET=$2; shift 2 ;;
        *) echo "gpu_tune.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
source "$(dirname "$0")/gpu_site.sh"
echo "== host: $(nproc) CPUs; $(python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)')"
nvidia-smi --query-gpu=index,name,compute_cap,clocks.sm,clocks.max.sm --format=csv,noheader || true
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/tune-triton-cache}
TS="python3 bench/tune_strategies.py --device cuda --objective measured --size $SIZE"
rc=0
cut=()

# stage NAME LIMIT_S COMMAND...: runs it under `timeout`, its output to the screen and $OUT/NAME.log.
stage() {
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit} s; $(date +%T), ${SECONDS} s into the call)"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
    local st=${PIPESTATUS[0]}
    if [ "$st" = 124 ] || [ "$st" = 137 ]; then
        cut+=("$name (cut at its ${limit} s limit)")
        echo "== $name: CUT at its ${limit} s limit"
    elif [ "$st" != 0 ]; then
        rc=1
        echo "== $name: exit $st"
    fi
    echo "== $name took $((SECONDS - t0)) s"
}

left() { echo $((BUDGET - SECONDS)); }

if [ "$GPUS" -ge 4 ]; then G=4; else G=$GPUS; fi
# 1. The large grid: its own deadline 30 s inside the stage's limit, so it saves what it measured.
L=$(( $(left) - 230 ))
stage large-grid "$L" $TS --space large --gpus "$G" --save-grid "$OUT/large-grid.json" --no-replay \
    --deadline-s $((L - 30))
# 2. The shipped space live: 1, 2, 4 GPUs; @triton.autotune on the 1-GPU run only (it is one GPU's).
stage shipped-1gpu 110 $TS --space shipped --gpus 1 --seeds 3
[ "$G" -ge 2 ] && stage shipped-2gpu 55 $TS --space shipped --gpus 2 --seeds 3 --no-autotune
[ "$G" -ge 4 ] && stage shipped-4gpu 45 $TS --space shipped --gpus 4 --seeds 3 --no-autotune
# 3. The replay of the large grid (CPU only), whatever time is left.
if [ -f "$OUT/large-grid.json" ]; then
    stage large-replay "$(( $(left) > 15 ? $(left) : 15 ))" \
        python3 bench/tune_strategies.py --replay "$OUT/large-grid.json" --seeds 3 --replay-gpus 1,2,4
else
    cut+=("large-replay (no large-grid.json)")
fi
echo "== done in ${SECONDS} s; cut: ${cut[*]:-none}"
exit $rc
