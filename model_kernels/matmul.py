"""Dense GEMM: ``out = x @ y``.

The workhorse of every transformer layer (QKV/O projections, MLP up/down).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import helion
import helion.language as hl


@helion.kernel()
def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Tiled matmul with an fp32 accumulator.

    Args:
        x: ``[M, K]`` activations (bf16/fp16/fp32).
        y: ``[K, N]`` weights, same dtype as ``x``.
    Returns:
        ``[M, N]`` in ``x.dtype``.
    Model role: linear layers (projections, MLP) of a transformer block.
    """
    m, k = x.size()
    k2, n = y.size()
    assert k == k2, f"inner dims differ: {k} vs {k2}"
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = hl.dot(x[tile_m, tile_k], y[tile_k, tile_n], acc=acc)
        out[tile_m, tile_n] = acc.to(out.dtype)
    return out


def matmul_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Same math in PyTorch (fp32 compute, output in ``x.dtype``)."""
    return (x.float() @ y.float()).to(x.dtype)


def matmul_baseline(x: torch.Tensor, y: torch.Tensor) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch's GEMM at the input dtype (cuBLAS): the speed to beat."""
    return (lambda: torch.matmul(x, y)), "torch.matmul (cuBLAS)"
