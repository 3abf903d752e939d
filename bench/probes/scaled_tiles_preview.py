"""Which tiles would ``seed_variants.scaled_tiles`` seed, row by row, from the table's own picks?  No GPU.

Why: a draw on the H200 costs device time, which some sessions do not have.  The variant is a pure
function of a row's seeds and the shapes they were tuned at, both in the table's store, so which
rows it can reach `lfbo`'s tile on, and how many population slots it spends where it cannot, is
known before any draw.  That picks the rows to draw first.

It runs the variant exactly as ``seeded`` does (:class:`tuning.bench.seeding.BuildSeeds` for the
seeds a first build hands the search, :func:`tuning.bench.seeding.seed_shapes` for their shapes,
:func:`tuning.strategies.seed_variants.tile_directions` and ``scaled_tile_variants`` with
``scaled_tiles=1``), with one difference: Helion's per-shape block-size bounds need each kernel
bound at each shape, so they are left out here (where a scaled size falls outside them the
search is not offered it, so a row's count there is at most this one).

    python bench/probes/scaled_tiles_preview.py --store bench/results/store.json --out bench/results/scaled_tiles_preview.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from tuning.bench.seeding import BuildSeeds, seed_shapes  # noqa: E402
from tuning.strategies.seed_variants import scaled_tile_variants, tile_directions  # noqa: E402

def preview(run: dict[str, Any], count: int = 1) -> list[dict[str, Any]]:
    """Per seeded row of ``run``: its seeds' tiles, which way they go, the variants, and whether one is `lfbo`'s tile."""
    seeding = BuildSeeds(run, None, None)
    rows = []
    for label, case in sorted(run.get("cases", {}).items()):
        rec = case.get("strategies", {}).get("seeded") or {}
        lfbo = (case.get("strategies", {}).get("lfbo") or {}).get("config", {})
        if not rec.get("seeded_from_shapes") or not rec.get("shape"):
            continue
        seeds = {name: config for name, config in seeding.seeds(label, "seeded", rec.get("source_hash", "")).items()
                 if name in rec["seeded_from_shapes"]}
        configs = list(seeds.values())
        directions = tile_directions(seed_shapes(run, case["kernel_id"], list(seeds)), rec["shape"])
        made = scaled_tile_variants(configs, directions, None, count)[len(configs):]
        tiles = [m["block_sizes"] for m in made]
        rows.append({"case": label, "seed_shapes": list(seeds), "ways": directions[:count],
                     "seed_tiles": [c.get("block_sizes") for c in configs[:count]], "variants": tiles,
                     "lfbo_tile": lfbo.get("block_sizes"), "pick_tile": rec.get("config", {}).get("block_sizes"),
                     "reaches_lfbo_tile": lfbo.get("block_sizes") in tiles})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="the table's bench store")
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args(argv)
    doc = json.loads(ns.store.read_text())
    runs = {key: preview(run) for key, run in doc.get("runs", {}).items()}
    reach = sorted({r["case"] for rows in runs.values() for r in rows if r["reaches_lfbo_tile"]})
    out = {"what": __doc__.split("\n\n")[0], "store": str(ns.store), "scaled_tiles": 1,
           "bounds": "not applied (Helion's per-shape block-size bounds; see the docstring)",
           "reaches_lfbo_tile": reach, "runs": runs}
    emit(out, ns.out)
    slots = sum(len(r["variants"]) for rows in runs.values() for r in rows)
    print(f"scaled_tiles_preview: {sum(len(r) for r in runs.values())} seeded rows, {slots} variants in all; "
          f"one is lfbo's tile on {len(reach)}: {', '.join(reach)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
