"""seeded's warm benchmark worker (tuning/strategies/warm_worker.py).

The first test spawns Helion's real benchmark worker process (no GPU needed: the worker
touches CUDA only for a benchmark job) and checks the one thing a spare must get right,
that it runs jobs in the environment of the search that adopts it.  The others drive the
adoption logic with a stand-in worker.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tuning.strategies import warm_worker


@pytest.fixture(autouse=True)
def _no_spare_left() -> Iterator[None]:
    warm_worker.release()
    yield
    warm_worker.release()


def test_an_adopted_spare_runs_jobs_in_the_adopting_search_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from helion.autotuner.benchmark_worker import BenchmarkWorker

    monkeypatch.delenv("KILN_WARM_TEST", raising=False)
    assert warm_worker.prestart(BenchmarkWorker)  # spawned before the variable exists
    first_spare = warm_worker._spare["process"].pid
    monkeypatch.setenv("KILN_WARM_TEST", "the search's")  # e.g. kiln bench's per-case TRITON_CACHE_DIR
    counts = {"adopted": 0, "cold_starts": 0}
    worker = warm_worker.adopting(BenchmarkWorker(device=None), counts)
    try:
        assert worker.run(functools.partial(os.getenv, "KILN_WARM_TEST"), timeout=180) == "the search's"
        assert worker._process.pid == first_spare and counts == {"adopted": 1, "cold_starts": 0}
        # The next spare is already on its way, for the next search or a restart after a crash.
        assert warm_worker._spare is not None and warm_worker._spare["process"].pid != first_spare
    finally:
        worker.shutdown()


class _Process:
    def __init__(self, alive: bool = True) -> None:
        self.alive, self.killed = alive, False

    def is_alive(self) -> bool:
        return self.alive and not self.killed

    def kill(self) -> None:
        self.killed = True

    def join(self, timeout: float | None = None) -> None:
        pass


class _Connection:
    """Answers SyncEnviron as Helion's worker loop would, or not at all (``answers=False``)."""

    def __init__(self, answers: bool = True) -> None:
        self.answers, self.sent, self.closed = answers, [], False

    def send(self, job: Any) -> None:
        self.sent.append(job)

    def poll(self, timeout: float) -> bool:
        return self.answers

    def recv(self) -> Any:
        return self.sent[-1]()  # runs here: sets this process's environment to itself

    def close(self) -> None:
        self.closed = True


class _Worker:
    """Stands in for Helion's BenchmarkWorker: ``_start`` makes a process and a pipe."""

    spawned: list[_Worker] = []
    answers = True

    def __init__(self, device: int | None = None) -> None:
        self._process: _Process | None = None
        self._parent_connection: _Connection | None = None

    def _start(self) -> None:
        self._process, self._parent_connection = _Process(), _Connection(self.answers)
        _Worker.spawned.append(self)

    def _raise_if_unusable(self) -> None:
        pass


class _Provider:
    def __init__(self) -> None:
        self._benchmark_worker: Any = None


class _Search:
    def __init__(self, subprocess_benchmark: bool = True) -> None:
        self.settings = type("S", (), {"autotune_benchmark_subprocess": subprocess_benchmark})()
        self.benchmark_provider: _Provider | None = None

    def _prepare(self) -> None:  # Helion makes the provider here, inside autotune()
        self.benchmark_provider = _Provider()


@pytest.fixture
def fake_worker() -> Iterator[type[_Worker]]:
    _Worker.spawned, _Worker.answers = [], True
    yield _Worker


def test_a_search_adopts_the_spare_spawned_before_it_and_leaves_the_next(fake_worker: type[_Worker]) -> None:
    search = _Search()
    counts = warm_worker.warm_worker(search, 1, fake_worker)
    assert counts == {"adopted": 0, "cold_starts": 0} and len(fake_worker.spawned) == 1  # spawned ahead
    search._prepare()
    worker = search.benchmark_provider._benchmark_worker
    assert isinstance(worker, fake_worker) and worker._process is None  # Helion starts it on first use
    worker._start()
    assert worker._process is fake_worker.spawned[0]._process and counts == {"adopted": 1, "cold_starts": 0}
    assert len(fake_worker.spawned) == 2 and warm_worker._spare["process"] is fake_worker.spawned[1]._process


def test_a_spare_that_does_not_answer_costs_only_the_cold_start(fake_worker: type[_Worker]) -> None:
    fake_worker.answers = False
    warm_worker.prestart(fake_worker)
    stale = fake_worker.spawned[0]
    counts = {"adopted": 0, "cold_starts": 0}
    worker = warm_worker.adopting(fake_worker(), counts)
    worker._start()
    assert counts == {"adopted": 0, "cold_starts": 1} and stale._process.killed and stale._parent_connection.closed
    assert worker._process is not None and worker._process is not stale._process


def test_off_or_without_subprocess_benchmarks_nothing_changes(fake_worker: type[_Worker]) -> None:
    for search, on in ((_Search(), 0), (_Search(subprocess_benchmark=False), 1)):
        assert warm_worker.warm_worker(search, on, fake_worker) == {}
        search._prepare()
        assert search.benchmark_provider._benchmark_worker is None
    assert fake_worker.spawned == [] and warm_worker._spare is None
