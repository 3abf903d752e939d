"""Scaled dot-product attention (flash-attention style, online softmax), bf16.

Two kernels share one body shape: ``attention`` (non-causal, e.g. encoders,
cross-attention, prefill with a full mask) and ``attention_causal`` (decoder
prefill with a lower-triangular mask). Two kernels rather than a ``causal``
flag, so each variant is tuned separately (their best configs differ: the
causal kernel skips the key blocks above the diagonal).
"""

from __future__ import annotations

import math

from collections.abc import Callable

import torch

import helion
import helion.language as hl

_LOG2E = 1.4426950408889634


@helion.kernel(static_shapes=True)
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``softmax(q @ k^T / sqrt(d)) @ v`` without a mask.

    Args:
        q: ``[batch, heads, seq_q, head_dim]`` bf16/fp16.
        k: ``[batch, heads, seq_kv, head_dim]``, same dtype.
        v: ``[batch, heads, seq_kv, head_dim]``, same dtype.
    Returns:
        ``[batch, heads, seq_q, head_dim]`` in ``q.dtype``.
    Model role: self-attention of encoders / full-mask prefill, cross-attention.
    """
    batch, heads, seq_q, head_dim = q.size()
    seq_kv = k.size(2)
    head_dim = hl.specialize(head_dim)
    bh = batch * heads
    qf = q.reshape(bh, seq_q, head_dim)
    kf = k.reshape(bh, seq_kv, head_dim)
    vf = v.reshape(bh, seq_kv, head_dim)
    out = torch.empty_like(qf)
    qk_scale = _LOG2E / math.sqrt(head_dim)
    for tile_bh, tile_m in hl.tile([bh, seq_q], block_size=[1, None]):
        i = tile_bh.begin
        row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        row_sum = hl.zeros([tile_m], dtype=torch.float32)
        acc = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        q_blk = qf[i, tile_m, :]
        for tile_n in hl.tile(seq_kv):
            scores = hl.dot(q_blk, kf[i, tile_n, :].T, out_dtype=torch.float32) * qk_scale
            new_max = torch.maximum(row_max, torch.amax(scores, dim=1))
            probs = torch.exp2(scores - new_max[:, None])
            correction = torch.exp2(row_max - new_max)
            row_sum = row_sum * correction + torch.sum(probs, dim=1)
            acc = acc * correction[:, None]
            acc = hl.dot(probs.to(vf.dtype), vf[i, tile_n, :], acc=acc)
            row_max = new_max
        out[i, tile_m, :] = (acc / row_sum[:, None]).to(out.dtype)
    return out.reshape(batch, heads, seq_q, head_dim)


@helion.kernel(static_shapes=True)
def attention_causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``softmax(q @ k^T / sqrt(d) + causal_mask) @ v`` (query i sees keys <= i).

    Args:
        q, k, v: ``[batch, heads, seq, head_dim]`` bf16/fp16 (seq_q == seq_kv).
    Returns:
        ``[batch, heads, seq, head_dim]`` in ``q.dtype``.
    Model role: decoder-only LLM prefill (self-attention with a causal mask).
    """
    batch, heads, seq, head_dim = q.size()
    assert k.size(2) == seq, "causal attention expects seq_q == seq_kv"
    head_dim = hl.specialize(head_dim)
    bh = batch * heads
    qf = q.reshape(bh, seq, head_dim)
    kf = k.reshape(bh, seq, head_dim)
    vf = v.reshape(bh, seq, head_dim)
    out = torch.empty_like(qf)
    qk_scale = _LOG2E / math.sqrt(head_dim)
    for tile_bh, tile_m in hl.tile([bh, seq], block_size=[1, None]):
        i = tile_bh.begin
        row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        row_sum = hl.zeros([tile_m], dtype=torch.float32)
        acc = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        q_blk = qf[i, tile_m, :]
        # Only key blocks that start at or before the last query row of this tile.
        for tile_n in hl.tile(0, tile_m.end):
            scores = hl.dot(q_blk, kf[i, tile_n, :].T, out_dtype=torch.float32) * qk_scale
            visible = tile_m.index[:, None] >= tile_n.index[None, :]
            scores = torch.where(visible, scores, float("-inf"))
            new_max = torch.maximum(row_max, torch.amax(scores, dim=1))
            probs = torch.exp2(scores - new_max[:, None])
            correction = torch.exp2(row_max - new_max)
            row_sum = row_sum * correction + torch.sum(probs, dim=1)
            acc = acc * correction[:, None]
            acc = hl.dot(probs.to(vf.dtype), vf[i, tile_n, :], acc=acc)
            row_max = new_max
        out[i, tile_m, :] = (acc / row_sum[:, None]).to(out.dtype)
    return out.reshape(batch, heads, seq, head_dim)


def _sdpa_fp32(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    qf, kf, vf = q.float(), k.float(), v.float()
    scores = qf @ kf.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        s_q, s_k = scores.shape[-2:]
        mask = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ vf).to(q.dtype)


def attention_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Non-causal attention in plain PyTorch (fp32 compute, output in ``q.dtype``)."""
    return _sdpa_fp32(q, k, v, causal=False)


def attention_causal_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention in plain PyTorch (fp32 compute, output in ``q.dtype``)."""
    return _sdpa_fp32(q, k, v, causal=True)


def attention_baseline(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch's SDPA at the input dtype (flash on CUDA)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return (lambda: sdpa(q, k, v)), "F.scaled_dot_product_attention (flash on CUDA)"


def attention_causal_baseline(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch's causal SDPA at the input dtype (flash on CUDA)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return (lambda: sdpa(q, k, v, is_causal=True)), "F.scaled_dot_product_attention causal (flash on CUDA)"
