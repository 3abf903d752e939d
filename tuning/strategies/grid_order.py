"""A last round over the order the grid's tiles are launched in, far from the search's pick.

Why: two knobs decide which tiles run at the same time, and so what stays in L2: the loop order
(which grid axis varies fastest across program ids: in Helion 1.5's flat mapping the order's last
entry, ``TileStrategy._reorder`` reversing it before ``_decompose_pid_to_statements`` takes the first
as ``pid % num_blocks_0``) and the L2 grouping (how many tiles of one axis go together before the
next).  So moving an axis to the back makes it the fastest, and to the front the slowest.  A neighbourhood search moves each a step at a time (a swap
of two axes; a doubling or halving), and a step alone can read no better while the far value
reads much better.  The knob probe (session 48, ``bench/probes/knob_swap.py``, on an H100; the
table's rows are the H200's) put ``lfbo``'s knobs one at a time into ``seeded``'s picks:

- mamba2 small (1.123 against ``lfbo``'s pick in the same process): ``lfbo``'s loop order
  alone, a permutation of five axes no single swap reaches, read 1.010 (92% of the gap);
- causal attention medium (1.062): ``lfbo``'s L2 grouping 16 for the pick's 2, three doublings
  away, read 1.001 (98%).

So after the polish this benchmarks the search's best with each far value of those knobs, one
knob at a time: every L2 grouping the kernel's space allows, and (``loop_orders`` = 1) each
loop-order axis moved to the front and to the back, every permutation where there are at most
``ALL_ORDERS_UP_TO`` of them, or (``loop_orders`` = 2) every permutation up to
``EVERY_ORDER_UP_TO`` (5 axes).
Where one wins after Helion's own re-check of the readings, the polish runs again from it.
Cost: a handful of configs per grid (at most 6 L2 groupings and 2(n-1) loop orders per loop;
with ``loop_orders`` = 2 up to 119 orders, about 13 s of a small kernel's search on the H100),
read with the search's clock.

Off (``seeded.GRID_ORDER``, where its one draw is recorded).  On mamba2 small that draw's search
ended on the very pick the probe had fixed, and none of the moves read faster there: ``lfbo``'s
order [2, 4, 1, 0, 3] is not one move from the pick's [4, 0, 2, 3, 1].  Hence ``loop_orders`` = 2,
drawn once there in session 50: the search itself landed at 0.998 and no far order read faster,
so the pick stayed.  Try it with ``bench/seeded_variant.py --set grid_order.loop_orders=2 --set
grid_order.l2_groupings=1``.
"""

from __future__ import annotations

import itertools
import math
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .seed_transfer import transfer_errors

ALL_ORDERS_UP_TO = 6  # loop_orders=1: 3 axes get all 6 orders; 4 and more the moves only
EVERY_ORDER_UP_TO = 120  # loop_orders=2: every order of up to 5 axes (session 49: mamba2 small's 5-axis order)
L2_KNOB, ORDER_KNOB = "l2_groupings", "loop_orders"


def order_moves(order: Sequence[int], every_up_to: int = ALL_ORDERS_UP_TO) -> list[list[int]]:
    """Other orders of one loop: all of them when at most ``every_up_to``, else each axis moved to the front and to the back."""
    base = list(order)
    if math.factorial(len(base)) <= every_up_to:
        return [list(p) for p in itertools.permutations(base) if list(p) != base]
    out: list[list[int]] = []
    for axis in base:
        rest = [a for a in base if a != axis]
        for moved in ([axis, *rest], [*rest, axis]):
            if moved != base and moved not in out:
                out.append(moved)
    return out


def l2_values(config_spec: Any) -> list[int]:
    """The L2 groupings the kernel's space allows (Helion 1.5: powers of two, 1 to 64)."""
    specs = list(getattr(config_spec, "l2_groupings", ()))
    if not specs:
        return []
    try:
        frag = specs[0]._fragment(config_spec)
        low, high = int(frag.low), int(frag.high)
    except (AttributeError, TypeError):  # another Helion's spec: its documented range
        low, high = 1, 64
    return [1 << e for e in range(low.bit_length() - 1, high.bit_length())]


