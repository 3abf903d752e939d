"""A first population that grows when the seeds lose in it: the check on a seed's transfer.

Why: ``seeded`` seeds a shape with its picks at the kernel's other shapes, and pads the first
population with only a few random configs (24 in all, most of them seeds and their variants),
because a good seed makes a wide start a waste.  A seed that does not transfer makes it the
opposite.  Session 40 (H200, bench/results/variants_session40/): attention small's seed, the
medium's pick under ``td2``, ran at 0.0575 ms at the small shape, where the best other config of
its first population ran at 0.0256; the search's two paths started among those few others, never
reached the region of ``lfbo``'s pick (0.0181 ms on its search clock) and ended at 0.0207, 1.589
against ``lfbo`` in the same fresh process.  The table's draw of the same row, from another medium
pick, started at its seed (0.0236) and ended 1.10.

So, when the seeds' best reading in the first population is more than ``margin`` behind the best
of the rest (Helion's own starts and the random pad), the search is in effect a cold start with a
seeded search's narrow pad; this adds ``widen`` more random configs to that population, benchmarks
them, and lets Helion's search go on from the wider population as it would from its own.  Seeds
that hold their own cost nothing: the check reads timings the search has already taken.
"""

from __future__ import annotations

import math
import types
from collections.abc import Sequence
from typing import Any


def seeds_lost(members: Sequence[Any], seeds: set[Any], margin: float) -> tuple[float, float] | None:
    """(best seed ms, best other ms) when the seeds' best is over ``margin`` behind the rest's best, else None.

    ``members``: the first population, benchmarked (``config``, ``perf``); ``seeds``: the configs
    the search was handed.  A population with no finite reading on either side decides nothing.
    """
    seeded = [m.perf for m in members if m.config in seeds and math.isfinite(m.perf)]
    others = [m.perf for m in members if m.config not in seeds and math.isfinite(m.perf)]
    if not others:
        return None
    best_seed, best_other = min(seeded, default=math.inf), min(others)
    return (best_seed, best_other) if best_seed > best_other * (1.0 + margin) else None


def widen_when_seeds_lose(search: Any, seeds: Sequence[Any], widen: int, margin: float) -> dict[str, Any]:
    """Make ``search``'s first population add ``widen`` random configs when its seeds lose by over ``margin``.

    ``seeds``: the ``helion.Config`` objects handed to the search, each already placed on its
    config space (``seed_transfer.transfer_seeds``).  Returns the record's provenance, filled in
    when the first population has run (``checked``, and what was added); ``{}`` when off (0) or
    on a cold start, which has no seeds to check and already starts wide.
    """
    if widen <= 0 or not seeds:
        return {}
    gen = search.config_gen
    handed = set()
    for config in seeds:
        try:
            handed.add(gen.unflatten(gen.flatten(config)))  # as the population holds it
        except Exception:  # noqa: BLE001 - Helion raises several kinds for a config it cannot place
            continue
    original = search.benchmark_initial_population
    applied: dict[str, Any] = {"widen": widen, "margin": margin, "checked": False}

    def benchmark_initial_population(self: Any, members: list[Any], **kwargs: Any) -> list[Any]:
        members = original(members, **kwargs)
        applied["checked"] = True
        lost = seeds_lost(members, handed, margin)
        if lost is None:
            return members
        visited = kwargs.get("visited")
        seen = {m.config for m in members} if visited is None else visited
        extra: list[Any] = []
        # Helion's own padding helper returns the given configs first, then unique random ones.
        for flat in self._pad_initial_population_with_unique_random(
                [m.flat_values for m in members], len(members) + widen):
            member = self.make_unbenchmarked(flat)
            if member is not None and member.config not in seen and len(extra) < widen:
                seen.add(member.config)
                extra.append(member)
        self.log(f"kiln: seeds lost in the first population (best seed {lost[0]:.6f} ms, best other "
                 f"{lost[1]:.6f} ms): {len(extra)} more random configs")
        if extra:
            self.benchmark_population(extra, desc="Seeds lost: wider first population")
            members.extend(extra)
        applied.update(best_seed_ms=round(lost[0], 6) if math.isfinite(lost[0]) else None,
                       best_other_ms=round(lost[1], 6), added=len(extra))
        return members

    search.benchmark_initial_population = types.MethodType(benchmark_initial_population, search)
    return applied
