"""Shared harness: build fixture packages with real `pip wheel` runs, install them, run them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Pallas interpret mode: real Helion tuning on a CPU.  Helion's Pallas final pick re-ranks
# its finalists by on-chip microseconds from jax.profiler, which a CPU never reports: on
# CPU it spent ~215 s per search failing to get a reading before falling back to wall
# time, so the tests ask for wall time directly.
PALLAS_INTERPRET = {"HELION_BACKEND": "pallas", "HELION_PALLAS_INTERPRET": "1", "HELION_AUTOTUNE_PALLAS_RANK_BY": "wall_time"}


# The head of a script run inside an installed target (``.format(target=...)``): it puts the
# target first on sys.path and makes any entry into Helion's search a failure.
NO_SEARCH = """
import sys, json, warnings
sys.path.insert(0, {target!r})
import helion.autotuner.base_search as bs
def _no_search(*a, **k):
    raise AssertionError("Helion's autotuner search was entered at run time")
bs.BaseSearch.__init__ = _no_search
import torch
"""


def script_result(stdout: str) -> Any:
    """What a script run in an installed target printed after ``RESULT`` (its one JSON line)."""
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def lock_entries(project: Path) -> dict[str, dict[str, Any]]:
    """The project's kiln.lock entries as written, by declared shape name."""
    return {e["shape_name"]: e for e in json.loads((project / "kiln.lock").read_text())["entries"]}


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment minus any KILN_*/HELION_* the developer had set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KILN_", "HELION_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str], check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


def pip_wheel(project: Path, out: Path, env: dict[str, str], *config: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-v", "-w", str(out)]
    for c in config:
        cmd += ["-C", c]
    return run(cmd, project, env, check=check)


def only_wheel(out: Path) -> Path:
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def install(wheel: Path, target: Path, env: dict[str, str]) -> None:
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)], target.parent, env)


def run_python(code: str, cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-c", code], cwd, env, check=check)


@contextmanager
def fixed_answer_llm(lock: Path, workdir: Path, wait_s: float = 20.0) -> Iterator[str]:
    """bench/fixed_answer_llm.py serving ``lock``'s configs (not an LLM) on a free loopback port: yields its api_base."""
    port_file = workdir / "fixed_answer_llm.port"
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fixed_answer_llm.py"), "--lock", str(lock),
                               "--port-file", str(port_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + wait_s
        while not (port_file.exists() and port_file.read_text()):
            if time.monotonic() > deadline:
                raise AssertionError(f"bench/fixed_answer_llm.py did not start within {wait_s} s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def tinypkg(tmp_path: Path) -> Path:
    """A fresh copy of the tinypkg fixture project."""
    dest = tmp_path / "tinypkg"
    shutil.copytree(FIXTURES / "tinypkg", dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "kiln.lock"))
    return dest
