"""The fallback chain that picks a baked config for one call.

Order (DESIGN.md): exact GPU and shape; same architecture and shape; nearest
declared shape of the same kernel, dtypes and rank; Helion's default config.
Every step past the first warns once per kernel, or raises in strict mode,
because silently running a config tuned for something else is the failure
users of tuned-config JSON files complain about most.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .keys import DeviceKey, device_key_for, first_device, shape_distance, shape_key
from .table import TableEntry

EXACT, SAME_ARCH, NEAREST_SHAPE, DEFAULT = 1, 2, 3, 4
LEVEL_NAMES = {EXACT: "exact", SAME_ARCH: "same-arch", NEAREST_SHAPE: "nearest-shape", DEFAULT: "default"}


class KilnFallbackWarning(UserWarning):
    """A call ran a config that was not tuned for exactly this GPU and shape."""


class KilnMissError(LookupError):
    """Strict mode: no baked config for this GPU and shape."""


@dataclass(frozen=True)
class Resolution:
    kernel: str
    device: DeviceKey
    shape: str
    level: int
    source: TableEntry | None
    config: dict[str, Any]

    @property
    def level_name(self) -> str:
        return LEVEL_NAMES[self.level]


def choose(entries: Sequence[TableEntry], device: DeviceKey, shape: str) -> tuple[int, TableEntry | None]:
    """Pure selection over table entries; no Helion, no torch."""
    for e in entries:
        if e.arch == device.arch and e.device == device.name and e.shape == shape:
            return EXACT, e
    for e in entries:
        if e.arch == device.arch and e.shape == shape:
            return SAME_ARCH, e
    best: tuple[float, int, tuple[str, str, str, str], TableEntry] | None = None
    for e in entries:
        if e.arch != device.arch:
            continue
        d = shape_distance(e.shape, shape)
        if d is None:
            continue
        rank = (d, 0 if e.device == device.name else 1, e.sort_key(), e)
        if best is None or rank[:3] < best[:3]:
            best = rank
    if best is not None:
        return NEAREST_SHAPE, best[3]
    return DEFAULT, None


class Resolver:
    """Serves one kernel's baked entries; plugged in as Helion's autotuner_fn."""

    def __init__(self, kernel_id: str, entries: Sequence[TableEntry], *, strict: bool, log: list[Resolution]) -> None:
        self.kernel_id = kernel_id
        self.entries = list(entries)
        self.strict = strict
        self._log = log
        self._warned = False
        self._lock = threading.Lock()

    def __call__(self, bound_kernel: Any, args: Sequence[object], **_: object) -> _LookupAutotuner:
        return _LookupAutotuner(self, bound_kernel, args)

    def _miss(self, message: str) -> None:
        if self.strict:
            raise KilnMissError(message + " (strict mode: unset KILN_STRICT or pass strict=False to fall back)")
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(message, KilnFallbackWarning, stacklevel=4)

    def resolve(self, bound_kernel: Any, args: Sequence[object]) -> Any:
        import helion

        device = device_key_for(first_device(args))
        key = shape_key(args)
        level, entry = choose(self.entries, device, key)
        where = f"{self.kernel_id} on {device.name} ({device.arch}) for ({key})"
        config: Any = None
        if entry is not None:
            config = helion.Config(**entry.config)
            if level == NEAREST_SHAPE and not _compiles(bound_kernel, config):
                level, entry, config = DEFAULT, None, None
        if level == SAME_ARCH:
            self._miss(f"kiln: no config tuned on {device.name} for {where}; using the one tuned on {entry.device}")  # type: ignore[union-attr]
        elif level == NEAREST_SHAPE:
            self._miss(f"kiln: no config tuned for {where}; using the nearest declared shape ({entry.shape}, {entry.device})")  # type: ignore[union-attr]
        elif level == DEFAULT:
            if os.environ.get("KILN_RUNTIME_AUTOTUNE") == "1":
                from helion.runtime.settings import default_autotuner_fn

                config = default_autotuner_fn(bound_kernel, args).autotune()
            else:
                self._miss(
                    f"kiln: no baked config for {where}; running Helion's default config "
                    "(retune with `kiln tune`, or set KILN_RUNTIME_AUTOTUNE=1 to autotune at run time)"
                )
                config = bound_kernel.config_spec.default_config()
        self._log.append(Resolution(self.kernel_id, device, key, level, entry, dict(config)))
        return config


def _compiles(bound_kernel: Any, config: Any) -> bool:
    """A nearest-shape config may not fit this shape; never crash the model on it."""
    try:
        bound_kernel.compile_config(config)
    except Exception:
        return False
    return True


class _LookupAutotuner:
    """Helion's autotuner protocol, answered from the table with no search."""

    def __init__(self, resolver: Resolver, bound_kernel: Any, args: Sequence[object]) -> None:
        self.resolver = resolver
        self.bound_kernel = bound_kernel
        self.args = args

    def autotune(self, *, skip_cache: bool = False) -> Any:
        return self.resolver.resolve(self.bound_kernel, self.args)
