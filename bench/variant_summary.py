"""Summarise `seeded` variant stores (bench/run_x2_gpu.sh variants) against their lfbo baselines.

Why not `kiln bench --report`: the report sets every record made under other search
limits than today's apart ("seeded (other search: <keys that differ>)"), because a changed
search must not borrow its predecessor's numbers, and it reads one store.  A variant trial
wants several stores side by side: each holds one trial search's records next to older
ones, and each search is judged on its own.  So records are grouped by the ``strategy_limits`` they were made under,
and each group gets the report's own per-case ratios and summary (``compare.analyse``).

    python bench/variant_summary.py bench/results/fix_trial_session12/var_*.json \\
        --out bench/results/fix_trial_session12/summary.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from tuning.bench.compare import PROXY_NOTE, analyse  # noqa: E402
from tuning.bench.same_search import finish_record  # noqa: E402
from tuning.bench.store import PROXY_OF, own_records  # noqa: E402


PROXY_LABEL = " (against the lfbo picks of "  # a proxy run's label: "<this card's run key> (against ... <source>): <search>"


def split_label(label: str) -> tuple[str | None, str]:
    """``(card run key, search)`` of a proxy group's label (:func:`summarise`); ``(None, label)`` for any other group."""
    if PROXY_LABEL not in label:
        return None, label
    key, _, rest = label.partition(PROXY_LABEL)
    return key, rest.partition("): ")[2]


def limit_changes(made: dict[str, Any], today: dict[str, Any], prefix: str = "") -> list[str]:
    """Every leaf of ``made`` that differs from ``today``, as ``table.key=value`` (sorted)."""
    changes: list[str] = []
    for key in sorted(set(made) | set(today)):
        mine, now = made.get(key), today.get(key)
        if isinstance(mine, dict) and isinstance(now, dict):
            changes += limit_changes(mine, now, f"{prefix}{key}.")
        elif mine != now:
            changes.append(f"{prefix}{key}=" + ("absent" if key not in made else json.dumps(mine)))
    return changes


def limits_label(limits: dict[str, Any] | None, today: dict[str, Any] | None) -> str:
    """A stable name for one search: which of its limits differ from today's ``seeded``, value by value.

    Why every leaf: two trials can differ only in a knob nested one table down
    (``small_kernel_finish.finalists``, ``fast_finish.compile_timeout_s``); a label built
    from a few chosen keys once put such a trial in the same group as today's search.
    """
    if not limits:
        return "older search (limits not recorded)"
    changes = limit_changes(limits, today or {})
    return "today's search" if not changes else "today's search but " + ", ".join(changes)


def usual_budget(doc: dict[str, Any], strategy: str) -> dict[str, Any]:
    """The budget most of ``strategy``'s records in the store were tuned under.

    Why: a spread trial is today's search under another random seed (``C:seed=1``), so its
    limits match today's and only its budget tells it apart from the records the variant
    store copied from the table; the label names a budget that differs from the usual one.
    """
    counts: dict[str, int] = {}
    for run in doc["runs"].values():
        for case in run["cases"].values():
            if (rec := case["strategies"].get(strategy)) is not None:
                text = json.dumps(rec.get("budget") or {}, sort_keys=True)
                counts[text] = counts.get(text, 0) + 1
    return json.loads(max(counts, key=lambda t: (counts[t], t))) if counts else {}


def summarise(path: Path, strategy: str = "seeded", today: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per search that made ``strategy``'s records in the store at ``path``: its limits, per-case ratios, summary.

    ``today``: the limits labels are read against (default: ``strategy``'s search as built now).
    """
    if today is None:
        from tuning.strategies import strategy_limits

        today = strategy_limits(strategy) or {}
    doc = json.loads(path.read_text())
    groups: dict[str, dict[str, Any]] = {}
    usual = usual_budget(doc, strategy)

    def name_of(name: str, rec: dict[str, Any]) -> str:
        if name != strategy:
            return name
        label = prefix + limits_label(rec.get("strategy_limits"), today)
        if budget := limit_changes(rec.get("budget") or {}, usual):
            label += " (budget " + ", ".join(budget) + ")"
        groups.setdefault(label, {"limits": rec.get("strategy_limits"), "cases": {}})
        return label

    for key, run in doc["runs"].items():
        prefix = f"{key}: " if len(doc["runs"]) > 1 else ""  # name the GPU and toolchain only where there are several
        if run.get(PROXY_OF):  # bench/probes/proxy_store.py: this card's draws against another card's lfbo picks
            prefix = f"{key}{PROXY_LABEL}{run[PROXY_OF]}): "
            run = own_records(run)
        analysis = analyse(run, name_of=name_of)
        for row in analysis["rows"]:
            if row["strategy"] in groups and row["ratios"]:
                rec, base = row["record"], run["cases"][row["case"]]["strategies"]["lfbo"]
                groups[row["strategy"]]["cases"][row["case"]] = {
                    **row["ratios"], "configs": rec["configs_tested"], "seconds": round(rec["tuning_seconds"], 1),
                    "search_best_ms": rec.get("search_best_ms"), "lfbo_search_best_ms": base.get("search_best_ms"),
                    "finished_at": rec.get("finished_at"), "budget": rec.get("budget"),
                    "seeded_from_shapes": rec.get("seeded_from_shapes"), "seeds_from_lock": rec.get("seeds_from_lock"),
                    "finish_changed": finish_record(rec).get("changed")}
        for label, summary in analysis["strategies"].items():
            if label in groups:
                groups[label]["summary"] = summary
                if run.get(PROXY_OF):
                    groups[label]["proxy_note"] = PROXY_NOTE
    # Only searches with at least one case against a matching lfbo baseline (not just failures) are judged.
    return {"store": str(path), "usual_budget": usual,
            "groups": {label: g for label, g in groups.items() if g["cases"]}}


def document(paths: list[Path]) -> dict[str, Any]:
    """What ``summary.json`` holds: each store at ``paths`` summarised, and how its ratios read."""
    return {"ratios": "time: lfbo/strategy; latency: strategy/lfbo, same fresh process where recorded",
            "stores": [summarise(p) for p in paths]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, help="write the JSON here (default: print it)")
    ns = ap.parse_args(argv)
    result = document(ns.stores)
    emit(result, ns.out)
    for store in result["stores"]:
        for label, group in store["groups"].items():
            s = group["summary"]
            print(f"{Path(store['store']).name}: {label}: {s['cases']} cases, time {s['geomean_time_ratio']:.2f}x, "
                  f"latency {s['geomean_latency_ratio']:.3f}, worst {s['worst_latency_ratio']:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
