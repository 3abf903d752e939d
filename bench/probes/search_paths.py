"""Do `seeded`'s misses come from search paths that end before they improve?  Read from the logs, no GPU.

Why: on the rows that miss `lfbo` by the same margin on every draw (causal attention medium, fp8
attention small; bench/TABLE.md, session 50), Helion's tree search ended both its paths "because of
no improvement" after two generations, never beating the first population's best, and the polish
did the rest.  ``seeded.SEARCH_STOP`` (``patience``) would let the paths go on.  Before a GPU draw
of it, this asks every search the logs hold whether that pattern goes with the misses at all:
each `seeded` search of a bench log is read by ``bench/seeded_phases.py``'s parser (the first
population's and each generation's error, timeout and ok counts and best reading, and where Helion
stopped), joined to its record in the stores by case, configs tested and tuning seconds (the log's
"done" line), and the records' same-process latency ratio to `lfbo` is set beside it.

A search "stalled" when its tree search stopped early (before ``max_generations``) and no generation
read better than the first population's best; the polish after it may still have moved.

With ``--table`` it also asks which of the table's rows a longer patience would change at all, and
what that may cost the time bar (``patience_reach``; session 51's H100 draws of ``pat2`` moved fp8
attention small under the bar, at more tuning seconds).  A path that ended "because of no
improvement" is what ``patience`` keeps alive, so a row whose logged search ended no path is one
``pat2`` leaves alone, and its table draw stands for a ``pat2`` draw.  The cost is projected, not
measured: each ended path runs ``k`` more generations at its own search's logged seconds per
generation (half a generation's seconds per path, as both paths share one), for k = 1, 2, 3.

    python bench/probes/search_paths.py --logs 'bench/results/**/*.log' 'bench/logs/table_session*/*' \
        --stores bench/results/store.json 'bench/results/*/var_*.json' --table bench/results/store.json \
        --out bench/results/search_paths.json
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.seeded_phases import parse, phases  # noqa: E402
from tuning.bench.compare import BAR_WORST_LATENCY, geomean  # noqa: E402
from tuning.bench.store import PROXY_OF  # noqa: E402

BAR = BAR_WORST_LATENCY
PROJECTED_EXTRA_GENERATIONS = (1, 2, 3)  # per ended path, for patience_reach's cost projection
IMPROVED = 0.999  # a generation's best must read this far under the population's to count as a gain, not noise


def describe(block: dict[str, Any]) -> dict[str, Any]:
    """The search's pattern: did the tree search stop early, and did any generation beat the population?"""
    pop, gens = block["stages"][0], block["stages"][1:]
    best_gen = min((g["best_ms"] for g in gens), default=math.inf)
    improved = best_gen < pop["best_ms"] * IMPROVED
    early = block["stopped_at"] is not None and block["max_generations"] is not None \
        and len(gens) < block["max_generations"]
    tried = sum(g["total"] for g in gens)
    main_s = phases(block)["main_s"]
    return {"generations_run": len(gens), "max_generations": block["max_generations"], "stopped_early": early,
            "paths_ended": block["paths_ended"], "main_s": main_s,
            "seconds_per_generation": round(main_s / len(gens), 2) if gens else None,
            "improved_on_population": improved, "stalled": early and not improved,
            "generation_failed_share": round(sum(g["failed"] for g in gens) / tried, 3) if tried else None,
            "population_failed_share": round(pop["failed"] / pop["total"], 3) if pop["total"] else None}


JoinKey = tuple[str, int, float]


def join_key(case: str, configs: Any, seconds: Any) -> JoinKey:
    """How a log's search block and a store's record are matched: case, configs tested, seconds to 0.1 s."""
    return case, int(configs), round(float(seconds), 1)


