"""The pins that decide what a wheel and a GPU run contain agree wherever they are written.

helion and litellm are pinned in pyproject.toml, in the build requirements and in the lists of wheels
carried to the offline GPU machines; a bump that misses one of them would tune on the GPU with one
version and build with another. litellm 1.107.0 is a known-compromised release and must never appear.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from build_backend.settings import read_pyproject

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT_FILES = ["requirements/build.txt", "requirements/device.txt", "requirements/device-llm.txt"]


def _requirements() -> list[tuple[str, Requirement]]:
    """Every requirement with where it is written, from the requirement files and pyproject.toml."""
    found: list[tuple[str, Requirement]] = []
    for name in REQUIREMENT_FILES:
        for line in (ROOT / name).read_text().splitlines():
            text = line.split("#", 1)[0].strip()
            if text and not text.startswith("-"):
                found.append((name, Requirement(text)))
    project = read_pyproject(ROOT)["project"]
    for text in project["dependencies"]:
        found.append(("pyproject.toml [project] dependencies", Requirement(text)))
    for extra, items in project["optional-dependencies"].items():
        for text in items:
            found.append((f"pyproject.toml extra {extra}", Requirement(text)))
    return found


@pytest.mark.parametrize("package", ["helion", "litellm"])
def test_pinned_to_one_version_everywhere(package: str) -> None:
    specs = {(where, str(req.specifier)) for where, req in _requirements() if req.name == package}
    assert len(specs) >= 2, f"{package} is pinned in fewer places than expected: {specs}"
    assert len({spec for _, spec in specs}) == 1, f"{package} pins disagree: {sorted(specs)}"
    assert next(iter(specs))[1].startswith("=="), f"{package} is not pinned exactly: {sorted(specs)}"


def test_no_compromised_litellm() -> None:
    for where, req in _requirements():
        if req.name == "litellm":
            assert not req.specifier.contains("1.107.0"), f"{where} admits litellm 1.107.0 (compromised)"
