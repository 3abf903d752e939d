"""Mamba2 (SSD) chunk scan: the output stage of the chunked state-space scan.

Within each chunk of ``chunk`` tokens the SSD output is an intra-chunk
"attention" term (``CB^T`` masked causally and weighted by decays and ``dt``)
plus the contribution of the state carried in from previous chunks, plus the
skip term ``D * x``.
"""

from __future__ import annotations

import torch

import helion
import helion.language as hl

_DTYPES = {
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "f32": torch.float32,
}


@helion.kernel(static_shapes=True)
def mamba2_chunk_scan(
    cb: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    dA_cumsum: torch.Tensor,
    C: torch.Tensor,
    prev_states: torch.Tensor,
    D: torch.Tensor,
) -> torch.Tensor:
    """Chunked SSD output for every token, head and head channel.

    For token ``i`` of chunk ``c`` (head ``h`` in group ``g``, channel ``p``)::

        out = exp(dA[i]) * sum_n C[i, n] * prev_states[c, h, p, n]
            + sum_{j <= i} cb[c, g, i, j] * exp(dA[i] - dA[j]) * dt[j] * x[j, h, p]
            + D[h] * x[i, h, p]

    Args:
        cb: ``[batch, nchunks, ngroups, chunk, chunk]`` C·B^T per chunk (bf16).
        x: ``[batch, seqlen, nheads, headdim]`` input (bf16), ``seqlen = nchunks*chunk``.
        dt: ``[batch, nheads, nchunks, chunk]`` step sizes (fp32).
        dA_cumsum: ``[batch, nheads, nchunks, chunk]`` within-chunk cumsum of dt*A (fp32).
        C: ``[batch, seqlen, ngroups, dstate]`` output projection (bf16).
        prev_states: ``[batch, nchunks, nheads, headdim, dstate]`` state entering each chunk (bf16).
        D: ``[nheads]`` skip weights (fp32).
    Returns:
        ``[batch, seqlen, nheads, headdim]`` in ``x.dtype``.
    Model role: the last kernel of a Mamba2 layer's chunked scan (after
    chunk_cumsum, chunk_state and state_passing), in Mamba2/hybrid LLMs.
    """
    batch, nchunks, ngroups, chunk, _ = cb.size()
    _, seqlen, nheads, headdim = x.size()
    assert seqlen == nchunks * chunk, "seqlen must be a multiple of the chunk size"
    heads_per_group = nheads // ngroups
    out = torch.empty_like(x)
    # Tiles at least 32 wide.  Helion 1.5.0 / Triton 3.6 on the H200 generate configs with
    # 16-wide tiles and tensor-descriptor loads that die with "misaligned address" (a sticky
    # CUDA error: each one cost LFBO a benchmark-worker restart, about 20 s).  Session 28's probe
    # (bench/probes/crash_bisect_gpu.json) reran 6 such configs from session 25's log: all 6
    # crashed as logged, and all 6 ran with pointer indexing only or with the 16s widened to 32.
    block_i = hl.register_block_size(32, chunk)
    block_p = hl.register_block_size(32, headdim)
    block_j = hl.register_block_size(32, chunk)
    for tile_b, tile_c, tile_h, tile_i, tile_p in hl.tile(
        [batch, nchunks, nheads, chunk, headdim], block_size=[1, 1, 1, block_i, block_p]
    ):
        b = tile_b.begin
        c = tile_c.begin
        h = tile_h.begin
        g = h // heads_per_group
        dA_i = dA_cumsum[b, h, c, tile_i].to(torch.float32)
        c_rows = C[b, c * chunk + tile_i.index, g, :]
        state = prev_states[b, c, h, tile_p, :]
        acc = hl.dot(c_rows, state.T, out_dtype=torch.float32)
        acc = acc * torch.exp(dA_i)[:, None]
        for tile_j in hl.tile(0, tile_i.end, block_size=block_j):
            dA_j = dA_cumsum[b, h, c, tile_j].to(torch.float32)
            dt_j = dt[b, h, c, tile_j].to(torch.float32)
            decay = torch.exp(dA_i[:, None] - dA_j[None, :])
            weights = cb[b, c, g, tile_i, tile_j].to(torch.float32) * decay * dt_j[None, :]
            causal = tile_i.index[:, None] >= tile_j.index[None, :]
            weights = torch.where(causal, weights, 0.0)
            x_j = x[b, c * chunk + tile_j.index, h, tile_p]
            acc = hl.dot(weights.to(x.dtype), x_j, acc=acc)
        x_i = x[b, c * chunk + tile_i.index, h, tile_p].to(torch.float32)
        acc = acc + x_i * D[h].to(torch.float32)
        out[b, c * chunk + tile_i.index, h, tile_p] = acc.to(out.dtype)
    return out


