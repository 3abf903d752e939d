"""The bench results store: one JSON file, rewritten atomically after every finished (case, strategy).

Layout::

    {"format": 1,
     "runs": {"<gpu name>|<arch>|helion=..|torch=..|triton=..": {
         "gpu": {"name", "arch"}, "versions": {"helion", "torch", "triton"},
         "peaks": {"copy_gbps", "bf16_tflops", "reason", "measured_at"},
         "cases": {"<kernel_id>@<shape_name>": {
             "kernel_id", "shape_name",
             "strategies": {"<strategy>": <record>}}}}}}

A record is reused (not rerun) while it still matches: same run key, same
kernel source hash, same declared spec, same budget, and no error.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
KEY_VERSIONS = ("helion", "torch", "triton")


def run_key(gpu: Mapping[str, str], versions: Mapping[str, Any]) -> str:
    parts = [gpu.get("name", "?"), gpu.get("arch", "?")]
    parts += [f"{k}={versions.get(k)}" for k in KEY_VERSIONS]
    return "|".join(str(p) for p in parts)


def case_label(kernel_id: str, shape_name: str) -> str:
    return f"{kernel_id}@{shape_name}"


@dataclass
class Store:
    path: Path
    doc: dict[str, Any] = field(default_factory=lambda: {"format": FORMAT, "runs": {}})

    @classmethod
    def load(cls, path: Path | str) -> Store:
        path = Path(path)
        if not path.exists():
            return cls(path)
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT:
            raise ValueError(f"{path}: bench store format {doc.get('format')!r}, expected {FORMAT}")
        return cls(path, doc)

    def save(self) -> None:
        """Write the whole store atomically (temp file in the same folder, fsync, rename)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.doc, indent=1, sort_keys=True, default=str, allow_nan=False) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def run(self, gpu: Mapping[str, str], versions: Mapping[str, Any]) -> dict[str, Any]:
        key = run_key(gpu, versions)
        return self.doc["runs"].setdefault(key, {
            "gpu": dict(gpu), "versions": {k: versions.get(k) for k in KEY_VERSIONS}, "peaks": None, "cases": {}})

    def runs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        yield from sorted(self.doc["runs"].items())

    @staticmethod
    def case(run: dict[str, Any], kernel_id: str, shape_name: str) -> dict[str, Any]:
        return run["cases"].setdefault(case_label(kernel_id, shape_name),
                                       {"kernel_id": kernel_id, "shape_name": shape_name, "strategies": {}})

    @staticmethod
    def reusable(record: Mapping[str, Any] | None, source_hash: str, spec: str, budget: Mapping[str, Any]) -> bool:
        """A finished record that still describes this kernel source, declared shape and budget."""
        return (
            record is not None
            and not record.get("error")
            and record.get("source_hash") == source_hash
            and record.get("spec") == spec
            and record.get("budget") == dict(budget)
        )

    def put(self, run: dict[str, Any], kernel_id: str, shape_name: str, strategy: str, record: dict[str, Any]) -> None:
        record = {**record, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.case(run, kernel_id, shape_name)["strategies"][strategy] = record
        self.save()
