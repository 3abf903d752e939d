"""Which knob holds a row's pick behind `lfbo`'s?  Each of `lfbo`'s knobs put into the pick alone, all timed in one process.

Why: #5's rows over the 1.05 bar have been read from patterns in the stores (``pick_split.py``:
gdn large's picks all kept the medium seed's tile [64] where `lfbo`'s is [128]), and each
pattern became a seed variant drawn at the cost of a full search per row.  Those patterns are
not controlled: the picks that kept a tile also differ in stages, eviction policies, loop orders.
This asks the GPU directly, without tuning.  For a row's stored pick ("mine") and the `lfbo`
pick it was paired with, each knob where the two differ is set to `lfbo`'s value in a copy of
mine (a tile of several axes also one axis at a time), and every copy is timed beside mine and
`lfbo`'s in one fresh judge process (the bench's own, :mod:`tuning.bench.fresh_measure`), twice,
the order reversed the second time.  A copy that reads near `lfbo` names the knob a fix must
move; if no single knob closes the gap, the difference is in how knobs combine, which a seed
variant of one knob cannot reach.

Each copy is normalized by Helion's own config space for the shape, bound on the device the
judge uses (descriptor support depends on the GPU): an invalid mix is repaired the way Helion
repairs its own candidates, and the keys the repair moved are named (``repaired``), since the copy
is then not a one-knob change.  Each is then compiled and called once in this process, since one
config that does not launch fails a judge's whole request.  A copy that normalizes to mine or to
`lfbo`'s, or does not launch, is dropped, named.

    python bench/probes/knob_swap.py --cases CASES --out $OUT/knob_swap.json      # GPU, no tuning
    python bench/probes/knob_swap.py --collect bench/results/knob_swap_session48/call*.json \
        --out bench/results/knob_swap_session48/summary.json
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.probes.judge_repeat import Measure, add_judge_options, alternating_judges, gpu_name, stored_pair  # noqa: E402
from tuning.bench import BASELINE  # noqa: E402
from tuning.bench.judge import measure_request  # noqa: E402

MINE = "mine"
BEHIND = 0.01  # mine must read this far behind lfbo here for shares of its gap to mean anything
CLOSES = 0.8  # a knob that alone closes this share of the gap names what a fix must move
Check = Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]]


def swaps(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Mine with one of `lfbo`'s knobs, per knob where they differ; a tile of several differing axes also axis by axis.

    Named ``knob`` or ``block_sizes[i]``.  A knob `lfbo`'s config lacks is dropped from the copy
    (Helion then takes its default, as it did for `lfbo`).
    """
    out: dict[str, dict[str, Any]] = {}
    for knob in sorted(set(mine) | set(theirs)):
        a, b = mine.get(knob), theirs.get(knob)
        if a == b:
            continue
        made = copy.deepcopy(dict(mine))
        if knob in theirs:
            made[knob] = copy.deepcopy(b)
        else:
            del made[knob]
        out[knob] = made
        if knob == "block_sizes" and isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            axes = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
            for i in axes if len(axes) > 1 else []:
                one = copy.deepcopy(dict(mine))
                one[knob][i] = b[i]
                out[f"{knob}[{i}]"] = one
    return out


