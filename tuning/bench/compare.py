"""How a strategy compares with ``lfbo``: per-case ratios, per-strategy geomeans, the bar, and why a case misses it.

Per case and strategy, against the ``lfbo`` record of the same case:

- tuning-time ratio = lfbo tuning seconds / strategy tuning seconds (> 1: faster);
- configs ratio = lfbo configs tested / strategy configs tested (> 1: fewer);
- latency ratio = strategy ms / lfbo ms (< 1: faster kernel), from the pair
  re-measured interleaved in one fresh process when that pair used the
  current lfbo config, else from the two records' fresh-process latencies.

Per strategy: geomeans of those ratios, the worst (largest) latency ratio and
the case count.  A case with no usable lfbo record (or a failed run) is listed
but left out of the geomeans.

The numbers only; ``report`` renders them (markdown, PNGs) and ``to_lock`` uses the
same-process pairs to pick configs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..strategies.seed_variants import TENSOR_DESCRIPTOR, scaled_tile_variants, tile_directions
from ..strategies.seeded import SMALL_KERNEL_BELOW_MS
from . import BASELINE
from .same_search import same_search
from .seeding import BuildSeeds, build_earlier, seed_shapes, seeded_as_now
from .store import PROXY_OF, Store


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def _ok(rec: dict[str, Any] | None) -> bool:
    return bool(rec) and not rec.get("error") and rec.get("ms") and rec.get("tuning_seconds") and rec.get("configs_tested")


# Model ids of stand-ins that serve fixed answers (bench/fixed_answer_llm.py): the
# report must never let their numbers pass for an LLM's.
NOT_AN_LLM = ("openai/fixed-answers",)

# The bar a strategy is held to against lfbo (issue #5), never tuned away: at
# least 4x less tuning time (geomean), a geomean latency ratio of 1.01 or less,
# and no case over 1.05.
BAR_TIME_RATIO = 4.0
BAR_LATENCY_GEOMEAN = 1.01
BAR_WORST_LATENCY = 1.05

# A case where the strategy's kernel runs this much faster than lfbo's (1/1.05: the worst-case
# bar mirrored) says lfbo's own search ended short there, not that the strategy is better in
# general; one such case can carry a geomean under 1.01 that the other cases miss (rope@small,
# session 15: 0.715), so the summary also gives the geomean without them.
FAR_AHEAD = 1 / BAR_WORST_LATENCY

# Label for records made by an earlier or trial version of a strategy's search (other
# ``strategy_limits`` than today's): reported apart, never mixed in, one group per set of
# limit keys that differ, so two older searches are never averaged together either.
OTHER_SEARCH = " (other search"

# A baseline whose tuning time reached this share of its ``seconds`` budget was
# stopped by the cap, not by LFBO's own convergence.
CAP_SHARE = 0.95

# A proxy run (bench/probes/proxy_store.py) is read with this beside its figures.
PROXY_NOTE = ("drawn on this card against another card's lfbo picks, copied here (bench/probes/proxy_store.py): latency "
              "ratios are both picks re-timed in one fresh process on this card; time and configs ratios set this card's "
              "searches against the other card's lfbo search and do not compare like with like")


def hit_seconds_cap(rec: dict[str, Any] | None) -> bool:
    """Whether ``rec`` ran into its budget's wall cap.

    Why it matters: the 33-case table is built across device sessions, so
    ``lfbo`` runs with a generous ``seconds`` cap to fit one; a capped baseline
    is cheaper and maybe slower than full LFBO, which flatters the strategy's
    time ratio and latency ratio, so the report names every such case.
    """
    cap = ((rec or {}).get("budget") or {}).get("seconds")
    spent = (rec or {}).get("tuning_seconds")
    return bool(cap and spent and spent >= CAP_SHARE * cap)


def same_process_ratio(rec: dict[str, Any], base: dict[str, Any]) -> float | None:
    """``rec``'s ms over lfbo's, both re-measured in one fresh process, when that pair used ``base``'s
    (the current lfbo) config; else None. Only such a pair compares two configs without process noise."""
    pair = rec.get("vs_lfbo") or {}
    if pair.get("lfbo_config") != base.get("config") or not pair.get("lfbo_ms"):
        return None
    return pair["ms"] / pair["lfbo_ms"]


def case_ratios(rec: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    paired = same_process_ratio(rec, base)
    return {
        "time_ratio": base["tuning_seconds"] / rec["tuning_seconds"],
        "configs_ratio": base["configs_tested"] / rec["configs_tested"],
        "latency_ratio": paired if paired is not None else rec["ms"] / base["ms"],
        "latency_from": "same process" if paired is not None else "separate processes",
    }


def limits_differ(made: dict[str, Any] | None, today: dict[str, Any]) -> list[str]:
    """The top-level ``strategy_limits`` keys where a record's search differs from today's, sorted.

    Why keys and not a diff: a reader of the report needs to know which part of the
    search changed (``seed_variants``, ``with_seeds``, ...); the store holds the values.
    """
    if not made:
        return ["not recorded"]
    return sorted(k for k in set(made) | set(today) if made.get(k) != today.get(k))


def is_other_search(label: str) -> bool:
    """Whether a report label names an older search's group (its keys vary, so match the fixed part)."""
    return OTHER_SEARCH in label


