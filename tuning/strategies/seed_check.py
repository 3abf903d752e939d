"""A first population that grows when the seeds lose in it: the check on a seed's transfer.

Why: ``seeded`` seeds a shape with its picks at the kernel's other shapes, and pads the first
population with only a few random configs (24 in all, most of them seeds, their variants and
Helion's own starts), because a good seed makes a wide start a waste.  A seed that does not
transfer makes it the opposite.  Session 40 (H200, bench/results/variants_session40/): attention
small, seeded from the medium's pick under ``td2``, began its trajectory at 0.0575 ms, where the
table's draw, seeded from another medium pick, began at 0.0236.  Its first population's best was
a [64, 16] config that neither pick nor any of their variants is (0.0256 ms); its two search
paths started there, never reached the region of ``lfbo``'s pick (0.0181 ms on its search clock)
and ended at 0.0207, 1.589 against ``lfbo`` in the same fresh process.  The table's draw ended at
0.0183 and 1.10.

So, when the best reading of the seeds (and their variants) in the first population is more than
``margin`` behind the best of the rest (Helion's own starts, its cache and the random pad), the
search is in effect a cold start with a seeded search's narrow pad; this adds ``widen`` more
random configs to that population, benchmarks them, and lets Helion's search go on from the
wider population as it would from its own.  Seeds that hold their own cost nothing: the check
reads timings the search has already taken.  Its record keeps both readings either way, which is
how the margin is to be chosen: the stored rows do not say how far behind the seeds read.
"""

from __future__ import annotations

import math
import types
from collections.abc import Sequence
from typing import Any

from .seed_transfer import transfer_errors


def best_readings(members: Sequence[Any], seeds: set[Any]) -> tuple[float, float]:
    """(best reading of the seeds, best reading of the rest) in a benchmarked first population; inf where none read.

    ``members``: the first population, benchmarked (``config``, ``perf``); ``seeds``: the configs
    the search was handed (the seeds and their variants), as the population holds them.
    """
    seeded = [m.perf for m in members if m.config in seeds and math.isfinite(m.perf)]
    others = [m.perf for m in members if m.config not in seeds and math.isfinite(m.perf)]
    return min(seeded, default=math.inf), min(others, default=math.inf)


def lost_by(readings: tuple[float, float], margin: float) -> bool:
    """Whether (best seed ms, best other ms) puts the seeds over ``margin`` behind; no other reading decides nothing."""
    best_seed, best_other = readings
    return math.isfinite(best_other) and best_seed > best_other * (1.0 + margin)


def widen_when_seeds_lose(search: Any, seeds: Sequence[Any], widen: int, margin: float) -> dict[str, Any]:
    """Make ``search``'s first population add ``widen`` random configs when its seeds lose by over ``margin``.

    ``seeds``: the ``helion.Config`` objects handed to the search, each already placed on its
    config space (``seed_transfer.transfer_seeds``).  Returns the record's provenance, filled in
    when the first population has run (``checked``, both best readings, and ``added`` when it
    grew); ``{}`` when off (0) or on a cold start, which has no seeds to check and already starts wide.
    """
    if widen <= 0 or not seeds:
        return {}
    gen = search.config_gen
    errors = transfer_errors()
    handed = set()
    for config in seeds:
        try:
            handed.add(gen.unflatten(gen.flatten(config)))  # as the population holds it
        except errors:
            continue
    original = search.benchmark_initial_population
    applied: dict[str, Any] = {"widen": widen, "margin": margin, "checked": False}

    def benchmark_initial_population(self: Any, members: list[Any], **kwargs: Any) -> list[Any]:
        members = original(members, **kwargs)
        readings = best_readings(members, handed)
        applied.update(checked=True, **{k: round(v, 6) if math.isfinite(v) else None
                                        for k, v in zip(("best_seed_ms", "best_other_ms"), readings)})
        if not lost_by(readings, margin):
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
        self.log(f"kiln: seeds lost in the first population (best seed {readings[0]:.6f} ms, best other "
                 f"{readings[1]:.6f} ms): {len(extra)} more random configs")
        if extra:
            self.benchmark_population(extra, desc="Seeds lost: wider first population")
            members.extend(extra)
        applied["added"] = len(extra)
        return members

    search.benchmark_initial_population = types.MethodType(benchmark_initial_population, search)
    return applied
