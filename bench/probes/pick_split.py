"""What separates a case's faster picks from its slower ones?  Split every stored pick by its indexing, and by each of lfbo's knobs.

Why: four of #5's rows over the 1.05 bar have no drawn fix left, three of them small shapes
(rms_norm, fp8 attention, mamba2).  There `lfbo`'s picks read every access through a pointer,
while most of `seeded`'s picks read some through tensor descriptors (TMA), picked up by the
search (the ``td2`` seed variants offer them; rms_norm small's medium seed has none).  A small shape's search cannot tell the two
apart on its own clock: on rms_norm small both searches read their picks at 0.0074 ms, the
launch floor, where the fresh process reads 0.0040 and 0.0045 (``search_best_ms`` against
``ms`` in ``bench/results/store.json``).  If descriptors cost a few-microsecond kernel a fixed
setup, then every pick with even one descriptor should read behind every pick without, draw
after draw, whatever else the configs differ in.  The stores hold every draw the bench paired
with `lfbo`'s pick in one fresh process; this reads them (no GPU) and asks, per case, whether the
picks without descriptors and the picks with some fall on two sides.

What counts:
- one pick: a (run key, case, config); a pick paired several times (judge repeats, copied trial
  stores) counts once, at the median of its distinct readings;
- its ratio: the same-process ``vs_lfbo`` pairing (``ms`` / ``lfbo_ms``), whatever strategy or
  variant made it;
- ``descriptors``: how many of its ``indexing`` entries are ``tensor_descriptor``.

The same question for every knob of `lfbo`'s pick (``lfbo_knob_ahead``): the picks that hold
`lfbo`'s value of a knob against those that do not, where the first read ahead of all the second.
On a row over the bar that names what the slower picks lack (attention small's tile: the picks on
`lfbo`'s [128, 64] against those on the medium's [256, 64] or others).

And by tile (``tiles``): the picks on `lfbo`'s tile, those on the tile their search was seeded
from (the same store's pick at the nearest seed shape), and the rest.  A search that never leaves
its seed's tile is what ``seed_variants.scaled_tiles`` was built for (gdn large: every pick kept
the medium's [64], `lfbo`'s is [128]); ``seed_tile_kept_where_picks_over_bar`` lists those rows.

A case ``separates`` when both groups hold at least ``MIN_PICKS`` picks and every pick without
descriptors reads ahead of every pick with some (or the other way round); with fewer, one pick on
a side would decide it.  ``gap``: how far apart the nearest picks of the two sides read.  That is a pattern in the stores, not a
measurement made for it: the groups differ in more than indexing.

    python bench/probes/pick_split.py --stores bench/results/store.json bench/results/variants_session*/var_*.json \\
        --out bench/results/pick_split.json
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
from bench.probes.judge_repeat import paired_records, read_stores  # noqa: E402
from tuning.bench.compare import BAR_WORST_LATENCY, descriptor_count  # noqa: E402

MIN_PICKS = 2  # per group, before a split is read as one


def seed_tile(doc: Mapping[str, Any], key: str, label: str, name: str, rec: Mapping[str, Any]) -> list[Any] | None:
    """The tile of the pick ``rec``'s search was seeded from: the same store's ``name`` record at its nearest seed shape.

    The bench seeds a shape from the same strategy's picks at the shapes a build tunes before
    it, in the order ``seeded_from_shapes`` lists them (the medium first for our shape names);
    the first seed is the one the seed variants start from.  None on a cold start or where the
    store no longer holds that record.
    """
    shapes = rec.get("seeded_from_shapes") or []
    if not shapes:
        return None
    cases = doc.get("runs", {}).get(key, {}).get("cases", {})
    seed = cases.get(f"{label.rpartition('@')[0]}@{shapes[0]}", {}).get("strategies", {}).get(name) or {}
    return (seed.get("config") or {}).get("block_sizes")


def picks(stores: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(run, case) -> the `lfbo` pick's config and each other pick once, with its distinct same-process readings."""
    stores = list(stores)
    docs = dict(stores)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path, key, label, name, rec, vs in paired_records(stores):
        slot = found.setdefault((key, label), {"lfbo_config": vs.get("lfbo_config") or {}, "picks": {}})
        pick = slot["picks"].setdefault(json.dumps(rec["config"], sort_keys=True), {
            "config": rec["config"], "strategies": set(), "readings": set(), "stores": set(), "seed_tiles": set()})
        pick["strategies"].add(name)
        pick["stores"].add(path)
        pick["readings"].add((vs["ms"], vs["lfbo_ms"]))
        if (tile := seed_tile(docs[path], key, label, name, rec)) is not None:
            pick["seed_tiles"].add(json.dumps(tile))
    return found


def tiles(lfbo_config: Mapping[str, Any], scored: list[tuple[Mapping[str, Any], float, set[str]]]) -> dict[str, Any]:
    """The picks by tile: on `lfbo`'s, on the tile their search was seeded from, and on another.

    Why: a seed from another shape carries that shape's tile, and a search that never leaves it
    (every gdn large pick kept the medium's [64]; `lfbo`'s is [128]) is what
    ``seed_variants.scaled_tiles`` was built for.  A pick on both `lfbo`'s and its seed's tile
    counts as `lfbo`'s.
    """
    lfbo_tile = lfbo_config.get("block_sizes")
    groups: dict[str, list[float]] = {"on_lfbo_tile": [], "kept_seed_tile": [], "other_tile": []}
    for config, ratio, seed_tiles in scored:
        tile = config.get("block_sizes")
        group = "on_lfbo_tile" if tile == lfbo_tile else "kept_seed_tile" if json.dumps(tile) in seed_tiles else "other_tile"
        groups[group].append(ratio)
    seeds = sorted({s for _, _, found in scored for s in found})
    return {"lfbo": lfbo_tile, "seeds": [json.loads(s) for s in seeds], **{k: _group(v) for k, v in groups.items()}}


