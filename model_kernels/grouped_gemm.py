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

    Why the grid is groups x row tiles x column tiles: group sizes live on the
    device, so the row extent of each group is unknown when the grid is sized.
    The grid covers every group with ``total_rows`` worth of row tiles; a
    program whose row tile starts past its group's end returns at once (about
    ``1 - 1/G`` of them, each a couple of scalar loads), and rows past the end
    inside the last tile are masked. The first version ran one program per
    group and looped over the group's tiles inside it: 8 programs on the
    H200's 132 SMs, so at the medium shape Helion's default config took over
    30 s per benchmark and LFBO at quick effort could not finish in 420 s
    (bench/logs/mk_lfbo_quick/grouped_gemm_one_program_per_group.log).
    """
    total_rows, k = a.size()
    groups, k2, n = b.size()
    assert k == k2, f"inner dims differ: {k} vs {k2}"
    out = torch.empty([total_rows, n], dtype=a.dtype, device=a.device)
    for tile_g, tile_m, tile_n in hl.tile([groups, total_rows, n], block_size=[1, None, None]):
        row_begin = offsets[tile_g.begin]
        rows = offsets[tile_g.begin + 1] - row_begin
        if tile_m.begin < rows:
            row_idx = row_begin + tile_m.index
            in_group = (tile_m.index < rows)[:, None]
            acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
            for tile_k in hl.tile(k):
                a_blk = hl.load(a, [row_idx, tile_k], extra_mask=in_group)
                acc = hl.dot(a_blk, b[tile_g.begin, tile_k, tile_n], acc=acc)
            hl.store(out, [row_idx, tile_n], acc.to(out.dtype), extra_mask=in_group)
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
