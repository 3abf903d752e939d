"""Plan: kernel x declared shape x this device -> reuse a lock entry, tune, or report missing.

Planning never creates a tensor.  A lock entry matches a case by kernel id,
kernel source hash, device, shape name and the declared spec text, so a
builder without a GPU can decide everything from the lock alone, and any edit
to a kernel or to its declared shape makes the case new again.
"""

from __future__ import annotations

import fnmatch
import hashlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .lock import Lock, LockEntry
from .runtime.keys import DeviceKey
from .specs import ShapeSpec


def source_hash(kernel: Any) -> str:
    """Hash of the kernel's source, decorator included: an edit means a retune."""
    fn = getattr(kernel, "fn", kernel)
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = getattr(fn, "__qualname__", repr(fn))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Case:
    kernel_id: str
    kernel: Any
    source_hash: str
    spec: ShapeSpec

    @property
    def label(self) -> str:
        return f"{self.kernel_id} [{self.spec.name}]"

    def matches(self, entry: LockEntry) -> bool:
        return (
            entry.kernel == self.kernel_id
            and entry.source_hash == self.source_hash
            and entry.shape_name == self.spec.name
            and entry.provenance.get("spec") == self.spec.declared
        )


@dataclass
class Plan:
    device: DeviceKey | None
    hits: list[tuple[Case, LockEntry]] = field(default_factory=list)
    todo: list[Case] = field(default_factory=list)
    missing: list[Case] = field(default_factory=list)


def build_cases(kernels: Mapping[str, Any], shapes: Mapping[str, list[ShapeSpec]]) -> list[Case]:
    cases = []
    for kernel_id in sorted(shapes):
        kernel = kernels[kernel_id]
        digest = source_hash(kernel)
        cases.extend(Case(kernel_id, kernel, digest, spec) for spec in shapes[kernel_id])
    return cases


def make_plan(cases: Iterable[Case], lock: Lock, device: DeviceKey | None, include: list[str]) -> Plan:
    plan = Plan(device)
    entries = lock.sorted_entries()
    for case in cases:
        candidates = [e for e in entries if case.matches(e)]
        if device is not None:
            candidates = [e for e in candidates if e.device == device.name and e.arch == device.arch]
        if candidates:
            plan.hits.append((case, candidates[0]))
        elif device is not None and any(fnmatch.fnmatchcase(case.kernel_id, p) for p in include):
            plan.todo.append(case)
        else:
            plan.missing.append(case)
    return plan


def bakeable_entries(lock: Lock, cases: Iterable[Case]) -> list[LockEntry]:
    """Every lock entry, on any device, that belongs to a current declared case."""
    cases = list(cases)
    return [e for e in lock.sorted_entries() if any(c.matches(e) for c in cases)]
