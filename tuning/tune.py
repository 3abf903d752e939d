"""Tune: run one strategy on each planned case and write each result to the lock at once."""

from __future__ import annotations

import dataclasses
import gc
import json
import time
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from . import lock as lockfile
from .lock import LockEntry
from .plan import Case, Plan
from .runtime.keys import DeviceKey, shape_key
from .strategies import Budget, LlmSettings, Strategy, TuneContext

T = TypeVar("T")


@dataclass
class CaseResult:
    case: Case
    status: str  # "hit" | "tuned" | "missing" | "failed" | "skipped"
    entry: LockEntry | None = None
    previous: LockEntry | None = None
    error: str | None = None


@contextmanager
def tuning_environment(device: str) -> Iterator[None]:
    """Process settings that make a tune reproducible and honest.

    Helion's on-disk autotune cache would let an earlier run's result leak into
    this one (and its "from_best_available" population reads it), so it is
    skipped.  Pallas in interpret mode on a CPU ranks by wall time: its default
    device-time ranking needs a TPU profiler and hangs on CPU.
    """
    wanted = {"HELION_SKIP_CACHE": "1", "HELION_AUTOTUNE_PROGRESS_BAR": os.environ.get("HELION_AUTOTUNE_PROGRESS_BAR", "0")}
    if device == "cpu":
        wanted["HELION_AUTOTUNE_PALLAS_RANK_BY"] = "wall_time"
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def tune_case(case: Case, strategy: Strategy, budget: Budget, device: str, device_key: DeviceKey,
              context: TuneContext | None = None) -> LockEntry:
    import helion

    from .fallback import search_or_known
    from .measure import time_ms
    from .specs import make_inputs
    from .versions import toolchain_versions

    args = make_inputs(case.spec, case.kernel, device)
    bound = case.kernel.bind(args)
    context = context or TuneContext(case.kernel_id, case.spec.name)
    # The kernel's settings are shared by all its shapes: a budget's compile-timeout
    # cap (apply_budget_settings) and Helion's adaptive timeout must not outlive this case.
    compile_timeout = bound.settings.autotune_compile_timeout
    try:
        outcome = search_or_known(lambda: strategy.tune(bound, args, budget, context), bound, args, budget,
                                  context, device)
    finally:
        bound.settings.autotune_compile_timeout = compile_timeout
    bound.set_config(helion.Config(**outcome.config))
    ms, timer = time_ms(lambda: bound(*args), device)
    provenance: dict[str, Any] = {
        "strategy": outcome.extra.pop("strategy", strategy.name),
        "budget": budget.as_provenance(),
        "configs_tested": outcome.configs_tested,
        "seconds": round(outcome.seconds, 3),
        "ms": round(ms, 6),
        "timer": timer,
        "spec": case.spec.declared,
        "versions": toolchain_versions(),
    }
    if outcome.search_best_ms is not None:
        provenance["search_best_ms"] = round(outcome.search_best_ms, 6)
    provenance.update(outcome.extra)
    return LockEntry(
        kernel=case.kernel_id,
        source_hash=case.source_hash,
        device=device_key.name,
        arch=device_key.arch,
        shape=shape_key(args),
        shape_name=case.spec.name,
        config=json.loads(json.dumps(outcome.config)),
        provenance=provenance,
    )


