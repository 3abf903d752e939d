"""Where each `seeded` search's seconds went, read back from `kiln bench` logs (no GPU).

Why: `seeded` misses the 4x time bar (session 25: 3.63x over 29 first-build cases) and
the candidate fixes each cut a different phase: shorter compile waits (the first
population and every later generation wait for their slowest compile up to a timeout),
a warm benchmark worker (the first population waits for Helion's to start), a bounded
polish, a sharper stop.  Before spending device time on a trial, this splits every
logged search into its phases (first population, main generations, polish rounds,
Helion's final verification), finds the compile timeouts each phase waited on and the
first population's seconds outside Helion's progress bars, and estimates what shorter
waits, or a warm worker saving a fixed ``WARM_WORKER_SAVES_S`` a search, would have
given every case in the report.  It estimates from the search's own log; it does not
measure: with shorter waits a compile that would have finished between the two limits
is lost, and the search may then walk another path.

    python bench/seeded_phases.py bench/logs/table_session2[1-5]/*.log \\
        --store bench/results/store.json --out bench/results/seeded_phases.json

Logs are read in the order given; a later search of a case replaces an earlier one.
With ``--store``, only searches whose length matches the stored `seeded` record (so the
very run the report judges) are kept, and the time ratios come from the store.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tuning.bench.compare import geomean  # noqa: E402  (the report's geomean, so the ratios match it)

_TUNE = re.compile(r"^kiln bench: tune (\S+) with seeded$")
_STAMP = re.compile(r"^\[(\d+(?:\.\d+)?)s\] (.*)$")
_FIRST_END = re.compile(r"^Qualified population of \d+")
_ADAPTIVE = re.compile(r"^Adaptive compile timeout: (\d+)s \(90% percentile=([0-9.]+)s")
_TIMEOUT = re.compile(r"^Timeout after (\d+)s compiling")
_MAIN_END = re.compile(r"^(Generation \d+ complete|Autotuning stop at generation)")
_MIN = re.compile(r"\bmin=([0-9.]+)")
_COUNTS = re.compile(r"\b(error|timeout|ok)=(\d+)")
_START = re.compile(r"^Starting \w+ with .*max_generations=(\d+)")
_STOP = re.compile(r"^Autotuning stop at generation (\d+)")
_PATH_ENDED = re.compile(r"^Copy \d+ finish because of no improvement")
_KILN_DONE = re.compile(r"^kiln bench: done (\S+) seeded: (\d+) configs, ([0-9.]+) s")
_POLISH = re.compile(r"^Polish round (\d+): (\d+)(?: of \d+ \(surrogate-picked\))? neighbors, best ([0-9.]+)ms")
_FIRST_BAR = re.compile(r"^Initial population (?:precompiling|exploring neighbors)\b.*?(\d+)/\d+\s+([0-9.]+) configs/s")
_DONE = re.compile(r"^Autotuning complete in ([0-9.]+)s after searching (\d+) configs")

# The trial these estimates are for (bench/seeded_variant.py --set fast_finish.compile_timeout_s=10
# --set fast_finish.adaptive_timeout_floor_s=5; session 20 measured it on two cases).
SHORTER_WAITS = {"compile_timeout_s": 10, "adaptive_timeout_floor_s": 5}
# The warm worker's estimate (tuning/strategies/warm_worker.py): this much less per search, under the
# 14-24 s the logged first populations spent outside Helion's bars.
WARM_WORKER_SAVES_S = 15.0
MATCH_WITHIN_S = 3.0  # a log's "Autotuning complete in" against the record's tuning seconds


def _stage(line: str, best_ms: float) -> dict[str, Any] | None:
    """A population's or generation's count line (``error=3 timeout=1 ok=20 | min=0.37 ...``), or None."""
    counts = {k: int(v) for k, v in _COUNTS.findall(line.split("|")[0])}
    if "ok" not in counts:
        return None
    total = sum(counts.values())
    return {"total": total, "failed": total - counts["ok"], "best_ms": best_ms}


def parse(path: Path) -> list[dict[str, Any]]:
    """Every seeded search in one log that ran to `Autotuning complete`, with its phase marks.

    Besides the phases, each search keeps what `bench/probes/search_paths.py` reads: its
    ``stages`` (the first population's count line, then each generation's), ``max_generations``,
    where Helion stopped (``stopped_at``), how many search paths ended without improving, and the
    bench's own ``kiln_seconds`` from its "done" line, which is what the store records.
    """
    searches: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in path.read_text(errors="replace").splitlines():
        if m := _TUNE.match(line):
            cur = {"case": m.group(1), "log": str(path), "first_population_end_s": None, "adaptive": None,
                   "main_end_s": None, "main_best_ms": None, "rounds": [], "timeouts": [], "first_bars_s": 0.0,
                   "stages": [], "max_generations": None, "stopped_at": None, "paths_ended": 0}
            continue
        if (m := _KILN_DONE.match(line)) and searches and searches[-1]["case"] == m.group(1) \
                and searches[-1]["configs"] == int(m.group(2)) and "kiln_seconds" not in searches[-1]:
            searches[-1]["kiln_seconds"] = float(m.group(3))
            continue
        if cur is None:
            continue
        if line.startswith("kiln bench: tune "):  # another strategy's search: this one never finished
            cur = None
            continue
        stamp = _STAMP.match(line)
        if stamp is None:  # unstamped: a progress bar's last line, or a population's statistics
            if (m := _FIRST_BAR.match(line)) and float(m.group(2)) > 0:
                cur["first_bars_s"] += int(m.group(1)) / float(m.group(2))  # items after the first, at the bar's rate
            elif (m := _MIN.search(line)) and not cur["rounds"]:
                cur["main_best_ms"] = float(m.group(1))
                if stage := _stage(line, cur["main_best_ms"]):
                    cur["stages"].append(stage)
            continue
        at, msg = float(stamp.group(1)), stamp.group(2)
        if m := _START.match(msg):
            cur["max_generations"] = int(m.group(1))
        elif _PATH_ENDED.match(msg):
            cur["paths_ended"] += 1
        elif _FIRST_END.match(msg):
            cur["first_population_end_s"] = at
        elif m := _ADAPTIVE.match(msg):
            cur["adaptive"] = {"timeout_s": int(m.group(1)), "p90_s": float(m.group(2))}
        elif m := _TIMEOUT.match(msg):
            cur["timeouts"].append({"at_s": at, "waited_s": int(m.group(1))})
        elif _MAIN_END.match(msg):
            cur["main_end_s"] = at
            if m := _STOP.match(msg):
                cur["stopped_at"] = int(m.group(1))
        elif m := _POLISH.match(msg):
            cur["rounds"].append({"round": int(m.group(1)), "end_s": at,
                                  "neighbors": int(m.group(2)), "best_ms": float(m.group(3))})
        elif m := _DONE.match(msg):
            cur["total_s"] = float(m.group(1))
            cur["configs"] = int(m.group(2))
            searches.append(cur)
            cur = None
    return searches


def phases(search: dict[str, Any]) -> dict[str, float]:
    """Seconds in the first population, the main generations, the polish and the finish (they add up to the total)."""
    first = search["first_population_end_s"] or 0.0
    main_end = search["main_end_s"] if search["main_end_s"] is not None else first
    polish_end = search["rounds"][-1]["end_s"] if search["rounds"] else main_end
    return {"first_population_s": first, "main_s": main_end - first, "polish_s": polish_end - main_end,
            "finish_s": round(search["total_s"] - polish_end, 1)}


def outside_bars(search: dict[str, Any]) -> float | None:
    """Seconds of the first population outside Helion's two progress bars (None if the log has no bars).

    Rich rates a bar from the items after its first, so this is the bars' first items
    (the first compile and the first benchmark, which waits for Helion's benchmark worker
    to start) plus whatever ran between them.
    """
    if not search["first_bars_s"] or search["first_population_end_s"] is None:
        return None
    outside = search["first_population_end_s"] - search["first_bars_s"]
    return round(outside, 1) if outside >= 0 else None  # a bar over Rich's 30 s rate window reads too slow


def _segments(search: dict[str, Any]) -> list[float]:
    """Phase boundaries in search seconds: each generation and polish round waits for its own slowest compile."""
    marks = {search["first_population_end_s"] or 0.0, *(r["end_s"] for r in search["rounds"])}
    if search["main_end_s"] is not None:
        marks.add(search["main_end_s"])
    return sorted(marks)


def shorter_waits_saving(search: dict[str, Any], waits: dict[str, int] = SHORTER_WAITS) -> dict[str, Any]:
    """Seconds the search would not have waited on compile timeouts under ``waits``, segment by segment.

    Compiles run in parallel, so a segment (the first population, then each later
    stretch between logged marks) waits as long as its longest timeout.  In the first
    population that wait drops to ``compile_timeout_s``; after it, to the adaptive
    timeout Helion would have set: its logged 90th percentile, bounded by the new floor
    and cap.  Generations are not all logged with a time, so a stretch between two
    marks that held timeouts in more than one generation is counted once (the estimate
    errs low).
    """
    cap, floor = waits["compile_timeout_s"], waits["adaptive_timeout_floor_s"]
    p90 = (search["adaptive"] or {}).get("p90_s", 0.0)
    later = int(min(max(p90, floor), cap))
    bounds = _segments(search)
    worst: dict[int, int] = {}
    for t in search["timeouts"]:
        seg = next((i for i, b in enumerate(bounds) if t["at_s"] <= b), len(bounds))
        worst[seg] = max(worst.get(seg, 0), t["waited_s"])
    saved = sum(max(0, w - (cap if seg == 0 else later)) for seg, w in worst.items())
    return {"waits": len(worst), "waited_s": sum(worst.values()), "saved_s": saved, "later_timeout_s": later}


def against_store(rows: dict[str, dict[str, Any]], store: dict[str, Any]) -> dict[str, Any]:
    """Keep the searches the store's `seeded` records came from; time ratios now and with shorter waits."""
    kept, unmatched, now, shorter, warm = {}, [], [], [], []
    for run in store["runs"].values():
        for case, entry in sorted(run["cases"].items()):
            mine, base = entry["strategies"].get("seeded"), entry["strategies"].get("lfbo")
            if not mine or not base or mine.get("error") or base.get("error"):
                continue
            row = rows.get(case)
            if row is None or abs(row["total_s"] - mine["tuning_seconds"]) > MATCH_WITHIN_S:
                unmatched.append(case)
                continue
            seconds = mine["tuning_seconds"]
            ratio, est = base["tuning_seconds"] / seconds, base["tuning_seconds"] / (seconds - row["shorter_waits"]["saved_s"])
            warmer = base["tuning_seconds"] / (seconds - WARM_WORKER_SAVES_S)
            kept[case] = {**row, "tuning_seconds": seconds, "lfbo_seconds": base["tuning_seconds"],
                          "time_ratio": round(ratio, 3), "time_ratio_shorter_waits": round(est, 3),
                          "time_ratio_warm_worker": round(warmer, 3)}
            now.append(ratio)
            shorter.append(est)
            warm.append(warmer)
    return {"cases": kept, "no_matching_log": unmatched, "geomean_time_ratio": geomean(now),
            "geomean_time_ratio_shorter_waits": geomean(shorter), "geomean_time_ratio_warm_worker": geomean(warm)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--store", type=Path, help="keep only the searches behind this store's seeded records")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows: dict[str, dict[str, Any]] = {}
    for path in args.logs:
        for s in parse(path):
            rows[s["case"]] = {"case": s["case"], "log": s["log"], "total_s": s["total_s"], "configs": s["configs"],
                               "phases": phases(s), "outside_bars_s": outside_bars(s), "shorter_waits": shorter_waits_saving(s),
                               "polish_rounds": len(s["rounds"])}
    if not rows:
        print("seeded_phases: no finished seeded search in these logs", file=sys.stderr)
        return 1
    doc: dict[str, Any] = {"source": "kiln bench logs (search clock; the shorter-waits and warm-worker columns are estimates, "
                                     "not measurements)", "shorter_waits": SHORTER_WAITS,
                           "warm_worker_saves_s": WARM_WORKER_SAVES_S}
    if args.store:
        doc.update(against_store(rows, json.loads(args.store.read_text())))
        shown = doc["cases"]
    else:
        doc["cases"] = shown = rows
    for case, r in shown.items():
        p, w = r["phases"], r["shorter_waits"]
        ratio = f" | {r['time_ratio']:.2f}x -> {r['time_ratio_shorter_waits']:.2f}x" if "time_ratio" in r else ""
        print(f"{case.split(':')[-1]:<26} {r['total_s']:6.1f} s: first {p['first_population_s']:4.0f} main {p['main_s']:4.0f} "
              f"polish {p['polish_s']:4.0f} ({r['polish_rounds']}r) finish {p['finish_s']:4.1f} "
              f"(first population outside bars {r['outside_bars_s']} s) | "
              f"timeouts waited {w['waited_s']:3d} s, shorter waits save {w['saved_s']:3d} s{ratio}")
    if args.store:
        print(f"geomean time ratio {doc['geomean_time_ratio']:.3f}; estimates: shorter waits "
              f"{doc['geomean_time_ratio_shorter_waits']:.3f}, warm worker ({WARM_WORKER_SAVES_S:.0f} s a search) "
              f"{doc['geomean_time_ratio_warm_worker']:.3f}; over {len(shown)} cases; "
              f"no matching log: {', '.join(doc['no_matching_log']) or 'none'}")
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