def _group(ratios: list[float]) -> dict[str, Any]:
    if not ratios:
        return {"picks": 0}
    return {"picks": len(ratios), "min": round(min(ratios), 4), "median": round(statistics.median(ratios), 4),
            "max": round(max(ratios), 4), "over_bar": sum(r > BAR_WORST_LATENCY for r in ratios)}


def _ahead(first: list[float], second: list[float]) -> float | None:
    """How far apart the nearest picks read where every pick of ``first`` reads ahead of every pick of ``second``."""
    if min(len(first), len(second)) < MIN_PICKS or max(first) >= min(second):
        return None
    return round(min(second) / max(first), 4)


def lfbo_knob_ahead(lfbo_config: Mapping[str, Any], scored: list[tuple[Mapping[str, Any], float]]) -> dict[str, Any]:
    """Each knob of `lfbo`'s pick whose value, held by a pick, puts it ahead of every pick without it."""
    out = {}
    for knob, value in sorted(lfbo_config.items()):
        same = [r for config, r in scored if config.get(knob) == value]
        other = [r for config, r in scored if config.get(knob) != value]
        gap = _ahead(same, other)
        if gap is not None:
            out[knob] = {"value": value, "with": _group(same), "without": _group(other), "gap": gap}
    return out


def split(found: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (run, case): the picks without descriptors and those with some, and whether the two groups separate."""
    rows = []
    for (key, label), slot in sorted(found.items()):
        pointer: list[float] = []
        described: list[float] = []
        listed = []
        scored = []
        for pick in slot["picks"].values():
            ratio = statistics.median(ms / lfbo_ms for ms, lfbo_ms in pick["readings"])
            scored.append((pick["config"], ratio, pick["seed_tiles"]))
            used, total = descriptor_count(pick["config"])
            (described if used else pointer).append(ratio)
            listed.append({"ratio": round(ratio, 4), "descriptors": f"{used}/{total}",
                           "tile": pick["config"].get("block_sizes"),
                           "strategies": sorted(pick["strategies"]), "readings": len(pick["readings"]),
                           "stores": sorted(pick["stores"])})
        row: dict[str, Any] = {"case": label, "run": key, "lfbo_descriptors": "{}/{}".format(*descriptor_count(slot["lfbo_config"])),
                               "pointers_only": _group(pointer), "some_descriptors": _group(described),
                               "picks": sorted(listed, key=lambda p: p["ratio"]),
                               "lfbo_knob_ahead": lfbo_knob_ahead(slot["lfbo_config"], [s[:2] for s in scored]),
                               "tiles": tiles(slot["lfbo_config"], scored)}
        if min(len(pointer), len(described)) >= MIN_PICKS:
            pointers_gap, descriptors_gap = _ahead(pointer, described), _ahead(described, pointer)
            row["separates"] = ("pointers ahead" if pointers_gap else "descriptors ahead" if descriptors_gap else "no")
            if pointers_gap or descriptors_gap:  # how far apart the nearest picks of the two sides read
                row["gap"] = pointers_gap or descriptors_gap
        elif pointer and described:
            row["separates"] = "too few picks"
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", nargs="+", type=Path, required=True, help="bench stores (the table's and trial stores)")
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args(argv)
    rows = split(picks(read_stores(ns.stores)))
    separated = {r["case"]: f'{r["separates"]} by {r["gap"]}' for r in rows if "gap" in r}
    over = {r["case"]: sorted(r["lfbo_knob_ahead"]) for r in rows
            if r["lfbo_knob_ahead"] and any(p["ratio"] > BAR_WORST_LATENCY for p in r["picks"])}
    kept = {r["case"]: r["tiles"] for r in rows if r["tiles"]["kept_seed_tile"].get("over_bar")}
    doc = {"what": __doc__.split("\n\n")[0], "stores": len(ns.stores), "cases": len(rows),
           "picks": sum(len(r["picks"]) for r in rows), "readings": sum(p["readings"] for r in rows for p in r["picks"]),
           "separates": separated, "lfbo_knob_ahead_where_picks_over_bar": over,
           "seed_tile_kept_where_picks_over_bar": kept, "rows": rows}
    emit(doc, ns.out)
    print(f"pick_split: {len(rows)} cases, {len(separated)} separate by indexing: "
          + ", ".join(f"{c} ({s})" for c, s in sorted(separated.items())))
    print(f"pick_split: lfbo's value of a knob puts the picks ahead, where some are over {BAR_WORST_LATENCY}: "
          + "; ".join(f"{c}: {', '.join(k)}" for c, k in sorted(over.items())))
    print("pick_split: picks over the bar on the tile their search was seeded from: "
          + "; ".join(f"{c}: lfbo {k['lfbo']}, {k['kept_seed_tile']['picks']} kept the seed's "
                      f"({k['kept_seed_tile']['min']}-{k['kept_seed_tile']['max']}), "
                      f"{k['on_lfbo_tile']['picks']} on lfbo's" for c, k in sorted(kept.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