def display_name(name: str, rec: dict[str, Any], limits: dict[str, Any] | None, seeds_as_now: bool | None = None) -> str:
    """``name``, or ``name (other search: <keys>)`` when ``rec`` was made under other search limits or seeds than today's.

    ``limits`` maps strategy names to today's ``strategy_limits`` (None: don't
    check, as for a store read without the strategies at hand).  A changed
    search must not borrow its predecessor's numbers, nor hide them; the keys
    that differ name the group, so each older search is summarised on its own;
    ``seeding`` among them marks a search that did not start from a first build's
    seeds (:mod:`.seeding`): ``seeds_as_now`` when the caller checked them against
    the build order, else only the rule (no lock entries).
    """
    if limits is None or name == BASELINE or name not in limits:
        return name
    differ = [] if same_search(rec, limits[name]) else limits_differ(rec.get("strategy_limits"), limits[name])
    if not (seeded_as_now(rec) if seeds_as_now is None else seeds_as_now):  # not a first build's seeds
        differ = sorted([*differ, "seeding"])
    return f"{name}{OTHER_SEARCH}: {', '.join(differ)})" if differ else name


def _start(rec: dict[str, Any]) -> str:
    """How the case's search started, as both explanations open."""
    seeds = seeds_label(rec)
    return "cold start (no seeds)" if seeds.startswith("cold") else f"seeded from {seeds}"


def _search_clock(rec: dict[str, Any]) -> str:
    """The clock a record's search timed candidates on: seeded's optional CUDA-graph clock (its
    ``strategy_limits``, strategies/seeded.py SEARCH_CLOCK) or Helion's default."""
    limits = rec.get("strategy_limits") or {}
    return "cudagraph" if (limits.get("search_clock") or {}).get("cudagraph") else "default"


def config_gap(mine: dict[str, Any] | None, theirs: dict[str, Any] | None) -> str:
    """Which knobs a pick differs from lfbo's in, e.g. "; 2 knobs from lfbo's config (num_stages, pid_type)".

    Why in the report: one knob apart is a step a seeded polish can still take; several
    at once (session 20's attention picks differ in 6-7) say the search settled in
    another region, which more polish does not cross.
    """
    if not mine or not theirs:
        return ""
    knobs = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    if not knobs:
        return "; the same config as lfbo's"
    return f"; {len(knobs)} knob{'s' if len(knobs) > 1 else ''} from lfbo's config ({', '.join(knobs)})"


def shortfall_why(rec: dict[str, Any], base: dict[str, Any], ratio: float) -> str:
    """What the records say about a case over the worst-case bar: the seeds, and where the gap showed.

    Each search times its candidates with Helion's clock (L2 flushed per call)
    and keeps its own best; the judge re-times both picks in one fresh process.
    If the search already saw its pick behind lfbo's best, the search stopped in
    a slower basin; if it saw them level, the search's timings flattered its pick.
    """
    start = _start(rec)
    return (_where_it_showed(rec, base, ratio, start) + config_gap(rec.get("config"), base.get("config"))
            + descriptor_remark(rec, base))


