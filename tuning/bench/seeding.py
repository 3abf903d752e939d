"""What a strategy's search may start from in ``kiln bench``, and which stored records kept to it.

The table answers "how does this strategy compare with full-effort ``lfbo`` when
a package is built for the first time": the lock holds nothing for the kernel
yet, so a strategy's only seeds are the configs it chose itself for the kernel's
shapes tuned earlier in the build (the middle declared shape first, cold).

The committed ``kiln.lock`` is not such a source.  ``kiln bench --to-lock``
fills it from the bench's own records, ``lfbo``'s wherever ``lfbo`` won, so
seeding from it hands a strategy the very search it is measured against, at the
kernel's other shapes.  Sessions 10 to 22 did exactly that (24 of 28 ``seeded``
rows started from such entries); records made that way are reported apart and
rerun.  Builds keep seeding from the lock: that is a product feature, not a
benchmark rule.

"Earlier in the build" is fixed by all the kernel's declared shapes
(:func:`build_earlier`), not by the cases a bench call picks, and a record stands
only while the seeds it took are the ones a build would hand it now
(:class:`BuildSeeds`): the same earlier shapes and, by ``seed_digest``, the same
configs there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .same_search import same_search

SEEDING = "first build: this strategy's own results at the kernel's other shapes, earlier in build order (no lock entries)"
# The rule of sessions 10-22's records.
LOCK_SEEDING = "build-order: lock entries at other shapes + this strategy's own results at other shapes"


def seeded_as_now(record: Mapping[str, Any]) -> bool:
    """Whether ``record``'s search started from what ``SEEDING`` allows.

    A record made under the older rule that happened to take nothing from the
    lock (a kernel with no lock entries yet) had exactly today's seeds, so it
    stands; one that took lock entries does not.
    """
    seeding = record.get("seeding")
    return seeding == SEEDING or (seeding == LOCK_SEEDING and not record.get("seeds_from_lock"))


def declared_labels(project: Path, config_settings: Mapping[str, str]) -> list[str]:
    """The project's case labels in declaration order, the order :func:`build_earlier`'s middle-first rule reads."""
    from build_backend.builder import prepare_build

    from .store import case_label

    prep = prepare_build(project, dict(config_settings), tune=False)
    return [case_label(c.kernel_id, c.spec.name) for c in prep.cases]


def build_earlier(declared: Sequence[str]) -> dict[str, frozenset[str]]:
    """Per declared case label, the kernel's shapes a first build tunes before it.

    A build tunes each kernel's shapes middle first (:func:`tuning.tune.middle_first`)
    over all the shapes the package declares, so the set does not depend on which
    cases a bench call picked: session 23 picked attention_causal small and medium
    only (large had no baseline yet), and small ran first and cold where a build
    tunes medium first and seeds small from it.
    """
    from tuning.tune import middle_first

    by_kernel: dict[str, list[str]] = {}
    for label in declared:
        kernel, _, shape = label.rpartition("@")
        by_kernel.setdefault(kernel, []).append(shape)
    out: dict[str, frozenset[str]] = {}
    for kernel, shapes in by_kernel.items():
        order = middle_first(shapes)
        for i, shape in enumerate(order):
            out[f"{kernel}@{shape}"] = frozenset(order[:i])
    return out


def seed_digest(seeds: Mapping[str, Mapping[str, Any]]) -> str:
    """A short fingerprint of the seeds a search started from (shape name -> config).

    Stored with each record so a later rerun of an earlier shape, which changes the
    config a build would hand this one, is seen as changed seeds and reruns it too.
    """
    text = json.dumps({k: seeds[k] for k in sorted(seeds)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class BuildSeeds:
    """What a first build would seed each strategy's search with, read from one store run.

    ``earlier`` (from :func:`build_earlier`) bounds each case's seeds to the shapes a
    build tunes before it; None (a store read away from its project) allows every
    other shape, as before session 23, and checks only the rule.  ``limits``: today's
    ``strategy_limits`` per strategy; a record made under other limits neither counts
    as made now nor seeds a later shape.  ``complete``: a record also needs every
    shape a build tunes before it to have a usable record (the report's view: a
    case run cold because its earlier shape was not run yet is not a first build's
    search); the bench leaves it off, so it reruns a case only when the seeds it
    could have now differ, not forever while an earlier shape is missing.
    """

    def __init__(self, run: Mapping[str, Any], earlier: Mapping[str, frozenset[str]] | None,
                 limits: Mapping[str, Any] | None, complete: bool = False) -> None:
        self.run, self.earlier, self.limits, self.complete = run, earlier, limits, complete

    def seeds(self, label: str, strategy: str, source_hash: str) -> dict[str, dict[str, Any]]:
        """The configs ``strategy`` chose at the kernel's shapes a build tunes before ``label``, by shape name.

        Only records of the same kernel source, without error and made as now
        (:meth:`as_now`) count: a build would have exactly those results in hand.
        """
        kernel, _, shape = label.rpartition("@")
        before = None if self.earlier is None else self.earlier.get(label, frozenset())
        out: dict[str, dict[str, Any]] = {}
        for other, case in sorted(self.run.get("cases", {}).items()):
            if case.get("kernel_id") != kernel or case.get("shape_name") == shape:
                continue
            if before is not None and case.get("shape_name") not in before:
                continue
            rec = case.get("strategies", {}).get(strategy)
            if (rec and not rec.get("error") and rec.get("config") and rec.get("source_hash") == source_hash
                    and (self.limits is None or same_search(rec, self.limits.get(strategy)))
                    and self.as_now(other, strategy, rec)):
                out[case["shape_name"]] = rec["config"]
        return out

    def as_now(self, label: str, strategy: str, record: Mapping[str, Any]) -> bool:
        """Whether ``record``'s search started from what a first build gives it today.

        The rule (:func:`seeded_as_now`) and, where the build order is known, the
        seeds themselves: the shapes it took must be the earlier shapes with a
        usable record now, and where the record kept a digest of their configs,
        those configs.  Recursion ends: each step looks only at earlier shapes.
        """
        if not seeded_as_now(record):
            return False
        if self.earlier is None:
            return True
        expected = self.seeds(label, strategy, record.get("source_hash", ""))
        if self.complete and set(expected) != self.earlier.get(label, frozenset()):
            return False
        return seeds_match(record, expected)


def seeds_match(record: Mapping[str, Any], expected: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether ``record``'s search started from ``expected`` (shape name -> config): the same shapes
    and, where the record kept a digest of their configs (records from session 23 on), the same configs."""
    if sorted(record.get("seeded_from_shapes") or []) != sorted(expected):
        return False
    digest = record.get("seed_digest")
    return digest is None or digest == seed_digest(expected)


def seed_shapes(run: Mapping[str, Any], kernel_id: str, shape_names: Sequence[str]) -> tuple[str, ...]:
    """The shape key each of ``shape_names`` was measured at, "" where no record says.

    Any strategy's record of a shape says it (a shape key is the inputs', not the search's), so
    the seeds a variant takes from another search's picks (bench/seeded_variant.py) have theirs too.
    """
    cases = run.get("cases", {})
    out: list[str] = []
    for name in shape_names:
        records = cases.get(f"{kernel_id}@{name}", {}).get("strategies", {}).values()
        out.append(next((r["shape"] for r in records if isinstance(r.get("shape"), str) and r["shape"]), ""))
    return tuple(out)
