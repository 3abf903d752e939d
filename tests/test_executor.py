"""The local executor: one worker process per device, the parent writes the lock.

Real tuning (Pallas interpret on CPU) on two worker processes; one case's
worker really dies (its input factory calls os._exit) and the case is retried.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import PALLAS_INTERPRET, clean_env, lock_entries, pip_wheel

pytest.importorskip("jax", reason="Pallas interpret mode needs jax (pip install -r requirements/test.txt)")
FAST_FINAL_CHECK = {"HELION_AUTOTUNE_FINAL_REBENCHMARK_TOP_K": "3", "HELION_AUTOTUNE_FINAL_REBENCHMARK_TARGET_MS": "300"}


def test_local_executor_two_workers_and_a_dying_worker(tinypkg: Path, tmp_path: Path) -> None:
    pyproject = tinypkg / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'crashy = { factory = "tinypkg.ops:crash_once_inputs" }\n')
    marker = tmp_path / "crashed"
    env = clean_env(KILN_DEVICE="cpu", TINYPKG_CRASH_MARKER=str(marker), **PALLAS_INTERPRET, **FAST_FINAL_CHECK)
    build = pip_wheel(tinypkg, tmp_path / "dist", env, "kiln.executor=local", "kiln.workers=2", "kiln.strategy=lfbo")
    out = build.stdout + build.stderr
    assert "local executor, 2 workers" in out
    assert marker.exists(), "the crashing factory never ran"
    entries = lock_entries(tinypkg)
    assert set(entries) == {"small", "wide", "crashy"}  # the crashed case was retried and finished
    assert entries["crashy"]["shape"] == "f32[16,128], f32[16,128]"
    assert all(e["provenance"]["strategy"] == "lfbo" for e in entries.values())
    assert "3 to tune" in out and "FAILED" not in out


def test_worker_slots_follow_visible_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from build_backend.builder import worker_slots
    from tuning.executor import worker_envs

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert worker_slots("auto", None, "cuda") == ["2", "5"]  # several GPUs: local by default
    assert worker_slots("auto", 1, "cuda") == ["0"]  # one worker: tune in-process
    assert worker_slots("serial", None, "cuda") == ["0"]
    assert worker_slots("auto", None, "cpu") == ["0"] and worker_slots("local", 2, "cpu") == ["0", "1"]
    envs = worker_envs(["2", "5"], "cuda")
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["2", "5"]
    assert all(int(e["HELION_AUTOTUNE_PRECOMPILE_JOBS"]) >= 1 for e in envs)
