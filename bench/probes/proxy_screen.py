"""Set a search's proxy draws (another card than the table's) beside every other draw of the same rows on that card.

Why: when the device lends an H100, a `seeded` variant is drawn against the table's H200 `lfbo`
picks (``bench/probes/proxy_store.py``).  Such a ratio is not a table row, and session 53 showed an
H100 screen reading under 1.05 where the H200 then read over on 3 of 10 rows.  So a screen can rule
a candidate out on the rows it was built for (it misses there on the screen's own card), never in.
What a reader needs beside each screened row is what the same card read for the same row under
today's search and under the other searches drawn there, and what the table reads on its own card;
this file gathers them from every trial store, so the verdict is not assembled by hand.

Each row of ``--trial``'s proxy groups (its screened searches) gets:
- ``ratio``: its same-process latency ratio on the card (its pick over the table's `lfbo` pick, both
  re-timed in one fresh process there), with its configs, seconds and the shapes it was seeded from;
- ``same_card``: every other proxy draw of the case on the same card and toolchain, per search, each
  draw once (``bench/draws.py``'s ``same_process_draws``), today's search under ``"today's search"``;
- ``table``: the table's own row (``--table``, today's search) on the table's card.

The summary names the screened rows over the bar, and among the ``--built-for`` rows the ones over it:
any there rules the candidate out; none leaves it to be drawn on the table's card.

    python bench/probes/proxy_screen.py --trial bench/results/skf8pc4/var_skf8pc4.json \\
        --stores 'bench/results/*/var_*.json' --table bench/results/store.json \\
        --built-for model_kernels.rms_norm:rms_norm@small model_kernels.fp8_attention:fp8_attention@small \\
        --out bench/results/skf8pc4/screen.json
"""

from __future__ import annotations

import argparse
import glob
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.draws import same_process_draws  # noqa: E402
from bench.variant_summary import split_label, summarise  # noqa: E402
from tuning.bench.compare import BAR_WORST_LATENCY  # noqa: E402

TODAY = "today's search"


def proxy_rows(summaries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every same-process proxy draw in ``summaries`` (``variant_summary.summarise`` output), each draw once."""
    rows: list[dict[str, Any]] = []
    for summary, label, case, row in same_process_draws(summaries, proxy=True):
        card, search = split_label(label)
        rows.append({"card": card, "search": search, "case": case, "store": summary["store"],
                     "ratio": round(row["latency_ratio"], 4), "configs": row["configs"],
                     "seconds": row["seconds"], "seeded_from_shapes": row.get("seeded_from_shapes")})
    return rows


def table_rows(table: dict[str, Any]) -> dict[str, float]:
    """case -> the table's own same-process ratio under today's search, on its own card."""
    for label, group in table["groups"].items():
        if split_label(label)[0] is None and label.rpartition(": ")[2] == TODAY:
            return {case: round(row["latency_ratio"], 4) for case, row in group["cases"].items()
                    if row.get("latency_from") == "same process"}
    return {}


def screen(trial: dict[str, Any], others: Sequence[dict[str, Any]], table: dict[str, Any],
           built_for: Sequence[str] = ()) -> dict[str, Any]:
    """The screened rows beside the same card's other draws and the table's row, and what they rule."""
    everything = proxy_rows([trial, *others])  # the trial first: a draw copied into another store stays the trial's
    screened = [row for row in everything if row["store"] == trial["store"]]
    on_table = table_rows(table)
    cases: dict[str, dict[str, Any]] = {}
    for row in screened:
        same_card: dict[str, list[float]] = {}
        for other in everything:
            if other is not row and other["case"] == row["case"] and other["card"] == row["card"]:
                same_card.setdefault(other["search"], []).append(other["ratio"])
        cases[f"{row['case']} [{row['search']}]"] = {
            **{k: row[k] for k in ("case", "search", "card", "ratio", "configs", "seconds", "seeded_from_shapes")},
            "over": row["ratio"] > BAR_WORST_LATENCY, "same_card": {k: sorted(v) for k, v in sorted(same_card.items())},
            "table": on_table.get(row["case"])}
    over = sorted(k for k, v in cases.items() if v["over"])
    built_over = sorted(k for k, v in cases.items() if v["over"] and v["case"] in built_for)
    missing = sorted(set(built_for) - {v["case"] for v in cases.values()})
    verdict = ("ruled out: over the bar on the screen's card on a row it was built for" if built_over else
               "not screened: a row it was built for has no draw" if missing or not built_for else
               "not ruled out: draw it on the table's card (a screen never rules a candidate in)")
    return {"bar": BAR_WORST_LATENCY, "trial": trial["store"], "cases": cases, "summary": {
        "screened_rows": len(cases), "over": over, "built_for": sorted(built_for),
        "built_for_over": built_over, "built_for_missing": missing, "verdict": verdict}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trial", type=Path, required=True, help="the trial store whose proxy draws are screened")
    ap.add_argument("--stores", default="bench/results/*/var_*.json", help="glob of the other trial stores")
    ap.add_argument("--table", type=Path, default=ROOT / "bench/results/store.json")
    ap.add_argument("--built-for", nargs="*", default=[], help="the rows the candidate was built for")
    ap.add_argument("--out", type=Path, help="write the JSON here (default: print it)")
    ns = ap.parse_args(argv)
    others = [summarise(Path(p)) for p in sorted(glob.glob(ns.stores)) if Path(p).resolve() != ns.trial.resolve()]
    result = screen(summarise(ns.trial), others, summarise(ns.table), ns.built_for)
    emit(result, ns.out)
    for name, row in result["cases"].items():
        today = row["same_card"].get(TODAY)
        print(f"{row['case']}: {row['ratio']:.4f}{' OVER' if row['over'] else ''} (today's search on this card: "
              f"{today or '-'}; table {row['table']})", file=sys.stderr)
    s = result["summary"]
    print(f"{s['screened_rows']} rows screened, {len(s['over'])} over {result['bar']}; {s['verdict']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
