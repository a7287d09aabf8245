# Sourced by the bench/gpu_*.sh scripts on the device machine (torch and triton there, no ray,
# duckdb or pydantic): unpacks the offline bundle site-py312.tar.xz once into $SWEEP_SITE
# (default /tmp/site) and puts it, and the checkout (`sweep` is not pip-installed there), on
# PYTHONPATH. The bundle is looked for at $SWEEP_SITE_BUNDLE, .gpu/, then ../shared/gpu-host/.
# It also does what each script needs first: REPO is the checkout (this file's folder's parent)
# and the working folder, and OUT (the folder a device call brings back; a new temporary one when
# unset) exists.
SITE=${SWEEP_SITE:-/tmp/site}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 2
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if ! PYTHONPATH="$SITE" python3 -c "import ray, duckdb, pydantic" 2>/dev/null; then
    _bundle=""
    for _c in "${SWEEP_SITE_BUNDLE:-}" "$REPO/.gpu/site-py312.tar.xz" "$REPO/shared/gpu-host/site-py312.tar.xz" \
              "$REPO/../shared/gpu-host/site-py312.tar.xz" /work/shared/gpu-host/site-py312.tar.xz; do
        if [ -n "$_c" ] && [ -f "$_c" ]; then _bundle=$_c; break; fi
    done
    if [ -z "$_bundle" ]; then
        echo "gpu_site: site-py312.tar.xz not found; set SWEEP_SITE_BUNDLE" >&2
        exit 2
    fi
    mkdir -p "$SITE"
    tar -xJf "$_bundle" -C "$SITE"
fi
# Bytecode, as a pip install leaves it: this host sets PYTHONDONTWRITEBYTECODE and the bundle,
# the checkout and the host's own site-packages come without .pyc files, so every fresh
# process compiled some 900 modules again (1.3 s of a launch's start on an H100 host). Python
# writes them under a cache folder of its own instead (the sources' folders stay untouched),
# the bundle's and the checkout's compiled here ahead.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/sweep-pycache}
if [ ! -f "$PYTHONPYCACHEPREFIX/.site-compiled" ]; then
    python3 -m compileall -q -j 0 "$SITE" >/dev/null 2>&1 || true
    mkdir -p "$PYTHONPYCACHEPREFIX" && touch "$PYTHONPYCACHEPREFIX/.site-compiled"
fi
python3 -m compileall -q "$REPO/sweep" >/dev/null 2>&1 || true
export PYTHONPATH="$SITE:$REPO:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
unset RAY_ADDRESS

# ncu and compute-sanitizer on PATH when the CUDA toolkit has them outside it (the GPU hosts keep
# them in /usr/local/cuda/bin); prints where each was found, or MISSING.
cuda_tools_on_path() {
    local tool d
    for tool in ncu compute-sanitizer; do
        if ! command -v "$tool" >/dev/null; then
            for d in /usr/local/cuda/bin /usr/local/cuda/nsight-compute*/ /opt/nvidia/nsight-compute/*/; do
                if [ -x "$d/$tool" ]; then export PATH="$PATH:$d"; break; fi
            done
        fi
        echo "$tool: $(command -v "$tool" || echo MISSING)"
    done
}
