"""One wheel for several GPU types: `kiln merge`, a wheel baked from the merged lock, run-time selection.

The inputs are two real locks for the tinypkg fixture, both committed:

* ``fixtures/tinypkg_h200.lock.json``: tuned on an NVIDIA H200 (triton:sm90) with
  ``python bench/multi_gpu_type_gpu.py tune``;
* ``fixtures/tinypkg_pallas.lock.json``: tuned on a CPU with Helion's Pallas backend
  in interpret mode (``kiln tune`` with HELION_BACKEND=pallas HELION_PALLAS_INTERPRET=1).

This file is the CPU half of the proof: the CPU must pick the Pallas entries out of
a wheel that also carries the H200's.  The GPU half (the H200 picking its own
entries out of the same wheel) is ``bench/multi_gpu_type_gpu.py verify``, which
needs the GPU and is not run here.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, PALLAS_INTERPRET, clean_env, install, only_wheel, pip_wheel, run, run_python, script_result, sha256
from test_wheel_build import RUN_ADD, _source_hash

pytest.importorskip("jax", reason="Pallas interpret mode needs jax (pip install -r requirements/test.txt)")

H200_LOCK = FIXTURES / "tinypkg_h200.lock.json"
PALLAS_LOCK = FIXTURES / "tinypkg_pallas.lock.json"
KERNEL = "tinypkg.ops:add"
H200 = ("NVIDIA H200", "triton:sm90")
PALLAS = ("cpu", "pallas:interpret")
SMALL = "f32[64,128], f32[64,128]"
WIDE = "f32[32,256], f32[32,256]"

REGENERATE = (
    "The committed tinypkg locks no longer match the fixture's kernel source, so they would silently "
    "stop being baked. Re-tune both and commit them: on an H200, "
    "`python bench/multi_gpu_type_gpu.py tune --out tests/fixtures/tinypkg_h200.lock.json`; on a CPU, copy "
    "tests/fixtures/tinypkg, run `HELION_BACKEND=pallas HELION_PALLAS_INTERPRET=1 python -m tuning.cli tune "
    "-C device=cpu --project <copy>` and commit <copy>/kiln.lock as tests/fixtures/tinypkg_pallas.lock.json."
)


def kiln(*args: str, cwd: Path, check: bool = True) -> Any:
    """The real `kiln` CLI in a subprocess, so exit codes and stderr are what a user sees."""
    return run([sys.executable, "-m", "tuning.cli", *args], cwd, clean_env(), check=check)


def _configs(lock: Path, device: tuple[str, str]) -> dict[str, dict[str, Any]]:
    """shape key -> config of one device type's entries for tinypkg.ops:add in a lock file."""
    entries = json.loads(lock.read_text())["entries"]
    return {e["shape"]: e["config"] for e in entries if e["kernel"] == KERNEL and (e["device"], e["arch"]) == device}


