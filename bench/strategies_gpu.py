"""Strategies side by side on real model_kernels cases, on one GPU, in one run.

For every case (``kernel_id@shape_name``) each strategy tunes from a fresh
Triton cache (no strategy compiles faster because another ran first), through
the same engine the build uses.  Then the chosen configs are re-measured side
by side in this process, interleaved over several rounds, with one method
(tuning.measure.time_ms: CUDA-graph replay, median): ratios come from that re-measurement, never
from timings seen during tuning (DESIGN.md: noise between runs is 3-5%).

``seeded`` gets what a real build would know: lock entries of the same kernel
at other shapes (``--lock``), plus Helion's compiler seeds.  ``hybrid`` talks to
a local OpenAI-compatible server started here that serves fixed configs (the
lock's entries of the kernel at other shapes): it proves the path on a GPU; its
numbers are not an LLM's.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from fixed_answer_llm import MODEL, fixed_answer_server  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]


def parse_variant(text: str) -> tuple[str, tuple[str, dict[str, str]]]:
    """``"seeded_ff=seeded:compile_timeout=20;HELION_X=1"`` -> ("seeded_ff", ("seeded", {...}))."""
    label, _, rest = text.partition("=")
    base, _, opts = rest.partition(":")
    overrides = dict(kv.split("=", 1) for kv in opts.split(";") if kv)
    bad = [k for k in overrides if k != "compile_timeout" and not k.startswith("HELION_")]
    if not label or not base or bad:
        raise SystemExit(f"--variant {text!r}: write LABEL=STRATEGY:KEY=VAL;... with keys compile_timeout or HELION_*")
    return label, (base, overrides)


@contextlib.contextmanager
def variant_settings(kernel: Any, overrides: dict[str, str]) -> Any:
    """Apply a variant's settings for one tuning run and put everything back afterwards."""
    env = {k: v for k, v in overrides.items() if k.startswith("HELION_")}
    saved_env = {k: os.environ.get(k) for k in env}
    saved_timeout = kernel.settings.autotune_compile_timeout
    os.environ.update(env)
    if "compile_timeout" in overrides:
        kernel.settings.autotune_compile_timeout = int(overrides["compile_timeout"])
    try:
        yield
    finally:
        kernel.settings.autotune_compile_timeout = saved_timeout
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, help="comma list of kernel_id@shape_name")
    ap.add_argument("--strategies", default="lfbo,seeded")
    ap.add_argument("--lfbo-effort", default="full")
    ap.add_argument("--lock", default=str(ROOT / "kiln.lock"))
    ap.add_argument("--lfbo-seconds", type=int, default=None,
                    help="wall cap for the lfbo baseline (default: none); a capped run is marked, and its time ratio is then a lower bound")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=STRATEGY:KEY=VAL;KEY=VAL",
                    help="an extra column: STRATEGY run with HELION_* environment variables set (and "
                         "compile_timeout=S, set on the kernel's settings), e.g. seeded_ff=seeded:compile_timeout=20;"
                         "HELION_AUTOTUNE_FINAL_REBENCHMARK_TOP_K=4 — a same-run before/after for a strategy change")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", required=True)
    ns = ap.parse_args()

    sys.path.insert(0, str(ROOT))
    os.environ["KILN_BUILDING"] = "1"  # model_kernels' opt-in stays inert: we tune, not serve
    import helion
    import torch
    from tuning.measure import time_ms

    from tuning import lock as lockfile
    from tuning.plan import Case, source_hash
    from tuning.runtime.keys import device_key_for
    from tuning.runtime.kernels import resolve_kernel
    from tuning.specs import make_inputs, parse_shapes
    from tuning.strategies import Budget, LlmSettings, get_strategy
    from tuning.tune import context_for, tune_case, tuning_environment
    from tuning.versions import toolchain_versions

    shapes = parse_shapes(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["kiln"]["shapes"])
    lock = lockfile.load(Path(ns.lock))
    dev = device_key_for("cuda")
    out_path = Path(ns.out)
    doc: dict[str, Any] = {
        "what": "strategies side by side; ratios from an interleaved re-measurement in one process",
        "gpu": dev.as_dict(), "versions": toolchain_versions(), "lfbo_effort": ns.lfbo_effort, "lfbo_seconds_cap": ns.lfbo_seconds,
        "cpu_affinity": sorted(os.sched_getaffinity(0)), "precompile_jobs": os.environ.get("HELION_AUTOTUNE_PRECOMPILE_JOBS"),
        "hybrid_note": "hybrid talks to a local server with fixed answers (lock configs of other shapes): not an LLM",
        "cases": [],
    }
    strategies = ns.strategies.split(",")
    variants = dict(parse_variant(v) for v in ns.variant)
    strategies += list(variants)
    doc["variants"] = {k: {"strategy": b, "settings": o} for k, (b, o) in variants.items()}
    for item in ns.cases.split(","):
        kernel_id, _, shape_name = item.partition("@")
        spec = next(s for s in shapes[kernel_id] if s.name == shape_name)
        kernel = resolve_kernel(kernel_id)
        case = Case(kernel_id, kernel, source_hash(kernel), spec)
        others = [e for e in lock.sorted_entries() if e.kernel == kernel_id and e.shape_name != shape_name]
        row: dict[str, Any] = {"case": item, "runs": {}, "seeds_from_lock": len(others)}
        doc["cases"].append(row)
        for name in strategies:
            cache = tempfile.mkdtemp(prefix=f"triton-{name}-")
            os.environ["TRITON_CACHE_DIR"] = cache
            base, overrides = variants.get(name, (name, {}))
            effort = ns.lfbo_effort if base == "lfbo" else "quick"
            context = context_for(case, others, dev, None)
            server = None
            if base == "hybrid":
                api_base, server = fixed_answer_server([dict(e.config) for e in others] or [{}])
                os.environ.setdefault("OPENAI_API_KEY", "sk-local-fixed-answers")
                context = dataclasses.replace(context, llm=LlmSettings(
                    model=MODEL, api_base=api_base, timeout_s=30, log_path=str(out_path.with_suffix(".llm.log"))))
            t0 = time.perf_counter()
            try:
                with tuning_environment("cuda"), variant_settings(kernel, overrides):
                    cap = ns.lfbo_seconds if base == "lfbo" else None
                    entry = tune_case(case, get_strategy(base), Budget(effort=effort, seconds=cap), "cuda", dev, context)
                row["runs"][name] = {"config": dict(entry.config), "wall_s": round(time.perf_counter() - t0, 2),
                                     **{k: entry.provenance.get(k) for k in ("configs_tested", "seconds", "ms", "strategy", "seeds", "llm", "fallback")}}
                if cap is not None:
                    row["runs"][name]["hit_seconds_cap"] = entry.provenance["seconds"] >= 0.97 * cap
            except Exception as e:  # record and go on: one broken run must not cost the table
                row["runs"][name] = {"error": f"{type(e).__name__}: {e}"[:2000], "wall_s": round(time.perf_counter() - t0, 2)}
            finally:
                if server is not None:
                    server.shutdown()
            print(json.dumps({item: {name: row["runs"][name]}}), flush=True)
            out_path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")

        # Interleaved re-measurement of every chosen config, plus the PyTorch reference.
        args = make_inputs(spec, kernel, "cuda")
        bound = kernel.bind(args)
        fns = {n: bound.compile_config(helion.Config(**r["config"])) for n, r in row["runs"].items() if "config" in r}
        module, _, kname = kernel_id.partition(":")
        ref = getattr(sys.modules[module], f"{kname}_ref", None)
        if ref is not None:
            fns["torch_ref"] = ref
        samples: dict[str, list[float]] = {n: [] for n in fns}
        timers: dict[str, str] = {}
        for _ in range(ns.rounds):
            for n, fn in fns.items():
                ms, timers[n] = time_ms(functools.partial(fn, *args), "cuda")
                samples[n].append(ms)
        row["remeasured_ms"] = {n: round(statistics.median(v), 5) for n, v in samples.items()}
        row["timers"] = timers
        base = row["remeasured_ms"].get("lfbo")
        if base:
            row["latency_ratio_vs_lfbo"] = {n: round(v / base, 4) for n, v in row["remeasured_ms"].items()}
            lf = row["runs"]["lfbo"]
            row["time_ratio_lfbo_over"] = {n: round(lf["seconds"] / r["seconds"], 2) for n, r in row["runs"].items()
                                           if "seconds" in r and r["seconds"]}
            row["configs_ratio_lfbo_over"] = {n: round(lf["configs_tested"] / r["configs_tested"], 2)
                                              for n, r in row["runs"].items() if r.get("configs_tested")}
        print(json.dumps({item: {k: row.get(k) for k in ("remeasured_ms", "latency_ratio_vs_lfbo", "time_ratio_lfbo_over")}}), flush=True)
        out_path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
        del args, bound, fns
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
