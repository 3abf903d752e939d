"""How far does one fresh-process pairing of two configs move when it is made again?  The judge's spread.

Why: #5's worst-case bar holds each row to 1.05, and a row's latency ratio is one pairing: the
strategy's pick and `lfbo`'s timed interleaved in one fresh judge process.  Whether a row at
1.067 is over the bar, or a pairing's noise away from it, depends on how far a second pairing of
the same two configs lands from the first.  The picks' other readings do not settle it: gdn
large's pairing read 1.086, yet each pick timed on the same clock in its own tuning process read
them 1.035 apart, `lfbo`'s pick 4.8% slower there than in the pairing (0.6877 against 0.6563 ms,
`bench/results/store.json`).  The bar stays judged on the committed pairing; this measures how
much one pairing can be trusted, for every row alike.

Two sources, one answer shape:

- ``--from-stores STORE...`` (CPU): the pairings the bench already made more than once.  The
  same (strategy config, `lfbo` config) pair is paired again when a trial leaves a row's search
  unchanged; one reading is kept per measurement (trial stores copy the table's records).
- ``--cases CASES`` (GPU): each row's stored pair from ``--store`` paired ``--repeats`` more
  times, each in its own fresh judge process, the order in the request alternating (the
  strategy's config first, then `lfbo`'s first) so an order effect shows; rows are visited
  round-robin, so a row's repeats are minutes apart.  The JSON is rewritten after every
  measurement: a call cut short keeps what it finished.

    python bench/probes/judge_repeat.py --from-stores $(find bench/results -name '*.json') --out bench/results/judge_repeats.json
    python bench/probes/judge_repeat.py --cases CASES --repeats 3 --out $OUT/judge_repeat.json
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from tuning.bench import BASELINE  # noqa: E402
from tuning.bench.compare import BAR_WORST_LATENCY, right_after_search  # noqa: E402
from tuning.bench.judge import measure_request  # noqa: E402
from tuning.bench.store import own_records  # noqa: E402

Measure = Callable[[dict[str, Any], float], dict[str, Any]]


def spread(ratios: list[float], stored: float | None = None) -> dict[str, Any]:
    """How far a pair's pairings lie apart: their range, and whether they fall on both sides of the bar."""
    out: dict[str, Any] = {"pairings": len(ratios)}
    if ratios:
        lo, hi = min(ratios), max(ratios)
        out.update(min=round(lo, 4), median=round(statistics.median(ratios), 4), max=round(hi, 4),
                   max_over_min=round(hi / lo, 4), over_bar=sum(r > BAR_WORST_LATENCY for r in ratios))
        out["both_sides_of_bar"] = 0 < out["over_bar"] < len(ratios)
    if stored is not None:
        out["stored"] = round(stored, 4)
    return out


def read_stores(paths: Iterable[Path]) -> list[tuple[str, Any]]:
    """Each path once, with its JSON; a file that is not JSON is skipped (a glob over bench/results takes logs too)."""
    docs = []
    for path in sorted(set(paths)):
        try:
            docs.append((str(path), json.loads(path.read_text())))
        except (OSError, ValueError):
            continue  # not JSON we can read: not a store
    return docs


def paired_records(stores: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, str, str, str, dict[str, Any], dict[str, Any]]]:
    """(store path, run key, case label, strategy, record, its ``vs_lfbo``) for each non-`lfbo` record paired with `lfbo`'s pick in one process.

    One walk over the stores for every probe that reads pairings; a file that is not a bench store
    (a probe's output, a summary) is passed over, and so is a record a proxy run copied from another
    card (``proxy_of``): its pairing was made on that card, so read under this card's run key it
    would set another card's reading beside this card's (session 54: mamba2 small's H200 1.115 beside
    two H100 readings).
    """
    for path, doc in stores:
        runs = doc.get("runs") if isinstance(doc, Mapping) else None
        if not isinstance(runs, Mapping):
            continue
        for key, run in runs.items():
            if not isinstance(run, Mapping) or not isinstance(run.get("cases"), Mapping):
                continue  # a probe's output keyed by run (scaled_tiles_preview.json): not a store
            for label, case in own_records(run)["cases"].items():  # less another card's picks a proxy run copied
                for name, rec in case.get("strategies", {}).items():
                    vs = rec.get("vs_lfbo") or {}
                    if name != BASELINE and rec.get("config") and vs.get("ms") and vs.get("lfbo_ms"):
                        yield path, key, label, name, rec, vs


