"""A polish descent that benchmarks only the neighbours its surrogate rates best.

Why: Helion's LFBO tree search ends with a polish descent over the *whole* radius-1
neighbourhood of its best config, up to ``polish_rounds`` rounds.  On most kernels
that is one to three cheap rounds, but the neighbourhood grows with the config
space: rope (6 block sizes, 12 indexings, 8 eviction policies) has 60-95 neighbours
a round, and on the H200 (session 14) the polish took 144 of seeded's 220 s on
rope@medium and 58 of 137 s on rope@small, which is why seeded tuned rope only
~2x faster than lfbo (bench/results/polish_replay.json reads this off the logs).
A cap on rounds is not the answer: the same replay shows attention_causal@medium
needing all 10 rounds (+10% latency at a 3-round cap).  This keeps the rounds and
bounds each round's width instead, choosing with the surrogate the main loop
already fitted (the same diversity-aware pick Helion uses for its generations).

Off unless seeded's ``POLISH["max_neighbors"]`` is set (bench/seeded_variant.py
can), until the H200 measures it against the full-width polish in the same run.
The loop mirrors Helion 1.5's own descent (pinned in pyproject.toml) and uses its
search's helpers; only the choice of what to benchmark differs.
"""

from __future__ import annotations

import types
from typing import Any


def bound_polish(search: Any, max_neighbors: int) -> dict[str, int]:
    """Make ``search``'s polish benchmark at most ``max_neighbors`` neighbours a round.

    Returns what was applied, for the record's provenance; ``{}`` when off (0).
    """
    if max_neighbors <= 0:
        return {}
    search._polish_descent = types.MethodType(_make_descent(max_neighbors), search)
    return {"max_neighbors": max_neighbors}


def _make_descent(max_neighbors: int) -> Any:
    def descent(self: Any, visited: set[Any]) -> None:
        from helion.autotuner.base_search import performance
        from helion.autotuner.pattern_search import PatternSearch

        if self.polish_rounds <= 0 or self.config_spec.cute_flash_search_enabled:
            return
        current = self.best
        for round_num in self._budgeted_range(1, self.polish_rounds + 1):
            fresh = []
            for flat in PatternSearch._generate_neighbors(self, current.flat_values):
                member = self.make_unbenchmarked(flat)
                if member is not None and member.config not in visited:
                    fresh.append(member)
            if not fresh:
                self.log(f"Polish round {round_num}: no unvisited neighbors")
                break
            # Neighbours left out stay unvisited: the next round may still pick them.
            picked = self._surrogate_select(fresh, max_neighbors) if len(fresh) > max_neighbors else fresh
            visited.update(m.config for m in picked)
            self.set_generation(self._autotune_metrics.num_generations + 1)
            self.benchmark_population(picked, desc=f"Polish round {round_num}")
            self.rebenchmark_population([current, *picked], desc=f"Polish round {round_num}: verifying")
            self.population.extend(picked)
            best = min([current, *picked], key=performance)
            width = f"{len(picked)} of {len(fresh)} (surrogate-picked)" if len(picked) < len(fresh) else f"{len(fresh)}"
            self.log(f"Polish round {round_num}: {width} neighbors, best {self.format_performance(best.perf)}")
            if self._check_early_stopping(best, current):
                break
            current = best

    return descent
