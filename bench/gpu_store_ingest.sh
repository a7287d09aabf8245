#!/usr/bin/env bash
# Store ingest at 1M traces on the GPU host's CPUs: the product's ingest (spooled rows inserted
# SPOOL_BATCH_ROWS at a time) and its writing process alone, each against the same path with
# one row group a batch (before), in the same run; then the cross-hardware queries on the store
# it made. About 4 minutes on a 16-core host. Usage: bash bench/gpu_store_ingest.sh [args...]
# (extra args go to bench/store_ingest.py, e.g. --sizes 100000 for a quick look).
set -euo pipefail
source "$(dirname "$0")/gpu_site.sh"
echo "# $(date -u +%F) store_ingest on $(nproc) CPUs, $(python3 -c 'import duckdb, pyarrow; print("duckdb", duckdb.__version__, "pyarrow", pyarrow.__version__)'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
exec python3 bench/store_ingest.py --sizes 1000000 --repeat 3 --methods small,writer-small,writer "$@"
