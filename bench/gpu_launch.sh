#!/usr/bin/env bash
# Proof of `sweep launch` on a real GPU host (for the device machine; run from the repository root):
#
#   bash bench/gpu_launch.sh            # results and logs under $OUT (or a temporary folder)
#
# 1. Puts ray/duckdb/pydantic on PYTHONPATH from the offline bundle (site-py312.tar.xz), plus
#    the checkout itself (`sweep` is not pip-installed there: everything runs as
#    `python3 -m sweep.cli`).
# 2. Sweeps the shipped definitions/solutions (PyTorch, Triton, CUDA) on every GPU of this host
#    (embedded local Ray, hardware: auto = this host's GPU type), default evaluation settings.
# 3. Sweeps the fault solutions of tests/data/cluster (segfault, os._exit, raise, hang in run,
#    hang on import) plus a Triton kernel that makes an illegal memory access (gpu_faults),
#    with short timeouts: each must end with one trace of the right status, the worker's
#    sandbox replaced, the healthy ones PASSED.
# 4. Checks both sweeps' traces (bench/gpu_launch_check.py: statuses, one trace per task, a
#    new sandbox process after the illegal access, per-evaluation gaps on each GPU).
# 5. Launches the fault sweep again: everything is stored, nothing runs.
# 6. bench/launch_overhead.py --device cuda: 1,000 short evaluations, launch vs a plain loop,
#    OVERHEAD_ROUNDS rounds (default 5; 0 skips this step),
#    on one GPU.
# Exit status: non-zero when any step or check fails.
set -euo pipefail
source "$(dirname "$0")/gpu_site.sh"
python3 -c "import torch, triton, ray; print('torch', torch.__version__, 'triton', triton.__version__, \
'ray', ray.__version__, '|', torch.cuda.device_count(), 'x', torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw --format=csv || true

cat > "$OUT/shipped.yaml" <<EOF
name: gpu-shipped
dataset: [$REPO]
hardware: auto
output: {results_dir: $OUT/shipped}
EOF
cat > "$OUT/faults.yaml" <<EOF
name: gpu-faults
dataset: [$REPO/tests/data/cluster/faults, $REPO/tests/data/cluster/gpu_faults]
hardware: auto
evaluation:
  timeouts: {compile_s: 30, run_s: 20}
output: {results_dir: $OUT/faults}
EOF

echo "== 1. shipped definitions and solutions, every GPU of this host"
t0=$(date +%s.%N)
python3 -m sweep.cli launch "$OUT/shipped.yaml" 2>&1 | tee "$OUT/shipped.log"
t1=$(date +%s.%N)
echo "wall time of the command: $(python3 -c "print(f'{$t1 - $t0:.1f} s')")"

echo "== 2. fault solutions (segfault, exit, raise, hangs, Triton illegal memory access)"
t0=$(date +%s.%N)
python3 -m sweep.cli launch "$OUT/faults.yaml" 2>&1 | tee "$OUT/faults.log"
t1=$(date +%s.%N)
echo "wall time of the command: $(python3 -c "print(f'{$t1 - $t0:.1f} s')")"

echo "== 3. checks"
python3 bench/gpu_launch_check.py --shipped "$OUT/shipped" --faults "$OUT/faults"

echo "== 4. launching the fault sweep again runs nothing"
python3 -m sweep.cli launch "$OUT/faults.yaml" --quiet 2>&1 | tee "$OUT/faults-again.log"
grep -q "already stored (skipped), 0 ran" "$OUT/faults-again.log"

rounds=${OVERHEAD_ROUNDS:-5}
if [ "$rounds" -gt 0 ]; then
    echo "== 5. per-evaluation overhead on one GPU: 1,000 short evaluations, $rounds rounds"
    python3 bench/launch_overhead.py --device cuda --tasks 1000 --rounds "$rounds" --no-scheduler --crashes 10 2>&1 \
        | tee "$OUT/overhead.log"
fi
echo "gpu_launch: all steps passed; outputs in $OUT"
