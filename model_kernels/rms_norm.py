"""RMSNorm (Llama-style): ``x / sqrt(mean(x^2) + eps) * weight``."""

from __future__ import annotations

from collections.abc import Callable

import torch

import helion
import helion.language as hl


@helion.kernel()
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Root-mean-square normalisation of each row, scaled by ``weight``.

    Args:
        x: ``[tokens, hidden]`` (bf16/fp16/fp32); statistics computed in fp32.
        weight: ``[hidden]`` learned scale, same dtype as ``x``.
        eps: small constant added to the mean square (e.g. 1e-6).
    Returns:
        ``[tokens, hidden]`` in ``x.dtype``.
    Model role: pre-attention / pre-MLP / final normalisation in Llama-family
    transformers.
    """
    tokens, hidden = x.size()
    assert weight.size(0) == hidden, "weight must match the hidden size"
    out = torch.empty_like(x)
    for tile_t in hl.tile(tokens):
        vals = x[tile_t, :].to(torch.float32)
        mean_sq = torch.mean(vals * vals, dim=-1, keepdim=True)
        normed = vals * torch.rsqrt(mean_sq + eps)
        out[tile_t, :] = (normed * weight[None, :].to(torch.float32)).to(out.dtype)
    return out


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Same math in PyTorch (fp32 compute, output in ``x.dtype``)."""
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)


def rms_norm_baseline(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch's fused RMSNorm at the input dtype."""
    shape = (x.size(-1),)
    return (lambda: torch.nn.functional.rms_norm(x, shape, weight, eps)), "F.rms_norm"
