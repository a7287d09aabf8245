"""All-reduce (sum) in plain torch.distributed, into the given output: no allocation."""

import torch
import torch.distributed as dist


@torch.no_grad()
def run(x: torch.Tensor, y: torch.Tensor) -> None:
    y.copy_(x)
    dist.all_reduce(y)
