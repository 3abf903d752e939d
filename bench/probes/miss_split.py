"""Which of `seeded`'s misses did its own search see, and which only the judge?  And how far lfbo's search gets in a quarter of its configs.

Why: #5's worst-case bar holds every row to 1.05, judged in a fresh process against `lfbo`'s pick.
A row can miss two ways, and they need different fixes:
- **the search saw it**: the search's own best reading is already over 1.05 of `lfbo`'s search's
  best (each search on Helion's clock).  It stopped in a slower region: a matter of reach (a wider
  or longer search, other seeds).
- **only the judge saw it**: the search rated its pick within 1.05 of `lfbo`'s best, and the fresh
  process reads it over.  Its best reading flattered it (a lucky single reading, quick effort
  re-times none) or Helion's clock ranks the two configs otherwise than the judge's: a matter of
  which config the search hands on (re-times near the best, a last choice on the judge's clock).
Session 53's H200 draws of ``search_stop.patience=2`` (longer paths: reach) left as many rows over
the bar as today's search, on the rows it reached; this counts, over every H200 draw in the stores,
how many misses each kind is.

And the baseline at the bar's budget: where `lfbo`'s own search stood after a quarter of its configs
(``lfbo_at_quarter``: its best reading by then over its final best, Helion's clock, from the
trajectory the table's store keeps).  Configs stand in for time, which the trajectory does not
keep; `lfbo`'s search is not a strategy the bar could take at a quarter of its time unless that is
under 1.05 on every row.

What counts:
- a draw: a `seeded` record paired with `lfbo`'s pick in one fresh process (``vs_lfbo``), under the
  table's run key (proxy runs on other cards are left out), counted once however many trial stores
  copied it;
- ``judged``: its same-process ratio; ``searched``: its ``search_best_ms`` over the same store's
  `lfbo` record's (two processes, one card, Helion's clock in both).

    python bench/probes/miss_split.py --table bench/results/store.json --stores 'bench/results/*/var_*.json' \\
        --out bench/results/miss_split.json
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.draws import draw_identity  # noqa: E402
from bench.json_out import emit  # noqa: E402
from bench.probes.judge_repeat import paired_records, read_stores  # noqa: E402
from tuning.bench.compare import BAR_WORST_LATENCY  # noqa: E402
from tuning.bench.store import PROXY_OF  # noqa: E402

STRATEGY = "seeded"
QUARTER = 0.25  # the 4x time bar, read as a share of lfbo's configs


def table_run_key(table: Mapping[str, Any]) -> str:
    """The table's one run key: the card and versions every counted draw must share."""
    keys = [k for k, run in table["runs"].items() if not run.get(PROXY_OF)]
    if len(keys) != 1:
        raise SystemExit(f"the table's store holds {len(keys)} runs of its own ({', '.join(keys)}); expected one")
    return keys[0]


def kind_of(judged: float, searched: float | None) -> str:
    """Where a draw stands: under the bar, or over it and seen by its search, or by the judge only."""
    if judged <= BAR_WORST_LATENCY:
        return "under"
    if searched is None:
        return "over, no search reading"
    return "over, the search saw it" if searched > BAR_WORST_LATENCY else "over, only the judge saw it"


def draws(stores: Iterable[tuple[str, Any]], run_key: str) -> list[dict[str, Any]]:
    """Every `seeded` draw under ``run_key`` once, with its judged and searched ratios."""
    seen: set[tuple[Any, ...]] = set()
    out: list[dict[str, Any]] = []
    stores = list(stores)
    lfbo_best = {(path, label): case["strategies"].get("lfbo", {}).get("search_best_ms")
                 for path, doc in stores for key, run in (doc.get("runs") or {}).items() if key == run_key
                 for label, case in run.get("cases", {}).items()}
    for path, key, label, name, rec, vs in paired_records(stores):
        if key != run_key or name != STRATEGY:
            continue
        identity = draw_identity(label, rec.get("finished_at"), rec["configs_tested"], rec["tuning_seconds"],
                                 rec.get("search_best_ms"))
        if identity in seen:
            continue
        seen.add(identity)
        judged = vs["ms"] / vs["lfbo_ms"]
        base = lfbo_best.get((path, label))
        searched = rec["search_best_ms"] / base if rec.get("search_best_ms") and base else None
        out.append({"case": label, "store": path, "judged": round(judged, 4),
                    "searched": round(searched, 4) if searched is not None else None,
                    "kind": kind_of(judged, searched)})
    return out


