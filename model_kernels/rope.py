"""Rotary position embedding (RoPE, rotate-half / GPT-NeoX convention) on Q and K."""

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
def rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate the two halves of every head vector of ``q`` and ``k`` by its token's angle.

    For ``x = [x1, x2]`` (halves of ``head_dim``):
    ``out = [x1*cos - x2*sin, x2*cos + x1*sin]`` with the token's ``cos/sin`` row.

    Args:
        q: ``[batch, seq, heads, head_dim]`` (bf16/fp16/fp32).
        k: ``[batch, seq, kv_heads, head_dim]``, same dtype (GQA: kv_heads <= heads).
        cos: ``[batch, seq, head_dim // 2]`` fp32, per token (what Hugging Face's
            rotary embedding returns from ``position_ids``, one half of it).
        sin: same as ``cos``.
    Returns:
        ``(q_rot, k_rot)`` with the shapes and dtype of ``q`` and ``k``.
    Model role: applied to Q and K right after the QKV projection in
    Llama-family attention blocks.

    Why this tiling: batch and seq fold into one ``tokens`` axis and head_dim is
    tiled too (``[tokens, heads, half]``), so the tile's block sizes bound all of
    it. Versions that kept the whole head_dim in each tile (``[batch, seq, heads]``
    and ``[tokens, heads]``) never finished their first call on the H200 (for the
    first, Helion's default was a 1024 x 8 tile times the 64-wide slice, and
    Triton's LLVM lowering was still running after 75 s) (``bench/probes/rope_4d.py``, README "model_kernels
    on the H200"). Per-token cos/sin is also what serving needs (packed
    sequences, position offsets).
    """
    batch, seq, heads, head_dim = q.size()
    kv_heads = k.size(2)
    half = hl.specialize(head_dim) // 2
    tokens = batch * seq
    qv = q.reshape(tokens, heads, 2, half)
    kv = k.reshape(tokens, kv_heads, 2, half)
    cos_t = cos.reshape(tokens, half)
    sin_t = sin.reshape(tokens, half)
    q_out = torch.empty_like(qv)
    k_out = torch.empty_like(kv)
    for tile_t, tile_h, tile_d in hl.tile([tokens, heads, half]):
        c = cos_t[tile_t, tile_d].to(torch.float32)[:, None, :]
        s = sin_t[tile_t, tile_d].to(torch.float32)[:, None, :]
        x1 = qv[tile_t, tile_h, 0, tile_d].to(torch.float32)
        x2 = qv[tile_t, tile_h, 1, tile_d].to(torch.float32)
        q_out[tile_t, tile_h, 0, tile_d] = (x1 * c - x2 * s).to(q_out.dtype)
        q_out[tile_t, tile_h, 1, tile_d] = (x2 * c + x1 * s).to(q_out.dtype)
    for tile_t, tile_h, tile_d in hl.tile([tokens, kv_heads, half]):
        c = cos_t[tile_t, tile_d].to(torch.float32)[:, None, :]
        s = sin_t[tile_t, tile_d].to(torch.float32)[:, None, :]
        x1 = kv[tile_t, tile_h, 0, tile_d].to(torch.float32)
        x2 = kv[tile_t, tile_h, 1, tile_d].to(torch.float32)
        k_out[tile_t, tile_h, 0, tile_d] = (x1 * c - x2 * s).to(k_out.dtype)
        k_out[tile_t, tile_h, 1, tile_d] = (x2 * c + x1 * s).to(k_out.dtype)
    return q_out.reshape(batch, seq, heads, head_dim), k_out.reshape(
        batch, seq, kv_heads, head_dim
    )


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    half = x.size(-1) // 2
    x1, x2 = xf[..., :half], xf[..., half:]
    c = cos.float()[:, :, None, :]
    s = sin.float()[:, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def rope_ref(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Same math in PyTorch (fp32 compute, outputs in the input dtypes)."""
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


def make_inputs(
    device: torch.device | str,
    batch: int = 1,
    seq: int = 2048,
    heads: int = 32,
    kv_heads: int = 8,
    head_dim: int = 128,
    dtype: str = "bf16",
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random Q/K and real RoPE tables (base 10000) for positions ``0..seq-1`` of each sequence.

    Returns ``(q, k, cos, sin)`` with ``cos/sin`` of shape ``[batch, seq, head_dim // 2]``;
    deterministic for a given ``seed``.
    """
    device = torch.device(device)
    dt = _DTYPES[dtype]
    gen = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(batch, seq, heads, head_dim, generator=gen, device=device).to(dt)
    k = torch.randn(batch, seq, kv_heads, head_dim, generator=gen, device=device).to(dt)
    half = head_dim // 2
    inv_freq = 10000.0 ** (-torch.arange(half, device=device, dtype=torch.float64) / half)
    angles = torch.arange(seq, device=device, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos = angles.cos().float()[None].expand(batch, seq, half).contiguous()
    sin = angles.sin().float()[None].expand(batch, seq, half).contiguous()
    return q, k, cos, sin
