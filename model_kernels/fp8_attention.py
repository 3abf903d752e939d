"""Attention with fp8 (e4m3) Q/K/V and bf16 output (non-causal).

Both GEMMs run in fp8 with fp32 accumulation (QK^T, and P@V with the
probabilities P rounded to e4m3), as in FP8 inference attention (FA3-style
fp8 prefill). V is taken in the transposed ``[batch, heads, head_dim, seq]``
layout so the second GEMM's B operand is K-major, which Hopper fp8 wgmma
requires; fp8 KV caches are commonly laid out this way.
"""

from __future__ import annotations

import math

from collections.abc import Callable

import torch

import helion
import helion.language as hl

_LOG2E = 1.4426950408889634


@helion.kernel(static_shapes=True)
def fp8_attention(q: torch.Tensor, k: torch.Tensor, v_t: torch.Tensor) -> torch.Tensor:
    """``softmax(q @ k^T / sqrt(d)) @ v`` with fp8 e4m3 inputs, no mask, no scales.

    Args:
        q: ``[batch, heads, seq, head_dim]`` float8_e4m3fn.
        k: ``[batch, heads, seq, head_dim]`` float8_e4m3fn.
        v_t: ``[batch, heads, head_dim, seq]`` float8_e4m3fn (V transposed).
    Returns:
        ``[batch, heads, seq, head_dim]`` bfloat16.
    Model role: fp8-quantised attention in LLM inference (fp8 KV cache, prefill).
    """
    batch, heads, seq, head_dim = q.size()
    head_dim = hl.specialize(head_dim)
    seq_kv = k.size(2)
    bh = batch * heads
    qf = q.reshape(bh, seq, head_dim)
    kf = k.reshape(bh, seq_kv, head_dim)
    vf = v_t.reshape(bh, head_dim, seq_kv)
    out = torch.empty([bh, seq, head_dim], dtype=torch.bfloat16, device=q.device)
    qk_scale = _LOG2E / math.sqrt(head_dim)
    for tile_bh, tile_m in hl.tile([bh, seq], block_size=[1, None]):
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
            acc = hl.dot(probs.to(vf.dtype), vf[i, :, tile_n].T, acc=acc)
            row_max = new_max
        out[i, tile_m, :] = (acc / row_sum[:, None]).to(out.dtype)
    return out.reshape(batch, heads, seq, head_dim)


def fp8_attention_ref(q: torch.Tensor, k: torch.Tensor, v_t: torch.Tensor) -> torch.Tensor:
    """Same attention in plain PyTorch on the fp8 values upcast to fp32 (P not rounded).

    Returns bf16 ``[batch, heads, seq, head_dim]``.
    """
    qf, kf = q.float(), k.float()
    vf = v_t.float().transpose(-2, -1)
    scores = qf @ kf.transpose(-2, -1) / math.sqrt(q.size(-1))
    return (torch.softmax(scores, dim=-1) @ vf).to(torch.bfloat16)


def fp8_attention_baseline(
    q: torch.Tensor, k: torch.Tensor, v_t: torch.Tensor
) -> tuple[Callable[[], torch.Tensor], str]:
    """PyTorch has no fp8 attention: bf16 SDPA on copies upcast here, untimed."""
    qb, kb = q.to(torch.bfloat16), k.to(torch.bfloat16)
    vb = v_t.transpose(-2, -1).contiguous().to(torch.bfloat16)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return (lambda: sdpa(qb, kb, vb)), "F.scaled_dot_product_attention on bf16 copies (no fp8 SDPA; casts not timed)"
