"""Split-K GEMM: ``out = x @ y`` for skinny outputs with a long reduction.

When ``M*N`` is small (decode-time projections, LoRA, the down projection of a
small batch) an ordinary tiling launches too few programs to fill the GPU, so
the K dimension is also split across programs and partial sums are combined
with atomic adds.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import helion
from helion.autotuner import PowerOfTwoFragment
import helion.language as hl


# The fp32 -> x.dtype cast after the loop is deliberate host code (one small
# extra launch); silence helion's "not fused" warning for it.
@helion.kernel(static_shapes=True, ignore_warnings=[helion.exc.TensorOperationInWrapper])
def matmul_split_k(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Matmul whose K loop is split into ``split_k`` (tunable) chunks.

    Args:
        x: ``[M, K]`` (bf16/fp16/fp32), typically small M and N, large K.
        y: ``[K, N]``, same dtype.
    Returns:
        ``[M, N]`` in ``x.dtype``. Partial products are accumulated in an fp32
        buffer with ``hl.atomic_add`` and cast on the host side at the end
        (so the result does not depend on bf16 atomics).
    Model role: skinny linear layers (small-batch decode, LoRA, MoE experts
    with few tokens) where M*N alone cannot occupy all SMs.
    """
    m, k = x.size()
    k2, n = y.size()
    assert k == k2, f"inner dims differ: {k} vs {k2}"
    partial = torch.zeros([m, n], dtype=torch.float32, device=x.device)
    split_k = hl.register_tunable("split_k", PowerOfTwoFragment(1, 64))
    k_chunk = helion.next_power_of_2(helion.cdiv(k, split_k))
    for tile_m, tile_n, chunk_k in hl.tile([m, n, k], block_size=[None, None, k_chunk]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(chunk_k.begin, chunk_k.end):
            acc = hl.dot(x[tile_m, tile_k], y[tile_k, tile_n], acc=acc)
        hl.atomic_add(partial, [tile_m, tile_n], acc)
    return partial.to(x.dtype)


def matmul_split_k_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Same math in PyTorch (fp32 compute, output in ``x.dtype``)."""
    return (x.float() @ y.float()).to(x.dtype)


def matmul_split_k_baseline(x: torch.Tensor, y: torch.Tensor) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch's GEMM at the input dtype (cuBLAS picks its own split-K): the speed to beat."""
    return (lambda: torch.matmul(x, y)), "torch.matmul (cuBLAS)"
