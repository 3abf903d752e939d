"""Every draw of each case across the table's store and trial stores, and each search's rows put in the table.

Why: one draw a row cannot tell a better search from a luckier draw.  Session 35 drew today's
`seeded` again on three rows and read 1.105, 1.176 and 1.107 against the table's 1.077, 1.016
and 1.054, the table's draw the favourable one each time.  So a search is judged on the table's
geomeans with its draws in place of the table's rows, and a case drawn more than once under one
search is judged on the mean of its draws (the geometric mean of their ratios), not on the best.
These geomeans are computed from several stores, not measured in one run, and the JSON says so.

A trial store starts as a copy of the table's store (bench/run_x2_gpu.sh variants), so one
record appears in many stores; each draw is counted once, by what it recorded (finished_at,
configs, seconds, search_best_ms).  A draw is named by its search (``variant_summary``'s label,
without the budget) and its budget changes (``seed=1`` for a spread draw).

    python bench/draws.py --table bench/results/store.json bench/results/variants_session3*/var_*.json \\
        --out bench/results/variants_session36/draws.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.variant_summary import limit_changes, split_label, summarise  # noqa: E402
from tuning.bench.same_search import CONDITIONAL_FINISHES, before_finishes, same_search  # noqa: E402
from tuning.bench.seeding import build_earlier, declared_labels  # noqa: E402
from tuning.bench.compare import BAR_LATENCY_GEOMEAN, BAR_TIME_RATIO, BAR_WORST_LATENCY, geomean  # noqa: E402

BUDGET_MARK = " (budget "


def draw_identity(case: str, finished_at: Any, configs: int, seconds: float,
                  search_best_ms: float | None) -> tuple[Any, ...]:
    """What makes two stores' records one draw: a record copied into another store keeps all of these.

    Shared by every reader that counts draws across stores (this module, ``bench/probes/miss_split.py``),
    so a copy is never counted twice by one and once by the other.  Seconds are compared at 0.1 s, as
    ``variant_summary`` reports them.
    """
    return case, finished_at, configs, round(seconds, 1), search_best_ms


def same_process_draws(summaries: Iterable[dict[str, Any]], proxy: bool
                       ) -> Iterator[tuple[dict[str, Any], str, str, dict[str, Any]]]:
    """``(summary, label, case, row)`` of every same-process draw in ``summaries``, each draw once.

    ``proxy`` picks the groups drawn on another card than the table's (``variant_summary.split_label``)
    or the table's own.  Why one loop: the table's draws (:func:`collect`) and the proxy screen
    (``bench/probes/proxy_screen.py``) read the same stores with opposite filters, and a copy must be
    counted once by the same rule in both.  The first summary that holds a draw owns it, so a caller
    lists the store whose draws it screens first.  Only a same-process ratio is a draw: a latency
    re-timed in another process drifts with the machine.
    """
    seen: set[tuple[Any, ...]] = set()
    for summary in summaries:
        for label, group in summary["groups"].items():
            card = split_label(label)[0]
            if (card is not None) != proxy:
                continue
            for case, row in group["cases"].items():
                key = (card, *draw_identity(case, row.get("finished_at"), row["configs"], row["seconds"],
                                            row.get("search_best_ms")))
                if row.get("latency_from") != "same process" or key in seen:
                    continue
                seen.add(key)
                yield summary, label, case, row


def off_build_order(case: str, row: dict[str, Any], earlier: dict[str, frozenset[str]] | None) -> bool:
    """Whether a draw started from other shapes than a first build hands ``case`` (``earlier``: :func:`build_earlier`).

    Why: session 39's third call found a fresh machine, its trial store was gone, and grouped GEMM
    small ran cold and large from small alone, where a build seeds small from medium and large from
    both; such a draw measures another search start, not the search.  A record that names no
    shapes (made before build-order seeding) is left to the report's own rule.
    """
    shapes = row.get("seeded_from_shapes")
    return earlier is not None and case in earlier and isinstance(shapes, list) and set(shapes) != earlier[case]


def collect(summaries: list[dict[str, Any]], usual: dict[str, Any],
            earlier: dict[str, frozenset[str]] | None = None,
            left_out: list[dict[str, Any]] | None = None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """case -> search -> its draws (each once, same-process latency only), from ``variant_summary`` summaries.

    ``usual``: the table's budget; a draw's budget is named against it, not against its own store's
    (where a second draw of half the cases would make its own seed the usual one).  ``earlier``: the
    shapes a first build seeds each case from; a draw seeded otherwise is not counted, and is named in
    ``left_out`` when given.
    """
    draws: dict[str, dict[str, list[dict[str, Any]]]] = {}
    # A proxy group was drawn on another card than the table's: not a draw of a table row.
    for summary, label, case, row in same_process_draws(summaries, proxy=False):
        search = label.partition(BUDGET_MARK)[0]
        if earlier is not None and off_build_order(case, row, earlier):
            if left_out is not None:
                left_out.append({"case": case, "search": search, "store": summary["store"],
                                 "seeded_from_shapes": row["seeded_from_shapes"],
                                 "a_first_build_seeds_from": sorted(earlier[case])})
            continue
        draw = {"store": summary["store"],
                "budget": ", ".join(limit_changes(row.get("budget") or {}, usual)) or "as the table's",
                "latency_ratio": round(row["latency_ratio"], 4), "time_ratio": round(row["time_ratio"], 3),
                "configs": row["configs"], "seconds": row["seconds"]}
        group = summary["groups"][label]
        if CONDITIONAL_FINISHES & set(group.get("limits") or {}):
            draw["its_finish_moved_it"] = moved_by_its_finish(group["cases"], case)
        draws.setdefault(case, {}).setdefault(search, []).append(draw)
    return draws


def moved_by_its_finish(group_cases: Mapping[str, Mapping[str, Any]], case: str) -> bool:
    """Whether a conditional finish made this draw other than the search before it would have made it.

    True where the finish changed the pick on ``case`` itself, or on a shape of the same kernel that
    seeded it within the same group (a large starts from its small's pick).  Why: where the finish
    kept the search's own pick on every shape it passed through, the draw is a draw of the search
    without the finish too, and reads that search's draw-to-draw spread, not the finish (session
    55: attention small moved from 1.589 to 1.031 and causal attention small from 1.000 to 1.116
    under `skf8pc4`, its finish keeping the search pick on both).
    """
    row = group_cases[case]
    if row.get("finish_changed"):
        return True
    kernel = case.rpartition("@")[0]
    return any(moved_by_its_finish(group_cases, f"{kernel}@{shape}") for shape in row.get("seeded_from_shapes") or ()
               if f"{kernel}@{shape}" in group_cases)


def in_place_of_table(draws: dict[str, dict[str, list[dict[str, Any]]]], table_search: str,
                      search: str, unchanged: Callable[[str], bool] | None = None) -> dict[str, Any] | None:
    """The table's geomeans with ``search``'s draws (their mean where several) in place of ``table_search``'s rows.

    Every case keeps its table rows' mean where ``search`` has no draw of it, so the figure covers
    the table's cases; None when the table lacks a case's row (no common ground to compare on).
    ``cases_not_drawn`` names those cases (session 40 planned ``td2``'s last 18 rows from it).
    ``unchanged(case)``: whether ``search`` would run the table's search there (:func:`unchanged_by`);
    those rows are its draws already, and ``cases_left_to_draw`` is what it must still draw before
    it can be adopted on all of them.  ``cases_over_whatever_is_left``: the rows over the worst-case
    bar among its draws and the rows it leaves as the table's, so the fewest it can end with if every
    row left lands under the bar; where that is not fewer than the table's own rows over, the search
    cannot win on that bar, and drawing the rest buys nothing (session 53 worked this out by hand
    for `pat2`, and stopped after 10 of 31 rows).
    """
    rows_by_case: dict[str, list[dict[str, Any]]] = {}
    for case, by_search in draws.items():
        rows = by_search.get(search) or by_search.get(table_search)
        if not rows:
            return None
        rows_by_case[case] = rows
    not_drawn = sorted(case for case, by_search in draws.items() if search not in by_search)
    same = [] if unchanged is None else [case for case in not_drawn if unchanged(case)]
    left = [case for case in not_drawn if case not in same]
    figures = _figures(rows_by_case)
    return {"cases": len(rows_by_case), "cases_from_this_search": len(rows_by_case) - len(not_drawn),
            "cases_not_drawn": not_drawn, "cases_unchanged": same, "cases_left_to_draw": left, **figures,
            "cases_over_whatever_is_left": [c for c in figures["cases_over_worst_bar"] if c not in left]}


def where_its_finish_acted(draws: dict[str, dict[str, list[dict[str, Any]]]], table_search: str, search: str,
                           table_limits: dict[str, Any] | None, limits: dict[str, Any] | None,
                           unchanged: Callable[[str], bool] | None = None) -> dict[str, Any] | None:
    """``search`` and the table's search in the table's place, both on pooled draws where its finish kept the pick.

    For a search that differs from the table's only in a conditional finish: on a case where no draw
    of it was moved by its finish (:func:`moved_by_its_finish`), its draws are draws of the table's search
    too, so both searches are read on the mean of the table's draws and those; where its finish moved
    a draw, it is read on its own draws, and the table on its own.  Why: a count of rows over the bar
    is moved by one lucky or unlucky draw; this figure credits the finish only with the rows it
    changed (session 55).  An estimate from the stores, like the others here.  None for other searches.
    """
    if search == table_search or limits is None or before_finishes(limits) != before_finishes(table_limits):
        return None
    moved = sorted(c for c, by in draws.items() if any(d.get("its_finish_moved_it") for d in by.get(search, ())))
    kept = sorted(c for c, by in draws.items() if by.get(search) and c not in moved)
    pooled: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for case, by in draws.items():
        both = [*by.get(table_search, ()), *by.get(search, ())]
        pooled[case] = {**by, table_search: both, search: both} if case in kept else by
    return {"cases_its_finish_moved": moved, "cases_it_drew_as_the_table_s_search": kept,
            "this_search": in_place_of_table(pooled, table_search, search, unchanged),
            "table_search": in_place_of_table(pooled, table_search, table_search)}


def unchanged_by(limits: dict[str, Any] | None, table_limits: dict[str, Any] | None,
                 table_rows: dict[str, dict[str, Any]],
                 earlier: Mapping[str, Iterable[str]] | None = None) -> Callable[[str], bool]:
    """Whether a search made under ``limits`` would run the table's search on a case (``table_rows``: the table's rows).

    Why: a finish that acts only on some cases (``small_kernel_finish``, under 0.025 ms) leaves the
    others' searches as they are (tuning/bench/same_search.py), so its draws on the cases it acts on
    are all it needs before adoption, except that a first build seeds each case from the kernel's
    shapes tuned before it (``earlier``: case -> those shape names, from the build order).  A case
    is unchanged only if every shape it is seeded from is unchanged too: where the finish moves a
    small shape's pick, the large shape seeded from it starts elsewhere and must be drawn.  Session
    44 found this the hard way: the finish drawn on its 10 small rows left their 10 large rows
    seeded from other picks (`kiln bench --report` grouped them as "other search: seeding").
    """
    def unchanged(case: str) -> bool:
        row = table_rows.get(case)
        if row is None or limits is None or not same_search(
                {"strategy_limits": table_limits, "search_best_ms": row.get("search_best_ms")}, limits):
            return False
        kernel = case.rpartition("@")[0]
        return all(unchanged(f"{kernel}@{shape}") for shape in (earlier or {}).get(case, ()))
    return unchanged


def _figures(rows_by_case: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The bar's figures over cases, each case on the mean (geometric) of its draws' ratios.

    Judged against the bar before rounding, so a figure rounded onto the bar does not pass it.
    """
    latency = {c: geomean(r["latency_ratio"] for r in rows) or 0.0 for c, rows in rows_by_case.items()}  # ratios > 0
    lat = geomean(latency.values()) or 0.0
    tim = geomean(geomean(r["time_ratio"] for r in rows) or 0.0 for rows in rows_by_case.values()) or 0.0
    worst = max(latency.values())
    return {"geomean_time_ratio": round(tim, 3), "geomean_latency_ratio": round(lat, 4),
            "worst_latency_ratio": round(worst, 4),
            "cases_over_worst_bar": sorted(c for c, v in latency.items() if v > BAR_WORST_LATENCY),
            "meets_bar": {"time_ratio": tim >= BAR_TIME_RATIO, "latency_geomean": lat <= BAR_LATENCY_GEOMEAN,
                          "worst_latency": worst <= BAR_WORST_LATENCY}}