def tried(results: str) -> str:
    """How the report names a candidate fix that was drawn on the H200 and not adopted, with where its draws are.

    One wording for every such fix, so a reader of the report never takes a rejected knob for the next one to try.
    """
    return f"tried on the H200 and not adopted ({results})"


# The small-kernel finish and its pointer copies were drawn on the H200 on all 20 rows they act on
# (sessions 55 and 57) and not adopted: its finalists there read within 0.6-2.6% of each other on
# the judge's clock, lfbo's pick 6-11% ahead, so the report names them as tried, not as the fix.
SKF_TRIED = tried("bench/results/skf8pc4/")
# The scaled-tile seeds (st1) were drawn on the H200 on 6 rows (session 61) and not adopted: gdn
# large kept its medium's tile with lfbo's seeded beside it, and attention small read 1.050 and 1.164.
ST_TRIED = tried("bench/results/variants_session61/")


def descriptor_count(config: Mapping[str, Any] | None) -> tuple[int, int]:
    """(tensor-descriptor accesses, all accesses) of a config's ``indexing``; a single string applies to every access."""
    indexing = (config or {}).get("indexing")
    if isinstance(indexing, str):
        return (1, 1) if indexing == TENSOR_DESCRIPTOR else (0, 1)
    if not isinstance(indexing, list):
        return 0, 0
    return sum(1 for i in indexing if i == TENSOR_DESCRIPTOR), len(indexing)


def descriptor_remark(rec: dict[str, Any], base: dict[str, Any]) -> str:
    """On a tiny kernel whose pick reads some accesses through tensor descriptors where lfbo's reads none: say so, and the fix tried.

    Why in the report: on rms_norm small (H200) every stored pick with even one descriptor read
    1.079-1.195 against lfbo, the two without 1.002 and 1.015 (bench/results/pick_split.json),
    and the search's clock, at the launch floor there, cannot see the difference.
    """
    mine = rec.get("search_best_ms")
    if not mine or mine >= SMALL_KERNEL_BELOW_MS:
        return ""
    used, total = descriptor_count(rec.get("config"))
    base_used, base_total = descriptor_count(base.get("config"))
    if not used or base_used or total != base_total:
        return ""
    return (f"; its pick reads {used} of {total} accesses through tensor descriptors, lfbo's none ({SKF_TRIED}: "
            "seeded's small_kernel_finish.pointer_copies, the finalists' pointer copies timed beside them)")


def tile_remark(rec: dict[str, Any], base: dict[str, Any], seed_tile: list[int] | None, direction: int) -> str:
    """Where lfbo's tile is the pick's seed tile scaled toward this shape and the pick is not on it: say so, and the fix built.

    Why in the report: a seed carries the tile of the shape it was tuned at, and a tile is one
    knob per axis; every stored gdn large pick kept its medium seed's [64] where lfbo's is [128]
    (bench/results/pick_split.json, ``tiles``).  ``direction``: which way this shape lies from
    the seed's (:func:`..strategies.seed_variants.tile_directions`).
    """
    mine, theirs = (rec.get("config") or {}).get("block_sizes"), (base.get("config") or {}).get("block_sizes")
    if not seed_tile or not theirs or mine == theirs or direction == 0:
        return ""
    if theirs not in [v["block_sizes"] for v in scaled_tile_variants([{"block_sizes": seed_tile}], [direction], None, 1)]:
        return ""
    way, kept = ("halved" if direction < 0 else "doubled"), ("kept it" if mine == seed_tile else f"is on {mine}")
    return (f"; lfbo's tile {theirs} is its seed's {seed_tile} {way} toward this shape, and the pick {kept} ({ST_TRIED}: "
            "seeded's seed_variants.scaled_tiles, the seed again with its tile scaled)")


