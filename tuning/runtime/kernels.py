"""Find the Helion kernels a package defines.

Shared by the build (discovery) and by the runtime (when the baked table is
missing or unreadable and it must still keep Helion from autotuning).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any


class KernelImportError(ImportError):
    """A module of the scanned package failed to import."""


@dataclass(frozen=True)
class FoundKernel:
    kernel_id: str  # "pkg.module:name"
    module: str
    name: str
    kernel: Any  # helion.runtime.kernel.Kernel


def is_helion_kernel(obj: object) -> bool:
    try:
        from helion.runtime.kernel import Kernel
    except ImportError:  # helion absent: nothing can be a kernel
        return False
    return isinstance(obj, Kernel)


def iter_module_names(package: str) -> list[str]:
    """The package and all its submodules, sorted so discovery is stable."""
    pkg = importlib.import_module(package)
    names = [package]
    path = getattr(pkg, "__path__", None)
    if path is not None:
        for info in pkgutil.walk_packages(path, prefix=package + "."):
            names.append(info.name)
    return sorted(names)


def kernels_in_module(module_name: str) -> list[FoundKernel]:
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise KernelImportError(
            f"importing {module_name} failed: {type(e).__name__}: {e}. "
            "Kernel discovery imports every module of the scanned packages; fix the "
            "module or leave its package out of [tool.kiln] packages."
        ) from e
    found = []
    for name, obj in sorted(vars(module).items()):
        if not is_helion_kernel(obj):
            continue
        # Count a kernel only where it is defined, not where it is re-exported.
        if getattr(getattr(obj, "fn", None), "__module__", module_name) != module_name:
            continue
        found.append(FoundKernel(f"{module_name}:{name}", module_name, name, obj))
    return found


def find_kernels(package: str) -> list[FoundKernel]:
    out: list[FoundKernel] = []
    for module_name in iter_module_names(package):
        out.extend(kernels_in_module(module_name))
    return out


def resolve_kernel(kernel_id: str) -> Any:
    module_name, _, attr = kernel_id.partition(":")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
