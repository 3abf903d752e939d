"""Whether a stored record came from the search a strategy runs today.

A record counts as today's when its ``strategy_limits`` equal today's. The one exception is a
last step that acts only on some cases. `seeded`'s ``small_kernel_finish`` re-times the search's
finalists only when the search's best reads under its ``below_ms``. The search before it is
unchanged, so on any case whose best reads at or over that threshold, turning the finish on or off
changes nothing. Plain equality would still mark every such record as another search. `kiln bench`
would then rerun it, and the report would group it apart.

That matters for adopting such a step. On the H200 table, `seeded`'s search read under 0.025 ms
on 10 of 36 rows (session 43, `search_best_ms`). Adopting the finish with plain equality would
rerun all 36 rows, about 36 x 90 s of GPU time, more than one session's budget. 26 of those reruns
could not change a pick.

A record from a different search than today's still reruns. So does one whose seeds changed
because an earlier shape's pick changed: that is checked apart, by the seed digest
(:mod:`.seeding`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Last steps that act only on cases meeting their condition, and read nothing else of the search.
CONDITIONAL_FINISHES = frozenset({"small_kernel_finish"})


def _would_act(limits: Mapping[str, Any], key: str, search_best_ms: float | None) -> bool:
    """Whether the finish ``key`` that ``limits`` turn on acts on a search whose best read ``search_best_ms``.

    Off (absent, or no finalists) never acts. On, with no threshold or no reading to compare,
    it is taken to act: when in doubt, the record is another search.
    """
    finish = limits.get(key)
    if not finish or not finish.get("finalists"):
        return False
    below = finish.get("below_ms")
    return search_best_ms is None or below is None or search_best_ms < below


def same_search(record: Mapping[str, Any], today: Mapping[str, Any] | None) -> bool:
    """Whether ``record`` was made by the search that ``today``'s limits make, on its own case.

    True for equal limits. Also true for limits that differ only in :data:`CONDITIONAL_FINISHES`
    when neither side's finish would act on the record's ``search_best_ms``.
    """
    made = record.get("strategy_limits")
    if made == today:
        return True
    if not made or not today:
        return False
    differ = {k for k in set(made) | set(today) if made.get(k) != today.get(k)}
    if not differ <= CONDITIONAL_FINISHES:
        return False
    best = record.get("search_best_ms")
    return not any(_would_act(side, key, best) for key in differ for side in (made, today))


def before_finishes(limits: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``limits`` without the finishes in :data:`CONDITIONAL_FINISHES`: what decides the search before them.

    Two records whose limits match here ran the same search, whichever finish re-timed its finalists
    after (bench/probes/search_repeat.py pairs such draws).
    """
    if limits is None:
        return None
    return {k: v for k, v in limits.items() if k not in CONDITIONAL_FINISHES}


def finish_record(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the finish after the search recorded on ``record`` (``provenance.as_shipped``); empty where none ran.

    Both finishes, the small-kernel one and ``as_shipped``, write there (strategies/seeded.py):
    ``changed`` says whether the pick is the search's own, beside ``chosen_ms`` and ``search_pick_ms``
    on the finish's clock.  One reader, so the bench scripts that ask whether a finish moved a draw
    (bench/draws.py, bench/probes/search_repeat.py) read it the same way.
    """
    return (record.get("provenance") or {}).get("as_shipped") or {}
