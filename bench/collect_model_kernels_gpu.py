"""Merge one GPU session's ``model_kernels_gpu.py`` outputs into one committed JSON.

Why a collector: a session runs the families as several jobs (two GPUs, a
per-family timeout, a re-run of one family after a fix), so results sit in
several ``<out>/<family>/model_kernels_gpu.json`` files. A family killed by its
timeout writes no JSON, but its log still holds the lines it finished
(``<kernel> <shape>: ok=...``, ``LFBO quick: N configs, T s``, ``times (ms)``);
those are parsed and marked ``"source": "log"`` so a reader can tell measured
JSON from recovered log lines. Nothing is filled in that the run did not print.

    python bench/collect_model_kernels_gpu.py --machine "..." --out bench/X.json JSON_OR_LOG...

An earlier collected file may be an input: its rows stay unless a later input measures the
same kernel again, its machine and notes are kept, and mixed helion/torch/triton versions
are refused.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import re
from pathlib import Path
from typing import Any

_OK = re.compile(r"INFO (?P<kid>\S+:\S+) (?P<shape>small|medium|large): ok=(?P<ok>True|False) (?P<ratios>\[.*\])")
_LFBO = re.compile(r"INFO (?P<kid>\S+:\S+) LFBO quick: (?P<n>\d+) configs, (?P<s>[\d.]+) s")
_TIMES = re.compile(r"INFO (?P<kid>\S+:\S+) times \(ms\) at (?P<shape>\w+): (?P<d>\{.*\})")


def from_log(path: Path) -> dict[str, dict[str, Any]]:
    """Kernel results recoverable from a family's stdout log (for a family killed before its JSON)."""
    kernels: dict[str, dict[str, Any]] = {}
    for line in path.read_text(errors="replace").splitlines():
        if m := _OK.search(line):
            k = kernels.setdefault(m["kid"], {"correctness": {}})
            k["correctness"][m["shape"]] = {"ok": m["ok"] == "True",
                                            "max_err_over_allowed": ast.literal_eval(m["ratios"])}
        elif m := _LFBO.search(line):
            k = kernels.setdefault(m["kid"], {"correctness": {}})
            k["lfbo_quick"] = {"configs_tested": int(m["n"]), "autotune_time_s": float(m["s"])}
        elif m := _TIMES.search(line):
            k = kernels.setdefault(m["kid"], {"correctness": {}})
            k["times_ms"] = ast.literal_eval(m["d"])
            k["timing_shape"] = m["shape"]
    for k in kernels.values():
        k["source"] = "log"
        k["log"] = path.name
    return kernels


def from_json(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Kernels of a ``model_kernels_gpu.py`` result, or of an earlier collected file (so a later
    session adds the rows it was missing and keeps the rest as they were measured)."""
    data = json.loads(path.read_text())
    if "summary" in data and "kernels" in data:
        return dict(data["kernels"]), data.get("versions") or {}
    kernels: dict[str, dict[str, Any]] = {}
    for fam in data.get("families", {}).values():
        for k in fam.get("kernels", {}).values():
            if "kernel" in k:
                kernels[k["kernel"]] = {**k, "source": "json"}
    return kernels, data.get("versions") or {}


def summarize(kid: str, k: dict[str, Any]) -> dict[str, Any]:
    times = k.get("times_ms", {})
    tuned = times.get("helion_lfbo_quick")
    torch_ms = times.get("torch")
    row: dict[str, Any] = {
        "kernel": kid,
        "source": k["source"],
        "correct_every_shape": bool(k.get("correctness")) and all(s.get("ok") for s in k["correctness"].values()),
        "shapes_checked": sorted(k.get("correctness", {})),
        "timing_shape": k.get("timing_shape"),
        "helion_default_ms": times.get("helion_default"),
        "helion_lfbo_quick_ms": tuned,
        "torch_ms": torch_ms,
        "torch_baseline": k.get("torch_baseline"),
        "lfbo_quick_configs": (k.get("lfbo_quick") or {}).get("configs_tested"),
        "lfbo_quick_seconds": (k.get("lfbo_quick") or {}).get("autotune_time_s"),
    }
    if tuned and torch_ms:
        row["tuned_over_torch"] = round(tuned / torch_ms, 3)
        row["slower_than_torch"] = tuned > torch_ms
    if tuned is None:
        row["missing"] = "LFBO quick did not finish in this run"
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", type=Path, help="model_kernels_gpu.json files or family stdout logs")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--machine", required=True, help="what ran it, in words (GPU, pinning, what else ran)")
    ap.add_argument("--note", action="append", default=[])
    opts = ap.parse_args()
    kernels: dict[str, dict[str, Any]] = {}
    versions: dict[str, Any] = {}
    machines: list[str] = []
    notes: list[str] = []
    for p in opts.inputs:
        if p.suffix == ".json":
            got, v = from_json(p)
            if versions and v and v != versions:
                raise SystemExit(f"{p}: versions {v} differ from the earlier inputs' {versions}; "
                                 "rows from different stacks do not belong in one table")
            versions = versions or v
            kernels.update(got)  # later inputs replace earlier rows of the same kernel
            earlier = json.loads(p.read_text())
            if "summary" in earlier:
                machines.append(earlier.get("machine", ""))
                notes.extend(earlier.get("notes", []))
        else:  # a log fills only kernels no JSON reported
            for kid, k in from_log(p).items():
                kernels.setdefault(kid, k)
    rows = [summarize(kid, kernels[kid]) for kid in sorted(kernels)]
    ratios = [r["tuned_over_torch"] for r in rows if "tuned_over_torch" in r]
    doc = {
        "what": "model_kernels on the GPU: correctness at every declared shape, and at the medium shape "
                "Helion's default config, LFBO at quick effort and the PyTorch reference, timed interleaved "
                "in one process (triton.testing.do_bench medians, 3 rounds)",
        "machine": " | then: ".join([*filter(None, machines), opts.machine]),
        "versions": versions, "notes": [*notes, *opts.note],
        "summary": rows,
        "geomean_tuned_over_torch": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3) if ratios else None,
        "kernels": kernels,
    }
    opts.out.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    for r in rows:
        print(f"{r['kernel']:45s} ok={r['correct_every_shape']!s:5s} default={r['helion_default_ms']} "
              f"lfbo_quick={r['helion_lfbo_quick_ms']} torch={r['torch_ms']} ratio={r.get('tuned_over_torch')}")


if __name__ == "__main__":
    main()