def checked(named: dict[str, dict[str, Any]], check: Check, mine: Mapping[str, Any],
            theirs: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The copies as Helion's config space takes them, and why any was dropped or is not a one-knob change.

    ``check`` raises for a copy that cannot run; mine and `lfbo`'s must pass it (they are stored picks).
    """
    kept: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    same = {json.dumps(check(dict(c))[0], sort_keys=True): n for n, c in ((MINE, mine), (BASELINE, theirs))}
    for name, config in named.items():
        try:
            fixed, moved = check(config)
        except Exception as e:  # noqa: BLE001  (Helion's InvalidConfig and the asserts its checks raise)
            notes[name] = f"dropped: not a config of this space, or does not launch ({type(e).__name__}: {str(e)[:200]})"
            continue
        twin = same.get(json.dumps(fixed, sort_keys=True))
        if twin:
            notes[name] = f"dropped: as Helion normalizes it, the same config as {twin}"
            continue
        if moved:
            notes[name] = "repaired: " + ", ".join(moved)
        kept[name] = fixed
    return kept, notes


def measure_row(row: dict[str, Any], measure: Measure, project: Path, device: str, repeats: int, rounds: int,
                saved: Callable[[], None] = lambda: None) -> None:
    """Time mine, `lfbo`'s and every copy in ``repeats`` judge processes, the order reversed each time."""
    kernel_id, _, shape = row["case"].rpartition("@")
    names = list(row["configs"])
    for i in range(repeats):
        order = names if i % 2 == 0 else names[::-1]
        m = measure(measure_request(project, kernel_id, shape, device, {n: row["configs"][n] for n in order}, rounds),
                    900)
        if "error" in m:
            row["readings"].append({"first": order[0], "error": str(m["error"])[-1500:]})
        else:
            row["readings"].append({"first": order[0], "pid": m.get("pid"),
                                    "ratio": {n: round(ms / m["ms"][BASELINE], 4) for n, ms in m["ms"].items()}})
        _summarise(row)
        saved()


def _summarise(row: dict[str, Any]) -> None:
    """Per copy, its median ratio to `lfbo` and the share of mine's gap it closes (1: all of it; <0: wider).

    Only where mine reads more than ``BEHIND`` behind `lfbo` here: a gap of a few tenths of a percent
    would turn clock noise into shares of hundreds.
    """
    ok = [r["ratio"] for r in row["readings"] if "ratio" in r]
    if not ok:
        return
    med = {n: round(statistics.median(r[n] for r in ok), 4) for n in ok[0]}
    gap = med[MINE] - 1.0
    row["median_ratio"] = med
    row["mine_behind_here"] = gap > BEHIND
    row["gap_closed"] = {n: round((med[MINE] - v) / gap, 3) for n, v in med.items()
                         if n not in (MINE, BASELINE)} if gap > BEHIND else {}
    ranked = sorted(row["gap_closed"].items(), key=lambda kv: -kv[1])
    row["closes_most"] = ranked[0][0] if ranked else None


def collect(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every call's rows in one table (each re-summarised), mine's ratio here beside the stored pairing's.

    The stored pairing was made on the GPU the table was tuned on; where this run's GPU is another,
    ``mine_here`` against ``stored_paired`` says whether the row's gap is there at all.
    """
    rows = []
    for doc in docs:
        for row in doc.get("rows", []):
            if "error" in row or not row.get("readings"):
                continue
            _summarise(row)
            rows.append({"case": row["case"], "gpu": doc.get("gpu"), "stored_paired": row.get("stored_paired"),
                         "mine_here": row["median_ratio"][MINE], "readings": sum("ratio" in r for r in row["readings"]),
                         "closes_most": row["closes_most"], "closes_most_of_gap": [
                             n for n, share in row["gap_closed"].items() if share >= CLOSES],
                         "gap_closed": dict(sorted(row["gap_closed"].items(), key=lambda kv: -kv[1])),
                         "median_ratio": row["median_ratio"], "notes": row.get("notes", {}),
                         "mine": row["configs"][MINE], "lfbo": row["configs"][BASELINE]})
    return {"what": "knob_swap calls collected: per row, each lfbo knob put alone into the stored pick, its median "
                    f"ratio to lfbo's pick in the same process, and the share of mine's gap it closes (>= {CLOSES}: "
                    "closes_most_of_gap)", "versions": sorted({json.dumps(d.get("versions"), sort_keys=True) for d in docs}),
            "rows": rows}


@contextlib.contextmanager
def bound_checker(project: Path, kernel_id: str, shape_name: str, device: str) -> Iterator[Check]:
    """A check for one declared shape: Helion's normalize, then one compile and call on the bench's inputs.

    Bound on ``device`` because the space depends on it (tensor descriptors need the GPU's support).
    The call matters: a copy Helion accepts may still not launch (mine's tile with `lfbo`'s stages
    can overflow shared memory), and one such config in a judge's request fails the whole
    measurement, so it is dropped here, named, instead.
    """
    import helion

    from build_backend.discover import importable
    from build_backend.settings import load_settings
    from tuning.runtime.kernels import resolve_kernel
    from tuning.specs import make_inputs, parse_shapes

    settings = load_settings(project, {}, os.environ)
    spec = next(s for s in parse_shapes(settings.shapes)[kernel_id] if s.name == shape_name)
    with importable(project):
        kernel = resolve_kernel(kernel_id)
        args = make_inputs(spec, kernel, device)
        bound = kernel.bind(args)
        space = bound.config_spec

        def check(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
            fixed, moved = copy.deepcopy(config), []
            try:
                space.normalize(fixed)
            except Exception:  # noqa: BLE001  (InvalidConfig, or an assert in a check): repair as Helion repairs its own
                fixed = copy.deepcopy(config)
                space.normalize(fixed, _fix_invalid=True)
                moved = sorted(k for k in config if fixed.get(k) != config[k])  # a default Helion adds moves nothing
            bound.compile_config(helion.Config(**fixed))(*args)
            _synchronize(device)
            return fixed, moved

        yield check  # the inputs go with this frame when the row is done


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def prepare_row(row: dict[str, Any], store: dict[str, Any], strategy: str, project: Path, device: str) -> None:
    """Fill ``row`` with the stored pair and its checked copies, or say why it cannot run (the other rows still do)."""
    pair = stored_pair(store, row["case"], strategy)
    if "error" in pair:
        row["error"] = pair["error"]
        return
    mine, theirs = pair["configs"][strategy], pair["configs"][BASELINE]
    kernel_id, _, shape = row["case"].rpartition("@")
    try:
        with bound_checker(project, kernel_id, shape, device) as check:
            kept, row["notes"] = checked(swaps(mine, theirs), check, mine, theirs)
    except Exception as e:  # noqa: BLE001  (one row's binding failing leaves the others to run)
        row["error"] = f"could not bind the config space or run mine: {type(e).__name__}: {e}"[:1500]
        return
    row["stored_paired"] = pair["stored"]["paired"]
    row["configs"] = {MINE: mine, BASELINE: theirs, **kept}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", help="comma list of kernel_id@shape_name (GPU)")
    ap.add_argument("--collect", nargs="+", type=Path, metavar="CALL_JSON",
                    help="merge earlier calls' JSON into one table (no GPU)")
    add_judge_options(ap, repeats=2)
    ns = ap.parse_args(argv)
    if bool(ns.cases) == bool(ns.collect):
        ap.error("give either --cases CASES or --collect CALL_JSON...")
    if ns.collect:
        ns.out.write_text(json.dumps(collect([json.loads(p.read_text()) for p in ns.collect]), indent=1) + "\n")
        return 0

    from tuning.versions import toolchain_versions

    store = json.loads(ns.store.read_text())
    project = ns.project.resolve()
    rows: list[dict[str, Any]] = []
    doc = {"what": "each knob of lfbo's pick put alone into the stored pick ('mine'), every copy timed beside both "
                   f"in {ns.repeats} fresh judge processes, the order reversed; ratios are to lfbo's pick in the same process",
           "versions": toolchain_versions(), "gpu": gpu_name(ns.device), "store": str(ns.store), "strategy": ns.strategy,
           "rounds": ns.rounds, "rows": rows}

    def save() -> None:
        emit(doc, ns.out)

    try:
        with alternating_judges() as measure:
            for case in (c.strip() for c in ns.cases.split(",") if c.strip()):
                row: dict[str, Any] = {"case": case, "readings": []}
                rows.append(row)
                prepare_row(row, store, ns.strategy, project, ns.device)
                save()
                if "error" not in row:
                    measure_row(row, measure, project, ns.device, ns.repeats, ns.rounds, save)
                print(case, row.get("median_ratio", row.get("error")), row.get("closes_most"), file=sys.stderr)
    except KeyboardInterrupt:
        print("knob_swap: interrupted; the JSON keeps every finished measurement", file=sys.stderr)
    finally:
        save()
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
