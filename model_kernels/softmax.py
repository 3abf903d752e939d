"""Row-wise softmax over the last dimension."""

from __future__ import annotations

from collections.abc import Callable

import torch

import helion
import helion.language as hl


@helion.kernel()
def softmax(x: torch.Tensor) -> torch.Tensor:
    """Numerically stable softmax of each row of ``x``.

    Args:
        x: ``[rows, cols]`` (bf16/fp16/fp32); computed in fp32.
    Returns:
        ``[rows, cols]`` in ``x.dtype``.
    Model role: attention probabilities when not fused, sampling over the
    vocabulary (logits -> probabilities), MoE router scores.
    """
    rows, cols = x.size()
    out = torch.empty_like(x)
    for tile_r in hl.tile(rows):
        vals = x[tile_r, :].to(torch.float32)
        shifted = vals - torch.amax(vals, dim=1, keepdim=True)
        num = torch.exp(shifted)
        out[tile_r, :] = (num / torch.sum(num, dim=1, keepdim=True)).to(out.dtype)
    return out


def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    """Same math in PyTorch (fp32 compute, output in ``x.dtype``)."""
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def softmax_baseline(x: torch.Tensor) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch's fused softmax at the input dtype."""
    return (lambda: torch.softmax(x, dim=-1)), "torch.softmax"
