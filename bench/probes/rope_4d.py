"""Probe: the first (4-D tile) RoPE kernel, kept to show where it stops on the GPU.

``model_kernels.rope`` tiled ``[batch, seq, heads]`` until its first call on the H200 never
returned (90 s cap, bench/logs/model_kernels_gpu_rope.log: Helion's code was written, then
nothing). The shipped kernel folds batch and seq into one token axis. This probe runs the old
kernel stage by stage -- bind, Helion codegen, Triton compile, launch, synchronize -- with a
timestamp after each and a Python stack dump before its own deadline, so the stage that hangs
is on record. Run it alone, under ``timeout``, on a GPU:

    timeout 100 python bench/probes/rope_4d.py --out DIR --deadline 80
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import time
from pathlib import Path

import torch

import helion
import helion.language as hl


@helion.kernel(static_shapes=True)
def rope_4d(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate the two halves of every head vector of ``q`` and ``k`` by position.

    For ``x = [x1, x2]`` (halves of ``head_dim``):
    ``out = [x1*cos - x2*sin, x2*cos + x1*sin]`` with ``cos/sin`` of the token's position.

    Args:
        q: ``[batch, seq, heads, head_dim]`` (bf16/fp16/fp32).
        k: ``[batch, seq, kv_heads, head_dim]``, same dtype (GQA: kv_heads <= heads).
        cos: ``[seq, head_dim // 2]`` fp32 cos table.
        sin: ``[seq, head_dim // 2]`` fp32 sin table.
    Returns:
        ``(q_rot, k_rot)`` with the shapes and dtype of ``q`` and ``k``.
    Model role: applied to Q and K right after the QKV projection in
    Llama-family attention blocks.
    """
    batch, seq, heads, head_dim = q.size()
    kv_heads = k.size(2)
    half = hl.specialize(head_dim) // 2
    qv = q.reshape(batch, seq, heads, 2, half)
    kv = k.reshape(batch, seq, kv_heads, 2, half)
    q_out = torch.empty_like(qv)
    k_out = torch.empty_like(kv)
    for tile_b, tile_s, tile_h in hl.tile([batch, seq, heads]):
        c = cos[tile_s, :].to(torch.float32)[None, :, None, :]
        s = sin[tile_s, :].to(torch.float32)[None, :, None, :]
        x1 = qv[tile_b, tile_s, tile_h, 0, :].to(torch.float32)
        x2 = qv[tile_b, tile_s, tile_h, 1, :].to(torch.float32)
        q_out[tile_b, tile_s, tile_h, 0, :] = (x1 * c - x2 * s).to(q_out.dtype)
        q_out[tile_b, tile_s, tile_h, 1, :] = (x2 * c + x1 * s).to(q_out.dtype)
    for tile_b, tile_s, tile_h in hl.tile([batch, seq, kv_heads]):
        c = cos[tile_s, :].to(torch.float32)[None, :, None, :]
        s = sin[tile_s, :].to(torch.float32)[None, :, None, :]
        x1 = kv[tile_b, tile_s, tile_h, 0, :].to(torch.float32)
        x2 = kv[tile_b, tile_s, tile_h, 1, :].to(torch.float32)
        k_out[tile_b, tile_s, tile_h, 0, :] = (x1 * c - x2 * s).to(k_out.dtype)
        k_out[tile_b, tile_s, tile_h, 1, :] = (x2 * c + x1 * s).to(k_out.dtype)
    return q_out.reshape(batch, seq, heads, head_dim), k_out.reshape(
        batch, seq, kv_heads, head_dim
    )


def _inputs(device: str, batch: int, seq: int, heads: int, kv_heads: int, head_dim: int) -> tuple:
    """The old signature: cos/sin are ``[seq, head_dim // 2]`` position tables."""
    gen = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(batch, seq, heads, head_dim, generator=gen, device=device).to(torch.bfloat16)
    k = torch.randn(batch, seq, kv_heads, head_dim, generator=gen, device=device).to(torch.bfloat16)
    half = head_dim // 2
    inv = 10000.0 ** (-torch.arange(half, device=device, dtype=torch.float64) / half)
    ang = torch.arange(seq, device=device, dtype=torch.float64)[:, None] * inv[None, :]
    return q, k, ang.cos().float(), ang.sin().float()


def main() -> int:
    p = argparse.ArgumentParser(description="stage-by-stage run of the 4-D RoPE kernel")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--deadline", type=int, default=80, help="dump every thread's stack after this many s")
    p.add_argument("--device", default="cuda")
    opts = p.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    stages: list[dict] = []
    t0 = time.perf_counter()
    result_path = opts.out / "rope_4d_probe.json"

    def mark(stage: str, **extra: object) -> None:
        stages.append({"stage": stage, "t_s": round(time.perf_counter() - t0, 3), **extra})
        result_path.write_text(json.dumps({"stages": stages, "done": stage == "done"}, indent=2))
        print(f"[{stages[-1]['t_s']:8.3f}s] {stage} {extra or ''}", flush=True)

    faulthandler.dump_traceback_later(opts.deadline, exit=False)
    args = _inputs(opts.device, batch=1, seq=2048, heads=32, kv_heads=8, head_dim=128)
    mark("inputs")
    bound = rope_4d.bind(args)
    config = bound.config_spec.default_config()
    mark("bind", config=str(config))
    code = bound.to_triton_code(config)
    (opts.out / "rope_4d_triton.py").write_text(code)
    mark("helion codegen")
    fn = bound.compile_config(config)
    mark("helion compile_config")
    out = fn(*args)
    mark("first launch returned (includes triton JIT)")
    if opts.device == "cuda":
        torch.cuda.synchronize()
    mark("synchronize")
    ref_q = args[0].float()
    half = ref_q.size(-1) // 2
    c, s = args[2][None, :, None, :], args[3][None, :, None, :]
    want = torch.cat([ref_q[..., :half] * c - ref_q[..., half:] * s,
                      ref_q[..., half:] * c + ref_q[..., :half] * s], -1)
    mark("done", max_abs_err_q=float((out[0].float() - want).abs().max()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
