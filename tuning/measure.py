"""One timing method for every latency kiln records, so numbers compare."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def time_ms(fn: Callable[[], Any], device: Any) -> float:
    """Median milliseconds per call: do_bench on CUDA, a wall-clock median elsewhere."""
    import torch

    if torch.device(device).type == "cuda":
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))
    fn()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return float(statistics.median(samples))