def seed_tile(build: BuildSeeds, run: Mapping[str, Any], label: str, strategy: str,
              rec: Mapping[str, Any]) -> tuple[list[int] | None, int]:
    """The tile of the first seed a first build hands ``rec``'s search, and which way this shape lies from it.

    The first seed is the one the seed variants start from; (None, 0) on a cold start.
    """
    seeds = build.seeds(label, strategy, rec.get("source_hash", ""))
    if not seeds or not rec.get("shape"):
        return None, 0
    first = next(iter(seeds))
    (direction,) = tile_directions(seed_shapes(run, label.rpartition("@")[0], [first]), rec["shape"])
    return seeds[first].get("block_sizes"), direction


def _unpaired_readings(rec: dict[str, Any], base: dict[str, Any]) -> str | None:
    """Why the two searches' best readings cannot be set against each other, or None when they can.

    One rule for every reader of the in-search gap, so the report's prose and its split table never
    disagree on which rows they speak about.
    """
    mine, theirs = rec.get("search_best_ms"), base.get("search_best_ms")
    if not (mine and theirs):
        return "no in-search timing recorded"
    clock, base_clock = _search_clock(rec), _search_clock(base)
    if clock != base_clock:
        return (f"its search and lfbo's timed on different clocks ({mine:.4g} vs {theirs:.4g} ms: "
                f"{clock} against {base_clock})")
    return None


def _where_it_showed(rec: dict[str, Any], base: dict[str, Any], ratio: float, start: str) -> str:
    """``shortfall_why`` without the config gap: did the search see the gap, or only the fresh process?"""
    if unpaired := _unpaired_readings(rec, base):
        return f"{start}; {unpaired}, so only the fresh process compares: {ratio:.3f}x"
    mine, theirs = rec["search_best_ms"], base["search_best_ms"]
    seen = mine / theirs
    if seen <= 1.02:
        # Session 28's rms_norm@small: 0.9% behind on Helion's clock (0.0075 ms), 12.4% in the fresh process.
        return (f"{start}; its search rated its pick {abs(seen - 1) * 100:.1f}% {'behind' if seen > 1 else 'ahead of'} lfbo's "
                f"best ({mine:.4g} vs {theirs:.4g} ms, each search's clock), the fresh process {ratio:.3f}x: the search's "
                f"timings flattered its pick{_small_kernel_remark(mine)}")
    why = (f"{start}; its search already rated its pick {(seen - 1) * 100:.1f}% behind lfbo's best ({mine:.4g} vs "
           f"{theirs:.4g} ms): it converged in a slower region than lfbo's full search reached")
    if ratio - 1 > 2 * (seen - 1):
        # Session 24's attention_causal@small: 3.8% behind in the search, 25% in the fresh process.
        why += (f"; the fresh process puts it {(ratio - 1) * 100:.1f}% behind, over twice what the search saw"
                f"{_small_kernel_remark(mine)}")
    return why


def shortfall_split(rec: dict[str, Any], base: dict[str, Any], ratio: float) -> dict[str, Any] | None:
    """A case's latency ratio as the gap its search saw times what appeared only after the search.

    ``search_gap`` = its search's best reading / lfbo's search's best reading, each on its own
    search's clock; ``after_search`` = latency ratio / ``search_gap``: how much further behind the
    fresh process put the pick than the search had.  The two point at different fixes: a gap the
    search saw needs a wider or longer search; one that appeared after it needs the search's
    readings checked (re-timed, or taken on the judge's clock).  On the H200 table of session 42,
    6 of the 8 rows over 1.05 lost more after their search than in it (attention small: 1.141 in
    the search, 1.392 after).  None where the two searches timed on different clocks or a reading
    is missing: then only the fresh process compares.

    ``right_after_search`` is a third reading of the same two picks: each timed on the judge's clock
    in its own tuning process right after its search (``tune_ms``).  Where it agrees with the
    paired ratio, the loss was there as soon as the search ended, and a finish that re-times the
    finalists in the tuning process would see it; where it reads well under the paired ratio
    (gdn large: 1.035 against 1.086), the one paired process read the two picks further apart
    than their own processes did, which is a question about how far one pairing moves.
    """
    if _unpaired_readings(rec, base):
        return None
    gap = rec["search_best_ms"] / base["search_best_ms"]
    after = ratio / gap
    return {"search_gap": round(gap, 4), "after_search": round(after, 4),
            "mostly": "after the search" if after > gap else "in the search",
            "right_after_search": right_after_search(rec, base)}


