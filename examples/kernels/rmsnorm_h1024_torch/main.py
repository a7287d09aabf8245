"""RMSNorm in plain PyTorch: normalise in float32, scale, cast back."""

import torch
import torch.nn.functional as F

EPS = 1e-5


def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    hidden = hidden_states.shape[-1]
    y = F.rms_norm(hidden_states.float(), (hidden,), weight.float(), EPS)
    return y.to(hidden_states.dtype)
