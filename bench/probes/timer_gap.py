"""Do the search and the judge rank two configs the same way? (GPU probe for `kiln bench` findings.)

Why: on attention@medium (bench/results/store.json) seeded's config timed 0.564 ms inside its
search and lfbo's 0.549 ms (2.7% apart), but re-measured side by side in a fresh process the
gap was 11% (0.637 vs 0.574 ms). Helion's search times with an L2 flush before every call;
kiln's fresh-process judge (tuning/measure.py) replays a CUDA graph with a warm L2. If the two
timers disagree on which config is faster, a short search is picking by one clock and judged by
the other, and the fix belongs in how kiln ranks finalists, not in the search budget.

For each case, every stored strategy's config is compiled once and timed interleaved, in one
process, for ROUNDS rounds, by:
  judge       tuning.measure.time_ms (triton do_bench_cudagraph: warm L2, no launch overhead)
  helion      helion.autotuner.benchmarking.do_bench (events, L2 flushed per call), the search's
  helion_cg   helion's do_bench_cuda_graph (L2 flushed inside the graph), when this Helion has it

    python bench/probes/timer_gap.py --cases model_kernels.attention:attention@medium,... --out $OUT/timer_gap.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402


def timers() -> dict[str, Callable[[Callable[[], Any]], float]]:
    import torch
    from helion.autotuner import benchmarking as hb

    from tuning.measure import time_ms

    out: dict[str, Callable[[Callable[[], Any]], float]] = {
        "judge": lambda fn: time_ms(fn, torch.device("cuda"))[0],
        "helion": lambda fn: float(hb.do_bench(fn, return_mode="median")),
    }
    if hasattr(hb, "do_bench_cuda_graph"):
        out["helion_cg"] = lambda fn: float(hb.do_bench_cuda_graph(fn, return_mode="median"))
    return out


def probe(case: Any, records: dict[str, dict[str, Any]], rounds: int) -> dict[str, Any]:
    import helion

    from tuning.specs import make_inputs

    args = make_inputs(case.spec, case.kernel, "cuda")
    bound = case.kernel.bind(args)
    fns = {}
    for name, rec in records.items():
        if rec.get("config"):
            compiled = bound.compile_config(helion.Config(**rec["config"]), allow_print=False)
            fns[name] = (lambda c=compiled: c(*args))
    clocks = timers()
    samples: dict[str, dict[str, list[float]]] = {t: {n: [] for n in fns} for t in clocks}
    errors: dict[str, str] = {}
    for _ in range(rounds):
        for tname, timer in clocks.items():
            for name, fn in fns.items():
                if f"{tname}/{name}" in errors:
                    continue
                try:
                    samples[tname][name].append(timer(fn))
                except Exception as e:  # a clock this config can't use: say so, keep the others
                    errors[f"{tname}/{name}"] = f"{type(e).__name__}: {str(e)[:200]}"
    med = {t: {n: statistics.median(v) for n, v in s.items() if v} for t, s in samples.items()}
    ratios = {t: {n: round(m[n] / m["lfbo"], 4) for n in m if n != "lfbo"} for t, m in med.items() if "lfbo" in m}
    stored = {n: {"search_best_ms": r.get("search_best_ms"), "fresh_ms": r.get("ms")} for n, r in records.items()}
    return {"median_ms": med, "ratio_vs_lfbo": ratios, "samples": samples, "errors": errors, "stored": stored}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="comma list of kernel_id@shape_name in the store")
    ap.add_argument("--store", type=Path, default=ROOT / "bench" / "results" / "store.json")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()

    import torch

    from build_backend.builder import prepare_build
    from tuning.bench.store import Store, case_label
    from tuning.versions import toolchain_versions

    prep = prepare_build(ROOT, {}, tune=False)
    by_label = {case_label(c.kernel_id, c.spec.name): c for c in prep.cases}
    store = Store.load(ns.store)
    doc: dict[str, Any] = {"what": __doc__.split("\n\n")[0], "gpu": torch.cuda.get_device_name(0),
                           "versions": toolchain_versions(), "rounds": ns.rounds, "cases": {}}
    for label in [c.strip() for c in ns.cases.split(",") if c.strip()]:
        records = next((run["cases"][label]["strategies"] for _, run in store.runs() if label in run["cases"]), {})
        case = by_label[label]
        records = {n: r for n, r in records.items() if r.get("source_hash") == case.source_hash}
        doc["cases"][label] = probe(case, records, ns.rounds)
        print(label, json.dumps(doc["cases"][label]["ratio_vs_lfbo"]), flush=True)
        emit(doc, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
