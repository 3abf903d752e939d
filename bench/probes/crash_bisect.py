"""Which part of a config crashes the GPU? (GPU probe for configs a logged search skipped.)

Why: session 25's full lfbo search of mamba2_chunk_scan@medium lost 15 of its first 100
random configs to ``CUDA error: misaligned address``, each costing Helion a benchmark-worker
respawn (logged about 20 s apart), so its baseline will run to the 900 s cap.  The log holds
each crashed ``helion.Config(...)``.  All 15 tile the inner ``tile_j`` loop by 16 and 14 of them
the chunk rows by 16, while no single load or store is a tensor descriptor in all 15; this
runs each crashed config again as logged, with every tensor descriptor turned into a pointer,
and with every 16-wide tile widened to 32, each in a child process (a crash poisons the CUDA
context), with CUDA_LAUNCH_BLOCKING=1 so the error is reported at the launch that made it.
Children are forked (cheap: the imports are done once) only while the parent's CUDA driver is
untouched; session 27's run forked after an import had asked ``torch.cuda.is_available()``,
which calls ``cuInit`` without marking torch initialized, and every child failed with "CUDA
error: initialization error".  So the parent asks availability through NVML
(PYTORCH_NVML_BASED_CUDA_CHECK=1), checks the driver itself before forking, and spawns fresh
children (slower, always safe) if the driver was initialized anyway.  Which variants run says what to change in
the kernel (or report upstream); the kernel has no baseline yet, so a fix costs no rerun.

    python bench/probes/crash_bisect.py --log bench/logs/table_session25/table0_call1-3.log \\
        --case model_kernels.mamba2_chunk_scan:mamba2_chunk_scan@medium --limit 6 --out $OUT/crash_bisect.json
"""

from __future__ import annotations

import argparse
import ast
import ctypes
import importlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_CONFIG = re.compile(r"Config: @helion\.kernel\(config=helion\.Config\((.*?)\)(?:, static_shapes=\w+)?\)\s*$")
TRIAL_TIMEOUT_S = 180.0


def crashed_configs(log: str, case: str) -> list[dict[str, Any]]:
    """The configs Helion printed after an unrecoverable error while tuning ``case`` (every strategy), in order."""
    out: list[dict[str, Any]] = []
    inside = False
    for line in log.splitlines():
        if line.startswith("kiln bench: tune "):
            inside = line.startswith(f"kiln bench: tune {case} with ")
        elif inside and (m := _CONFIG.search(line)):
            call = ast.parse(f"f({m.group(1)})", mode="eval").body
            assert isinstance(call, ast.Call)
            out.append({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg})
    return out


def variants(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The config as logged and the two changes the log points at, each alone."""
    out = {"as_logged": dict(config)}
    if "tensor_descriptor" in (config.get("indexing") or []):
        out["pointers_only"] = {**config, "indexing": ["pointer" for _ in config["indexing"]],
                                "host_tensor_descriptors": False}
    if 16 in (config.get("block_sizes") or []):
        out["tiles_16_to_32"] = {**config, "block_sizes": [32 if b == 16 else b for b in config["block_sizes"]]}
    return out


def _case(label: str) -> Any:
    """The declared case ``label``, planned in the child: planning asks the GPU its name, and a parent
    that initialized CUDA could not fork usable children (session 26's first run stopped there)."""
    from build_backend.builder import prepare_build
    from tuning.bench.store import case_label

    cases = {case_label(c.kernel_id, c.spec.name): c for c in prepare_build(ROOT, {}, tune=False).cases}
    if label not in cases:
        raise KeyError(f"no declared case {label!r}; declared: {', '.join(sorted(cases))}")
    return cases[label]


def _trial(label: str, config: dict[str, Any], conn: Any) -> None:
    """In the forked child: compile, run once, synchronize; report ok or the error's first line."""
    try:
        import helion
        import torch

        from tuning.specs import make_inputs

        case = _case(label)
        args = make_inputs(case.spec, case.kernel, "cuda")
        compiled = case.kernel.bind(args).compile_config(helion.Config(**config), allow_print=False)
        compiled(*args)
        torch.cuda.synchronize()
        conn.send({"ok": True})
    except BaseException as e:  # the point is to see it
        conn.send({"ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"})


def cuda_driver_initialized() -> bool:
    """Whether this process has called ``cuInit``: a fork after that cannot use CUDA.

    ``torch.cuda.is_initialized()`` is not enough (``torch.cuda.is_available()`` initializes the
    driver and leaves it False).  ``cuDeviceGetCount`` answers CUDA_ERROR_NOT_INITIALIZED (3)
    before ``cuInit`` and initializes nothing; no driver library (a CPU machine) means no driver
    state to inherit."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return int(driver.cuDeviceGetCount(ctypes.byref(count))) != 3


def start_method() -> str:
    """``fork`` while the driver is untouched (the parent's imports are reused), else ``spawn``."""
    return "spawn" if cuda_driver_initialized() else "fork"


def run_trial(label: str, config: dict[str, Any], method: str = "fork") -> dict[str, Any]:
    import multiprocessing

    ctx = multiprocessing.get_context(method)
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_trial, args=(label, config, child))
    proc.start()
    child.close()
    try:
        result = parent.recv() if parent.poll(TRIAL_TIMEOUT_S) else {"ok": False, "error": f"no answer in {TRIAL_TIMEOUT_S:.0f} s"}
    except EOFError:  # the child died before it could answer (a hard crash is an answer too)
        proc.join(timeout=10)
        result = {"ok": False, "error": f"child exited with code {proc.exitcode} before answering"}
    proc.join(timeout=10)
    if proc.is_alive():
        proc.kill()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--case", required=True, help="kernel_id@shape_name as kiln bench logs it")
    ap.add_argument("--limit", type=int, default=6, help="crashed configs to try (each costs 1-3 trials)")
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # read when each child initializes CUDA
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # is_available() in the imports below: no cuInit

    from tuning.versions import toolchain_versions

    for module in ("helion", "build_backend.builder", "tuning.specs"):  # once here, not in every forked child
        importlib.import_module(module)
    method = start_method()
    print(f"crash_bisect: children are {'forked' if method == 'fork' else 'spawned (the driver was initialized here)'}",
          flush=True)
    configs = crashed_configs(ns.log.read_text(errors="replace"), ns.case)[: ns.limit]
    doc: dict[str, Any] = {"what": __doc__.split("\n\n")[0], "case": ns.case, "log": str(ns.log),
                           "versions": toolchain_versions(), "start_method": method, "trials": []}
    for i, config in enumerate(configs):
        for name, trial in variants(config).items():
            result = run_trial(ns.case, trial, method)
            doc["trials"].append({"config": i, "variant": name, **result, "block_sizes": trial.get("block_sizes")})
            print(f"config {i} {name}: {'ok' if result['ok'] else result['error']}", flush=True)
            ns.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