def right_after_search(rec: dict[str, Any], base: dict[str, Any]) -> float | None:
    """The two picks' ratio as each tuning process timed its own right after its search (``tune_ms``); None without both."""
    mine, theirs = rec.get("tune_ms"), base.get("tune_ms")
    return round(mine / theirs, 4) if mine and theirs else None


def _small_kernel_remark(search_best_ms: float) -> str:
    """Why the two clocks can disagree on a tiny kernel, and the fix tried for it (empty above the threshold)."""
    if search_best_ms >= SMALL_KERNEL_BELOW_MS:
        return ""
    return (f" (under {SMALL_KERNEL_BELOW_MS} ms, where Helion's clock is mostly launch overhead; {SKF_TRIED}: "
            "seeded's small_kernel_finish, finalists re-timed on the fresh process's clock)")


def settled_after(rec: dict[str, Any], within: float = 0.01) -> tuple[int, int] | None:
    """(configs tried when the search first stood within ``within`` of its final best, configs in all).

    Why: the configs after that point are what a sharper stop could have saved at
    a cost of at most ``within`` on the search's own clock, so a wide search that
    settled early points at its stop rule, one that improved to the end does not.
    """
    traj = rec.get("trajectory") or {}
    points, total = traj.get("points") or [], traj.get("entries")
    if not points or not total:
        return None
    best = points[-1][1]
    return next(int(i) for i, ms in points if ms <= best * (1 + within)), int(total)


def slow_why(rec: dict[str, Any], base: dict[str, Any]) -> str:
    """What the records say about a case under the time bar: was the search too wide, or each config too dear?

    The time ratio is the configs ratio times the ratio of seconds per config, so
    one of the two is what fell short.  A wide search (many configs) points at the
    search's limits or its polish; dear configs point at fixed costs (compile
    waits, timeouts, re-benchmarks) that a short search cannot spread out.
    """
    start = _start(rec)
    mine_n, base_n = rec["configs_tested"], base["configs_tested"]
    mine_per, base_per = rec["tuning_seconds"] / mine_n, base["tuning_seconds"] / base_n
    wide = base_n / mine_n < BAR_TIME_RATIO
    why = (f"its search was wide: {mine_n} configs against lfbo's {base_n} ({base_n / mine_n:.2f}x fewer)" if wide
           else f"each config cost {mine_per:.2f} s against lfbo's {base_per:.2f} s (fixed costs: compile waits, "
                "timeouts, re-benchmarks)")
    settled = settled_after(rec) if wide else None
    if settled:
        why += f"; within 1% of its final best after the first {settled[0]} of {settled[1]} configs in its trajectory"
    return f"{start}; {why}; {rec['tuning_seconds']:.0f} s against lfbo's {base['tuning_seconds']:.0f} s"


def bar_check(summary: dict[str, Any]) -> dict[str, bool | None]:
    """One strategy's summary against the bar (None where there is nothing to judge)."""
    t, g, w = summary.get("geomean_time_ratio"), summary.get("geomean_latency_ratio"), summary.get("worst_latency_ratio")
    return {"time_ratio": None if t is None else t >= BAR_TIME_RATIO,
            "latency_geomean": None if g is None else g <= BAR_LATENCY_GEOMEAN,
            "worst_latency": None if w is None else w <= BAR_WORST_LATENCY}


