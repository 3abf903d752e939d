"""The baked table: the only tuning data an installed wheel carries.

It is derived from ``kiln.lock`` and nothing else, and it is written
canonically (sorted keys, sorted entries, no timestamps), so the same lock
always produces the same bytes and therefore the same wheel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

TABLE_FORMAT = 1
TABLE_FILENAME = "_kiln_table.msgpack"


class TableError(ValueError):
    """The baked table is unreadable or of a format this runtime can't use."""


@dataclass(frozen=True)
class TableEntry:
    kernel: str
    device: str
    arch: str
    shape: str
    config: Mapping[str, Any]

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.kernel, self.arch, self.device, self.shape)


@dataclass
class Table:
    """Entries grouped by kernel id, plus every kernel the build discovered.

    Kernels with no entry are listed too, so the runtime can still take them
    over (default config with a warning) instead of letting Helion autotune.
    """

    package: str
    kernels: dict[str, list[TableEntry]] = field(default_factory=dict)

    @classmethod
    def from_entries(cls, package: str, kernel_ids: Iterable[str], entries: Iterable[TableEntry]) -> Table:
        table = cls(package, {k: [] for k in kernel_ids})
        for e in entries:
            table.kernels.setdefault(e.kernel, []).append(e)
        for k in table.kernels:
            table.kernels[k].sort(key=TableEntry.sort_key)
        return table

    def entry_count(self) -> int:
        return sum(len(v) for v in self.kernels.values())


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def encode(table: Table) -> bytes:
    import msgpack

    doc = {
        "format": TABLE_FORMAT,
        "package": table.package,
        "kernels": {
            kid: [
                {"device": e.device, "arch": e.arch, "shape": e.shape, "config": e.config}
                for e in entries
            ]
            for kid, entries in table.kernels.items()
        },
    }
    return msgpack.packb(_canonical(doc), use_bin_type=True)


def decode(data: bytes) -> Table:
    import msgpack

    try:
        doc = msgpack.unpackb(data, raw=False)
    except Exception as e:  # msgpack raises several unrelated types
        raise TableError(f"baked table is corrupt ({type(e).__name__}: {e})") from None
    if not isinstance(doc, dict) or doc.get("format") != TABLE_FORMAT:
        fmt = doc.get("format") if isinstance(doc, dict) else None
        raise TableError(f"baked table has format {fmt!r}; this runtime reads format {TABLE_FORMAT}")
    try:
        kernels = {
            str(kid): [
                TableEntry(str(kid), str(e["device"]), str(e["arch"]), str(e["shape"]), dict(e["config"]))
                for e in entries
            ]
            for kid, entries in doc["kernels"].items()
        }
        return Table(str(doc["package"]), kernels)
    except (KeyError, TypeError, AttributeError) as e:
        raise TableError(f"baked table is malformed ({type(e).__name__}: {e})") from None
