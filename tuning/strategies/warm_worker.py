"""A Helion benchmark worker spawned before a search needs it.

Why: Helion 1.5 times every candidate in a long-lived *spawn* subprocess
(``autotune_benchmark_subprocess``, on by default), started lazily by the first
benchmark of each search and again after every crash that kills it (a config
that hits a misaligned address, say).  Its cold start is a new Python importing
torch and Helion.  In 27 of the 28 seeded searches of sessions 21-25 on the H200
whose logs we have, the first population spent 14-24 s outside Helion's progress bars
(``bench/seeded_phases.py``; the 28th, gdn large, has a bar too long to read), which
is where that cold start falls: the first benchmark waits for it, and Rich's bars
rate only the items after the first.
Our own fresh-process judge imports the same modules in 13-18 s.  That is a
fifth to a third of a 60-80 s search on the small kernels, and mamba2's full
lfbo search, respawning after each of the 15 configs that crashed its worker
in its first 300 s, logged those crashes about 20 s apart
(bench/logs/table_session25).  Measured on the H200 in session 27 (three seeded searches,
each adopted the spare; 4-18 s less each; strategies/seeded.py WARM_WORKER has the figures),
and on for ``seeded`` since.

This keeps one spare worker process spawned ahead of need: when Helion would
start a worker, the search adopts the spare and a new spare starts at once, so
the next search, or the restart after a crash, finds one that has already done
its imports.  An idle spare holds no CUDA context (the worker touches the GPU
only when a job arrives) and dies with its parent (Helion's worker sets a
parent-death signal).  The worker inherits its environment at spawn, and what
a search sets there matters to it (``kiln bench`` gives each case a fresh
``TRITON_CACHE_DIR``; seeded's search clock is an environment variable), so
the first job an adopted spare runs sets its environment to the search's; a
spare that does not answer it is dropped and Helion starts its own, the cold
start it would have paid anyway.

It reaches into Helion 1.5's worker (``BenchmarkWorker._start`` and the
provider's ``_benchmark_worker``); where those are missing it does nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

SYNC_TIMEOUT_S = 120.0  # a spare still importing answers when done; one that never does is dropped

_spare: dict[str, Any] | None = None  # {"process", "connection"} of the worker spawned ahead


class SyncEnviron:
    """A worker job: make the worker's environment the search's (picklable by reference)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(self) -> int:
        os.environ.clear()
        os.environ.update(self.env)
        return len(self.env)


def _worker_class() -> Any:
    try:
        from helion.autotuner.benchmark_worker import BenchmarkWorker
    except ImportError:
        return None
    return BenchmarkWorker if hasattr(BenchmarkWorker, "_start") else None


def prestart(worker_cls: Any = None) -> bool:
    """Spawn the spare worker unless a live one is waiting; True if one is waiting now."""
    global _spare
    if _spare is not None and _spare["process"].is_alive():
        return True
    cls = worker_cls or _worker_class()
    if cls is None:
        return False
    worker = cls(device=None)
    worker._start()  # spawn returns once the child is launched; its imports run on their own
    _spare = {"process": worker._process, "connection": worker._parent_connection}
    return True


def _drop(spare: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        spare["process"].kill()
        spare["process"].join(timeout=5)
    with contextlib.suppress(Exception):
        spare["connection"].close()


def _take() -> dict[str, Any] | None:
    """The spare, alive and running in this process's environment now; else None."""
    global _spare
    spare, _spare = _spare, None
    if spare is None:
        return None
    try:
        if spare["process"].is_alive():
            spare["connection"].send(SyncEnviron(dict(os.environ)))
            if spare["connection"].poll(SYNC_TIMEOUT_S) and spare["connection"].recv() == len(os.environ):
                return spare
    except Exception:  # a dead pipe or a failed job: the spare is no use, Helion starts its own
        pass
    _drop(spare)
    return None


def release() -> None:
    """Stop the spare now.  Nothing in a build calls this: the spare its last search leaves holds no
    CUDA context and dies with the build process; the tests stop it between cases."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None:
        _drop(spare)  # an idle spare holds nothing worth a graceful stop


def adopting(worker: Any, counts: dict[str, int]) -> Any:
    """Make ``worker`` take the spare whenever it would spawn a process, and spawn the next spare then."""
    cold_start: Callable[[], None] = worker._start

    def start() -> None:
        spare = _take()
        if spare is None:
            counts["cold_starts"] += 1
            cold_start()
        else:
            worker._raise_if_unusable()
            worker._process, worker._parent_connection = spare["process"], spare["connection"]
            counts["adopted"] += 1
        prestart(type(worker))

    worker._start = start
    return worker


def warm_worker(search: Any, on: int, worker_cls: Any = None) -> dict[str, int]:
    """Give ``search`` a benchmark worker that adopts spares; returns counts that fill in as it runs ({} when off).

    The provider that owns the worker is made in ``search._prepare()`` (inside
    ``autotune()``), so the worker is put in place right after it, before the
    provider's first benchmark could start one of its own.  A spare is spawned now,
    so even a build's first search overlaps the cold start with its preparation and
    first compiles.
    """
    cls = worker_cls or _worker_class()
    settings = getattr(search, "settings", None)
    if on <= 0 or cls is None or not getattr(settings, "autotune_benchmark_subprocess", False):
        return {}
    counts = {"adopted": 0, "cold_starts": 0}
    prestart(cls)
    prepare = search._prepare

    def prepare_then_place() -> None:
        prepare()
        provider = getattr(search, "benchmark_provider", None)
        if provider is not None and getattr(provider, "_benchmark_worker", "absent") is None:
            provider._benchmark_worker = adopting(cls(device=None), counts)

    search._prepare = prepare_then_place
    return counts
