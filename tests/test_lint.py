"""The repository passes ruff (pinned in requirements/test.txt), so lint findings fail CI, not a reviewer's read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    # ruff honours .gitignore: CI's .ci-venv and build outputs are not linted.
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
