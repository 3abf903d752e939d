"""seeded's seed check (off by default): a first population that grows when its seeds lose in it.

The rule on plain numbers, then the hook on a stand-in for Helion's search, whose benchmark is
the stand-in's own dictionary of timings: what is checked is when the population grows, by how
much, with what, and what the record says.  ``test_budget.py`` runs it on Helion's real search.
"""

from __future__ import annotations

import math
import types
from typing import Any

from tuning.strategies import seeded
from tuning.strategies.seed_check import best_readings, lost_by, widen_when_seeds_lose


def _member(config: str, perf: float = math.nan) -> Any:
    return types.SimpleNamespace(config=config, flat_values=[config], perf=perf)


def test_seeds_lose_only_when_their_best_is_over_the_margin_behind_the_rest() -> None:
    pop = [_member("seed", 0.0575), _member("variant", 0.034), _member("default", 0.0256), _member("bad", math.inf)]
    readings = best_readings(pop, {"seed", "variant"})
    assert readings == (0.034, 0.0256) and lost_by(readings, 0.25)  # a variant is a seed too
    assert not lost_by(readings, 0.25 * 2)  # 33% behind: within a 50% margin
    assert not lost_by(best_readings(pop, {"default"}), 0.25)  # the best config is a seed
    # No seed read at all (each failed to compile): lost, against any finite rest.
    readings = best_readings([_member("seed", math.inf), _member("other", 1.0)], {"seed"})
    assert readings == (math.inf, 1.0) and lost_by(readings, 0.25)
    # Nothing else to compare with: no decision.
    readings = best_readings([_member("seed", 1.0), _member("other", math.inf)], {"seed"})
    assert readings == (1.0, math.inf) and not lost_by(readings, 0.25)


class _Search:
    """Helion's search as the hook sees it: the first population's benchmark, the padding, a log."""

    def __init__(self, timings: dict[str, float], space: list[str]) -> None:
        self.timings, self.space, self.logged, self.benchmarked = timings, space, [], []
        self.config_gen = types.SimpleNamespace(flatten=lambda c: [c], unflatten=lambda flat: flat[0])

    def benchmark_population(self, members: list[Any], *, desc: str = "") -> list[Any]:
        for m in members:
            m.perf = self.timings.get(m.config, 1.0)
        self.benchmarked.append((desc, [m.config for m in members]))
        return members

    def benchmark_initial_population(self, members: list[Any], **kwargs: Any) -> list[Any]:
        return self.benchmark_population(members, desc="Initial population")

    def _pad_initial_population_with_unique_random(self, population: list[Any], target: int) -> list[Any]:
        given = [flat for flat in population]
        fresh = [[c] for c in self.space if [c] not in given]
        return (given + fresh)[:target]

    def make_unbenchmarked(self, flat: Any) -> Any:
        return _member(flat[0])

    def log(self, message: str) -> None:
        self.logged.append(message)


def test_a_lost_seed_widens_the_first_population_in_place_with_configs_not_yet_in_it() -> None:
    search = _Search({"seed": 0.0575, "default": 0.0256, "r1": 0.02, "r2": 0.03}, ["seed", "r1", "default", "r2", "r3"])
    applied = widen_when_seeds_lose(search, ["seed"], 2, 0.25)
    population = [_member("seed"), _member("default")]
    visited = {"seed", "default"}
    search.benchmark_initial_population(population, random_fallback_target=None, visited=visited)
    # Helion's _autotune ignores the return value: the population it holds must grow in place.
    assert [m.config for m in population] == ["seed", "default", "r1", "r2"]
    assert visited == {"seed", "default", "r1", "r2"}
    assert search.benchmarked[-1] == ("Seeds lost: wider first population", ["r1", "r2"])
    assert applied == {"widen": 2, "margin": 0.25, "checked": True, "best_seed_ms": 0.0575,
                       "best_other_ms": 0.0256, "added": 2}
    assert "seeds lost" in search.logged[-1]


def test_seeds_that_hold_their_own_cost_nothing_and_off_or_cold_leaves_helion_alone() -> None:
    search = _Search({"seed": 0.024, "default": 0.0256}, ["seed", "default", "r1"])
    applied = widen_when_seeds_lose(search, ["seed"], 30, 0.25)
    population = [_member("seed"), _member("default")]
    search.benchmark_initial_population(population)
    assert [m.config for m in population] == ["seed", "default"] and len(search.benchmarked) == 1
    assert applied == {"widen": 30, "margin": 0.25, "checked": True, "best_seed_ms": 0.024, "best_other_ms": 0.0256}
    for widen, seeds in ((0, ["seed"]), (30, [])):  # off, or a cold start (nothing handed to check)
        plain = _Search({}, [])
        assert widen_when_seeds_lose(plain, seeds, widen, 0.25) == {}
        assert "benchmark_initial_population" not in vars(plain)


def test_the_check_is_recorded_in_seeded_s_limits_only_when_on(monkeypatch: Any) -> None:
    """Off is the search every stored row ran, so its key must be absent (no row is made 'other search')."""
    assert seeded.SEED_CHECK == {"widen": 0, "margin_pct": 10} and "seed_check" not in seeded.search_limits()
    monkeypatch.setitem(seeded.SEED_CHECK, "margin_pct", 0)
    assert "seed_check" not in seeded.search_limits()  # a margin alone turns nothing on
    monkeypatch.setitem(seeded.SEED_CHECK, "widen", 30)
    assert seeded.search_limits()["seed_check"] == {"widen": 30, "margin_pct": 0}  # a margin of 0 is recorded
    monkeypatch.setitem(seeded.SEED_CHECK, "margin_pct", 10)
    assert seeded.search_limits()["seed_check"] == {"widen": 30, "margin_pct": 10}