def far_copies(config: Mapping[str, Any], l2: Sequence[int], loop_orders: int, l2_groupings: bool
               ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what moved, the config with it moved), one knob at a time; the near values are the polish's.

    ``loop_orders``: 0 none, 1 the moves (:func:`order_moves`), 2 every order up to ``EVERY_ORDER_UP_TO``.
    """
    if loop_orders > 0:
        every = EVERY_ORDER_UP_TO if loop_orders >= 2 else ALL_ORDERS_UP_TO
        for i, order in enumerate(config.get(ORDER_KNOB) or []):
            for moved in order_moves(order, every):
                orders = [list(o) for o in config[ORDER_KNOB]]
                orders[i] = moved
                yield f"{ORDER_KNOB}[{i}]={moved}", {**config, ORDER_KNOB: orders}
    if l2_groupings:
        for i, value in enumerate(config.get(L2_KNOB) or []):
            for far in l2:
                if far not in (value, value * 2, value // 2):
                    groupings = list(config[L2_KNOB])
                    groupings[i] = far
                    yield f"{L2_KNOB}[{i}]={far}", {**config, L2_KNOB: groupings}


def _ms(perf: float) -> float | None:
    return round(float(perf), 6) if math.isfinite(perf) else None


def add_grid_order_round(search: Any, loop_orders: int, l2_groupings: int) -> dict[str, Any]:
    """Make ``search`` end its polish with one round over far loop orders and L2 groupings of its best.

    Returns the record's provenance, filled in when the round has run: ``tried``, the pick's and the
    fastest far copy's readings after Helion's re-check (``pick_ms``, ``best_far_ms``, ``best_far``:
    what it changed), so a draw where the pick stayed still says how near the far values came, and
    ``moved`` when one won; ``{}`` when both are off.
    """
    if loop_orders <= 0 and l2_groupings <= 0:
        return {}
    from helion import Config
    from helion.autotuner.base_search import performance

    applied: dict[str, Any] = {"loop_orders": min(max(loop_orders, 0), 2), "l2_groupings": int(l2_groupings > 0),
                               "tried": 0}
    original = search._polish_descent  # Helion's, or the bounded one (polish.py) when that is on
    l2 = l2_values(search.config_spec)
    l2_count = len(list(getattr(search.config_spec, L2_KNOB, ())))
    errors = transfer_errors()

    def descent(self: Any, visited: set[Any]) -> None:
        original(visited)
        try:
            far_round(self, visited)
        except Exception as e:  # an optional last round never costs the search its pick
            applied["error"] = f"{type(e).__name__}: {e}"[:300]
            self.log(f"kiln: grid order failed ({applied['error']}); the pick stays")

    def far_round(self: Any, visited: set[Any]) -> None:
        current = self.best
        gen, named = self.config_gen, {}
        pick = dict(current.config)
        if l2_count and L2_KNOB not in pick:  # left at Helion's default (1 per grid), which the space fills in
            pick[L2_KNOB] = [1] * l2_count
        for what, config in far_copies(pick, l2, loop_orders, l2_groupings > 0):
            try:
                member = self.make_unbenchmarked(gen.flatten(Config(**config)))
            except errors:
                continue
            if member is not None and member.config not in visited and member.config not in named:
                named[member.config] = (what, member)
        if not named:
            self.log("kiln: grid order: no far loop order or L2 grouping to try")
            return
        fresh = [m for _, m in named.values()]
        visited.update(named)
        self.set_generation(self._autotune_metrics.num_generations + 1)
        self.benchmark_population(fresh, desc="kiln: grid order")
        self.rebenchmark_population([current, *fresh], desc="kiln: grid order: verifying")
        self.population.extend(fresh)
        best = min([current, *fresh], key=performance)
        fastest = min(fresh, key=performance)
        applied.update(tried=len(fresh), pick_ms=_ms(current.perf), best_far_ms=_ms(fastest.perf),
                       best_far=named[fastest.config][0])
        if best is current or not math.isfinite(best.perf) or best.perf >= current.perf:
            self.log(f"kiln: grid order: {len(fresh)} far orders tried, the pick stays")
            return
        applied["moved"] = named[best.config][0]
        self.log(f"kiln: grid order: {applied['moved']} reads {self.format_performance(best.perf)} against "
                 f"{self.format_performance(current.perf)}; polishing from it")
        original(visited)

    search._polish_descent = types.MethodType(descent, search)
    return applied
