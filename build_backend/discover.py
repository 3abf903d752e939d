"""Discover: import the configured packages and match their kernels to declared shapes."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuning.errors import DiscoveryError
from tuning.specs import ShapeSpec


class KilnUndeclaredWarning(UserWarning):
    """A kernel has no declared shapes, so nothing is tuned for it."""


@dataclass
class Discovery:
    kernels: dict[str, Any]  # kernel id -> helion Kernel
    by_package: dict[str, list[str]]  # package -> kernel ids
    undeclared: list[str]


@contextmanager
def importable(project_dir: Path) -> Iterator[None]:
    """Import the project from its source tree, with the runtime's opt-in made inert."""
    paths = [str(project_dir)]
    if (project_dir / "src").is_dir():
        paths.append(str(project_dir / "src"))
    saved_path = list(sys.path)
    saved_env = os.environ.get("KILN_BUILDING")
    sys.path[:0] = paths
    os.environ["KILN_BUILDING"] = "1"
    try:
        yield
    finally:
        sys.path[:] = saved_path
        if saved_env is None:
            os.environ.pop("KILN_BUILDING", None)
        else:
            os.environ["KILN_BUILDING"] = saved_env


def discover(project_dir: Path, packages: list[str], shapes: Mapping[str, list[ShapeSpec]]) -> Discovery:
    from tuning.runtime.kernels import KernelImportError, find_kernels

    kernels: dict[str, Any] = {}
    by_package: dict[str, list[str]] = {}
    with importable(project_dir):
        for package in packages:
            try:
                found = find_kernels(package)
            except ModuleNotFoundError as e:
                if e.name == package:
                    raise DiscoveryError(
                        f"package {package!r} (from [tool.kiln] packages) is not importable from {project_dir}. "
                        "List the import names of the packages that hold your Helion kernels."
                    ) from None
                raise DiscoveryError(str(e)) from e
            except KernelImportError as e:
                raise DiscoveryError(str(e)) from e
            by_package[package] = [k.kernel_id for k in found]
            kernels.update({k.kernel_id: k.kernel for k in found})
    unknown = sorted(set(shapes) - set(kernels))
    if unknown:
        import difflib

        lines = []
        for kid in unknown:
            near = difflib.get_close_matches(kid, sorted(kernels), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            lines.append(f'  [tool.kiln.shapes."{kid}"] names no kernel{hint}')
        raise DiscoveryError(
            "declared shapes for kernels that don't exist:\n" + "\n".join(lines)
            + f"\nKernels found in {', '.join(packages)}: {', '.join(sorted(kernels)) or 'none'}."
        )
    undeclared = sorted(set(kernels) - set(shapes))
    for kid in undeclared:
        warnings.warn(
            f'kiln: kernel {kid} has no declared shapes, so nothing is tuned for it; add [tool.kiln.shapes."{kid}"] '
            "to pyproject.toml. It will run Helion's default config.",
            KilnUndeclaredWarning,
            stacklevel=2,
        )
    return Discovery(kernels, by_package, undeclared)
