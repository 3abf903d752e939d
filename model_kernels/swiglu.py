"""SwiGLU activation: ``silu(gate) * up``."""

from __future__ import annotations

from collections.abc import Callable

import torch

import helion
import helion.language as hl


@helion.kernel()
def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Elementwise ``gate * sigmoid(gate) * up`` (computed in fp32).

    Args:
        gate: ``[tokens, intermediate]`` output of the gate projection (bf16/fp16/fp32).
        up: ``[tokens, intermediate]`` output of the up projection, same dtype/shape.
    Returns:
        ``[tokens, intermediate]`` in ``gate.dtype``, the input of the down projection.
    Model role: the gated MLP of Llama/Mistral/Qwen-family transformers.
    """
    assert gate.size() == up.size(), "gate and up must have the same shape"
    tokens, inter = gate.size()
    out = torch.empty_like(gate)
    for tile_t, tile_i in hl.tile([tokens, inter]):
        g = gate[tile_t, tile_i].to(torch.float32)
        u = up[tile_t, tile_i].to(torch.float32)
        out[tile_t, tile_i] = (g * torch.sigmoid(g) * u).to(out.dtype)
    return out


def swiglu_ref(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Same math in PyTorch (fp32 compute, output in ``gate.dtype``)."""
    return (torch.nn.functional.silu(gate.float()) * up.float()).to(gate.dtype)


def swiglu_baseline(gate: torch.Tensor, up: torch.Tensor) -> tuple[Callable[[], torch.Tensor], str]:
    """What an eager model runs: two kernels (SiLU, then the product)."""
    return (lambda: torch.nn.functional.silu(gate) * up), "F.silu(gate) * up (eager, 2 kernels)"
