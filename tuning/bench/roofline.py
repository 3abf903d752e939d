"""Roofline inputs: bytes moved and FLOPs per case, and the GPU's peaks measured in the run.

Bytes moved are the sum of the input and output tensors' sizes (a lower
bound: each read and written once).  FLOPs are declared per kernel family
(the kernel function's name) below; a family not listed is judged on bytes
only.  The fraction reached is ``max(bytes / peak_copy_bw, flops /
peak_bf16_rate) / measured_time``: 1.0 means at the roofline.  The copy peak is
the faster of a memcpy and an elementwise kernel over the same 1 GiB (``best_copy``):
the memcpy alone ran slower than tuned kernels on the H200.  A case whose tensors
fit in the L2 (60 MB on the H200) can still read over 1: its timing replays with
the data L2-resident.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

CPU_REASON = "not measured: no CUDA GPU (roofline peaks are measured on the GPU in the same run)"


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in t.shape)


def _matmul(args: Sequence[Any]) -> float:
    (m, k), (_, n) = _shape(args[0]), _shape(args[1])
    return 2.0 * m * n * k


def _grouped_gemm(args: Sequence[Any]) -> float:
    rows, k = _shape(args[0])
    n = _shape(args[1])[2]
    return 2.0 * rows * k * n


def _attention(args: Sequence[Any], causal: bool = False) -> float:
    b, h, s, d = _shape(args[0])
    sk = _shape(args[1])[2]
    flops = 4.0 * b * h * s * sk * d  # Q K^T and P V
    return flops / 2 if causal else flops


# kernel function name -> FLOPs from the example arguments.  fp8 attention is
# counted against the bf16 rate too (so its fraction can read high: fp8 peaks are ~2x).
FLOPS: dict[str, Callable[[Sequence[Any]], float]] = {
    "matmul": _matmul,
    "matmul_split_k": _matmul,
    "grouped_gemm": _grouped_gemm,
    "attention": _attention,
    "attention_causal": lambda a: _attention(a, causal=True),
    "fp8_attention": _attention,
}


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def work(kernel_id: str, args: Sequence[Any], output: Any) -> dict[str, Any]:
    """Bytes moved (inputs + outputs) and FLOPs (when the family declares a formula)."""
    nbytes = sum(t.numel() * t.element_size() for t in _tensors(list(args)) + _tensors(output))
    family = kernel_id.rpartition(":")[2].rpartition(".")[2]
    formula = FLOPS.get(family)
    return {"bytes": int(nbytes), "flops": None if formula is None else float(formula(args)), "family": family}


def copy_candidates(src: Any, dst: Any) -> dict[str, Callable[[], Any]]:
    """Ways to stream ``src`` into ``dst`` (same bytes read and written); the peak is the fastest.

    ``copy_`` between two same-dtype buffers is a memcpy, which under our CUDA-graph timer
    moved 2.72-2.77 TB/s (read + write) on the H200 while tuned rms_norm and softmax
    kernels moved 3.8-3.9 TB/s: a roofline scaled by it read 1.3-1.6 on those kernels
    (sessions 13-15).  (Outside a graph, PyTorch's device copy was seen at about 4.3 TB/s
    on these machines, so the memcpy itself is not the roof.)
    An elementwise kernel over the same bytes (16-byte vector loads and stores) is the
    other candidate, so the scale is the best streaming rate this GPU showed in the run.
    """
    import torch

    f_src, f_dst = src.view(torch.float32), dst.view(torch.float32)
    return {"memcpy": functools.partial(dst.copy_, src),  # partials, not closures: `del` frees the buffers
            "elementwise": functools.partial(torch.mul, f_src, 1.0, out=f_dst)}


def best_copy(candidates: dict[str, Callable[[], Any]], nbytes: int, device: str,
              timer: Callable[[Callable[[], Any], str], tuple[float, str]]) -> dict[str, Any]:
    """Time each candidate with ``timer``; the fastest sets ``copy_gbps`` and every one is kept."""
    timed = {name: timer(fn, device) for name, fn in candidates.items()}
    best = min(timed, key=lambda name: timed[name][0])
    ms, how = timed[best]
    return {"copy_gbps": round(2 * nbytes / (ms * 1e-3) / 1e9, 2),  # read + write
            "copy": {"bytes_each_way": nbytes, "ms": ms, "timer": how, "by": best,
                     "candidates_ms": {name: t[0] for name, t in timed.items()}}}


def measure_peaks(device: str) -> dict[str, Any]:
    """Peak copy bandwidth (a large device-to-device stream) and bf16 matmul rate (8192^3), here and now."""
    import torch

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if torch.device(device).type != "cuda":
        return {"copy_gbps": None, "bf16_tflops": None, "reason": CPU_REASON, "measured_at": stamp}
    from ..measure import time_ms

    n = 1 << 30  # 1 GiB each way: far past the L2, so HBM is what is timed
    src = torch.zeros(n, dtype=torch.uint8, device=device)  # zeros: no NaN patterns in the float view
    dst = torch.empty_like(src)
    copy = best_copy(copy_candidates(src, dst), n, device, time_ms)
    del src, dst
    size = 8192
    a = torch.randn(size, size, dtype=torch.bfloat16, device=device)
    b = torch.randn(size, size, dtype=torch.bfloat16, device=device)
    mm_ms, mm_timer = time_ms(functools.partial(torch.matmul, a, b), device)
    del a, b
    torch.cuda.empty_cache()
    return {
        **copy,
        "bf16_tflops": round(2 * size**3 / (mm_ms * 1e-3) / 1e12, 2),
        "matmul": {"mnk": size, "dtype": "bfloat16", "ms": mm_ms, "timer": mm_timer},
        "reason": None, "measured_at": stamp,
    }


def fraction(w: dict[str, Any] | None, ms: float | None, peaks: dict[str, Any] | None) -> dict[str, Any]:
    """The roofline entry of one record: work, peaks used, bound, and fraction reached (or null, with why)."""
    out: dict[str, Any] = {**(w or {}), "fraction": None, "bound": None, "reason": None}
    if not w or ms is None or not math.isfinite(ms) or ms <= 0:
        out["reason"] = "no measured latency"
        return out
    if not peaks or not peaks.get("copy_gbps"):
        out["reason"] = (peaks or {}).get("reason") or "peaks not measured"
        return out
    t_bytes = w["bytes"] / (peaks["copy_gbps"] * 1e9)
    t_flops = w["flops"] / (peaks["bf16_tflops"] * 1e12) if w.get("flops") and peaks.get("bf16_tflops") else 0.0
    out["bound"] = "flops" if t_flops > t_bytes else "bytes"
    out["fraction"] = round(max(t_bytes, t_flops) / (ms * 1e-3), 4)
    out["peaks"] = {"copy_gbps": peaks["copy_gbps"], "bf16_tflops": peaks.get("bf16_tflops")}
    if w.get("flops") is None:
        out["reason"] = f"no FLOP formula for family {w.get('family')!r}: bytes only"
    return out


def best_peaks(peak_sets: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """The fastest copy bandwidth and bf16 rate among ``peak_sets`` (each a run's or a record's peaks).

    Why one scale: every case of a GPU is measured against the same hardware, but each
    record keeps the peaks of the run that measured it, and the copy peak's method changed
    (memcpy alone, 2.7 TB/s under the CUDA-graph timer, until session 15; then the faster of
    that and an elementwise stream, 4.2 TB/s).  Rows scaled by different peaks cannot be
    read side by side; the fastest rate this GPU showed is the closest measured roof.
    """
    best: dict[str, Any] = {"copy_gbps": None, "bf16_tflops": None}
    for peaks in peak_sets:
        for key in best:
            value = (peaks or {}).get(key)
            if value and (best[key] is None or value > best[key]):
                best[key] = value
    return best
