"""How far does a row move when its search is drawn again from the same seeds?  The search's spread.

Why: #5's worst-case bar holds every one of 36 rows to 1.05, each row one draw of `seeded`'s
search.  ``judge_repeat.py`` measured the judge: pairing the same two configs again moves a row by
0.4% at the median (``bench/results/judge_repeats.json``).  This asks the step before it: run the
same search again, from the same seeds, on the same case, and how far does its pick land from the
first draw's?  If that spread is wide, one draw a row cannot show a search under the bar, and a
variant that reads better on one draw may only have drawn better.

What counts as a draw again of one search, read from the bench's stores (no GPU):
- same run key (GPU, versions), case and seed digest (the seeds handed to the search);
- same ``strategy_limits`` apart from finishes that only re-time the search's finalists
  (``small_kernel_finish``, :data:`tuning.bench.same_search.CONDITIONAL_FINISHES`): the search
  before them is the same; the budget may differ in its random seed only;
- each measurement counted once (trial stores copy the table's records).
Where such a finish changed the pick, the draw's pairing is of the finish's pick.  The row says how
far the finish moved it on its own clock (``finish_moved``); a draw whose finish moved it by more
than ``--finish-within`` is listed apart, not counted, since it reads the finish as well as the
search.

    python bench/probes/search_repeat.py --stores bench/results/store.json bench/results/variants_session*/var_*.json \\
        --out bench/results/search_repeats.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.probes.judge_repeat import paired_records, read_stores, spread  # noqa: E402
from tuning.bench import BASELINE  # noqa: E402
from tuning.bench.compare import BAR_WORST_LATENCY  # noqa: E402
from tuning.bench.same_search import before_finishes, finish_record  # noqa: E402


def finish_moved(record: Mapping[str, Any]) -> float:
    """How much faster the finish's pick read than the search's own, on the finish's clock (1.0: unchanged)."""
    shipped = finish_record(record)
    if not shipped.get("changed") or not shipped.get("chosen_ms") or not shipped.get("search_pick_ms"):
        return 1.0
    return round(shipped["search_pick_ms"] / shipped["chosen_ms"], 4)


def _search_key(record: Mapping[str, Any]) -> str:
    budget = {k: v for k, v in (record.get("budget") or {}).items() if k != "seed"}
    return json.dumps([before_finishes(record.get("strategy_limits")), budget], sort_keys=True)


def collect(stores: Iterable[tuple[str, Mapping[str, Any]]], strategy: str = "seeded",
            finish_within: float = 1.02) -> list[dict[str, Any]]:
    """Each (run, case, seeds, search) drawn more than once, with its draws' same-process ratios."""
    if strategy == BASELINE:
        return []  # lfbo is what every draw is paired against: it has no pairing of its own
    groups: dict[tuple[str, str, str, str], dict[tuple[Any, ...], dict[str, Any]]] = {}
    for path, key, label, name, rec, vs in paired_records(stores):
        if name != strategy or not rec.get("seed_digest"):
            continue
        group = groups.setdefault((key, label, rec["seed_digest"], _search_key(rec)), {})
        draw = (rec.get("finished_at"), rec.get("configs_tested"), rec.get("search_best_ms"))
        group.setdefault(draw, {
            "ratio": round(vs["ms"] / vs["lfbo_ms"], 4), "finished_at": rec.get("finished_at"),
            "budget_seed": (rec.get("budget") or {}).get("seed"), "configs": rec.get("configs_tested"),
            "search_best_ms": rec.get("search_best_ms"), "finish_moved": finish_moved(rec), "store": path})
    rows = []
    for (key, label, digest, _), draws in sorted(groups.items()):
        if len(draws) < 2:
            continue
        found = sorted(draws.values(), key=lambda d: d["finished_at"] or "")
        counted = [d for d in found if d["finish_moved"] <= finish_within]
        rows.append({"case": label, "run": key, "seed_digest": digest, "draws": found,
                     "spread": spread([d["ratio"] for d in counted]),
                     "left_out_finish_moved": [d["finished_at"] for d in found if d not in counted]})
    return rows


def document(rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The rows and what they add up to; only rows with two counted draws enter the figures."""
    counted = [r for r in rows if r["spread"]["pairings"] > 1]
    spreads = [r["spread"]["max_over_min"] for r in counted]
    return {
        "what": "cases whose search was drawn more than once from the same seeds, from the bench's stores "
                "(no new GPU run); each draw's ratio is its pick against lfbo's, paired in one fresh process",
        **extra, "rows": rows, "rows_counted": len(counted),
        "median_max_over_min": round(statistics.median(spreads), 4) if spreads else None,
        "worst_max_over_min": max(spreads) if spreads else None,
        "rows_moved_over_5pct": [r["case"] for r in counted if r["spread"]["max_over_min"] > 1.05],
        "rows_on_both_sides_of_bar": [r["case"] for r in counted if r["spread"]["both_sides_of_bar"]],
        "bar": BAR_WORST_LATENCY,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", nargs="+", type=Path, required=True, metavar="STORE")
    ap.add_argument("--strategy", default="seeded")
    ap.add_argument("--finish-within", type=float, default=1.02,
                    help="count a draw whose finish moved its pick by at most this factor (default 1.02)")
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args(argv)
    docs = read_stores(ns.stores)
    doc = document(collect(docs, ns.strategy, ns.finish_within), strategy=ns.strategy,
                   finish_within=ns.finish_within, stores=[p for p, _ in docs])
    emit(doc, ns.out)
    print(f"{doc['rows_counted']} cases drawn more than once from the same seeds; max/min: median "
          f"{doc['median_max_over_min']}, worst {doc['worst_max_over_min']}; moved over 5%: "
          f"{len(doc['rows_moved_over_5pct'])}; on both sides of {BAR_WORST_LATENCY}: "
          f"{len(doc['rows_on_both_sides_of_bar'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