def test_merged_lock_bakes_every_gpu_type_and_cpu_picks_its_own(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The committed locks must belong to the fixture's current kernel source; a stale hash
    # would make the build skip them (and tune, or bake nothing) instead of failing here.
    current = _source_hash(tinypkg, monkeypatch)
    for lock in (H200_LOCK, PALLAS_LOCK):
        hashes = {e["source_hash"] for e in json.loads(lock.read_text())["entries"]}
        assert hashes == {current}, f"{lock.name}: source_hash {sorted(hashes)} != current {current}. {REGENERATE}"
    h200, pallas = _configs(H200_LOCK, H200), _configs(PALLAS_LOCK, PALLAS)
    assert set(h200) == set(pallas) == {SMALL, WIDE}
    assert h200[SMALL] != pallas[SMALL] and h200[WIDE] != pallas[WIDE]  # else "picked its own" proves nothing

    # kiln merge, both argument orders: the same canonical bytes either way.
    ab, ba = tmp_path / "ab.lock", tmp_path / "ba.lock"
    proc = kiln("merge", str(H200_LOCK), str(PALLAS_LOCK), "-o", str(ab), cwd=tmp_path)
    assert "merged 2 locks" in proc.stdout and "4 entries" in proc.stdout
    kiln("merge", str(PALLAS_LOCK), str(H200_LOCK), "-o", str(ba), cwd=tmp_path)
    assert ab.read_bytes() == ba.read_bytes()
    merged = json.loads(ab.read_text())["entries"]
    # Canonical order is (kernel, arch, device, shape, source_hash): Pallas before Triton.
    assert [(e["arch"], e["device"], e["shape"]) for e in merged] == [
        (PALLAS[1], PALLAS[0], WIDE), (PALLAS[1], PALLAS[0], SMALL),
        (H200[1], H200[0], WIDE), (H200[1], H200[0], SMALL),
    ]
    assert _configs(ab, H200) == h200 and _configs(ab, PALLAS) == pallas

    # Bake on the CPU with Pallas interpret: the cpu entries are hits, nothing is tuned.
    env = clean_env(KILN_DEVICE="cpu", **PALLAS_INTERPRET)
    build = pip_wheel(tinypkg, tmp_path / "a", env, f"kiln.lock={ab}")
    assert "2 from" in build.stderr + build.stdout and "0 to tune" in build.stderr + build.stdout
    wheel = only_wheel(tmp_path / "a")
    assert ab.read_bytes() == ba.read_bytes()  # the build did not rewrite the merged lock

    from tuning.runtime.keys import DeviceKey
    from tuning.runtime.lookup import DEFAULT, EXACT, SAME_ARCH, choose
    from tuning.runtime.table import decode

    with zipfile.ZipFile(wheel) as zf:
        table = decode(zf.read("tinypkg/_kiln_table.msgpack"))
    entries = table.kernels[KERNEL]
    baked = {(e.device, e.arch, e.shape): dict(e.config) for e in entries}
    assert baked == {
        **{(*PALLAS, s): c for s, c in pallas.items()},
        **{(*H200, s): c for s, c in h200.items()},
    }

    # Same lock, other argument order of the merge: byte-identical wheel.
    pip_wheel(tinypkg, tmp_path / "b", env, f"kiln.lock={ba}")
    assert sha256(only_wheel(tmp_path / "b")) == sha256(wheel)

    # The CPU run: installed wheel, Helion's search disabled, Pallas interpret.
    target = tmp_path / "target"
    install(wheel, target, env)
    res = script_result(run_python(RUN_ADD.format(target=str(target)), tmp_path, env).stdout)
    got = [(shape, level) for shape, level, _ in res["resolutions"]]
    assert got == [(SMALL, "exact"), (WIDE, "exact"), ("f32[48,128], f32[48,128]", "nearest-shape")]
    used = [cfg for _, _, cfg in res["resolutions"]]
    assert used[0] == pallas[SMALL] and used[1] == pallas[WIDE]
    # Even the fallback for an undeclared shape stays on this device type's entries.
    assert used[2] == pallas[SMALL]
    assert not any(cfg in h200.values() for cfg in used)

    # The other direction, by the lookup logic alone (no GPU here): the runtime's
    # `choose` over the table read back from this wheel, given the H200's device key.
    # This is not a GPU run; that is `bench/multi_gpu_type_gpu.py verify` on the H200.
    for shape in (SMALL, WIDE):
        level, entry = choose(entries, DeviceKey(*H200), shape)
        assert level == EXACT and entry is not None and (entry.device, entry.arch) == H200
        assert dict(entry.config) == h200[shape]
        # Another Hopper part falls back to the H200's entry (same arch), never to the CPU's.
        level, entry = choose(entries, DeviceKey("NVIDIA H100 80GB HBM3", "triton:sm90"), shape)
        assert level == SAME_ARCH and entry is not None and dict(entry.config) == h200[shape]
        # A GPU type the wheel has no entries for gets Helion's default, not another arch's config.
        assert choose(entries, DeviceKey("NVIDIA B200", "triton:sm100"), shape) == (DEFAULT, None)


def test_merge_conflict_exits_nonzero_and_names_the_entry(tmp_path: Path) -> None:
    """Two builders disagreeing on one (kernel, shape, device) must stop the merge, not pick silently.

    tests/test_lock_and_runtime.py covers `lock.merge` itself on synthetic entries;
    this checks the CLI on the real H200 lock: exit code, message, and no output file.
    """
    doc = json.loads(H200_LOCK.read_text())
    small = next(e for e in doc["entries"] if e["shape"] == SMALL)
    small["config"]["num_warps"] = small["config"]["num_warps"] * 2
    other = tmp_path / "other_h200.lock.json"
    other.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    shutil.copy(PALLAS_LOCK, tmp_path / "pallas.lock.json")

    out = tmp_path / "merged.lock"
    proc = kiln("merge", str(H200_LOCK), str(tmp_path / "pallas.lock.json"), str(other), "-o", str(out), cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc
    assert "kiln: error: conflicting lock entries:" in proc.stderr
    assert f"{KERNEL} [{SMALL}] on NVIDIA H200 (triton:sm90): {H200_LOCK} and {other} chose different configs" in proc.stderr
    assert WIDE not in proc.stderr  # only the entry that differs is named
    assert "Keep one builder's entry (edit or drop a lock) and merge again." in proc.stderr
    assert not out.exists()
