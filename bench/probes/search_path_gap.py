"""Does a config time the same inside a Helion search as it does once shipped? (GPU probe for `kiln bench` findings.)

Why: timer_gap.py showed three re-measuring clocks agree that seeded's attention picks
are 10-16% slower than lfbo's.  But the searches had rated them much closer: seeded's
attention@medium pick timed 0.564 ms inside its search and 0.627 ms right after it, in
the same process, once compiled the way the wheel runs it (``set_config`` then the
judge's clock: the store's ``tune_ms``); lfbo's pick 0.549 and 0.570.  The gap between
"inside the search" and "as shipped" is 11% for one pick and 4% for the other, so a
search can prefer a config that is slower as shipped.

This probe times the stored configs both ways, in one process, ROUNDS times, interleaved:
  search   Helion's own benchmark path: a FiniteSearch over exactly these configs
           (``BaseSearch.benchmark_batch``: precompiled candidates, Helion's clock)
  shipped  ``bound.compile_config(config)`` then the judge's clock (tuning.measure.time_ms)
  helion   ``bound.compile_config(config)`` then Helion's do_bench (CUDA only)
and records the GPU's SM clock, power and temperature around each round (nvidia-smi),
since short bursts between compiles may run at other clocks than a steady replay.

    python bench/probes/search_path_gap.py --cases model_kernels.attention:attention@medium,... --out $OUT/search_path_gap.json

If ``search`` is systematically lower than ``shipped`` and by different amounts per
config, kiln should rank a search's finalists by ``shipped`` before it locks one.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402


def gpu_state() -> str | None:
    """SM clock, power and temperature now, or None where nvidia-smi is absent (CPU dry runs)."""
    if not shutil.which("nvidia-smi"):
        return None
    # nvidia-smi numbers GPUs physically; this process's cuda:0 is the first of CUDA_VISIBLE_DEVICES.
    gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
    out = subprocess.run(["nvidia-smi", f"--id={gpu}", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                          "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
    return out.stdout.strip() or out.stderr.strip()


def search_path_ms(bound: Any, args: Any, configs: dict[str, Any]) -> dict[str, float | None]:
    """Each config's time through Helion's search benchmark path (a FiniteSearch over exactly these configs)."""
    from helion.autotuner.base_search import BaseSearch
    from helion.autotuner.finite_search import FiniteSearch

    seen: list[tuple[Any, float]] = []
    original = BaseSearch.benchmark_batch

    @functools.wraps(original)
    def hooked(self: Any, *a: Any, **kw: Any) -> Any:
        results = original(self, *a, **kw)
        seen.extend((r.config, r.perf) for r in results)
        return results

    BaseSearch.benchmark_batch = hooked  # type: ignore[method-assign]
    try:
        FiniteSearch(bound, args, list(configs.values())).autotune(skip_cache=True)
    finally:
        BaseSearch.benchmark_batch = original  # type: ignore[method-assign]
    out: dict[str, float | None] = {}
    for name, cfg in configs.items():
        perfs = [float(p) for c, p in seen if dict(c) == dict(cfg)]
        out[name] = min(perfs) if perfs else None
    return out


def probe(case: Any, records: dict[str, dict[str, Any]], rounds: int, device: str) -> dict[str, Any]:
    import helion

    from tuning.measure import time_ms
    from tuning.specs import make_inputs

    args = make_inputs(case.spec, case.kernel, device)
    bound = case.kernel.bind(args)
    configs = {n: helion.Config(**r["config"]) for n, r in records.items() if r.get("config")}
    compiled = {n: bound.compile_config(c, allow_print=False) for n, c in configs.items()}
    clocks: dict[str, Callable[[Callable[[], Any]], float]] = {"shipped": lambda fn: time_ms(fn, device)[0]}
    if device == "cuda":
        from helion.autotuner import benchmarking as hb

        clocks["helion"] = lambda fn: float(hb.do_bench(fn, return_mode="median"))
    samples: dict[str, dict[str, list[float | None]]] = {k: {n: [] for n in configs} for k in ("search", *clocks)}
    states: list[dict[str, Any]] = []
    for i in range(rounds):
        states.append({"round": i, "before_search": gpu_state()})
        for name, ms in search_path_ms(bound, args, configs).items():
            samples["search"][name].append(ms)
        states[-1]["after_search"] = gpu_state()
        for cname, clock in clocks.items():
            for name, fn in compiled.items():
                samples[cname][name].append(clock(lambda fn=fn: fn(*args)))
        states[-1]["after_clocks"] = gpu_state()
    med = {k: {n: statistics.median([v for v in vs if v is not None]) for n, vs in s.items() if any(v is not None for v in vs)}
           for k, s in samples.items()}
    gap = {n: round(med["search"][n] / med["shipped"][n], 4) for n in configs if n in med["search"] and n in med["shipped"]}
    stored = {n: {"search_best_ms": r.get("search_best_ms"), "tune_ms": r.get("tune_ms"), "fresh_ms": r.get("ms")}
              for n, r in records.items()}
    return {"median_ms": med, "search_over_shipped": gap, "samples": samples, "gpu_state": states, "stored": stored}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="comma list of kernel_id@shape_name in the store")
    ap.add_argument("--project", type=Path, default=ROOT)
    ap.add_argument("--store", type=Path, default=ROOT / "bench" / "results" / "store.json")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()

    from build_backend.builder import prepare_build
    from tuning.bench.store import Store, case_label
    from tuning.versions import toolchain_versions

    prep = prepare_build(ns.project, {}, tune=False)
    by_label = {case_label(c.kernel_id, c.spec.name): c for c in prep.cases}
    store = Store.load(ns.store)
    doc: dict[str, Any] = {"what": __doc__.split("\n\n")[0], "device": ns.device, "versions": toolchain_versions(),
                           "rounds": ns.rounds, "cases": {}}
    if ns.device == "cuda":
        import torch

        doc["gpu"] = torch.cuda.get_device_name(0)
    for label in [c.strip() for c in ns.cases.split(",") if c.strip()]:
        records = next((run["cases"][label]["strategies"] for _, run in store.runs() if label in run["cases"]), {})
        case = by_label[label]
        records = {n: r for n, r in records.items() if r.get("source_hash") == case.source_hash}
        doc["cases"][label] = probe(case, records, ns.rounds, ns.device)
        print(label, json.dumps(doc["cases"][label]["search_over_shipped"]), json.dumps(doc["cases"][label]["median_ms"]),
              flush=True)
        emit(doc, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
