"""GEMM + reduce-scatter with the communication overlapped: the partial product is made in
chunks of rows, chunk i holding rows i of every rank's block (so it is a reduce-scatter of its
own), and each chunk's asynchronous reduce-scatter (on NCCL's stream) runs while the next
chunk's GEMM does. Every collective is waited for before returning (work.wait() joins the
current stream to NCCL's)."""

import torch
import torch.distributed as dist

CHUNKS = 4


@torch.no_grad()
def run(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    rows, k = A.shape
    n = B.shape[0]
    m = rows // world
    chunks = CHUNKS if m % CHUNKS == 0 else 1
    size = m // chunks
    blocks = A.view(world, m, k)
    bt = B.t()
    out = torch.empty(m, n, dtype=A.dtype, device=A.device)
    pending = []
    for i in range(chunks):
        part = torch.matmul(blocks[:, i * size : (i + 1) * size], bt)  # [world, size, n], contiguous
        work = dist.reduce_scatter_tensor(out[i * size : (i + 1) * size], part.view(world * size, n), async_op=True)
        pending.append((work, part))  # the partial stays alive until its reduce-scatter is done
    for work, _part in pending:
        work.wait()
    return out
