"""The kiln build, independent of PEP 517: settings -> discover -> plan -> tune -> lock -> tables.

The hooks module only wraps this; tests and the `kiln tune` command call it
directly.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuning.errors import MissingEntriesError

from .settings import Settings, load_settings


class KilnMissingWarning(UserWarning):
    """Declared shapes with no lock entry were baked without a tuned config."""


@dataclass
class BuildOutcome:
    settings: Settings
    tables: dict[str, bytes]  # package -> encoded table
    results: list[Any] = field(default_factory=list)


def _log(msg: str) -> None:
    print(f"kiln: {msg}", file=sys.stderr, flush=True)


def tuning_device(setting: str) -> str | None:
    """Where this build tunes, or None when it only bakes from the lock."""
    if setting == "none":
        return None
    if setting == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if setting == "cuda":
        from tuning.errors import SettingsError

        raise SettingsError("setting 'device' is 'cuda' but torch sees no CUDA GPU here. Use device = \"auto\" to bake from the lock.")
    return None


@dataclass
class Prepared:
    """Everything decided before any GPU work: what `kiln doctor` shows."""

    settings: Settings
    discovery: Any
    cases: list[Any]
    lock: Any
    device: str | None
    plan: Any


def prepare_build(project_dir: Path, config_settings: Mapping[str, Any] | None = None, *, tune: bool = True) -> Prepared:
    from tuning import lock as lockfile
    from tuning.plan import build_cases, make_plan
    from tuning.runtime.keys import device_key_for
    from tuning.specs import parse_shapes

    from .discover import discover

    settings = load_settings(project_dir, config_settings, os.environ)
    shapes = parse_shapes(settings.shapes)
    found = discover(settings.project_dir, settings.packages, shapes)
    cases = build_cases(found.kernels, shapes)
    lock = lockfile.load(settings.lock_path)
    device = tuning_device(settings.device) if tune else None
    device_key = device_key_for(device) if device else None
    plan = make_plan(cases, lock, device_key, settings.include)
    return Prepared(settings, found, cases, lock, device, plan)


def worker_slots(executor: str, workers: int | None, device: str) -> list[str]:
    """Worker slots for the local executor; one slot means tune serially in this process."""
    if executor == "serial":
        return ["0"]
    if device == "cuda":
        from tuning.executor import visible_gpus

        gpus = visible_gpus()
        slots = gpus[:workers] if workers else gpus
    else:
        slots = [str(i) for i in range(workers or 1)]
    if executor == "local" or len(slots) > 1:
        return slots or ["0"]
    return ["0"]


def run_build(project_dir: Path, config_settings: Mapping[str, Any] | None = None, *, tune: bool = True) -> BuildOutcome:
    from tuning import lock as lockfile
    from tuning.plan import bakeable_entries
    from tuning.report import print_table, write_json
    from tuning.runtime.table import Table, TableEntry, encode
    from tuning.strategies import Budget, get_strategy
    from tuning.tune import CaseResult, TuneRun, run_plan

    prep = prepare_build(project_dir, config_settings, tune=tune)
    settings, found, cases, lock, device, plan = (
        prep.settings, prep.discovery, prep.cases, prep.lock, prep.device, prep.plan)
    device_key = plan.device
    where = f"on {device_key.name} ({device_key.arch})" if device_key else "without tuning (no GPU; baking from the lock)"
    _log(f"{len(cases)} cases {where}: {len(plan.hits)} from {settings.lock}, {len(plan.todo)} to tune, {len(plan.missing)} missing")

    results: list[CaseResult] = [CaseResult(c, "hit", entry=e) for c, e in plan.hits]
    if plan.todo:
        assert device is not None
        budget = Budget(settings.effort, settings.max_generations, settings.initial_population,
                        settings.polish_rounds, settings.seconds, settings.seed, settings.max_configs)
        strategy = get_strategy(settings.resolved_strategy)

        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("kiln: {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=Console(file=sys.stderr, width=160, soft_wrap=True), transient=False)
        task = bar.add_task(f"tuning with {strategy.name}", total=len(plan.todo))

        def started(case: Any) -> None:
            bar.update(task, description=escape(f"{strategy.name}: {case.label}"))

        def finished(r: CaseResult) -> None:
            bar.advance(task)
            if r.status == "tuned" and r.entry:
                p = r.entry.provenance
                bar.console.print(f"kiln: tuned {r.case.label} ({p['strategy']}): {p['configs_tested']} configs, "
                                  f"{p['seconds']:.1f}s, {p['ms']:.4f} ms -> {settings.lock}", markup=False, highlight=False)
            else:
                bar.console.print(f"kiln: {r.status.upper()} {r.case.label}: {r.error}", markup=False, highlight=False)

        slots = worker_slots(settings.executor, settings.workers, device)
        run = TuneRun(plan, strategy.name, budget, device, settings.lock_path, settings.project_dir, previous=lock,
                      llm=settings.llm_settings(), total_seconds=settings.total_seconds, on_case=finished,
                      on_start=started)
        with bar:
            if settings.executor == "ray":
                from tuning.ray_executor import run_ray

                bar.console.print(f"kiln: ray executor at {settings.ray_address or 'local ray'}", markup=False)
                results += run_ray(run, address=settings.ray_address or None)
            elif len(slots) > 1:
                from tuning.executor import run_local

                bar.console.print(f"kiln: local executor, {len(slots)} workers", markup=False)
                results += run_local(run, slots)
            else:
                results += run_plan(run)
        lock = lockfile.load(settings.lock_path)
    results += [CaseResult(c, "missing") for c in plan.missing]

    unresolved = [r for r in results if r.status in ("missing", "failed", "skipped")]
    if results:
        print_table(results, title=f"kiln: {settings.project_name}")
    if settings.report:
        write_json(results, settings.project_dir / settings.report)
    if unresolved:
        names = "\n".join(f"  {r.case.label}: {r.status}{': ' + r.error if r.error else ''}" for r in unresolved)
        fix = ("Tune them on a GPU builder (`kiln tune` or `pip wheel .` there) and commit the lock"
               if device is None else "See the errors above; finished cases are already in the lock, so a rerun tunes only these")
        msg = f"{len(unresolved)} declared case(s) have no tuned config:\n{names}\n{fix}."
        if settings.missing == "error":
            raise MissingEntriesError(msg + " (missing = \"error\"; set missing = \"warn\" to bake the rest)")
        warnings.warn("kiln: " + msg + " They will run Helion's default config.", KilnMissingWarning, stacklevel=2)

    entries = bakeable_entries(lock, cases)
    tables: dict[str, bytes] = {}
    for package, kernel_ids in found.by_package.items():
        mine = [TableEntry(e.kernel, e.device, e.arch, e.shape, e.config) for e in entries if e.kernel in kernel_ids]
        tables[package] = encode(Table.from_entries(package, kernel_ids, mine))
        _log(f"baked {len(mine)} entries for {len(kernel_ids)} kernels into {package}")
    return BuildOutcome(settings, tables, results)