def mamba2_chunk_scan_ref(
    cb: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    dA_cumsum: torch.Tensor,
    C: torch.Tensor,
    prev_states: torch.Tensor,
    D: torch.Tensor,
) -> torch.Tensor:
    """Same math in PyTorch (fp32 throughout, output in ``x.dtype``)."""
    batch, nchunks, ngroups, chunk, _ = cb.shape
    _, seqlen, nheads, headdim = x.shape
    dstate = C.size(-1)
    head_group = torch.arange(nheads, device=x.device) // (nheads // ngroups)
    xc = x.float().reshape(batch, nchunks, chunk, nheads, headdim)
    Cc = C.float().reshape(batch, nchunks, chunk, ngroups, dstate)[:, :, :, head_group]
    cb_h = cb.float()[:, :, head_group]  # [b, c, h, i, j]
    dA = dA_cumsum.float().permute(0, 2, 1, 3)  # [b, c, h, chunk]
    dtc = dt.float().permute(0, 2, 1, 3)  # [b, c, h, chunk]
    decay = torch.exp(dA[..., :, None] - dA[..., None, :])
    mask = torch.ones(chunk, chunk, dtype=torch.bool, device=x.device).tril()
    weights = torch.where(mask, cb_h * decay * dtc[..., None, :], 0.0)
    intra = torch.einsum("bchij,bcjhp->bcihp", weights, xc)
    inter = torch.einsum("bcihn,bchpn->bcihp", Cc, prev_states.float())
    inter = inter * torch.exp(dA).permute(0, 1, 3, 2)[..., None]
    y = intra + inter + xc * D.float()[None, None, None, :, None]
    return y.reshape(batch, seqlen, nheads, headdim).to(x.dtype)


def make_inputs(
    device: torch.device | str,
    batch: int = 1,
    seqlen: int = 1024,
    nheads: int = 32,
    headdim: int = 64,
    ngroups: int = 1,
    dstate: int = 128,
    chunk: int = 256,
    dtype: str = "bf16",
    seed: int = 0,
) -> tuple[torch.Tensor, ...]:
    """Realistic SSD intermediates for ``mamba2_chunk_scan``.

    ``dt = softplus(randn - 2)``, ``A = -exp(U(0, 1.5))`` per head,
    ``dA_cumsum`` = within-chunk cumsum of ``dt*A`` (decreasing, <= 0),
    ``cb = C_chunk @ B_chunk^T`` computed from random ``B``/``C`` (scaled by
    ``dstate**-0.5``), random ``prev_states`` and ``D``. Returns the kernel's
    positional args ``(cb, x, dt, dA_cumsum, C, prev_states, D)``.
    """
    assert seqlen % chunk == 0, "seqlen must be a multiple of chunk"
    assert nheads % ngroups == 0, "nheads must be a multiple of ngroups"
    device = torch.device(device)
    dt_ = _DTYPES[dtype]
    gen = torch.Generator(device=device).manual_seed(seed)
    nchunks = seqlen // chunk

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    x = rand(batch, seqlen, nheads, headdim).to(dt_)
    B = (rand(batch, seqlen, ngroups, dstate) * dstate**-0.5).to(dt_)
    C = (rand(batch, seqlen, ngroups, dstate) * dstate**-0.5).to(dt_)
    dt = torch.nn.functional.softplus(rand(batch, nheads, nchunks, chunk) - 2.0)
    A = -torch.exp(torch.rand(nheads, generator=gen, device=device) * 1.5)
    dA_cumsum = torch.cumsum(dt * A[None, :, None, None], dim=-1)
    Bc = B.float().reshape(batch, nchunks, chunk, ngroups, dstate)
    Cc = C.float().reshape(batch, nchunks, chunk, ngroups, dstate)
    cb = torch.einsum("bcign,bcjgn->bcgij", Cc, Bc).to(dt_)
    prev_states = rand(batch, nchunks, nheads, headdim, dstate).to(dt_)
    D = rand(nheads)
    return cb, x, dt, dA_cumsum, C, prev_states, D