def analyse(run: dict[str, Any], limits: dict[str, Any] | None = None,
            name_of: Callable[[str, dict[str, Any]], str] | None = None,
            declared: list[str] | None = None) -> dict[str, Any]:
    """Per-case rows and per-strategy summaries of one store run (one GPU, one toolchain).

    ``limits``: today's search limits per strategy (``display_name``); ``declared``: the
    project's case labels, which give the build order a first build seeds by, so a record
    seeded otherwise is grouped apart (None: only the seeding rule is checked).
    ``name_of(strategy, record)`` replaces that naming, and so the grouping: a variant
    trial groups records by the search that made them (bench/variant_summary.py).
    """
    build = BuildSeeds(run, build_earlier(declared) if declared is not None else None, limits, complete=True)
    rows: list[dict[str, Any]] = []
    per: dict[str, list[dict[str, Any]]] = {}
    excluded: list[dict[str, str]] = []
    capped: list[str] = []
    for label, case in sorted(run["cases"].items()):
        base = case["strategies"].get(BASELINE)
        if _ok(base) and hit_seconds_cap(base):
            capped.append(label)
        for strategy, rec in sorted(case["strategies"].items(), key=lambda kv: (kv[0] != BASELINE, kv[0])):
            name = name_of(strategy, rec) if name_of else display_name(
                strategy, rec, limits, None if strategy == BASELINE else build.as_now(label, strategy, rec))
            row: dict[str, Any] = {"case": label, "strategy": name, "record": rec, "ratios": None}
            per.setdefault(name, [])
            if not _ok(rec):
                row["why"] = f"failed: {rec.get('error') or rec.get('ms_error') or 'incomplete'}"
            elif not _ok(base) or base.get("source_hash") != rec.get("source_hash") or base.get("spec") != rec.get("spec"):
                row["why"] = "no matching lfbo baseline"
            else:
                row["ratios"] = case_ratios(rec, base)
                per[name].append(row["ratios"])
                if name != BASELINE and row["ratios"]["latency_ratio"] > BAR_WORST_LATENCY:
                    row["shortfall"] = (shortfall_why(rec, base, row["ratios"]["latency_ratio"])
                                        + tile_remark(rec, base, *seed_tile(build, run, label, strategy, rec)))
                    row["shortfall_split"] = shortfall_split(rec, base, row["ratios"]["latency_ratio"])
                if name != BASELINE and row["ratios"]["time_ratio"] < BAR_TIME_RATIO:
                    row["slow"] = slow_why(rec, base)
            if row["ratios"] is None:
                excluded.append({"case": label, "strategy": name, "why": row["why"]})
            rows.append(row)
    summary = {}
    for name, ratios in sorted(per.items(), key=lambda kv: (kv[0] != BASELINE, kv[0])):
        summary[name] = ratio_summary(ratios)
        if name != BASELINE:
            summary[name]["meets_bar"] = bar_check(summary[name])
            summary[name]["cases_over_worst_bar"] = [row["case"] for row in rows
                                                     if row["strategy"] == name and row.get("shortfall")]
            summary[name]["over_worst_bar_split"] = [
                {"case": row["case"], "latency_ratio": row["ratios"]["latency_ratio"], **row["shortfall_split"]}
                for row in rows if row["strategy"] == name and row.get("shortfall_split")]
            summary[name]["cases_under_time_bar"] = [row["case"] for row in rows
                                                     if row["strategy"] == name and row.get("slow")]
            ahead = [row for row in rows if row["strategy"] == name and row["ratios"]
                     and row["ratios"]["latency_ratio"] < FAR_AHEAD]
            summary[name]["cases_far_ahead_of_lfbo"] = [row["case"] for row in ahead]
            summary[name]["geomean_latency_ratio_without_far_ahead"] = geomean(
                r["latency_ratio"] for r in ratios if r["latency_ratio"] >= FAR_AHEAD)
            summary[name]["by_seeds"] = by_seeds([row for row in rows if row["strategy"] == name])
    for name in summary:
        summary[name].update(llm_use([row["record"] for row in rows if row["strategy"] == name]))
    return {"rows": rows, "strategies": summary, "excluded": excluded, "lfbo_hit_seconds_cap": capped}


