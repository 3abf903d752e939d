"""Re-measure tuned configs in a fresh process: the bench's judge.

Why a fresh process: the tuning process has warmed caches, pinned memory and
Helion state from its search; a config is judged as an installed wheel would
run it, compiled from scratch, and every config of a case (the strategy's, the
stored ``lfbo`` one, the PyTorch reference) is timed in the same process,
interleaved over rounds, so their ratio is free of the 3-5% drift between
processes (DESIGN.md).  The bench calls :func:`measure_in_fresh_process`; the
child runs this module's :func:`measure_main`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]


def measure_in_fresh_process(request: dict[str, Any], timeout_s: float = 900) -> dict[str, Any]:
    """Run ``python -m tuning.bench.fresh_measure`` on ``request``; its JSON answer, or ``{"error": ...}``."""
    with tempfile.TemporaryDirectory(prefix="kiln-bench-measure-") as tmp:
        req, out = Path(tmp) / "request.json", Path(tmp) / "result.json"
        req.write_text(json.dumps(request))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
        env["KILN_BUILDING"] = "1"
        cmd = [sys.executable, "-m", "tuning.bench.fresh_measure", "--measure", str(req), "--result", str(out)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"error": f"measurement process timed out after {timeout_s} s"}
        if proc.returncode != 0 or not out.exists():
            return {"error": f"measurement process failed ({proc.returncode}): {proc.stderr[-3000:]}"}
        result = json.loads(out.read_text())
        result.setdefault("phases_s", {})["process"] = round(time.perf_counter() - start, 2)
        return result


def measure_main(request_path: Path, result_path: Path) -> int:
    """The fresh process: build inputs, compile each config, time all (and the reference) interleaved.

    ``phases_s`` in the answer says where its time went: session 20's measurements took
    28-40 s a case beside 64-152 s of tuning, a quarter of the table's time, and which phase
    that is decides what to trim.
    """
    t0 = time.perf_counter()
    import helion

    from build_backend.discover import importable
    from build_backend.settings import load_settings
    from tuning.measure import time_ms
    from tuning.plan import source_hash
    from tuning.runtime.kernels import resolve_kernel
    from tuning.specs import make_inputs, parse_shapes

    from .roofline import work

    req = json.loads(request_path.read_text())
    project = Path(req["project"])
    settings = load_settings(project, req.get("config_settings") or {}, os.environ)
    spec = next(s for s in parse_shapes(settings.shapes)[req["kernel_id"]] if s.name == req["shape_name"])
    device = req["device"]
    with importable(project):
        kernel = resolve_kernel(req["kernel_id"])
        module = sys.modules[req["kernel_id"].partition(":")[0]]
        fname = req["kernel_id"].rpartition(":")[2].rpartition(".")[2]
        ref_name = f"{fname}_ref"
        ref = getattr(module, ref_name, None)
        t_imported = time.perf_counter()
        args = make_inputs(spec, kernel, device)
        t_inputs = time.perf_counter()
        bound = kernel.bind(args)
        fns: dict[str, Callable[..., Any]] = {n: bound.compile_config(helion.Config(**c)) for n, c in req["configs"].items()}
        t_compiled = time.perf_counter()
        result: dict[str, Any] = {"source_hash": source_hash(kernel), "pid": os.getpid()}
        first = next(iter(fns))
        output = fns[first](*args)
        result["work"] = work(req["kernel_id"], args, output)
        del output
        baseline = getattr(module, f"{fname}_baseline", None)
        if baseline is not None:  # what PyTorch runs in a model (cuBLAS, SDPA, ...), prepared untimed
            call, result["ref_kind"] = baseline(*args)
            fns["__ref__"] = lambda *_: call()
        elif ref is not None:
            fns["__ref__"] = ref
            result["ref_kind"] = f"{ref_name} (the accuracy reference; no {fname}_baseline)"
        else:
            result["ref_reason"] = f"no {ref_name} in {module.__name__}"
        samples: dict[str, list[float]] = {n: [] for n in fns}
        timers: dict[str, str] = {}
        t_timing = time.perf_counter()
        for _ in range(max(1, int(req.get("rounds", 3)))):
            for n, fn in fns.items():
                ms, timers[n] = time_ms(lambda fn=fn: fn(*args), device)
                samples[n].append(ms)
        t_done = time.perf_counter()
    # imports and inputs apart: together they were half of each measurement in sessions 21-22 (14-20 s),
    # and which of the two it is decides whether a warm process or cheaper inputs would cut it.
    result["phases_s"] = {"imports": round(t_imported - t0, 2), "inputs": round(t_inputs - t_imported, 2),
                          "compile": round(t_compiled - t_inputs, 2),
                          "first_call_and_reference": round(t_timing - t_compiled, 2), "timing": round(t_done - t_timing, 2)}
    med = {n: statistics.median(v) for n, v in samples.items()}
    result["ms"] = {n: round(med[n], 6) for n in req["configs"]}
    result["ref_ms"] = round(med["__ref__"], 6) if "__ref__" in med else None
    result["timers"] = timers
    result["rounds"] = len(next(iter(samples.values())))
    result_path.write_text(json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tuning.bench.fresh_measure", description="internal: the fresh measuring process")
    ap.add_argument("--measure", required=True, type=Path)
    ap.add_argument("--result", required=True, type=Path)
    ns = ap.parse_args(argv)
    return measure_main(ns.measure, ns.result)


if __name__ == "__main__":
    sys.exit(main())
