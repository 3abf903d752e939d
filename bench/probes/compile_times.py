"""How long does each row's `lfbo` pick take to compile, against `seeded`'s compile timeout?

Why: `seeded`'s fast finish (``seeded.FAST_FINISH``) gives up on a compile after 10 s, and once the
first population is in, after Helion's 90th-percentile compile time floored at 5 s; full-effort
`lfbo` waits 30-60 s.  One of session 50's H100 draws of causal attention medium lost 10 of a
generation's 22 configs to "Timeout after 5s compiling", its search paths then ended "because of no
improvement" after two generations, and all three H100 draws of that row landed 8% behind `lfbo`'s
pick.  If
`lfbo`'s picks are configs that compile slowly (deep pipelines: more stages, larger tiles), the
fast finish hides them from `seeded` on every draw, which is a systematic miss no seed variant
fixes.  This asks the GPU directly, without tuning: each row's stored `seeded` pick ("mine"),
the `lfbo` pick it was paired with, and Helion's default config are compiled one at a time, each
into a fresh Triton cache, and the wall time of Helion's code generation and of the first call
(Triton's compile to a cubin, its load and one launch) is recorded.

One compile alone on an idle machine is faster than the same compile among a generation's
(Helion compiles up to one per core at once), so a reading under the timeout does not prove the
search saw it; a reading over it does prove the search could not have.

    python bench/probes/compile_times.py --cases CASES --out $OUT/compile_times.json   # GPU, no tuning
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.probes.judge_repeat import gpu_name, stored_pair  # noqa: E402
from tuning.bench import BASELINE  # noqa: E402

MINE = "mine"
DEFAULT = "helion_default"


def timed_compile(bound: Any, args: tuple[Any, ...], config: dict[str, Any] | None, device: str) -> dict[str, Any]:
    """Code generation, then the first call, each timed, into a Triton cache no earlier compile has filled."""
    import helion

    from bench.probes.knob_swap import _synchronize

    cfg = helion.Config(**config) if config is not None else bound.config_spec.default_config()
    before = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="kiln-ct-") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            t0 = time.perf_counter()
            fn = bound.compile_config(cfg)
            t1 = time.perf_counter()
            fn(*args)
            _synchronize(device)
            t2 = time.perf_counter()
            fn(*args)  # a second call: what is left of the first call's time once the kernel is built
            _synchronize(device)
            t3 = time.perf_counter()
        finally:  # the next compile, and whatever runs after the probe, must not write into a deleted folder
            if before is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = before
    return {"codegen_s": round(t1 - t0, 3), "first_call_s": round(t2 - t1, 3), "second_call_s": round(t3 - t2, 4),
            "compile_s": round((t2 - t1) - (t3 - t2), 3)}


def measure_row(case: str, store: dict[str, Any], project: Path, device: str) -> dict[str, Any]:
    """One row: Helion's default (which also warms the process's first compile), mine, then `lfbo`'s pick."""
    from build_backend.discover import importable
    from build_backend.settings import load_settings
    from tuning.runtime.kernels import resolve_kernel
    from tuning.specs import make_inputs, parse_shapes

    row: dict[str, Any] = {"case": case}
    pair = stored_pair(store, case, "seeded")
    if "error" in pair:
        return {**row, "error": pair["error"]}
    row["stored_paired"] = pair["stored"]["paired"]
    kernel_id, _, shape_name = case.rpartition("@")
    settings = load_settings(project, {}, os.environ)
    spec = next(s for s in parse_shapes(settings.shapes)[kernel_id] if s.name == shape_name)
    configs: dict[str, dict[str, Any] | None] = {DEFAULT: None, MINE: pair["configs"]["seeded"],
                                                 BASELINE: pair["configs"][BASELINE]}
    row["configs"] = {n: c for n, c in configs.items() if c is not None}
    row["times"] = {}
    with importable(project):
        kernel = resolve_kernel(kernel_id)
        args = make_inputs(spec, kernel, device)
        bound = kernel.bind(args)
        for name, config in configs.items():
            try:
                row["times"][name] = timed_compile(bound, args, config, device)
            except Exception as e:  # noqa: BLE001  (one config failing leaves the others to run)
                row["times"][name] = {"error": f"{type(e).__name__}: {e}"[:800]}
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="comma list of kernel_id@shape_name")
    ap.add_argument("--store", type=Path, default=ROOT / "bench/results/store.json")
    ap.add_argument("--project", type=Path, default=ROOT)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args(argv)

    from tuning.versions import toolchain_versions

    store = json.loads(ns.store.read_text())
    rows: list[dict[str, Any]] = []
    doc = {"what": "each row's stored seeded pick (mine), the lfbo pick it was paired with and Helion's default config, "
                   "compiled one at a time into a fresh Triton cache: codegen_s (Helion), compile_s (first call less "
                   "a second call: Triton's compile and load); compare with seeded's 5-10 s compile timeout",
           "versions": toolchain_versions(), "gpu": gpu_name(ns.device), "cpus": os.cpu_count(), "rows": rows}
    for case in (c.strip() for c in ns.cases.split(",") if c.strip()):
        try:
            rows.append(measure_row(case, store, ns.project.resolve(), ns.device))
        except Exception as e:  # noqa: BLE001
            rows.append({"case": case, "error": f"{type(e).__name__}: {e}"[:1500]})
        emit(doc, ns.out)
        print(json.dumps(rows[-1].get("times", rows[-1].get("error"))), case, flush=True)
    emit(doc, ns.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
