"""One wheel, several GPU types: each machine must pick its own entries.

Two steps, run where the GPU is:

``tune``    tunes the ``tinypkg`` test fixture on this machine into a lock
            (``tests/fixtures/tinypkg_h200.lock.json`` came from here).
``verify``  installs a wheel built elsewhere from a merged lock (H200 entries
            plus Pallas-interpret CPU entries), runs the kernels on this GPU with
            Helion's search disabled, and records which entry each call used.

The CPU half of the proof is ``tests/test_multi_gpu_type.py``: it builds the
wheel from the same merged lock and checks that the CPU picks the Pallas
entries.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "tinypkg"

VERIFY = r"""
import json, sys, warnings
sys.path.insert(0, {target!r})
import helion.autotuner.base_search as bs
def _no_search(*a, **k):
    raise AssertionError("Helion's autotuner search was entered at run time")
bs.BaseSearch.__init__ = _no_search
import torch, tinypkg, tinypkg.ops as ops
assert tinypkg.__file__.startswith({target!r}), tinypkg.__file__
out = {{}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for shape in ([64, 128], [32, 256]):
        x, y = torch.randn(*shape, device="cuda"), torch.randn(*shape, device="cuda")
        torch.testing.assert_close(ops.add(x, y), x + y)
out["resolutions"] = [[r.shape, r.level_name, r.config] for r in tinypkg.baked.resolutions]
out["warnings"] = [str(w.message) for w in caught if "kiln" in str(w.message)]
print("RESULT" + json.dumps(out))
"""


def tune(out: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="kiln-tinypkg-")) / "tinypkg"
    shutil.copytree(FIXTURE, work)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tuning.cli", "tune", "--project", str(work)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    shutil.copy(work / "kiln.lock", out)


def verify(wheel: Path, lock: Path, out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tuning.runtime.keys import device_key_for
    from tuning.versions import toolchain_versions

    target = Path(tempfile.mkdtemp(prefix="kiln-target-"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True)
    proc = subprocess.run([sys.executable, "-c", VERIFY.format(target=str(target))], capture_output=True, text=True)
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    res = json.loads(line[len("RESULT"):])
    dev = device_key_for("cuda")
    entries = json.loads(lock.read_text())["entries"]
    mine = {e["shape"]: e["config"] for e in entries
            if e["kernel"] == "tinypkg.ops:add" and (e["device"], e["arch"]) == (dev.name, dev.arch)}
    others = sorted({(e["device"], e["arch"]) for e in entries} - {(dev.name, dev.arch)})
    rows = [{"shape": s, "resolution": lvl, "config_is_this_gpus_entry": mine.get(s) == cfg} for s, lvl, cfg in res["resolutions"]]
    doc = {
        "what": "a wheel baked from a merged lock (this GPU + other device types) run on this GPU with search disabled",
        "wheel": wheel.name, "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "gpu": dev.as_dict(), "other_device_types_in_lock": others, "versions": toolchain_versions(),
        "calls": rows, "kiln_warnings": res["warnings"],
        "ok": bool(rows) and all(r["resolution"] == "exact" and r["config_is_this_gpus_entry"] for r in rows),
    }
    out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print(json.dumps(doc, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune")
    t.add_argument("--out", required=True, type=Path)
    v = sub.add_parser("verify")
    v.add_argument("--wheel", required=True, type=Path)
    v.add_argument("--lock", required=True, type=Path, help="the merged lock the wheel was baked from")
    v.add_argument("--out", required=True, type=Path)
    ns = ap.parse_args()
    if ns.cmd == "tune":
        tune(ns.out)
    else:
        verify(ns.wheel, ns.lock, ns.out)


if __name__ == "__main__":
    main()