def records(stores: Iterable[Path]) -> dict[JoinKey, dict[str, Any]]:
    """Every `seeded` record with a same-process pairing, by (case, configs, seconds to 0.1 s); proxy copies left out."""
    out: dict[JoinKey, dict[str, Any]] = {}
    for path in stores:
        doc = json.loads(path.read_text())
        for key, run in doc.get("runs", {}).items():
            for case, entry in run.get("cases", {}).items():
                rec = entry.get("strategies", {}).get("seeded")
                vs = (rec or {}).get("vs_lfbo") or {}
                if not rec or rec.get(PROXY_OF) or not (vs.get("ms") and vs.get("lfbo_ms")):
                    continue
                k = join_key(case, rec.get("configs_tested", -1), rec.get("tuning_seconds", -1))
                stop = (rec.get("strategy_limits") or {}).get("search_stop") or {}
                out.setdefault(k, {"run": key, "store": str(path), "ratio": round(vs["ms"] / vs["lfbo_ms"], 4),
                                   "seeded_from_shapes": rec.get("seeded_from_shapes"),
                                   "patience": int(stop.get("patience", 0)), "proxy_of": run.get(PROXY_OF)})
    return out


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows]
    if not ratios:
        return {"searches": 0}
    return {"searches": len(ratios), "geomean_ratio": round(_geomean(ratios), 4),
            "over_bar": sum(x > BAR for x in ratios), "share_over_bar": round(sum(x > BAR for x in ratios) / len(ratios), 3),
            "cases_over_bar": sorted({r["case"] for r in rows if r["ratio"] > BAR})}


def _geomean(xs: list[float]) -> float:
    """The report's geomean (so the ratios match it), for lists this module has checked are not empty."""
    value = geomean(xs)
    assert value is not None, "geomean of an empty list"
    return value


