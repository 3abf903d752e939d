"""The part of helion-kiln that an installed wheel imports.

One line in a package's ``__init__.py`` opts in::

    from tuning.runtime import use_baked_configs
    use_baked_configs(__name__)

From then on every Helion kernel of the package takes its config from the
table baked into the wheel, through the fallback chain in ``lookup``, and
Helion's search is never entered unless KILN_RUNTIME_AUTOTUNE=1 asks for it.
A missing or corrupt table costs speed, never correctness: kernels then run
Helion's default config, with a warning.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from importlib import resources

from .keys import DeviceKey, device_key_for, shape_key
from .lookup import KilnFallbackWarning, KilnMissError, Resolution, Resolver
from .table import TABLE_FILENAME, Table, TableError, decode

__all__ = [
    "BakedConfigs",
    "DeviceKey",
    "KilnFallbackWarning",
    "KilnMissError",
    "Resolution",
    "device_key_for",
    "shape_key",
    "use_baked_configs",
]

# Set by the build backend while it imports packages for discovery: a stale
# table in the source tree must not steer the build that replaces it.
BUILDING_ENV = "KILN_BUILDING"


@dataclass
class BakedConfigs:
    """What one package's opt-in installed; tests and `kiln` inspect it."""

    package: str
    table: Table
    strict: bool
    resolutions: list[Resolution] = field(default_factory=list)
    kernels: dict[str, object] = field(default_factory=dict)


_installed: dict[str, BakedConfigs] = {}


def installed(package: str) -> BakedConfigs | None:
    return _installed.get(package)


def _load_table(package: str) -> Table | None:
    try:
        data = resources.files(package).joinpath(TABLE_FILENAME).read_bytes()
    except (FileNotFoundError, OSError):
        warnings.warn(
            f"kiln: {package} has no baked table ({TABLE_FILENAME}); its kernels run "
            "Helion's default configs. Build the wheel with the kiln backend to bake one.",
            KilnFallbackWarning,
            stacklevel=3,
        )
        return None
    try:
        return decode(data)
    except TableError as e:
        warnings.warn(
            f"kiln: {package}/{TABLE_FILENAME}: {e}; its kernels run Helion's default configs. "
            "Rebuild the wheel to bake a fresh table.",
            KilnFallbackWarning,
            stacklevel=3,
        )
        return None


def use_baked_configs(package: str, *, strict: bool | None = None) -> BakedConfigs | None:
    """Serve every kernel of ``package`` from its baked table.

    ``strict`` (or KILN_STRICT=1) turns every fallback into a KilnMissError.
    """
    if os.environ.get(BUILDING_ENV) == "1":
        return None
    if strict is None:
        strict = os.environ.get("KILN_STRICT") == "1"
    table = _load_table(package)
    if table is None:
        from .kernels import find_kernels

        table = Table(package, {k.kernel_id: [] for k in find_kernels(package)})
    baked = BakedConfigs(package, table, strict)
    from .kernels import resolve_kernel

    for kernel_id, entries in table.kernels.items():
        try:
            kernel = resolve_kernel(kernel_id)
        except (ImportError, AttributeError) as e:
            warnings.warn(f"kiln: baked kernel {kernel_id} not found ({e}); skipped", KilnFallbackWarning, stacklevel=2)
            continue
        kernel.settings.autotuner_fn = Resolver(kernel_id, entries, strict=strict, log=baked.resolutions)
        baked.kernels[kernel_id] = kernel
    _installed[package] = baked
    return baked