def middle_first(group: Sequence[T]) -> list[T]:
    """One kernel's shapes in the order a build tunes them: the middle declared one, then the rest in order.

    The middle shape's result is the nearest seed for both the smaller and the larger
    ones.  ``kiln bench`` orders and seeds by this same rule (tuning.bench.seeding).
    """
    if not group:
        return []
    mid = group[(len(group) - 1) // 2] if len(group) > 2 else group[0]
    return [mid] + [c for c in group if c is not mid]


def tuning_order(cases: list[Case]) -> list[Case]:
    """Per kernel (in order of first appearance), its shapes middle first (:func:`middle_first`)."""
    by_kernel: dict[str, list[Case]] = {}
    for c in cases:
        by_kernel.setdefault(c.kernel_id, []).append(c)
    return [c for group in by_kernel.values() for c in middle_first(group)]


SEED_LIMIT = 6  # known configs handed to a strategy; more would crowd out its own exploration


def seed_entries(case: Case, known: list[LockEntry], device_key: DeviceKey, limit: int = SEED_LIMIT) -> list[LockEntry]:
    """Entries known for this kernel, each config once, nearest first: this GPU before others, this source before older."""
    mine = [e for e in known if e.kernel == case.kernel_id]
    mine.sort(key=lambda e: (e.arch != device_key.arch, e.device != device_key.name, e.source_hash != case.source_hash))
    out: list[LockEntry] = []
    seen: set[str] = set()
    for e in mine:
        text = json.dumps(dict(e.config), sort_keys=True)
        if text not in seen:
            seen.add(text)
            out.append(e)
    return out[:limit]


def context_for(case: Case, known: list[LockEntry], device_key: DeviceKey, llm: LlmSettings | None) -> TuneContext:
    """What a strategy is told about ``case``: its seeds, the shapes they were tuned at, and the LLM."""
    entries = seed_entries(case, known, device_key)
    return TuneContext(case.kernel_id, case.spec.name, tuple(dict(e.config) for e in entries), llm,
                       tuple(e.shape for e in entries))


@dataclass(frozen=True)
class TuneRun:
    """One tuning run of a build: the cases, how to tune them, and where results go.

    Every executor (serial :func:`run_plan`, local worker processes, Ray) takes
    one, so they cannot drift apart on what a run means; they differ only in
    where jobs run.
    """

    plan: Plan
    strategy: str | Strategy  # a registry name (workers rebuild it from that); serial runs also take an object
    budget: Budget
    device: str
    lock_path: Path
    project_dir: Path | None = None  # where workers import the package from (local, Ray)
    previous: lockfile.Lock | None = None  # the lock before this run: seeds, and the change column
    llm: LlmSettings | None = None
    total_seconds: int | None = None  # bounds the whole run; cases that find nothing left are skipped
    on_case: Callable[[CaseResult], None] = lambda r: None
    on_start: Callable[[Case], None] = lambda c: None


def run_plan(run: TuneRun) -> list[CaseResult]:
    """Tune every case in ``run.plan.todo`` here, one after another; each success is in the lock before the next starts.

    ``total_seconds`` bounds the whole loop: each case gets at most what is
    left, and cases that find nothing left are reported as skipped.
    """
    from .strategies import get_strategy

    plan, budget, total_seconds, on_case = run.plan, run.budget, run.total_seconds, run.on_case
    strategy = get_strategy(run.strategy) if isinstance(run.strategy, str) else run.strategy
    assert plan.device is not None
    results: list[CaseResult] = []
    known = run.previous.sorted_entries() if run.previous is not None else []
    start = time.monotonic()
    with tuning_environment(run.device):
        for case in tuning_order(plan.todo):
            case_budget = budget
            if total_seconds is not None:
                left = int(total_seconds - (time.monotonic() - start))
                if left <= 0:
                    results.append(CaseResult(case, "skipped", error=f"build budget total_seconds={total_seconds} spent"))
                    on_case(results[-1])
                    continue
                case_budget = dataclasses.replace(budget, seconds=min(left, budget.seconds or left))
            context = context_for(case, known, plan.device, run.llm)
            run.on_start(case)
            try:
                entry = tune_case(case, strategy, case_budget, run.device, plan.device, context)
            except Exception as e:  # one bad case must not cost the finished ones
                result = failed(case, e)
            else:
                result = record_tuned(case, entry, run.lock_path, known, run.previous, plan.device)
            results.append(result)
            on_case(result)
            gc.collect()
    return results


def failed(case: Case, error: BaseException) -> CaseResult:
    return CaseResult(case, "failed", error=traceback.format_exception_only(type(error), error)[-1].strip())


def record_tuned(case: Case, entry: LockEntry, lock_path: Path, known: list[LockEntry],
                 previous: lockfile.Lock | None, device_key: DeviceKey) -> CaseResult:
    """Put a finished case in the lock at once; it also seeds later cases of its kernel."""
    old = lockfile.record(lock_path, entry)
    known.append(entry)
    return CaseResult(case, "tuned", entry=entry, previous=old or _previous_entry(previous, case, device_key))


def _previous_entry(lock: lockfile.Lock | None, case: Case, device_key: DeviceKey) -> LockEntry | None:
    """The same kernel and shape name tuned before on this GPU (older source or spec), for the change column."""
    if lock is None:
        return None
    same = [e for e in lock.of_kernel(case.kernel_id)
            if e.shape_name == case.spec.name and (e.device, e.arch) == (device_key.name, device_key.arch)]
    return same[-1] if same else None
