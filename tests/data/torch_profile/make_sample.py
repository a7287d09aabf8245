"""Make ``tiny_mlp.trace.json``: the chrome trace torch.profiler exports (record_shapes=True)
for two forward passes of a tiny MLP on the CPU. Provenance: written for kernel-sweep's tests
of ``sweep import-torch-profile``; run with the project's torch (the file records its version)
as ``python tests/data/torch_profile/make_sample.py``. Random weights, seed 0; nothing else is
read or downloaded."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32),
        torch.nn.ReLU(),
        torch.nn.Linear(32, 8),
        torch.nn.LayerNorm(8),
    )
    x = torch.randn(4, 16)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            y = model(x)
            torch.softmax(y, dim=-1)
    out = Path(__file__).with_name("tiny_mlp.trace.json")
    prof.export_chrome_trace(str(out))
    print(f"wrote {out} with torch {torch.__version__}")


if __name__ == "__main__":
    main()
