"""`kiln bench --to-lock`: put the bench's tuned configs into kiln.lock, so they ship without a second tune.

Why: a bench run tunes every case on the GPU with full-effort ``lfbo`` and the
other strategies, through the same engine as ``pip wheel .``; its records are
the best configs known for the package on that GPU.  Tuning them again in a
build would cost the same hours for nothing.

Per case, the record taken is the strategy whose config ran fastest in the
same fresh process as ``lfbo``'s (the ``vs_lfbo`` pair), else ``lfbo``'s.
Only records that still describe the project (same kernel source hash and
declared spec) are taken; stale ones are named and left out.  Each entry goes
through :func:`tuning.lock.record`, the file-locked, atomic write the build
uses, with ``from_bench`` in its provenance saying where it came from and what
it beat.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import BASELINE
from .compare import same_process_ratio
from .store import PROXY_OF, Store, case_label


@dataclass(frozen=True)
class Adopted:
    label: str
    strategy: str | None  # None: nothing adopted (see why)
    why: str
    replaced: bool = False


def choose(records: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """The fastest usable record of one case: another strategy only where its same-process pair beat lfbo."""
    usable = {n: r for n, r in records.items() if r.get("config") and r.get("ms") and not r.get("error")}
    lfbo = usable.get(BASELINE)
    best: tuple[str, dict[str, Any]] | None = (BASELINE, lfbo) if lfbo else None
    best_ratio = 1.0
    for name, rec in sorted(usable.items()):
        if name == BASELINE or lfbo is None:
            continue
        ratio = same_process_ratio(rec, lfbo)  # only a pair with the current lfbo config is evidence
        if ratio is not None and ratio < best_ratio:
            best, best_ratio = (name, rec), ratio
    if best is None and usable:  # no lfbo record: the fastest by fresh-process time
        name = min(usable, key=lambda n: usable[n]["ms"])
        best = (name, usable[name])
    return best


def _entry(case: Any, run: dict[str, Any], run_key: str, store_path: Path, name: str, rec: dict[str, Any],
           records: dict[str, dict[str, Any]]) -> Any:
    from tuning.lock import LockEntry
    from tuning.runtime.keys import shape_key
    from tuning.specs import make_inputs

    provenance: dict[str, Any] = {
        "strategy": name, "budget": rec.get("budget"), "configs_tested": rec.get("configs_tested"),
        "seconds": rec.get("tuning_seconds"), "ms": rec.get("ms"), "timer": rec.get("timer"),
        "spec": case.spec.declared, "versions": dict(run.get("versions", {})),
    }
    if rec.get("search_best_ms") is not None:
        provenance["search_best_ms"] = rec["search_best_ms"]
    shape = rec.get("shape")
    if shape is None:  # a record from before the bench kept the engine's shape key: rebuild it from meta tensors
        shape = shape_key(make_inputs(case.spec, case.kernel, "meta"))
    pair = rec.get("vs_lfbo") or {}
    provenance["from_bench"] = {
        "store": _shown(store_path), "run": run_key, "finished_at": rec.get("finished_at"),
        "fresh_process_ms_of_others": {n: r.get("ms") for n, r in records.items() if n != name and r.get("ms")},
        "same_process_vs_lfbo": {"ms": pair["ms"], "lfbo_ms": pair["lfbo_ms"]} if pair.get("lfbo_ms") else None,
    }
    return LockEntry(kernel=case.kernel_id, source_hash=case.source_hash, device=run["gpu"]["name"],
                     arch=run["gpu"]["arch"], shape=shape, shape_name=case.spec.name, config=dict(rec["config"]),
                     provenance=provenance)


def _shown(path: Path) -> str:
    """The store as the lock names it: relative to the working folder when inside it (no machine paths in a lock)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path.name


def adopt(store: Store, cases: list[Any], lock_path: Path) -> list[Adopted]:
    """Write each declared case's best bench config into ``lock_path``, for every GPU the store has run on."""
    from tuning import lock as lockfile

    by_label = {case_label(c.kernel_id, c.spec.name): c for c in cases}
    done: list[Adopted] = []
    for key, run in store.runs():
        if run.get(PROXY_OF):  # its lfbo picks are another card's: no lock entry for this card comes from them
            done += [Adopted(label, None, f"a proxy run on {run['gpu'].get('name')} against the lfbo picks of "
                             f"{run[PROXY_OF]} (bench/probes/proxy_store.py): not locked")
                     for label in sorted(run["cases"])]
            continue
        for label, stored in sorted(run["cases"].items()):
            case = by_label.get(label)
            if case is None:
                done.append(Adopted(label, None, "not a declared case of this project (any more)"))
                continue
            records = {n: r for n, r in stored["strategies"].items()
                       if r.get("source_hash") == case.source_hash and r.get("spec") == case.spec.declared}
            if not records:
                done.append(Adopted(label, None, "every record is for an older kernel source or declared shape"))
                continue
            chosen = choose(records)
            if chosen is None:
                done.append(Adopted(label, None, "no finished record with a measured config"))
                continue
            name, rec = chosen
            entry = _entry(case, run, key, store.path, name, rec, records)
            old = lockfile.record(lock_path, entry)
            unchanged = old is not None and dict(old.config) == dict(entry.config)
            why = f"{run['gpu']['name']}: {rec['ms']} ms" + (" (already in the lock)" if unchanged else "")
            done.append(Adopted(label, name, why, replaced=old is not None and not unchanged))
    return done
