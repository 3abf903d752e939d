"""The local executor on 1 GPU and then on 2, the same cases, in one run.

Each pass is a real ``kiln tune`` (the same entry point as the build) in its
own process, with a fresh lock and fresh Triton/Inductor caches, so the second
pass compiles nothing the first one left behind.  Only CUDA_VISIBLE_DEVICES
differs between the passes: 1 GPU means one worker with every core for
Helion's precompile; 2 GPUs means two workers with half the cores each.

The figure of merit is wall time of the whole ``kiln tune`` (2 GPUs / 1 GPU;
the issue's bar is <= 0.6).  Budgets are config caps plus a wall cap per case,
so work, not a timer, decides how long a case takes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one_pass(gpus: str, settings: dict[str, str], work: Path, log: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    lock = work / "kiln.lock"
    env = dict(os.environ)
    env.update(CUDA_VISIBLE_DEVICES=gpus, TRITON_CACHE_DIR=str(work / "triton"),
               TORCHINDUCTOR_CACHE_DIR=str(work / "inductor"), PYTHONUNBUFFERED="1")
    env.pop("HELION_AUTOTUNE_PRECOMPILE_JOBS", None)  # the executor splits the cores itself
    cmd = [sys.executable, "-m", "tuning.cli", "tune", "--project", str(ROOT), "-C", f"lock={lock}",
           "-C", "executor=local", "-C", "missing=warn"]
    for k, v in settings.items():
        cmd += ["-C", f"{k}={v}"]
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    entries = json.loads(lock.read_text())["entries"] if lock.exists() else []
    return {
        "gpus": gpus, "rc": proc.returncode, "wall_s": round(wall, 2),
        "cases": [{"kernel": e["kernel"], "shape_name": e["shape_name"],
                   "configs_tested": e["provenance"]["configs_tested"], "seconds": e["provenance"]["seconds"],
                   "ms": e["provenance"]["ms"], "strategy": e["provenance"]["strategy"]} for e in entries],
        "sum_case_seconds": round(sum(e["provenance"]["seconds"] for e in entries), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--include", default="model_kernels.rms_norm:rms_norm,model_kernels.swiglu:swiglu")
    ap.add_argument("--strategy", default="seeded")
    ap.add_argument("--max-configs", default="30")
    ap.add_argument("--seconds", default="60")
    ap.add_argument("--out", required=True)
    ns = ap.parse_args()

    sys.path.insert(0, str(ROOT))
    import torch

    from tuning.versions import toolchain_versions

    settings = {"include": ns.include, "strategy": ns.strategy, "max_configs": ns.max_configs, "seconds": ns.seconds}
    out = Path(ns.out)
    doc: dict[str, Any] = {
        "what": "kiln tune with the local executor: the same cases on 1 GPU, then on 2, one run, fresh caches each",
        "gpu": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "cpu_count": os.cpu_count(), "versions": toolchain_versions(), "settings": settings, "passes": [],
    }
    work = Path(tempfile.mkdtemp(prefix="kiln-scaling-"))
    for gpus in ("0", "0,1"):
        n = len(gpus.split(","))
        doc["passes"].append(one_pass(gpus, settings, work / f"gpus{n}", out.with_name(f"scaling_{n}gpu.log")))
        print(json.dumps(doc["passes"][-1]), flush=True)
        out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    one, two = doc["passes"]
    doc["wall_ratio_2gpu_over_1gpu"] = round(two["wall_s"] / one["wall_s"], 3)
    doc["same_cases"] = sorted((c["kernel"], c["shape_name"]) for c in one["cases"]) == sorted(
        (c["kernel"], c["shape_name"]) for c in two["cases"])
    out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(json.dumps({k: doc[k] for k in ("wall_ratio_2gpu_over_1gpu", "same_cases")}), flush=True)


if __name__ == "__main__":
    main()
