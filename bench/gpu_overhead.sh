#!/usr/bin/env bash
# bench/launch_overhead.py on the device machine, from the repository root:
#   bash bench/gpu_overhead.sh --tasks 1000 --rounds 1 --default-settings --concurrent
# (every argument goes to launch_overhead.py; --device cuda is added).
set -euo pipefail
source "$(dirname "$0")/gpu_site.sh"
python3 -c "import torch, ray; print('torch', torch.__version__, 'ray', ray.__version__, '|', \
torch.cuda.device_count(), 'x', torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw --format=csv || true
python3 bench/launch_overhead.py --device cuda "$@"