def on_shared_rows(draws: dict[str, dict[str, list[dict[str, Any]]]], table_search: str,
                   search: str) -> dict[str, dict[str, Any]] | None:
    """``search`` beside ``table_search`` on only the rows both drew: all of them, and by the store ``search``'s draws came from.

    Why: in place of the table's rows, a variant's figure mixes its draws with the table's rows
    it has not drawn yet; this is the paired comparison, and by store it shows what each
    session's rows added (session 36: mamba2 large made all of the gain on its 13 rows).
    """
    if search == table_search:
        return None
    shared = {c: by for c, by in draws.items() if by.get(table_search) and by.get(search)}
    if not shared:
        return None
    groups: dict[str, list[str]] = {"all": list(shared)}
    for case, by in shared.items():  # a draw's store is the first that held it: the session that drew it
        groups.setdefault(by[search][0]["store"], []).append(case)
    return {name: {"cases": len(cases),
                   "table_search": _figures({c: shared[c][table_search] for c in cases}),
                   "this_search": _figures({c: shared[c][search] for c in cases})}
            for name, cases in groups.items()}


def best_of_two(draws: dict[str, dict[str, list[dict[str, Any]]]], table_search: str, search: str,
                kernels: list[str] | None = None) -> dict[str, Any] | None:
    """What a build that ran both searches and kept the faster pick would read: an estimate, not a measurement.

    Why: ``seeded`` lands far from itself from one draw to the next (session 35: about 10%; causal
    attention small 1.16) where ``lfbo`` does not (session 38: 0.9993 and 0.9956 of itself), so the
    misses are the search's variance, and a second independent search is the plain way to buy it
    down.  Each case takes the faster of the two searches' mean latency ratios, and both searches'
    time (1/(1/a + 1/b) as a ratio to ``lfbo``).  The faster of two noisy ratios reads low (a real
    build would re-time both picks in one process), so this bounds the gain from above.  ``kernels``
    (``module:function`` without the shape) narrows the second search to those kernels; the other
    cases keep the table's rows.  None unless both searches drew every case.
    """
    if search == table_search or any(not (by.get(table_search) and by.get(search)) for by in draws.values()):
        return None
    latency: dict[str, list[dict[str, Any]]] = {}
    for case, by in draws.items():
        if kernels is not None and case.split("@")[0].split(":")[-1] not in kernels:
            latency[case] = by[table_search]
            continue
        mean = {s: {k: geomean(r[k] for r in by[s]) or 0.0 for k in ("latency_ratio", "time_ratio")}
                for s in (table_search, search)}  # each search on the mean of its draws, unrounded
        a, b = mean[table_search], mean[search]
        both = 1.0 / (1.0 / a["time_ratio"] + 1.0 / b["time_ratio"])
        latency[case] = [{"latency_ratio": min(a["latency_ratio"], b["latency_ratio"]), "time_ratio": both}]
    return {"kernels": sorted(kernels) if kernels is not None else "all", **_figures(latency)}


