"""kiln.lock: the tuning database that sits in the source tree.

Reviewable JSON in canonical order, one entry per (kernel id, kernel source
hash, GPU name, GPU arch, shape key).  Each finished case is written at once,
atomically (temp file + rename) and under a file lock, so a build killed
halfway keeps everything it finished and concurrent builders never interleave.
The wheel's table is derived from this file alone.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import LockError

LOCK_FORMAT = 1
EntryKey = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class LockEntry:
    kernel: str
    source_hash: str
    device: str
    arch: str
    shape: str
    shape_name: str
    config: Mapping[str, Any]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> EntryKey:
        return (self.kernel, self.source_hash, self.device, self.arch, self.shape)

    def sort_key(self) -> tuple[str, ...]:
        return (self.kernel, self.arch, self.device, self.shape, self.source_hash)

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "source_hash": self.source_hash,
            "device": self.device,
            "arch": self.arch,
            "shape": self.shape,
            "shape_name": self.shape_name,
            "config": dict(self.config),
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LockEntry:
        return cls(
            kernel=str(doc["kernel"]),
            source_hash=str(doc["source_hash"]),
            device=str(doc["device"]),
            arch=str(doc["arch"]),
            shape=str(doc["shape"]),
            shape_name=str(doc.get("shape_name", "")),
            config=dict(doc["config"]),
            provenance=dict(doc.get("provenance", {})),
        )


@dataclass
class Lock:
    entries: dict[EntryKey, LockEntry] = field(default_factory=dict)

    @classmethod
    def from_entries(cls, entries: Iterable[LockEntry]) -> Lock:
        lock = cls()
        for e in entries:
            lock.entries[e.key] = e
        return lock

    def get(self, key: EntryKey) -> LockEntry | None:
        return self.entries.get(key)

    def put(self, entry: LockEntry) -> LockEntry | None:
        """Insert or replace; returns the entry it replaced, if any."""
        old = self.entries.get(entry.key)
        self.entries[entry.key] = entry
        return old

    def sorted_entries(self) -> list[LockEntry]:
        return sorted(self.entries.values(), key=LockEntry.sort_key)

    def of_kernel(self, kernel_id: str) -> list[LockEntry]:
        return [e for e in self.sorted_entries() if e.kernel == kernel_id]

    def dumps(self) -> str:
        doc = {"format": LOCK_FORMAT, "entries": [e.to_json() for e in self.sorted_entries()]}
        return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def loads(text: str, origin: str = "kiln.lock") -> Lock:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LockError(
            f"{origin} is not valid JSON ({e}). Restore it from version control, or delete it to retune everything."
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != LOCK_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise LockError(f"{origin}: lock format {got!r} is not {LOCK_FORMAT}; this helion-kiln can't read it")
    try:
        return Lock.from_entries(LockEntry.from_json(e) for e in doc.get("entries", []))
    except (KeyError, TypeError, ValueError) as e:
        raise LockError(f"{origin}: malformed entry ({type(e).__name__}: {e})") from None


def load(path: Path) -> Lock:
    if not path.exists():
        return Lock()
    return loads(path.read_text(encoding="utf-8"), str(path))


def _file_lock(path: Path) -> Any:
    from filelock import FileLock

    return FileLock(str(path.with_name("." + path.name + ".flock")), timeout=600)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def record(path: Path, entry: LockEntry) -> LockEntry | None:
    """Add one finished case to the lock on disk, merging with what others wrote."""
    with _file_lock(path):
        lock = load(path)
        old = lock.put(entry)
        _atomic_write(path, lock.dumps())
    return old


def save(path: Path, lock: Lock) -> None:
    with _file_lock(path):
        _atomic_write(path, lock.dumps())


def merge(locks: Iterable[tuple[str, Lock]]) -> Lock:
    """Union of several builders' locks; the same key with another config is a conflict."""
    out = Lock()
    origin: dict[EntryKey, str] = {}
    conflicts: list[str] = []
    for name, lock in locks:
        for e in lock.sorted_entries():
            prev = out.get(e.key)
            if prev is not None and dict(prev.config) != dict(e.config):
                conflicts.append(
                    f"  {e.kernel} [{e.shape}] on {e.device} ({e.arch}): {origin[e.key]} and {name} chose different configs"
                )
                continue
            if prev is None:
                out.put(e)
                origin[e.key] = name
    if conflicts:
        raise LockError(
            "conflicting lock entries:\n" + "\n".join(conflicts)
            + "\nKeep one builder's entry (edit or drop a lock) and merge again."
        )
    return out
