"""GPU proof for the foundation: run the installed wheel's baked configs and compare with the lock.

Run *after* `pip wheel .` tuned some kernels and the wheel was installed into
a fresh target (bench/run_foundation_gpu.sh does all of it).  For every lock
entry tuned on this GPU it:
  * makes the declared inputs, calls the kernel once (first-call ms, compile included),
  * checks the result against the module's PyTorch reference ``<kernel>_ref``,
  * re-measures the kernel and the reference with triton's do_bench (median),
  * proves Helion's search was never entered (BaseSearch.__init__ raises).
Writes one JSON document with versions and GPU recorded.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import tomllib
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True, help="folder the wheel was installed into")
    ap.add_argument("--lock", required=True)
    ap.add_argument("--pyproject", required=True)
    ap.add_argument("--out", required=True)
    ns = ap.parse_args()

    sys.path.insert(0, ns.target)
    import helion.autotuner.base_search as bs

    def _no_search(*a: object, **k: object) -> None:
        raise AssertionError("Helion's autotuner search was entered at run time")

    bs.BaseSearch.__init__ = _no_search  # type: ignore[method-assign]

    import torch
    from triton.testing import do_bench

    import model_kernels  # noqa: F401  (the opt-in runs here)
    from tuning.runtime import device_key_for, installed
    from tuning.runtime.kernels import resolve_kernel
    from tuning.specs import make_inputs, parse_shapes
    from tuning.versions import toolchain_versions

    assert model_kernels.__file__.startswith(ns.target), model_kernels.__file__
    dev = device_key_for("cuda")
    lock = json.loads(Path(ns.lock).read_text())
    shapes = parse_shapes(tomllib.loads(Path(ns.pyproject).read_text())["tool"]["kiln"]["shapes"])
    baked = installed("model_kernels")
    assert baked is not None
    rows = []
    for e in lock["entries"]:
        if (e["device"], e["arch"]) != (dev.name, dev.arch):
            continue
        spec = next(s for s in shapes[e["kernel"]] if s.name == e["shape_name"])
        kernel = resolve_kernel(e["kernel"])
        module, _, name = e["kernel"].partition(":")
        ref = getattr(importlib.import_module(module), f"{name}_ref")
        args = make_inputs(spec, kernel, "cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = kernel(*args)
        torch.cuda.synchronize()
        first_call_ms = (time.perf_counter() - t0) * 1e3
        expected = ref(*args)
        err = (out.float() - expected.float()).abs().max().item()
        tol = 2e-2 if out.dtype in (torch.bfloat16, torch.float16) else 1e-4
        ok = torch.allclose(out.float(), expected.float(), atol=tol, rtol=tol)
        res = baked.resolutions[-1]
        kernel_ms = do_bench(lambda: kernel(*args), warmup=25, rep=200, return_mode="median")
        ref_ms = do_bench(lambda: ref(*args), warmup=25, rep=200, return_mode="median")
        lock_ms = e["provenance"]["ms"]
        rows.append({
            "kernel": e["kernel"], "shape_name": e["shape_name"], "shape": e["shape"],
            "resolution": res.level_name, "config_is_lock_config": res.config == e["config"],
            "correct": bool(ok), "max_abs_err": err,
            "first_call_ms": round(first_call_ms, 3), "installed_ms": round(kernel_ms, 5),
            "lock_ms": lock_ms, "installed_over_lock": round(kernel_ms / lock_ms, 4),
            "torch_ref_ms": round(ref_ms, 5), "ref_over_kernel": round(ref_ms / kernel_ms, 3),
            "tuning_seconds": e["provenance"]["seconds"], "configs_tested": e["provenance"]["configs_tested"],
            "strategy": e["provenance"]["strategy"], "budget": e["provenance"].get("budget"),
        })
        print(json.dumps(rows[-1]), flush=True)
    doc = {
        "what": "foundation GPU proof: pip wheel tuned these cases; the installed wheel ran them with no search",
        "gpu": dev.as_dict(), "versions": toolchain_versions(), "search_entered": False, "cases": rows,
        "note": "torch_ref_ms is eager PyTorch (torch.softmax / F.rms_norm-based refs), same process, same method",
    }
    Path(ns.out).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