def spreads(draws: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, float]]:
    """case -> search -> slowest over fastest draw's latency ratio, where a search drew the case twice or more."""
    return {case: {s: round(max(r["latency_ratio"] for r in rows) / min(r["latency_ratio"] for r in rows), 4)
                   for s, rows in by_search.items() if len(rows) > 1}
            for case, by_search in draws.items() if any(len(rows) > 1 for rows in by_search.values())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, default=ROOT / "bench" / "results" / "store.json",
                    help="the table's store: its cases and its search are the ground the others are put on")
    ap.add_argument("stores", nargs="*", type=Path, help="trial stores (variants, second draws)")
    ap.add_argument("--out", type=Path, help="write the JSON here (default: print it)")
    ap.add_argument("--best-of-two-kernels", default="",
                    help="comma-separated kernel names (e.g. attention,mamba2_chunk_scan): best_of_two's second "
                         "figure runs the second search on only these; chosen after seeing the draws, it is a "
                         "hindsight bound, not a policy")
    ns = ap.parse_args(argv)
    table = summarise(ns.table)
    if len(table["groups"]) != 1:
        ap.error(f"{ns.table}: the table's seeded rows come from {len(table['groups'])} searches "
                 f"({', '.join(table['groups'])}); expected one")
    (table_search,) = table["groups"]
    left_out: list[dict[str, Any]] = []
    summaries = [table] + [summarise(p) for p in ns.stores]
    earlier = build_earlier(declared_labels(ROOT, {}))
    draws = collect(summaries, table["usual_budget"], earlier, left_out)
    searches = sorted({s for by_search in draws.values() for s in by_search})
    limits_of = {label.partition(BUDGET_MARK)[0]: group["limits"] for summary in summaries
                 for label, group in summary["groups"].items()}
    table_group = table["groups"][table_search]
    unchanged = {s: unchanged_by(limits_of.get(s), table_group["limits"], table_group["cases"], earlier) for s in searches}
    result = {"what": "each case's draws by search (same-process latency ratios, each draw once); each search's "
                      "draws, their mean where several, in place of the table's rows: computed from the stores, "
                      "not measured in one run",
              "ratios": "time: lfbo/strategy; latency: strategy/lfbo",
              "bar": {"time_ratio_at_least": BAR_TIME_RATIO, "latency_geomean_at_most": BAR_LATENCY_GEOMEAN,
                      "worst_latency_at_most": BAR_WORST_LATENCY},
              "table": str(ns.table), "table_search": table_search, "stores": [str(p) for p in ns.stores],
              "in_place_of_table": {s: in_place_of_table(draws, table_search, s, unchanged[s]) for s in searches},
              "on_shared_rows": {s: on_shared_rows(draws, table_search, s) for s in searches if s != table_search},
              "where_its_finish_acted": {s: fig for s in searches if (fig := where_its_finish_acted(
                  draws, table_search, s, table_group["limits"], limits_of.get(s), unchanged[s]))},
              "best_of_two": {s: best_of_two(draws, table_search, s) for s in searches if s != table_search},
              "spreads": spreads(draws), "draws": draws,
              "left_out_off_build_order": left_out}
    if ns.best_of_two_kernels:
        narrowed = ns.best_of_two_kernels.split(",")
        result["best_of_two_on_some_kernels"] = {s: best_of_two(draws, table_search, s, narrowed)
                                                 for s in searches if s != table_search}
    emit(result, ns.out)
    table_over = len((result["in_place_of_table"].get(table_search) or {}).get("cases_over_worst_bar", ()))
    for s, fig in result["in_place_of_table"].items():
        if fig:
            verdict = ""
            if s != table_search and fig["cases_left_to_draw"]:
                at_least = len(fig["cases_over_whatever_is_left"])
                verdict = f"; at least {at_least} over whatever is left (the table: {table_over})"
                if at_least >= table_over:
                    verdict += ": it cannot end with fewer"
            print(f"{s}: {fig['cases_from_this_search']} of {fig['cases']} cases drawn, {len(fig['cases_unchanged'])} "
                  f"unchanged by it, {len(fig['cases_left_to_draw'])} left to draw; time {fig['geomean_time_ratio']}x, "
                  f"latency {fig['geomean_latency_ratio']}, worst {fig['worst_latency_ratio']}, "
                  f"{len(fig['cases_over_worst_bar'])} over {BAR_WORST_LATENCY}{verdict}", file=sys.stderr)
    for s, fig in result["where_its_finish_acted"].items():
        mine, theirs = fig["this_search"], fig["table_search"]
        print(f"{s}, its finish credited only where it moved the pick ({len(fig['cases_its_finish_moved'])} rows; "
              f"{len(fig['cases_it_drew_as_the_table_s_search'])} read as the table's search's draws, pooled for both): "
              f"latency {mine['geomean_latency_ratio']} against {theirs['geomean_latency_ratio']}, "
              f"{len(mine['cases_over_worst_bar'])} over {BAR_WORST_LATENCY} against "
              f"{len(theirs['cases_over_worst_bar'])}, at least {len(mine['cases_over_whatever_is_left'])} "
              f"over whatever is left", file=sys.stderr)
    for s, groups in result["on_shared_rows"].items():
        for name, g in (groups or {}).items():
            a, b = g["table_search"], g["this_search"]
            print(f"{s} beside the table's search on {g['cases']} shared rows ({name}): latency "
                  f"{b['geomean_latency_ratio']} against {a['geomean_latency_ratio']}, time {b['geomean_time_ratio']}x "
                  f"against {a['geomean_time_ratio']}x, {len(b['cases_over_worst_bar'])} over {BAR_WORST_LATENCY} "
                  f"against {len(a['cases_over_worst_bar'])}", file=sys.stderr)
    for key in ("best_of_two", "best_of_two_on_some_kernels"):
        for s, fig in (result.get(key) or {}).items():
            if fig:
                print(f"{key} [{s}] (estimate; kernels {fig['kernels']}): time {fig['geomean_time_ratio']}x, latency "
                      f"{fig['geomean_latency_ratio']}, worst {fig['worst_latency_ratio']}, "
                      f"{len(fig['cases_over_worst_bar'])} over {BAR_WORST_LATENCY}", file=sys.stderr)
    for row in left_out:
        print(f"left out: {row['case']} [{row['search']}] in {row['store']} seeded from {row['seeded_from_shapes']}, "
              f"a first build from {row['a_first_build_seeds_from']}", file=sys.stderr)
    for case, by_search in result["spreads"].items():
        for s, apart in by_search.items():
            print(f"spread {case} [{s}]: {apart}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
