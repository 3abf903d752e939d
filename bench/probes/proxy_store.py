"""A trial store that lets a `seeded` variant be drawn on another card than the table's, against the table's picks.

Why: #5's table and its `lfbo` baselines are the H200's, and three sessions running (47-49) the
device lent H100s only.  A variant drawn on an H100 into a copy of the table's store finds no
baseline under the H100's run key, so it gets no same-process ratio, and full-effort `lfbo` on
the H100 costs 200-900 s a row.  The knob probe (session 48) showed that the table's H200 pairings
mostly reproduce on the H100 when both stored picks are re-timed there in one process (6 of 7
rows within 3.1%).  So this copies, under the run key of the card here, the table's records for
the kernels of the cases to draw: `lfbo`'s picks (the judge re-times them beside the variant's
pick, in the same fresh process, on this card) and `seeded`'s picks at the other shapes (the
seeds a first build hands the drawn shape).  The drawn cases' own `seeded` records are left out,
so a control draw of today's search reruns too.

What a ratio from such a store means is narrower than a table row's: the variant's pick against
`lfbo`'s *H200* pick, both timed on this card, not against what `lfbo` would find here.  Every
copied record and the run itself carry ``proxy_of`` (the source run key).  Every reader of a store
(``Store.runs``: ``kiln bench --report``, ``--to-lock``, ``bench/variant_summary.py``) shows a proxy run
without the copied ``seeded`` records and with a note that its time ratios are across cards;
``--to-lock`` locks nothing from it, and ``bench/draws.py`` never counts its draws as table rows.
The draws belong in a trial store under ``bench/results/``, never in the table's store.  On the table's own card the
store is copied unchanged: the same command then draws a real table row.

    python bench/probes/proxy_store.py --from bench/results/store.json --out /tmp/res/var_st1.json \\
        --draw model_kernels.attention:attention@small            # GPU: the card here names the run
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tuning.bench import BASELINE  # noqa: E402
from tuning.bench.store import PROXY_OF, Store, run_key  # noqa: E402

DRAWN = "seeded"  # the strategy whose records at the drawn cases are left out, to be drawn here


def source_run(doc: Mapping[str, Any], gpu_name: str | None) -> tuple[str, dict[str, Any]]:
    """The run to copy from: the one named by ``gpu_name``, or the store's only run."""
    runs = {k: r for k, r in doc["runs"].items() if not r.get(PROXY_OF)}
    picked = {k: r for k, r in runs.items() if gpu_name is None or r["gpu"].get("name") == gpu_name}
    if len(picked) != 1:
        names = sorted({r["gpu"].get("name", "?") for r in runs.values()})
        raise SystemExit(f"proxy_store: {'no' if not picked else 'more than one'} source run"
                         f"{'' if gpu_name is None else f' for {gpu_name!r}'}; give --source-gpu, one of: {', '.join(names)}")
    return next(iter(picked.items()))


def proxy_doc(doc: Mapping[str, Any], here: Mapping[str, str], draw: Sequence[str],
              source_gpu: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``doc`` with a run for the card ``here`` holding the source run's records for the drawn kernels.

    Returns the new document and what was copied (for the log).  On the source run's own card,
    ``doc`` unchanged and no copies.
    """
    key, run = source_run(doc, source_gpu)
    out = copy.deepcopy(dict(doc))
    target_key = run_key(here, run["versions"])
    if target_key == key:
        return out, []
    missing = [c for c in draw if c not in run["cases"]]
    if missing:
        raise SystemExit(f"proxy_store: {', '.join(missing)} not in the source run {key}; "
                         f"its cases: {', '.join(sorted(run['cases']))}")
    kernels = {c.rpartition("@")[0] for c in draw}
    target = out["runs"].setdefault(target_key, {"gpu": dict(here), "versions": dict(run["versions"]),
                                                 "peaks": None, "cases": {}})
    target[PROXY_OF] = key
    copied: list[str] = []
    for label, case in sorted(run["cases"].items()):
        if case["kernel_id"] not in kernels:
            continue
        mine = Store.case(target, case["kernel_id"], case["shape_name"])["strategies"]
        for name, rec in sorted(case["strategies"].items()):
            if name not in (BASELINE, DRAWN) or (name == DRAWN and label in draw) or name in mine:
                continue
            mine[name] = {**copy.deepcopy(rec), PROXY_OF: key}
            copied.append(f"{label} {name}")
    return out, copied


def device_here() -> dict[str, str]:
    """The card the bench will key its run by (the same :func:`device_key_for` the build plans with)."""
    import torch

    from tuning.runtime.keys import device_key_for

    if not torch.cuda.is_available():
        raise SystemExit("proxy_store: no CUDA GPU here; give --gpu NAME@ARCH to name the card by hand")
    return device_key_for(torch.device("cuda")).as_dict()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="source", type=Path, required=True, help="the table's store")
    ap.add_argument("--out", type=Path, required=True, help="the trial store to write")
    ap.add_argument("--draw", required=True, help="comma list of the case labels the variant will draw")
    ap.add_argument("--source-gpu", help="the source run's GPU name, where the store holds several")
    ap.add_argument("--gpu", help="NAME@ARCH of the card to copy for (default: the CUDA GPU here)")
    ns = ap.parse_args(argv)
    if ns.gpu:
        name, sep, arch = ns.gpu.rpartition("@")
        if not sep or not name or not arch:
            ap.error(f"--gpu {ns.gpu!r}: write NAME@ARCH, e.g. 'NVIDIA H100 80GB HBM3@triton:sm90'")
        here = {"name": name, "arch": arch}
    else:
        here = device_here()
    draw = [c.strip() for c in ns.draw.split(",") if c.strip()]
    source = json.loads(ns.source.read_text())
    doc, copied = proxy_doc(source, here, draw, ns.source_gpu)
    source_key, source_run_doc = source_run(source, ns.source_gpu)
    Store(ns.out, doc).save()
    if copied:
        print(f"proxy_store: {here['name']} is not the source card: {len(copied)} records copied under its run key, "
              f"each marked proxy_of ({', '.join(copied)}); ratios drawn here are against the source card's lfbo picks "
              f"re-timed on this card", flush=True)
    elif run_key(here, source_run_doc["versions"]) != source_key:
        # session 52: a fresh machine going on from a committed proxy trial store, whose run for this card
        # already holds every record to copy (and the draws made so far, which are kept)
        print(f"proxy_store: {here['name']} already has its proxy run in this store, with every record to copy: "
              f"store copied unchanged, its draws kept", flush=True)
    else:
        print(f"proxy_store: {here['name']} is the source run's own card: store copied unchanged", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
