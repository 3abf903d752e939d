"""The bench results store: one JSON file, rewritten atomically after every finished (case, strategy).

Several ``kiln bench`` processes (``--gpus 0,1``: one per GPU, each a shard of
the cases) write the same file.  So :meth:`Store.put` and
:meth:`Store.set_peaks` are read-modify-write under a ``filelock`` on
``<store>.lock``: re-read the file, apply this one change, write atomically,
release.  No process's records are lost to another's stale copy, and a
process killed at any moment leaves either the old file or the new one (the
lock is an OS lock, released when its holder dies).

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
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import BASELINE

FORMAT = 1
LOCK_TIMEOUT_S = 600  # a writer holds the lock for one small JSON write; minutes means something is stuck
KEY_VERSIONS = ("helion", "torch", "triton")
PROXY_OF = "proxy_of"  # on a run and its copied records: the run key of the card whose picks were copied (proxy_store.py)


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
    # Set by run_bench: the (run key, case labels) this process was asked for, so a shard reports only
    # its own failures, not those another shard (or an older run) wrote into the shared file.
    scope: tuple[str, list[str]] | None = None

    @classmethod
    def load(cls, path: Path | str) -> Store:
        path = Path(path)
        if not path.exists():
            return cls(path)
        return cls(path, _read_doc(path))

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def save(self) -> None:
        """Write this process's whole document atomically (temp file in the same folder, fsync, rename).

        Single-writer use only (tests, tools that own the file): it overwrites
        whatever other processes wrote since this store was loaded.  Concurrent
        runs go through :meth:`put` / :meth:`set_peaks`.
        """
        _write_doc(self.path, self.doc)

    def update(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Apply ``change`` to the file's current document under the store lock, then mirror it here.

        Why re-read: another process may have written records since we loaded;
        writing our in-memory copy would drop them.
        """
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.lock_path), timeout=LOCK_TIMEOUT_S):
            doc = _read_doc(self.path) if self.path.exists() else {"format": FORMAT, "runs": {}}
            change(doc)
            _write_doc(self.path, doc)
        self._mirror(doc)

    def _mirror(self, doc: dict[str, Any]) -> None:
        """Take the file's document as ours, keeping our run dicts the same objects (callers hold them)."""
        runs = self.doc["runs"]
        for key, fresh in doc["runs"].items():
            if key in runs:
                runs[key].clear()
                runs[key].update(fresh)
            else:
                runs[key] = fresh

    def run(self, gpu: Mapping[str, str], versions: Mapping[str, Any]) -> dict[str, Any]:
        return _run_in(self.doc, gpu, versions)

    def runs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each run by key; a proxy run (``proxy_of``) as :func:`own_records` shows it, never with another card's draws."""
        for key, run in sorted(self.doc["runs"].items()):
            yield key, own_records(run) if run.get(PROXY_OF) else run

    def failures(self) -> list[tuple[str, str]]:
        """(case label, strategy) of failed records, within :attr:`scope` when set (else the whole store)."""
        key, labels = self.scope if self.scope else (None, None)
        return [(label, name) for k, run in self.runs() if key is None or k == key
                for label, case in run["cases"].items() if labels is None or label in labels
                for name, rec in case["strategies"].items() if rec.get("error") or rec.get("ms_error")]

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
        """Store one finished (case, strategy) at once, safe against other processes writing this store."""
        record = {**record, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

        def change(doc: dict[str, Any]) -> None:
            self.case(_run_in(doc, run["gpu"], run["versions"]), kernel_id, shape_name)["strategies"][strategy] = record

        self.update(change)

    def set_peaks(self, run: dict[str, Any], peaks: dict[str, Any]) -> None:
        """Record this run's measured peaks (last writer wins: every shard measures the same GPU model)."""
        self.update(lambda doc: _run_in(doc, run["gpu"], run["versions"]).__setitem__("peaks", peaks))


def own_records(run: dict[str, Any]) -> dict[str, Any]:
    """A proxy run (bench/probes/proxy_store.py) less the records it copied from another card, ``lfbo``'s excepted.

    A proxy run holds another card's picks under this card's run key: ``lfbo``'s, which this card's
    draws are re-timed against, and the other shapes' ``seeded`` picks, which seed them.  Read as
    this card's records, those seeded copies would pass for draws made here, with the other card's
    ratios; the ``lfbo`` copies stay, marked, as the baselines they are.
    """
    return {**run, "cases": {label: {**case, "strategies": {
        name: rec for name, rec in case["strategies"].items() if name == BASELINE or not rec.get(PROXY_OF)}}
        for label, case in run["cases"].items()}}


def merge_into(store: Store, others: list[Store], strategies: Collection[str] | None = None) -> list[tuple[str, str, str]]:
    """Copy into ``store`` every record of ``others`` it lacks or holds an older copy of; return what moved.

    Why: a device call that finds a fresh machine starts from the committed store, not
    from the last call's, so each call's store holds only its own new cases beside the
    committed ones.  Merging by ``finished_at`` (newest wins, per run key, case and
    strategy) keeps every finished record and never lets a stale copy replace a newer
    one.  A run's peaks follow the same rule on ``measured_at``.  Returned as
    (case label, strategy, source path) for the command to print.

    ``strategies`` narrows the merge to those strategies' records.  A variant trial's store
    takes only the table's ``lfbo`` baselines: a newer table ``seeded`` row is another search
    and must not replace the trial's own (session 34's trial store predated mamba2 large's
    baseline, so its row there had no same-process comparison).
    """
    moved: list[tuple[str, str, str]] = []

    def change(doc: dict[str, Any]) -> None:
        for other in others:
            for key, run in other.doc["runs"].items():
                mine = doc["runs"].setdefault(key, {**run, "peaks": None, "cases": {}})
                if run.get("peaks") and _newer(run["peaks"], mine.get("peaks"), "measured_at"):
                    mine["peaks"] = run["peaks"]
                for label, case in run["cases"].items():
                    target = Store.case(mine, case["kernel_id"], case["shape_name"])["strategies"]
                    for name, rec in case["strategies"].items():
                        if strategies is not None and name not in strategies:
                            continue
                        if _newer(rec, target.get(name), "finished_at"):
                            target[name] = rec
                            moved.append((label, name, str(other.path)))

    store.update(change)
    return moved


def _newer(candidate: Mapping[str, Any], current: Mapping[str, Any] | None, stamp: str) -> bool:
    """``candidate`` is missing from the target or was stamped later (ISO UTC stamps sort as text)."""
    return current is None or str(candidate.get(stamp) or "") > str(current.get(stamp) or "")


def _run_in(doc: dict[str, Any], gpu: Mapping[str, str], versions: Mapping[str, Any]) -> dict[str, Any]:
    return doc["runs"].setdefault(run_key(gpu, versions), {
        "gpu": dict(gpu), "versions": {k: versions.get(k) for k in KEY_VERSIONS}, "peaks": None, "cases": {}})


def _read_doc(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}: bench store format {doc.get('format')!r}, expected {FORMAT}")
    return doc


def _write_doc(path: Path, doc: Mapping[str, Any]) -> None:
    """Atomic replace: a reader (or a process killed mid-write) sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, sort_keys=True, default=str, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
