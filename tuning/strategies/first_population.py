"""A first population padded with neighbours of the seeds instead of random configs.

Why: ``seeded`` hands Helion its seeds and lets Helion pad the first population to 24
with random configs.  On matmul (H200, session 17, bench/logs/table_session17/) that
first population took 25 of 79 s (small), 27 of 63 (medium) and 49 of 112 (large):
random tiles at those sizes ran for up to 0.45, 105 and 853 ms a call against bests of
0.009, 0.18 and 1.49 ms, each timed several times, so ``seeded`` tuned matmul only
2.3-3.4x faster than ``lfbo``.  Neighbours of a good config are rarely that slow, and
the surrogate still gets 24 points to fit, all near where the seeds say to look.

The cost is diversity: the random pad is what lets the surrogate see other regions.
So it is off unless seeded's ``FIRST_POPULATION["seed_neighbours"]`` is set
(bench/seeded_variant.py can), until the H200 measures it against the random pad.
The neighbours are Helion's own radius-1 pattern neighbours (one parameter changed,
or two block sizes), picked evenly across that list so every parameter is moved, in
a fixed order; where a small config space has fewer neighbours than slots, the rest
is padded at random as before (from Helion's seeded random stream, so the same seeds
still give the same population).
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Sequence
from typing import Any


def spread(items: Sequence[Any], count: int) -> list[Any]:
    """``count`` items taken evenly across ``items`` (all of them if there are no more), in order."""
    if count <= 0:
        return []
    if len(items) <= count:
        return list(items)
    return [items[(i * len(items)) // count] for i in range(count)]


def pad_with_seed_neighbours(search: Any, seeds: Sequence[Any], leading: int) -> dict[str, int]:
    """Make ``search``'s first population pad with neighbours of its first ``leading`` seeds, not random configs.

    ``seeds`` are the ``helion.Config`` objects handed to the search as best-available
    seeds, each already placed on its config space (``seed_transfer.transfer_seeds``).  Returns what was applied, for the record's provenance; ``{}`` when off (0)
    or when there are no seeds (a cold start has nothing to be near, and keeps the pad).
    """
    if leading <= 0 or not seeds:
        return {}
    from helion.autotuner.pattern_search import PatternSearch

    # Without the random pad Helion builds the population from seeds, compiler seeds and the
    # default alone, and if every one of those fails it still pads at random (its fallback).
    search.best_available_pad_random = False
    original = search._generate_initial_population_flat
    applied = {"leading_seeds": min(leading, len(seeds)), "neighbours": 0, "random": 0}  # counts set when it runs

    def first_population(self: Any) -> list[Any]:
        population = list(original())
        want = self.initial_population - len(population)
        if want <= 0:
            return population
        gen = self.config_gen

        def config_of(flat: Any) -> Any:
            try:
                return gen.unflatten(flat)
            except Exception:  # noqa: BLE001 - Helion raises several kinds for a config it cannot build
                return None

        seen = {config_of(flat) for flat in population}
        per_seed = [PatternSearch._generate_neighbors(self, gen.flatten(config)) for config in seeds[:leading]]
        added: list[Any] = []
        # Round-robin over the seeds so the first seed's neighbourhood cannot fill every slot.
        for neighbours in itertools.zip_longest(*(spread(n, want) for n in per_seed)):
            for flat in neighbours:
                config = None if flat is None else config_of(flat)
                if config is not None and config not in seen and len(added) < want:
                    seen.add(config)
                    added.append(flat)
        neighbours = len(added)
        # A small config space can have fewer neighbours than slots: the rest is Helion's random pad, as before.
        # In such a space random draws repeat often (tinypkg's: 3 new configs from 12 draws failed once in CI),
        # and a draw is cheap next to a benchmark, so allow many before giving up on a slot.
        for _ in range(64 + 16 * (want - neighbours)):
            if len(added) >= want:
                break
            flat = gen.random_flat()
            config = config_of(flat)
            if config is not None and config not in seen:
                seen.add(config)
                added.append(flat)
        self.log(f"First population: {len(population)} seed/default configs + {neighbours} seed neighbours"
                 f" + {len(added) - neighbours} random")
        applied.update(neighbours=neighbours, random=len(added) - neighbours)
        return population + added

    search._generate_initial_population_flat = types.MethodType(first_population, search)
    return applied