def within_case(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The same comparisons inside each case, since cases differ far more than draws do.

    A pooled split mostly sorts kernels (causal attention medium stalls on every draw and misses
    on every draw); only a case drawn both ways says whether stalling goes with a worse draw.
    The failure split puts each draw of a case drawn 4 times or more against the case's own mean,
    on either side of the case's median share of generation configs that failed or timed out.
    """
    cases: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        cases.setdefault(r["case"], []).append(r)
    both = []
    for case, rs in sorted(cases.items()):
        stalled = [r["ratio"] for r in rs if r["stalled"]]
        rest = [r["ratio"] for r in rs if not r["stalled"]]
        if stalled and rest:
            both.append({"case": case, "stalled": round(_geomean(stalled), 4), "not_stalled": round(_geomean(rest), 4),
                         "draws": [len(stalled), len(rest)]})
    high: list[float] = []
    low: list[float] = []
    for rs in cases.values():
        shares = sorted(r["generation_failed_share"] for r in rs if r["generation_failed_share"] is not None)
        if len(shares) < 4:
            continue
        median, mean = shares[len(shares) // 2], _geomean([r["ratio"] for r in rs])
        for r in rs:
            if r["generation_failed_share"] is not None:
                (high if r["generation_failed_share"] > median else low).append(r["ratio"] / mean)
    return {"cases_drawn_both_ways": len(both), "cases_where_stalled_read_worse": sum(b["stalled"] > b["not_stalled"] for b in both),
            "cases": both,
            "failure_split": {"draws_over_case_median": len(high), "draws_at_or_under": len(low),
                              "over_median_vs_case_mean": round(_geomean(high), 4) if high else None,
                              "at_or_under_vs_case_mean": round(_geomean(low), 4) if low else None}}


def collect(log_paths: Iterable[Path], store_paths: Iterable[Path]) -> dict[str, Any]:
    """Each search of the logs that a store pairs with `lfbo`, once, and the stalled against the rest, per GPU."""
    recs = records(store_paths)
    seen: set[JoinKey] = set()
    rows: list[dict[str, Any]] = []
    unmatched = 0
    for path in log_paths:
        for block in parse(path):  # bench/seeded_phases.py: the one parser of a logged seeded search
            if not block["stages"] or "kiln_seconds" not in block:
                continue
            k = join_key(block["case"], block["configs"], block["kiln_seconds"])
            rec = recs.get(k)
            if rec is None:
                unmatched += 1
                continue
            if k in seen:  # an appended log repeats an earlier call's blocks
                continue
            seen.add(k)
            rows.append({"case": block["case"], "log": str(path), "configs": block["configs"],
                         "seconds": block["kiln_seconds"], **rec, **describe(block)})
    by_gpu: dict[str, Any] = {}
    for gpu in sorted({r["run"].split("|")[0] for r in rows}):
        mine = [r for r in rows if r["run"].split("|")[0] == gpu]
        by_gpu[gpu] = {"within_case": within_case(mine), "stalled": _group([r for r in mine if r["stalled"]]),
                       "not_stalled": _group([r for r in mine if not r["stalled"]]),
                       "stalled_cold": _group([r for r in mine if r["stalled"] and not r["seeded_from_shapes"]]),
                       "not_stalled_cold": _group([r for r in mine if not r["stalled"] and not r["seeded_from_shapes"]])}
    return {"what": "seeded searches read from the bench logs, joined to their stored same-process latency ratio to "
                    "lfbo; 'stalled': Helion's tree search stopped before max_generations and no generation beat the "
                    "first population's best (the polish after it may still have moved)",
            "searches": len(rows), "log_blocks_without_a_paired_record": unmatched, "by_gpu": by_gpu,
            "rows": sorted(rows, key=lambda r: (r["case"], r["ratio"]))}


def _table_records(table: dict[str, Any]) -> dict[str, dict[JoinKey, tuple[float, float]]]:
    """Per run of the table store: each paired `seeded` record's key, with its and `lfbo`'s tuning seconds."""
    out: dict[str, dict[JoinKey, tuple[float, float]]] = {}
    for key, run in table.get("runs", {}).items():
        if run.get(PROXY_OF):
            continue
        for case, entry in run.get("cases", {}).items():
            mine, base = entry.get("strategies", {}).get("seeded"), entry.get("strategies", {}).get("lfbo")
            if not mine or not base or mine.get(PROXY_OF) or mine.get("error") or base.get("error"):
                continue
            k = join_key(case, mine.get("configs_tested", -1), mine.get("tuning_seconds", -1))
            out.setdefault(key, {})[k] = (float(mine["tuning_seconds"]), float(base["tuning_seconds"]))
    return out


def draw_order(reached: list[dict[str, Any]]) -> list[str]:
    """The reached cases in the order to draw them: kernels with a row over the bar first, worst first.

    Within a kernel the middle shape comes first, as in a first build, so the other shapes drawn
    after it in the same trial store are seeded from the drawn search's own pick; a call cut short
    then has spent its time on the rows the bar depends on.
    """
    kernels: dict[str, list[dict[str, Any]]] = {}
    for e in reached:
        kernels.setdefault(e["case"].rpartition("@")[0], []).append(e)

    def worst(entries: list[dict[str, Any]]) -> float:
        over = [e["ratio"] for e in entries if e["ratio"] is not None and e["ratio"] > BAR]
        return max(over, default=0.0)
    shape_rank = {"medium": 0, "small": 1, "large": 2}
    ordered = sorted(kernels, key=lambda k: (-worst(kernels[k]), k))
    return [e["case"] for k in ordered
            for e in sorted(kernels[k], key=lambda e: (shape_rank.get(e["case"].rpartition("@")[2], 3), e["case"]))]


def patience_drawn(rows: list[dict[str, Any]], reached: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every logged draw of a longer patience at a reached row, set beside the table's search of that row.

    Why: the projection below guesses how many generations a path that no longer ends runs on; a
    draw says it.  Generations are counted, not timed, so a proxy draw on another card (an H100
    against the table's H200) still says how far its search went, while its seconds and its
    latency ratio are that card's (``proxy``: its ratio is against the table card's `lfbo` pick
    re-timed there, a screen and never a table row).
    """
    out = []
    for r in sorted(rows, key=lambda r: (r["case"], r["run"], r["seconds"])):
        table = reached.get(r["case"])
        if table is None or not r.get("patience") or table is r:
            continue
        out.append({"case": r["case"], "card": r["run"].split("|")[0], "proxy": bool(r.get("proxy_of")),
                    "patience": r["patience"], "ratio": r["ratio"], "table_ratio": table["ratio"],
                    "generations_run": r["generations_run"], "table_generations_run": table["generations_run"],
                    "extra_generations": r["generations_run"] - table["generations_run"],
                    "paths_ended": r["paths_ended"], "log": r["log"]})
    return out


def patience_reach(rows: list[dict[str, Any]], table: dict[str, Any]) -> dict[str, Any]:
    """Which table rows a longer ``search_stop.patience`` changes, and the time ratio it may leave.

    Why: ``pat2`` is judged on every row it reaches, like any search, and it costs seconds on each
    of them; before a GPU draw of it on the table, this says how many rows that is and whether the
    4x time bar would survive it.  A table row without a joined log block is counted as not reached
    and named under ``without_log``.

    Two more projections come from what draws showed (``drawn``; session 52: all 11 rows drawn on
    the H100 ran to ``max_generations`` or to one short of it): ``to_max_generations`` lets every
    reached row run its remaining generations at its own logged seconds per generation, and
    ``drawn_as_measured_rest_to_max`` uses the drawn rows' own extra generations (their mean, where
    drawn more than once) and the others' remaining ones.
    """
    by_key = {join_key(r["case"], r["configs"], r["seconds"]): r for r in rows}
    out: dict[str, Any] = {}
    for run, recs in sorted(_table_records(table).items()):
        reached, untouched, missing, now = [], [], [], []
        reached_rows = {key[0]: by_key[key] for key in recs if key in by_key and by_key[key]["paths_ended"]}
        drawn = patience_drawn(rows, reached_rows)
        extra_drawn: dict[str, list[int]] = {}
        for d in drawn:
            extra_drawn.setdefault(d["case"], []).append(d["extra_generations"])
        projected: dict[str, list[float]] = {f"{k}_more_generations_per_ended_path": []
                                             for k in PROJECTED_EXTRA_GENERATIONS}
        projected.update(to_max_generations=[], drawn_as_measured_rest_to_max=[])
        for key, (seconds, lfbo_seconds) in sorted(recs.items()):
            row = by_key.get(key)
            now.append(lfbo_seconds / seconds)
            per_generation = (row["seconds_per_generation"] or 0.0) if row else 0.0
            ended = row["paths_ended"] if row else 0
            for k in PROJECTED_EXTRA_GENERATIONS:  # each ended path: k generations at half a generation's seconds
                projected[f"{k}_more_generations_per_ended_path"].append(
                    lfbo_seconds / (seconds + k * ended * per_generation / 2))
            left = (row["max_generations"] or row["generations_run"]) - row["generations_run"] if ended else 0
            measured = statistics.fmean(extra_drawn[key[0]]) if key[0] in extra_drawn else left
            projected["to_max_generations"].append(lfbo_seconds / (seconds + left * per_generation))
            projected["drawn_as_measured_rest_to_max"].append(lfbo_seconds / (seconds + measured * per_generation))
            if row is None:
                missing.append(key[0])
            entry = {"case": key[0], "ratio": row["ratio"] if row else None, "paths_ended": ended}
            (reached if ended else untouched).append(entry)
        out[run] = {"cases": len(recs), "without_log": missing,
                    "reached": len(reached), "reached_cases": [e["case"] for e in reached],
                    "draw_order": draw_order(reached),
                    "reached_over_bar": [e for e in reached if e["ratio"] is not None and e["ratio"] > BAR],
                    "not_reached": untouched,
                    "drawn": drawn,
                    "time_ratio_now": round(_geomean(now), 3),
                    "projected_time_ratio": {k: round(_geomean(v), 3) for k, v in projected.items()}}
    return out


def _paths(patterns: Iterable[str]) -> list[Path]:
    """The files the patterns match, in the order the patterns were given (each pattern's matches sorted).

    The order matters: a trial store holds copies of the table's records, and :func:`records` names
    the first store that holds a record.  Sorted all together, `bench/results/pat2_reach/` came before
    `bench/results/store.json`, so the table's own rows were credited to a trial store's copy.
    """
    found: dict[Path, None] = {}
    for pat in patterns:
        found.update((Path(p), None) for p in sorted(glob.glob(pat, recursive=True)))
    return [p for p in found if p.is_file()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", nargs="+", required=True, help="bench log files or globs")
    ap.add_argument("--stores", nargs="+", required=True, help="bench stores or globs")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--table", type=Path, help="the table's store: which of its rows a longer patience reaches")
    ns = ap.parse_args(argv)
    doc = collect(_paths(ns.logs), _paths(ns.stores))
    if ns.table:
        doc["patience_reach"] = patience_reach(doc["rows"], json.loads(ns.table.read_text()))
    emit(doc, ns.out)
    print(json.dumps({"searches": doc["searches"], "by_gpu": doc["by_gpu"], "patience_reach": doc.get("patience_reach")},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
