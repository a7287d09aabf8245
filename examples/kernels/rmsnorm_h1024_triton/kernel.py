"""RMSNorm in Triton: one program per row, the whole row in one block.

Runs on CUDA GPUs, and on CPU tensors under TRITON_INTERPRET=1.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-5


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, out_ptr, n_cols, stride_x, stride_out, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(mean_sq + eps) * w
    tl.store(out_ptr + row * stride_out + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    rows, cols = hidden_states.shape
    x = hidden_states.contiguous()
    block = triton.next_power_of_2(cols)
    _rmsnorm_row[(rows,)](x, weight.contiguous(), output, cols, x.stride(0), output.stride(0), EPS, BLOCK=block)
