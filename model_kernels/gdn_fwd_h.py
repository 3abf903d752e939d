"""Gated DeltaNet forward, chunked hidden-state recurrence (``fwd_h``).

The sequence is split into chunks; with the WY representation already
computed (``w``, ``u``), the per-head state ``h`` (``[dk, dv]``) is carried
across chunks::

    h_0 = 0
    v_new = u_c - w_c @ h                       (delta-rule correction)
    h    <- exp(g_last) * h + k_c^T @ (v_new * exp(g_last - g_c))

and the state entering every chunk is written out (the chunked output
kernel consumes it).
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
def gdn_fwd_h(
    k: torch.Tensor, w: torch.Tensor, u: torch.Tensor, g: torch.Tensor, chunk_size: int
) -> torch.Tensor:
    """States entering each chunk of a gated delta-rule recurrence.

    Args:
        k: ``[batch, seqlen, heads, dk]`` keys (bf16).
        w: ``[batch, seqlen, heads, dk]`` WY-transformed, gated keys (bf16).
        u: ``[batch, seqlen, heads, dv]`` WY-transformed values (bf16).
        g: ``[batch, seqlen, heads]`` within-chunk cumulative log-decay (fp32, <= 0).
        chunk_size: chunk length (``seqlen`` must be a multiple of it), e.g. 64.
    Returns:
        ``h``: ``[batch, seqlen // chunk_size, heads, dk, dv]`` in ``k.dtype``;
        ``h[:, c]`` is the state before chunk ``c`` (``h[:, 0] == 0``).
    Model role: the sequential core of the chunked Gated DeltaNet layer
    (Qwen3-Next-style linear-attention / hybrid LLMs), between the WY
    preparation and the chunk output kernel.
    """
    batch, seqlen, heads, dk = k.size()
    dv = u.size(3)
    dk = hl.specialize(dk)
    chunk_size = hl.specialize(chunk_size)
    assert seqlen % chunk_size == 0, "seqlen must be a multiple of chunk_size"
    nchunks = seqlen // chunk_size
    h_out = torch.empty([batch, nchunks, heads, dk, dv], dtype=k.dtype, device=k.device)
    for tile_b, tile_h, tile_v in hl.tile([batch, heads, dv], block_size=[1, 1, None]):
        b = tile_b.begin
        hh = tile_h.begin
        state = hl.zeros([dk, tile_v], dtype=torch.float32)
        for tile_t in hl.tile(seqlen, block_size=chunk_size):
            state_lp = state.to(k.dtype)
            h_out[b, tile_t.id, hh, :, tile_v] = state_lp
            v_new = u[b, tile_t, hh, tile_v].to(torch.float32) - hl.dot(
                w[b, tile_t, hh, :], state_lp, out_dtype=torch.float32
            )
            g_c = g[b, tile_t, hh].to(torch.float32)
            g_last = g[b, tile_t.begin + chunk_size - 1, hh].to(torch.float32)
            v_new = v_new * torch.exp(g_last - g_c)[:, None]
            state = state * torch.exp(g_last)
            state = hl.dot(k[b, tile_t, hh, :].T, v_new.to(k.dtype), acc=state)
    return h_out


def gdn_fwd_h_ref(
    k: torch.Tensor, w: torch.Tensor, u: torch.Tensor, g: torch.Tensor, chunk_size: int
) -> torch.Tensor:
    """Same recurrence in PyTorch, fp32 compute.

    It rounds at the same points as the kernel (the state and ``v_new`` are
    rounded to the input dtype before they enter a matmul, as fused GDN
    kernels do), so the comparison checks the math, not rounding drift.
    """
    batch, seqlen, heads, dk = k.shape
    dv = u.size(-1)
    nchunks = seqlen // chunk_size
    lp = k.dtype
    kc = k.float().reshape(batch, nchunks, chunk_size, heads, dk)
    wc = w.float().reshape(batch, nchunks, chunk_size, heads, dk)
    uc = u.float().reshape(batch, nchunks, chunk_size, heads, dv)
    gc = g.float().reshape(batch, nchunks, chunk_size, heads)
    h_out = torch.empty(batch, nchunks, heads, dk, dv, dtype=lp, device=k.device)
    state = torch.zeros(batch, heads, dk, dv, dtype=torch.float32, device=k.device)
    for c in range(nchunks):
        state_lp = state.to(lp)
        h_out[:, c] = state_lp
        v_new = uc[:, c] - torch.einsum("bthk,bhkv->bthv", wc[:, c], state_lp.float())
        g_last = gc[:, c, -1]  # [b, h]
        v_new = v_new * torch.exp(g_last[:, None, :] - gc[:, c])[..., None]
        state = state * torch.exp(g_last)[..., None, None]
        state = state + torch.einsum("bthk,bthv->bhkv", kc[:, c], v_new.to(lp).float())
    return h_out


def make_inputs(
    device: torch.device | str,
    batch: int = 1,
    seqlen: int = 1024,
    heads: int = 8,
    dk: int = 128,
    dv: int = 128,
    chunk_size: int = 64,
    dtype: str = "bf16",
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Realistic inputs: WY representation of a gated delta rule.

    ``k`` is L2-normalised, ``beta = sigmoid(randn)``, per-step log-decay
    ``-0.05*softplus(randn)`` cumulated within each chunk into ``g``. With
    ``A = I + strict_tril(beta_i <k_i, k_j> exp(g_i - g_j))`` per chunk,
    ``w = A^-1 (beta * k * exp(g))`` and ``u = A^-1 (beta * v)``, exactly as the
    GDN chunk preparation computes them, so the recurrence stays bounded over
    long sequences. Returns ``(k, w, u, g, chunk_size)``.
    """
    assert seqlen % chunk_size == 0, "seqlen must be a multiple of chunk_size"
    device = torch.device(device)
    lp = _DTYPES[dtype]
    gen = torch.Generator(device=device).manual_seed(seed)
    nchunks = seqlen // chunk_size

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    k = torch.nn.functional.normalize(rand(batch, seqlen, heads, dk), dim=-1)
    k = k.to(lp).float()
    v = rand(batch, seqlen, heads, dv)
    beta = torch.sigmoid(rand(batch, seqlen, heads))
    step = -0.05 * torch.nn.functional.softplus(rand(batch, seqlen, heads))
    g = torch.cumsum(step.reshape(batch, nchunks, chunk_size, heads), dim=2)

    # per-chunk tensors as [b, c, h, t, *]
    kc = k.reshape(batch, nchunks, chunk_size, heads, dk).permute(0, 1, 3, 2, 4)
    vc = v.reshape(batch, nchunks, chunk_size, heads, dv).permute(0, 1, 3, 2, 4)
    bc = beta.reshape(batch, nchunks, chunk_size, heads).permute(0, 1, 3, 2)
    gcp = g.permute(0, 1, 3, 2)
    gram = kc @ kc.transpose(-2, -1)
    decay = torch.exp(gcp[..., :, None] - gcp[..., None, :])
    strict = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=device).tril(-1)
    A = torch.where(strict, bc[..., :, None] * gram * decay, 0.0)
    A = A + torch.eye(chunk_size, device=device)
    w = torch.linalg.solve_triangular(
        A, bc[..., None] * kc * torch.exp(gcp)[..., None], upper=False, unitriangular=True
    )
    u = torch.linalg.solve_triangular(A, bc[..., None] * vc, upper=False, unitriangular=True)

    def unchunk(t: torch.Tensor) -> torch.Tensor:
        return t.permute(0, 1, 3, 2, 4).reshape(batch, seqlen, heads, t.size(-1)).to(lp)

    g_flat = g.reshape(batch, seqlen, heads).contiguous()
    return k.to(lp), unchunk(w), unchunk(u), g_flat, chunk_size
