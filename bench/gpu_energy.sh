#!/usr/bin/env bash
# Proof of issue 34 (energy per call, clocks in every trace) on a GPU host (the device machine;
# run from the repository root):
#
#   bash bench/gpu_energy.sh [bench|cpu|tests|all]   # default: all
#
# bench: bench/gpu_energy.py --device cuda: GEMM and softmax at two sizes each, 3 repeats,
#        and a split-K GEMM against the plain one (faster but more energy?)
# cpu:   the same script on the CPU: PASSED with energy empty and the reason
# tests: the clock tests, and the GPU tests: clocks in a trace, an evaluation with energy
#
# Energy needs the pynvml module (nvidia-ml-py, pure Python). The offline host's bundle does not
# carry it: when it is not importable, a wheel is unpacked into the site folder from
# $SWEEP_NVML_WHEEL or .gpu/nvidia_ml_py-*.whl (fetch it on a machine with an index:
#   pip download --no-deps -d .gpu nvidia-ml-py ).
set -uo pipefail
source "$(dirname "$0")/gpu_site.sh"
if ! python3 -c "import pynvml" 2>/dev/null; then
    whl=${SWEEP_NVML_WHEEL:-$(ls "$REPO"/.gpu/nvidia_ml_py-*.whl 2>/dev/null | head -1)}
    if [ -n "$whl" ] && [ -f "$whl" ]; then
        python3 -m zipfile -e "$whl" "$SITE" && echo "pynvml: unpacked $whl into $SITE"
    else
        echo "pynvml: NOT importable and no wheel found: energy will be empty (the bench says why)"
    fi
fi
python3 -c "import pynvml; print('pynvml', pynvml.__file__)" 2>/dev/null || true
what=${1:-all}
python3 -c "import torch; print('torch', torch.__version__, '|', torch.cuda.device_count(), 'x', torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv || true
status=0
if [[ $what == all || $what == bench ]]; then
    echo "== energy per call on the GPU"
    python3 bench/gpu_energy.py --device cuda --repeats 3 --out "$OUT/energy_traces.jsonl" || status=1
fi
if [[ $what == all || $what == cpu ]]; then
    echo "== the CPU path"
    python3 bench/gpu_energy.py --device cpu --repeats 1 || status=1
fi
if [[ $what == all || $what == tests ]]; then
    echo "== tests"
    python3 -m pytest -q -p no:cacheprovider tests/engine/test_clock_record.py \
        tests/engine/test_gpu_energy.py || status=1
fi
exit $status
