"""Grouped GEMM over a jagged batch: one weight matrix per group.

Rows of ``a`` are packed group after group (``offsets`` delimit the groups) and
group ``g`` is multiplied by its own weight ``b[g]``. This is the MoE expert
computation after token routing/permutation.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import helion
import helion.language as hl

_DTYPES = {
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "f32": torch.float32,
}


@helion.kernel()
def grouped_gemm(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """``out[offsets[g]:offsets[g+1]] = a[offsets[g]:offsets[g+1]] @ b[g]``.

    Args:
        a: ``[total_rows, K]`` packed activations of all groups (bf16/fp16).
        b: ``[G, K, N]`` one weight matrix per group, same dtype.
        offsets: ``[G+1]`` int32 row offsets into ``a`` (``offsets[0] == 0``,
            ``offsets[G] == total_rows``); groups may be empty.
    Returns:
        ``[total_rows, N]`` in ``a.dtype``.
    Model role: MoE feed-forward (experts applied to their routed tokens).
    """
    total_rows, k = a.size()
    groups, k2, n = b.size()
    assert k == k2, f"inner dims differ: {k} vs {k2}"
    out = torch.empty([total_rows, n], dtype=a.dtype, device=a.device)
    for g in hl.grid(groups):
        row_begin = offsets[g]
        row_end = offsets[g + 1]
        rows = row_end - row_begin
        if rows != 0:
            for tile_m, tile_n in hl.tile([rows, n]):
                acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
                for tile_k in hl.tile(k):
                    acc = hl.dot(
                        a[row_begin + tile_m.index, tile_k], b[g, tile_k, tile_n], acc=acc
                    )
                out[row_begin + tile_m.index, tile_n] = acc.to(out.dtype)
    return out


def grouped_gemm_ref(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Same math in PyTorch: a per-group fp32 matmul loop."""
    out = torch.empty([a.size(0), b.size(2)], dtype=a.dtype, device=a.device)
    bounds = offsets.tolist()
    for g in range(b.size(0)):
        lo, hi = bounds[g], bounds[g + 1]
        if hi > lo:
            out[lo:hi] = (a[lo:hi].float() @ b[g].float()).to(a.dtype)
    return out


def grouped_gemm_baseline(
    a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor
) -> tuple[Callable[[], torch.Tensor], str]:
    """``torch._grouped_mm`` (what MoE layers call) where it works here, else a per-group
    ``torch.mm`` loop; the description says which, and why."""
    ends = offsets[1:].to(torch.int32).contiguous()
    why = "torch._grouped_mm missing in this torch"
    if hasattr(torch, "_grouped_mm"):
        try:
            got = torch._grouped_mm(a, b, offs=ends)
            if torch.allclose(got.float(), grouped_gemm_ref(a, b, offsets).float(), atol=5e-2, rtol=5e-2):
                return (lambda: torch._grouped_mm(a, b, offs=ends)), "torch._grouped_mm"
            why = "torch._grouped_mm disagrees with the reference"
        except (RuntimeError, NotImplementedError) as e:  # e.g. no kernel for this device or dtype
            why = f"torch._grouped_mm unavailable here ({type(e).__name__})"
    bounds = offsets.tolist()

    def loop() -> torch.Tensor:
        out = torch.empty(a.size(0), b.size(2), dtype=a.dtype, device=a.device)
        for g in range(b.size(0)):
            lo, hi = bounds[g], bounds[g + 1]
            if hi > lo:
                torch.mm(a[lo:hi], b[g], out=out[lo:hi])
        return out

    return loop, f"per-group torch.mm loop (cuBLAS; {why})"


def make_inputs(
    device: torch.device | str,
    groups: int = 8,
    m: int = 512,
    n: int = 1024,
    k: int = 1024,
    dtype: str = "bf16",
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs for ``grouped_gemm``: ``groups`` experts receiving ``m`` rows on average.

    Group sizes are imbalanced like routed MoE tokens: each is drawn uniformly
    from ``[m/2, 3m/2]`` (rounded), so the total is close to ``groups*m``.
    Deterministic for a given ``seed``.
    """
    device = torch.device(device)
    dt = _DTYPES[dtype]
    gen_cpu = torch.Generator().manual_seed(seed)
    lo, hi = max(m // 2, 0), max(m + m // 2, 1)
    sizes = torch.randint(lo, hi + 1, (groups,), generator=gen_cpu)
    offsets = torch.zeros(groups + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(sizes, 0).to(torch.int32)
    total = int(offsets[-1])
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(total, k, generator=gen, device=device, dtype=torch.float32).to(dt)
    b = (torch.randn(groups, k, n, generator=gen, device=device, dtype=torch.float32) / k**0.5).to(dt)
    return a, b, offsets.to(device)
