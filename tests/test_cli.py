"""The `kiln` command: inspect a wheel and a lock, doctor a project, merge locks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import clean_env, only_wheel, pip_wheel, run
from test_wheel_build import _write_lock


def kiln(*args: str, cwd: Path, check: bool = True) -> "subprocess.CompletedProcess[str]":  # noqa: F821
    return run([sys.executable, "-m", "tuning.cli", *args], cwd, clean_env(), check=check)


def test_inspect_wheel_and_lock_json(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_lock(tinypkg, monkeypatch)
    pip_wheel(tinypkg, tmp_path / "dist", clean_env(KILN_DEVICE="none"))
    wheel = only_wheel(tmp_path / "dist")

    doc = json.loads(kiln("inspect", str(wheel), "--json", cwd=tmp_path).stdout)
    rows = {(r["kernel"], r["device"]): r for r in doc["entries"]}
    assert rows[("tinypkg.ops:add", "cpu")]["config"] == {"block_sizes": [64, 128], "flatten_loops": [False], "loop_orders": [[1, 0]]}
    assert rows[("tinypkg.ops:add", "NVIDIA H200")]["arch"] == "triton:sm90"
    assert rows[("tinypkg.ops:scale", None)]["config"] is None  # discovered, no entry: default config

    lock = json.loads(kiln("inspect", str(tinypkg / "kiln.lock"), "--json", cwd=tmp_path).stdout)
    assert [e["device"] for e in lock["entries"]] == ["cpu", "NVIDIA H200"]
    human = kiln("inspect", str(tinypkg / "kiln.lock"), cwd=tmp_path).stdout
    assert "2 entries" in human


def test_doctor_reports_plan_without_tuning(tinypkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_lock(tinypkg, monkeypatch)
    doc = json.loads(kiln("doctor", "--json", "-C", "device=none", cwd=tinypkg).stdout)
    assert doc["tune_on"] is None
    assert doc["plan"] == {"from_lock": ["tinypkg.ops:add [small]"], "to_tune": [], "missing": ["tinypkg.ops:add [wide]"]}
    assert doc["undeclared_kernels"] == ["tinypkg.ops:scale"]
    assert doc["versions"]["helion"] == "1.5.0"


def test_merge_and_bad_setting_exit_codes(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_lock(tinypkg, monkeypatch)
    out = tmp_path / "merged.lock"
    kiln("merge", str(tinypkg / "kiln.lock"), str(tinypkg / "kiln.lock"), "-o", str(out), cwd=tmp_path)
    assert json.loads(out.read_text())["entries"] == json.loads((tinypkg / "kiln.lock").read_text())["entries"]
    bad = kiln("doctor", "-C", "devcie=cpu", cwd=tinypkg, check=False)
    assert bad.returncode == 2 and "Did you mean 'kiln.device'?" in bad.stderr