def ratio_summary(ratios: list[dict[str, Any]]) -> dict[str, Any]:
    """Case count, geomean time, configs and latency ratios, and the worst latency ratio of some judged cases."""
    return {
        "cases": len(ratios),
        "geomean_time_ratio": geomean(r["time_ratio"] for r in ratios),
        "geomean_configs_ratio": geomean(r["configs_ratio"] for r in ratios),
        "geomean_latency_ratio": geomean(r["latency_ratio"] for r in ratios),
        "worst_latency_ratio": max((r["latency_ratio"] for r in ratios), default=None),
    }


def by_seeds(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One strategy's judged rows split by how each search started: ``cold`` or ``seeded`` (from other shapes or the lock).

    Why: a cold start is the only search with nothing to go on, and every shape seeded from it
    inherits where it landed; whether a shortfall sits in the first shapes or in the seeded
    ones says which part of the search to fix (#5, session 32: 8 of 11 rows over the bar were
    a cold medium or seeded from one).
    """
    out: dict[str, dict[str, Any]] = {}
    for kind in ("cold", "seeded"):
        mine = [row for row in rows if row["ratios"]
                and seeds_label(row["record"]).startswith("cold") == (kind == "cold")]
        if mine:
            out[kind] = {**ratio_summary([row["ratios"] for row in mine]),
                         "cases_over_worst_bar": [row["case"] for row in mine if row.get("shortfall")]}
    return out


def llm_use(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Which LLM a strategy's records talked to, and how often it fell back to ``seeded``.

    Empty for strategies that never call an LLM.  A fallback case tuned with
    ``seeded`` instead, so the strategy's ratios there are seeded's.
    """
    models = sorted({((r.get("provenance") or {}).get("llm") or {}).get("model") for r in records} - {None})
    if not models:
        return {}
    return {"llm_models": models, "not_an_llm": [m for m in models if m in NOT_AN_LLM],
            "llm_fallbacks": sum(1 for r in records if (r.get("provenance") or {}).get("fallback"))}


def coverage(run: dict[str, Any], declared: list[str]) -> dict[str, Any]:
    """How much of the project's declared table a run holds: the cases with a usable ``lfbo`` baseline.

    The geomeans only speak for the cases measured; a reader needs the denominator beside
    them (the H200 table is built over many sessions, a few cases each).
    """
    have = {label for label, case in run["cases"].items() if _ok(case["strategies"].get(BASELINE))}
    return {"declared": len(declared), "with_lfbo": sum(1 for c in declared if c in have),
            "without_lfbo": [c for c in declared if c not in have]}


def summary_json(store: Store, limits: dict[str, Any] | None = None,
                 declared: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"store": str(store.path), "baseline": BASELINE,
                           "ratios": "time and configs: lfbo/strategy; latency: strategy/lfbo",
                           "bar": {"time_ratio_at_least": BAR_TIME_RATIO, "latency_geomean_at_most": BAR_LATENCY_GEOMEAN,
                                   "worst_latency_at_most": BAR_WORST_LATENCY}, "runs": []}
    for key, run in store.runs():
        a = analyse(run, limits, declared=declared)
        out["runs"].append({"key": key, "gpu": run["gpu"], "versions": run["versions"], "peaks": run.get("peaks"),
                            "strategies": a["strategies"], "excluded_from_geomeans": a["excluded"],
                            "lfbo_hit_seconds_cap": a["lfbo_hit_seconds_cap"]})
        if declared is not None:
            out["runs"][-1]["coverage"] = coverage(run, declared)
        if run.get(PROXY_OF):
            out["runs"][-1][PROXY_OF] = {"source": run[PROXY_OF], "note": PROXY_NOTE}
    return out


def seeds_label(rec: dict[str, Any]) -> str:
    """What the strategy started from: ``medium, small + 2 lock``, ``cold``, or ``-`` for the baseline."""
    if rec.get("strategy") == BASELINE:
        return "-"
    own, lock = rec.get("seeded_from_shapes") or [], rec.get("seeds_from_lock") or 0
    parts = [", ".join(own)] if own else []
    if lock:
        parts.append(f"{lock} lock")
    if "seeding" not in rec and not parts:
        return "cold (before build-order seeding)"
    return " + ".join(parts) or "cold"