def lfbo_at_quarter(table: Mapping[str, Any], run_key: str) -> dict[str, dict[str, Any]]:
    """Per case: `lfbo`'s best reading after a quarter of its configs, over its final best (its trajectory)."""
    rows: dict[str, dict[str, Any]] = {}
    for label, case in sorted(table["runs"][run_key]["cases"].items()):
        lfbo, seeded = case["strategies"].get("lfbo", {}), case["strategies"].get(STRATEGY, {})
        points = (lfbo.get("trajectory") or {}).get("points") or []
        if not points:
            continue
        explored = lfbo["trajectory"].get("entries") or points[-1][0]
        final = points[-1][1]
        by_then = [best for index, best in points if index <= explored * QUARTER]
        row = {"configs": explored, "at_quarter": round(by_then[-1] / final, 4) if by_then else None}
        if seeded.get("search_best_ms"):  # as ``draws`` reads it: against lfbo's search_best_ms, else its trajectory's
            row["seeded_searched"] = round(seeded["search_best_ms"] / (lfbo.get("search_best_ms") or final), 4)
            row["seeded_configs"] = seeded.get("configs_tested")
        rows[label] = row
    return rows


def summary(found: list[dict[str, Any]], quarter: Mapping[str, Mapping[str, Any]], table_path: str) -> dict[str, Any]:
    """Counts over all draws, the table's own misses, the misses per case, and the rows each search-clock reading puts over the bar."""
    kinds = Counter(d["kind"] for d in found)
    per_case: dict[str, Counter[str]] = {}
    for d in found:
        if d["kind"] != "under":
            per_case.setdefault(d["case"], Counter())[d["kind"]] += 1

    def over(key: str) -> list[str]:
        return sorted(c for c, r in quarter.items() if (r.get(key) or 0) > BAR_WORST_LATENCY)

    table = {d["case"]: d["kind"] for d in found if d["store"] == table_path and d["kind"] != "under"}
    return {"draws": len(found), "kinds": dict(sorted(kinds.items())), "table_misses": dict(sorted(table.items())),
            "misses_by_case": {case: dict(sorted(c.items())) for case, c in sorted(per_case.items())},
            "lfbo_at_quarter_over_bar": over("at_quarter"), "table_seeded_searched_over_bar": over("seeded_searched")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, default=ROOT / "bench" / "results" / "store.json")
    ap.add_argument("--stores", nargs="*", default=[], help="trial stores (globs allowed); the table is read too")
    ap.add_argument("--out", type=Path, help="write the JSON here (default: print it)")
    ns = ap.parse_args(argv)
    trials = {Path(p) for pattern in ns.stores for p in (sorted(glob.glob(pattern)) or [pattern])} - {ns.table}
    table = json.loads(ns.table.read_text())
    stores = [(str(ns.table), table)] + read_stores(trials)  # the table first: a copied record is credited to it
    run_key = table_run_key(table)
    found = draws(stores, run_key)
    quarter = lfbo_at_quarter(table, run_key)
    result = {"what": __doc__.split("\n\n")[0], "run": run_key, "bar": BAR_WORST_LATENCY,
              "summary": summary(found, quarter, str(ns.table)), "lfbo_at_quarter": quarter, "draws": found}
    emit(result, ns.out)
    s = result["summary"]
    print(f"{s['draws']} seeded draws under {run_key}: {s['kinds']}", file=sys.stderr)
    print(f"lfbo after a quarter of its configs, over 1.05 of its final best on {len(s['lfbo_at_quarter_over_bar'])} "
          f"of {len(quarter)} rows; the table's seeded search over 1.05 of it on "
          f"{len(s['table_seeded_searched_over_bar'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
