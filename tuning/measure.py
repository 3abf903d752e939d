"""One timing method for every latency kiln records, so numbers compare.

On CUDA, kernels are timed by replaying a CUDA graph (triton's
do_bench_cudagraph): small kernels are launch-bound, and a plain event timer
then measures the host's launch speed, which varies with CPU load (seen on the
H200: the same 8 us softmax read 21 us inside a busy build and 8.6 us after).
Kernels that can't be captured fall back to do_bench, and the method is
recorded next to the number.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def time_ms(fn: Callable[[], Any], device: Any) -> tuple[float, str]:
    """Median milliseconds per call, and the method that measured it."""
    import torch

    if torch.device(device).type == "cuda":
        from triton.testing import do_bench, do_bench_cudagraph

        fn()
        torch.cuda.synchronize()
        try:
            return float(do_bench_cudagraph(fn, rep=100, return_mode="median")), "cudagraph"
        except Exception:  # not capturable (host sync, dynamic allocation): time launches instead
            torch.cuda.synchronize()
            return float(do_bench(fn, warmup=25, rep=100, return_mode="median")), "do_bench"
    fn()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return float(statistics.median(samples)), "wall"