def _canon(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def from_stores(stores: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every (case, strategy config, lfbo config) the bench paired in more than one process, with its readings.

    A reading is one measurement (its two medians): the same two numbers in several stores are a
    record copied with a trial store, kept once.  Pairs from other GPUs or versions are kept apart
    by their run key.
    """
    pairs: dict[tuple[str, str, str, str], dict[tuple[float, float], dict[str, Any]]] = {}
    for path, key, label, name, rec, vs in paired_records(stores):
        pair = (key, label, _canon(rec["config"]), _canon(vs["lfbo_config"]))
        reading = {"ratio": round(vs["ms"] / vs["lfbo_ms"], 4), "ms": vs["ms"], "lfbo_ms": vs["lfbo_ms"],
                   "strategy": name, "finished_at": rec.get("finished_at"), "store": path}
        pairs.setdefault(pair, {}).setdefault((vs["ms"], vs["lfbo_ms"]), reading)
    rows = []
    for (key, label, mine, theirs), readings in sorted(pairs.items()):
        if len(readings) < 2:
            continue
        found = sorted(readings.values(), key=lambda r: r["finished_at"] or "")
        rows.append({"case": label, "run": key, "same_config": mine == theirs, "config": json.loads(mine),
                     "lfbo_config": json.loads(theirs), "readings": found,
                     "spread": spread([r["ratio"] for r in found])})
    return rows


def stored_pair(store: dict[str, Any], label: str, strategy: str) -> dict[str, Any]:
    """The row to pair again: ``strategy``'s pick and the `lfbo` config it was paired with, or why not."""
    for key, run in store.get("runs", {}).items():
        recs = run.get("cases", {}).get(label, {}).get("strategies", {})
        rec, base = recs.get(strategy), recs.get(BASELINE)
        if not rec:
            continue
        vs = rec.get("vs_lfbo") or {}
        if not (rec.get("config") and vs.get("lfbo_config") and vs.get("ms") and vs.get("lfbo_ms")):
            return {"case": label, "error": f"the {strategy} record has no same-process pairing with lfbo to repeat"}
        return {"case": label, "run": key, "strategy": strategy,
                "configs": {strategy: rec["config"], BASELINE: vs["lfbo_config"]},
                "stored": {"paired": round(vs["ms"] / vs["lfbo_ms"], 4),
                           "right_after_search": right_after_search(rec, base or {})},
                "readings": []}
    return {"case": label, "error": f"no {strategy} record of this case in --store"}


def repeat(rows: list[dict[str, Any]], measure: Measure, project: Path, device: str, repeats: int, rounds: int,
           saved: Callable[[], None] = lambda: None) -> None:
    """Pair each row ``repeats`` more times, round-robin over the rows, the request's order alternating."""
    for i in range(repeats):
        for row in rows:
            if "error" in row:
                continue
            names = list(row["configs"])
            order = names if i % 2 == 0 else names[::-1]
            kernel_id, _, shape = row["case"].rpartition("@")
            m = measure(measure_request(project, kernel_id, shape, device, {n: row["configs"][n] for n in order}, rounds),
                        900)
            reading: dict[str, Any] = {"first": order[0]}
            if "error" in m:
                reading["error"] = str(m["error"])[-1500:]
            else:
                strategy = row["strategy"]
                reading.update(ms=m["ms"], pid=m.get("pid"), judge=m.get("judge"),
                               ratio=round(m["ms"][strategy] / m["ms"][BASELINE], 4))
            row["readings"].append(reading)
            _summarise(row)
            saved()


def _summarise(row: dict[str, Any]) -> None:
    ok = [r for r in row["readings"] if "ratio" in r]
    row["spread"] = spread([row["stored"]["paired"], *(r["ratio"] for r in ok)], row["stored"]["paired"])
    firsts = {r["first"] for r in ok}
    if len(firsts) > 1:  # the order effect: the same pair's median ratio with each config timed first
        row["spread"]["median_by_first"] = {f: round(statistics.median(r["ratio"] for r in ok if r["first"] == f), 4)
                                            for f in sorted(firsts)}


def _document(rows: list[dict[str, Any]], what: str, **extra: Any) -> dict[str, Any]:
    spreads = [r["spread"]["max_over_min"] for r in rows if r.get("spread", {}).get("pairings", 0) > 1]
    return {"what": what, **extra, "rows": rows, "pairs": len(spreads),
            "worst_max_over_min": max(spreads) if spreads else None,
            "median_max_over_min": round(statistics.median(spreads), 4) if spreads else None,
            "rows_on_both_sides_of_bar": [r["case"] for r in rows if r.get("spread", {}).get("both_sides_of_bar")]}


def add_judge_options(ap: argparse.ArgumentParser, repeats: int) -> None:
    """The options every probe that re-times stored picks in the bench's judge takes."""
    ap.add_argument("--store", type=Path, default=ROOT / "bench" / "results" / "store.json")
    ap.add_argument("--strategy", default="seeded")
    ap.add_argument("--repeats", type=int, default=repeats)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds in each judge process (the bench's)")
    ap.add_argument("--project", type=Path, default=ROOT, help="the package project (default: this repo, model_kernels)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a dry run under Pallas interpret")
    ap.add_argument("--out", type=Path, required=True)


def gpu_name(device: str) -> str | None:
    """The GPU the judges will run on, for the JSON (None on a CPU dry run)."""
    if device != "cuda":
        return None
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


@contextlib.contextmanager
def alternating_judges() -> Iterator[Measure]:
    """Two warm judges taken in turn: one does its imports (15-23 s of a 25-45 s pairing on the H200) while the other measures.

    An importing judge holds no CUDA context.  Both are closed on exit.
    """
    from tuning.bench.judge import Judge

    judges = [Judge(warm=True), Judge(warm=True)]
    for judge in judges:
        judge.prestart()
    turn = itertools.cycle(judges)
    try:
        yield lambda request, timeout: next(turn).measure(request, timeout)
    finally:
        for judge in judges:
            judge.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-stores", nargs="+", type=Path, metavar="STORE",
                    help="collect the pairings bench stores already repeat (no GPU)")
    ap.add_argument("--cases", help="comma list of kernel_id@shape_name to pair again (GPU)")
    add_judge_options(ap, repeats=3)
    ns = ap.parse_args(argv)
    if bool(ns.from_stores) == bool(ns.cases):
        ap.error("give either --from-stores STORE... or --cases CASES")
    if ns.from_stores:
        docs = read_stores(ns.from_stores)
        rows = from_stores(docs)
        doc = _document(rows, "pairs the bench paired in more than one fresh process, from its stores (no new GPU run)",
                        stores_read=sum(isinstance(d, dict) and isinstance(d.get("runs"), dict) for _, d in docs))
        emit(doc, ns.out)
        print(f"{doc['pairs']} pairs paired more than once; max/min: median {doc['median_max_over_min']}, "
              f"worst {doc['worst_max_over_min']}", file=sys.stderr)
        return 0

    from tuning.versions import toolchain_versions

    store = json.loads(ns.store.read_text())
    rows = [stored_pair(store, c.strip(), ns.strategy) for c in ns.cases.split(",") if c.strip()]
    meta = {"versions": toolchain_versions(), "gpu": gpu_name(ns.device), "store": str(ns.store), "repeats": ns.repeats,
            "rounds": ns.rounds}
    what = (f"each row's stored {ns.strategy}/lfbo pair paired again in {ns.repeats} fresh judge processes, "
            "the order alternating; the spread includes the stored pairing")

    def save() -> None:
        emit(_document(rows, what, **meta), ns.out)

    save()
    try:
        with alternating_judges() as measure:
            repeat(rows, measure, ns.project.resolve(), ns.device, ns.repeats, ns.rounds, save)
    except KeyboardInterrupt:
        print("judge_repeat: interrupted; the JSON keeps every finished pairing", file=sys.stderr)
    finally:
        save()
    for row in rows:
        print(row["case"], row.get("spread", row.get("error")), file=sys.stderr)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
