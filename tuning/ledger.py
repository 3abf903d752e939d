"""What every parallel executor shares, whoever schedules: jobs, anchors, seeds, retries, the lock.

An executor (local process pool, Ray) only decides *where* a job runs.  The
ledger decides *which* case may start now (each kernel's middle shape first;
its other shapes wait so that config seeds them), what a finished, failed or
dead case means, and it alone writes kiln.lock, one finished case at a time.
Keeping this in one place is what makes every executor's lock come out the
same.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Any

from .errors import KilnError
from .lock import LockEntry
from .plan import Case
from .runtime.keys import DeviceKey
from .strategies import Budget, TuneContext
from .tune import CaseResult, TuneRun, context_for, failed, record_tuned, tuning_environment, tuning_order


class BudgetSpent(KilnError):
    """A job started after the build's ``total_seconds`` ran out; its case is skipped, not failed."""


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to rebuild and tune one case (all picklable).

    ``deadline`` is wall-clock time (``time.time()``), not monotonic, because a
    Ray job may start on another machine, and later than it was submitted.
    """

    project_dir: str
    kernel_id: str
    source_hash: str
    spec: Any
    strategy: str
    budget: Budget
    device: str
    device_key: DeviceKey
    context: TuneContext
    deadline: float | None = None


def tune_job(job: Job) -> dict[str, Any]:
    """Worker side: import the kernel from the project, tune it, return the lock entry as JSON."""
    import sys

    from .runtime.kernels import resolve_kernel
    from .strategies import get_strategy
    from .tune import tune_case

    budget = job.budget
    if job.deadline is not None:
        left = int(job.deadline - time.time())
        if left <= 0:
            raise BudgetSpent("build budget total_seconds spent before this case started")
        budget = dataclasses.replace(budget, seconds=min(left, budget.seconds or left))
    os.environ["KILN_BUILDING"] = "1"
    if job.project_dir not in sys.path:
        sys.path.insert(0, job.project_dir)
    case = Case(job.kernel_id, resolve_kernel(job.kernel_id), job.source_hash, job.spec)
    with tuning_environment(job.device):
        entry = tune_case(case, get_strategy(job.strategy), budget, job.device, job.device_key, job.context)
    return entry.to_json()


class Ledger:
    """The bookkeeping half of an executor; it never waits on anything itself."""

    def __init__(self, run: TuneRun) -> None:
        if not isinstance(run.strategy, str) or run.project_dir is None:
            raise TypeError("a parallel run needs the strategy's registry name and the project_dir (workers rebuild both)")
        assert run.plan.device is not None
        self.run = run
        self.strategy: str = run.strategy  # the registry name, checked above: what a worker rebuilds it from
        self.device_key: DeviceKey = run.plan.device
        self.deadline = None if run.total_seconds is None else time.time() + run.total_seconds
        self.known: list[LockEntry] = run.previous.sorted_entries() if run.previous is not None else []
        self.pending = tuning_order(run.plan.todo)
        self.anchors: dict[str, Case] = {}
        for c in self.pending:  # tuning_order puts each kernel's middle shape first: it seeds the rest
            self.anchors.setdefault(c.kernel_id, c)
        self.anchor_done: set[str] = set()
        self.attempts: dict[int, int] = {}
        self.results: list[CaseResult] = []

    def next_job(self) -> tuple[Case, Job] | None:
        """A case that may start now and its job, or None; once the deadline passed, pending cases are skipped."""
        if self.deadline is not None and time.time() >= self.deadline:
            for case in list(self.pending):
                self.pending.remove(case)
                self._finish(case, CaseResult(case, "skipped", error=self._spent()))
            return None
        case = next((c for c in self.pending if self.anchors[c.kernel_id] is c or c.kernel_id in self.anchor_done), None)
        if case is None:
            return None
        self.pending.remove(case)
        run = self.run
        context = context_for(case, self.known, self.device_key, run.llm)
        job = Job(str(run.project_dir), case.kernel_id, case.source_hash, case.spec, self.strategy, run.budget,
                  run.device, self.device_key, context, self.deadline)
        run.on_start(case)
        return case, job

    def tuned(self, case: Case, entry_json: dict[str, Any]) -> None:
        self._finish(case, record_tuned(case, LockEntry.from_json(entry_json), self.run.lock_path, self.known,
                                        self.run.previous, self.device_key))

    def raised(self, case: Case, error: BaseException) -> None:
        """The tuning code raised: report it (a budget that ran out is a skip); it is not retried."""
        if isinstance(error, BudgetSpent):
            self._finish(case, CaseResult(case, "skipped", error=self._spent()))
        else:
            self._finish(case, failed(case, error))

    def died(self, case: Case) -> bool:
        """The worker process died under this case: requeue it once (True), then report it failed."""
        self.attempts[id(case)] = self.attempts.get(id(case), 0) + 1
        if self.attempts[id(case)] <= 1:
            self.pending.insert(0, case)
            return True
        self.gave_up(case, "worker process died twice")
        return False

    def gave_up(self, case: Case, error: str) -> None:
        self._finish(case, CaseResult(case, "failed", error=error))

    def _spent(self) -> str:
        return f"build budget total_seconds={self.run.total_seconds} spent"

    def _finish(self, case: Case, result: CaseResult) -> None:
        if self.anchors[case.kernel_id] is case:
            self.anchor_done.add(case.kernel_id)  # failed or not, the kernel's other shapes may go now
        self.results.append(result)
        self.run.on_case(result)
