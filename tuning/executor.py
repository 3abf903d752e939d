"""Executors: where planned cases run.  ``serial`` is tune.run_plan; ``local`` is one process per device.

``local`` gives each visible GPU its own worker process (pinned with
CUDA_VISIBLE_DEVICES) and splits the CPU cores for Helion's precompile
between them, so compilation does not starve.  The parent alone writes
kiln.lock, one finished case at a time, under its file lock.  A worker that
dies costs only its own case, which is retried once on a fresh worker and
then reported as failed.  Which case may start, and what a finished one
means, is the Ledger's (shared with the Ray executor); this module only runs
jobs on processes.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from typing import Any

from .ledger import Job, Ledger, tune_job
from .plan import Case
from .tune import CaseResult, TuneRun

__all__ = ["Job", "run_local", "tune_job", "visible_gpus", "worker_envs"]


def visible_gpus() -> list[str]:
    """CUDA device indices this process may use, as strings for CUDA_VISIBLE_DEVICES."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


def _init_worker(env: dict[str, str]) -> None:
    os.environ.update(env)


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


def run_local(run: TuneRun, slots: list[str]) -> list[CaseResult]:
    """Tune ``run.plan.todo`` on len(slots) worker processes at once."""
    ledger = Ledger(run)
    workers = [_Slot(env) for env in worker_envs(slots, run.device)]
    running: dict[cf.Future[dict[str, Any]], tuple[_Slot, Case]] = {}
    try:
        while True:
            busy = {id(s) for s, _ in running.values()}
            for slot in [w for w in workers if id(w) not in busy]:
                ready = ledger.next_job()
                if ready is None:
                    break
                case, job = ready
                running[slot.pool.submit(tune_job, job)] = (slot, case)
            if not running:
                break
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                slot, case = running.pop(fut)
                try:
                    entry = fut.result()
                except cf.process.BrokenProcessPool:
                    slot.restart()
                    ledger.died(case)  # requeued once, on a fresh worker, then reported failed
                except Exception as e:  # the case failed in the worker: report it, keep going
                    ledger.raised(case, e)
                else:
                    ledger.tuned(case, entry)
    finally:
        for w in workers:
            w.pool.shutdown(wait=True, cancel_futures=True)
    return ledger.results
