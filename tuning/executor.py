"""Executors: where planned cases run.  ``serial`` is tune.run_plan; ``local`` is one process per device.

``local`` gives each visible GPU its own worker process (pinned with
CUDA_VISIBLE_DEVICES) and splits the CPU cores for Helion's precompile
between them, so compilation does not starve.  The parent alone writes
kiln.lock, one finished case at a time, under its file lock.  A worker that
dies costs only its own case, which is retried once on a fresh worker and
then reported as failed.  Each kernel's middle shape is tuned first and the
kernel's other shapes wait for it, so its config still seeds them.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import lock as lockfile
from .lock import LockEntry
from .plan import Case, Plan
from .runtime.keys import DeviceKey
from .strategies import Budget, LlmSettings, TuneContext
from .tune import CaseResult, failed, record_tuned, seeds_for, tuning_environment, tuning_order


def visible_gpus() -> list[str]:
    """CUDA device indices this process may use, as strings for CUDA_VISIBLE_DEVICES."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to rebuild and tune one case (all picklable)."""

    project_dir: str
    kernel_id: str
    source_hash: str
    spec: Any
    strategy: str
    budget: Budget
    device: str
    device_key: DeviceKey
    context: TuneContext


def _init_worker(env: dict[str, str]) -> None:
    os.environ.update(env)


def _tune_job(job: Job) -> dict[str, Any]:
    """Worker side: import the kernel from the project, tune it, return the lock entry as JSON."""
    import sys

    from .runtime.kernels import resolve_kernel
    from .strategies import get_strategy
    from .tune import tune_case

    os.environ["KILN_BUILDING"] = "1"
    if job.project_dir not in sys.path:
        sys.path.insert(0, job.project_dir)
    case = Case(job.kernel_id, resolve_kernel(job.kernel_id), job.source_hash, job.spec)
    with tuning_environment(job.device):
        entry = tune_case(case, get_strategy(job.strategy), job.budget, job.device, job.device_key, job.context)
    return entry.to_json()


class _Slot:
    """One worker process, replaced when it dies."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.pool = self._new()

    def _new(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_init_worker, initargs=(self.env,))

    def restart(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = self._new()


def worker_envs(slots: list[str], device: str) -> list[dict[str, str]]:
    cores = max(1, (os.cpu_count() or 1) // max(1, len(slots)))
    envs = []
    for s in slots:
        env = {"HELION_AUTOTUNE_PRECOMPILE_JOBS": str(cores)}
        if device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = s
        envs.append(env)
    return envs


def run_local(
    plan: Plan,
    strategy: str,
    budget: Budget,
    device: str,
    lock_path: Path,
    project_dir: Path,
    slots: list[str],
    on_case: Callable[[CaseResult], None] = lambda r: None,
    previous: lockfile.Lock | None = None,
    llm: LlmSettings | None = None,
    on_start: Callable[[Case], None] = lambda c: None,
) -> list[CaseResult]:
    """Tune ``plan.todo`` on len(slots) worker processes at once."""
    assert plan.device is not None
    known: list[LockEntry] = previous.sorted_entries() if previous is not None else []
    pending = tuning_order(plan.todo)
    anchors: dict[str, Case] = {}
    for c in pending:  # tuning_order puts each kernel's middle shape first: it seeds the rest
        anchors.setdefault(c.kernel_id, c)
    anchor_done: set[str] = set()
    attempts: dict[int, int] = {}
    workers = [_Slot(env) for env in worker_envs(slots, device)]
    running: dict[cf.Future[dict[str, Any]], tuple[_Slot, Case]] = {}
    results: list[CaseResult] = []

    def ready(case: Case) -> bool:
        return anchors[case.kernel_id] is case or case.kernel_id in anchor_done

    try:
        while pending or running:
            busy = {id(s) for s, _ in running.values()}
            for slot in [w for w in workers if id(w) not in busy]:
                case = next((c for c in pending if ready(c)), None)
                if case is None:
                    break
                pending.remove(case)
                context = TuneContext(case.kernel_id, case.spec.name, seeds_for(case, known, plan.device), llm)
                job = Job(str(project_dir), case.kernel_id, case.source_hash, case.spec, strategy, budget,
                          device, plan.device, context)
                on_start(case)
                running[slot.pool.submit(_tune_job, job)] = (slot, case)
            if not running:
                break
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                slot, case = running.pop(fut)
                try:
                    entry = LockEntry.from_json(fut.result())
                except cf.process.BrokenProcessPool:
                    slot.restart()
                    attempts[id(case)] = attempts.get(id(case), 0) + 1
                    if attempts[id(case)] <= 1:
                        pending.insert(0, case)  # retried once, on a fresh worker
                        continue
                    result = CaseResult(case, "failed", error="worker process died twice")
                except Exception as e:  # the case failed in the worker: report it, keep going
                    result = failed(case, e)
                else:
                    result = record_tuned(case, entry, lock_path, known, previous, plan.device)
                if anchors[case.kernel_id] is case:
                    anchor_done.add(case.kernel_id)
                results.append(result)
                on_case(result)
    finally:
        for w in workers:
            w.pool.shutdown(wait=True, cancel_futures=True)
    return results
