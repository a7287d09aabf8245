#!/usr/bin/env bash
# kernel-sweep against FlashInfer-Bench's own runner on one GPU (bench/gpu_flashinfer_parity.py),
# on the repository's shipped dataset, tests/data/real/flashinfer-trace and, when present,
# upstream's example dataset (a folder of that layout named by $UPSTREAM_EXAMPLE).
# The upstream wheels (flashinfer-bench from PyPI, apache-tvm-ffi, docstring-parser,
# safetensors) are installed from $WHEELS (default .gpu/wheels) into a folder of their own.
# Usage: bash bench/gpu_parity.sh [extra args of gpu_flashinfer_parity.py]
set -euo pipefail
source "$(dirname "$0")/gpu_site.sh"
WHEELS=${WHEELS:-.gpu/wheels}
FIB_SITE=${FIB_SITE:-/tmp/fib-site}
if ! PYTHONPATH="$FIB_SITE" python3 -c "import flashinfer_bench, tvm_ffi" 2>/dev/null; then
    mkdir -p "$FIB_SITE"
    for w in "$WHEELS"/flashinfer_bench-*.whl "$WHEELS"/apache_tvm_ffi-*.whl \
             "$WHEELS"/docstring_parser-*.whl "$WHEELS"/safetensors-*.whl "$WHEELS"/cupti_python-*.whl; do
        python3 -m zipfile -e "$w" "$FIB_SITE"
    done
fi
export PYTHONPATH="$FIB_SITE:$PYTHONPATH"
if ! command -v ninja >/dev/null 2>&1 && ls "$WHEELS"/ninja-*.whl >/dev/null 2>&1; then
    # tvm_ffi.cpp.build runs ninja; a wheel unpacked by zipfile loses the executable bit
    python3 -m zipfile -e "$WHEELS"/ninja-*.whl /tmp/ninja-site
    chmod +x /tmp/ninja-site/ninja/data/bin/ninja
    export PATH="/tmp/ninja-site/ninja/data/bin:$PATH"
fi
datasets=(--dataset . --dataset tests/data/real/flashinfer-trace)
if [ -n "${UPSTREAM_EXAMPLE:-}" ] && [ -d "$UPSTREAM_EXAMPLE" ]; then
    datasets+=(--dataset "$UPSTREAM_EXAMPLE")
fi
python3 bench/gpu_flashinfer_parity.py "${datasets[@]}" "$@"
