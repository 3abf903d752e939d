"""`kiln bench --report`: the comparison against ``lfbo`` (``compare``) as a markdown table, PNG plots and a JSON summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import BASELINE
from .compare import (BAR_LATENCY_GEOMEAN, BAR_TIME_RATIO, BAR_WORST_LATENCY, OTHER_SEARCH, PROXY_NOTE, analyse,
                      coverage, is_other_search, seeds_label, summary_json)
from .noise_floor import noise_floor, noise_floor_lines, with_noise_floor
from .roofline import best_peaks, fraction
from .store import PROXY_OF, Store


# Why a roofline fraction can still pass 1 once every row is on the store's fastest peaks (seen
# on the H200: swiglu at 1.03-1.05 against the 4.24 TB/s elementwise stream of session 16).
ROOF_OVER_ONE = ("Fractions over 1: the copy peak is the fastest of two measured 1 GiB streams (torch `copy_` and an "
                 "elementwise kernel, `peaks.copy` in the store), not the HBM's specified rate (4.8 TB/s on the H200), "
                 "and a tuned kernel can stream a few percent faster than either; a working set that fits in L2 (60 MB on "
                 "the H200: softmax small 17 MB, rope small 43 MB) also stays cached across the timer's replays. "
                 "Read over 1 as at the bandwidth roof.")


def _on_scale(record: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
    """``record``'s roofline against ``scale``; as stored when it has no fraction (no GPU, no work measured)."""
    roof = record.get("roofline") or {}
    if roof.get("fraction") is None or not roof.get("bytes") or not scale.get("copy_gbps"):
        return roof
    return fraction(roof, record.get("ms"), scale)


def _right_after_search(parted: list[dict[str, Any]]) -> list[str]:
    """The sentence under the split table on the third reading, the tuning processes' own (none without it)."""
    read = [row for row in parted if row["shortfall_split"].get("right_after_search") is not None]
    if not read:
        return []
    under = [row for row in read if row["shortfall_split"]["right_after_search"] <= BAR_WORST_LATENCY]
    text = (f" The last column times the same two picks a third way: each on the fresh process's clock in its own "
            f"tuning process, right after its search. {len(read) - len(under)} of {len(read)} are over "
            f"{BAR_WORST_LATENCY} there too, so their loss was there as soon as the search ended, where a finish that "
            "re-times the finalists in the tuning process sees it.")
    if under:
        text += (" On " + ", ".join(f"{row['case']} ({row['shortfall_split']['right_after_search']:.3f})" for row in under)
                 + " the two picks' own readings were nearer than the one process that paired them: the bar is judged on "
                 "that pairing, and how far a second pairing of the same configs moves is measured by "
                 "`bench/probes/judge_repeat.py`.")
    return ["", text.strip()]


def _f(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e-3 else f"{v:.{digits}f}"
    return str(v)


def bar_lines(a: dict[str, Any]) -> list[str]:
    """The "Against the bar" section: each strategy's verdict, then every case over 1.05 or under 4x, and why."""
    judged = {n: s for n, s in a["strategies"].items() if n != BASELINE and s["cases"]}
    if not judged:
        return []

    def verdict(v: float | None, ok: bool | None, digits: int) -> str:
        return "-" if ok is None else f"{_f(v, digits)} " + ("yes" if ok else "**no**")

    lines = ["### Against the bar", "",
             f"Each strategy against `lfbo`: tuning-time ratio at least {BAR_TIME_RATIO:g} (geomean), latency ratio at most "
             f"{BAR_LATENCY_GEOMEAN} (geomean), no case over {BAR_WORST_LATENCY}.", "",
             f"| strategy | cases | time ratio >= {BAR_TIME_RATIO:g} | latency geomean <= {BAR_LATENCY_GEOMEAN} "
             f"| worst <= {BAR_WORST_LATENCY} | cases over {BAR_WORST_LATENCY} |", "|---|---|---|---|---|---|"]
    for name, s in judged.items():
        ok = s["meets_bar"]
        lines.append(f"| {name} | {s['cases']} | {verdict(s['geomean_time_ratio'], ok['time_ratio'], 2)} "
                     f"| {verdict(s['geomean_latency_ratio'], ok['latency_geomean'], 4)} "
                     f"| {verdict(s['worst_latency_ratio'], ok['worst_latency'], 4)} | {len(s['cases_over_worst_bar'])} |")
    for name, s in judged.items():
        ahead = [row for row in a["rows"] if row["strategy"] == name and row["case"] in s["cases_far_ahead_of_lfbo"]]
        if ahead:
            rest = s["geomean_latency_ratio_without_far_ahead"]
            verdict_rest = "-" if rest is None else verdict(rest, rest <= BAR_LATENCY_GEOMEAN, 4)
            lines += ["", f"`{name}` ran faster than `lfbo` by more than {BAR_WORST_LATENCY - 1:.0%} on "
                      + ", ".join(f"{row['case']} ({row['ratios']['latency_ratio']:.4f})" for row in ahead)
                      + f": `lfbo`'s full search ended on a slower config there, and such a case pulls the latency geomean down. "
                      f"Without {'it' if len(ahead) == 1 else 'them'} ({s['cases'] - len(ahead)} cases): latency geomean "
                      f"{verdict_rest}."]
    split = {n: s["by_seeds"] for n, s in judged.items() if len(s.get("by_seeds") or {}) > 1}
    if split:
        lines += ["", "By how each search started (`cold`: the kernel's first shape in build order, nothing to seed "
                  "from; `seeded`: from the kernel's earlier shapes or the lock, so it inherits where those landed):", "",
                  f"| strategy | seeds | cases | time ratio | latency geomean | worst | cases over {BAR_WORST_LATENCY} |",
                  "|---|---|---|---|---|---|---|"]
        for name, parts in split.items():
            lines += [f"| {name} | {kind} | {p['cases']} | {_f(p['geomean_time_ratio'], 2)} | "
                      f"{_f(p['geomean_latency_ratio'], 4)} | {_f(p['worst_latency_ratio'], 4)} | "
                      f"{len(p['cases_over_worst_bar'])} |" for kind, p in parts.items()]
    short = [row for row in a["rows"] if row.get("shortfall")]
    parted = [row for row in short if row.get("shortfall_split")]
    if parted:
        after = sum(1 for row in parted if row["shortfall_split"]["mostly"] == "after the search")
        lines += ["", f"Where each case over {BAR_WORST_LATENCY} lost its latency: the gap its search saw (its best reading "
                  "over `lfbo`'s, each on its own search's clock) times what appeared only after the search (the rest of "
                  f"the ratio, from the fresh process). {after} of {len(parted)} lost more after their search than in it: "
                  "readings the fresh process did not confirm, which point at how the search times its candidates "
                  "(re-timing its best readings, or timing on the fresh process's clock) more than at how widely it "
                  "searches.", *_right_after_search(parted), "",
                  "| case | strategy | latency ratio | in the search | after the search | mostly | right after each search |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {row['case']} | {row['strategy']} | {row['ratios']['latency_ratio']:.4f} | "
                  f"{row['shortfall_split']['search_gap']:.3f} | {row['shortfall_split']['after_search']:.3f} | "
                  f"{row['shortfall_split']['mostly']} | {_f(row['shortfall_split'].get('right_after_search'), 3)} |"
                  for row in parted]
    if short:
        lines += ["", f"Cases over {BAR_WORST_LATENCY}, and what their records say:", ""]
        lines += [f"- {row['case']} `{row['strategy']}` {row['ratios']['latency_ratio']:.4f}: {row['shortfall']}"
                  for row in short]
    slow = [row for row in a["rows"] if row.get("slow")]
    if slow:
        lines += ["", f"Cases under {BAR_TIME_RATIO:g}x less tuning time (the bar is on the geomean; these pull it down), "
                  "and what their records say:", ""]
        lines += [f"- {row['case']} `{row['strategy']}` {row['ratios']['time_ratio']:.2f}x: {row['slow']}" for row in slow]
    if any(is_other_search(n) for n in a["strategies"]):
        lines += ["", f"`name{OTHER_SEARCH}: keys)`: made by an earlier or trial version of that strategy's search (other "
                  "search limits than today's, `strategy_limits` in the store; the keys are the parts of the limits that "
                  "differ, and each set of them is its own group; `seeding`: its search did not start from what a first build "
                  "hands it, its own configs at the kernel's shapes tuned before it (the middle declared shape first): "
                  "it took `kiln.lock`'s entries, which `kiln bench --to-lock` filled from the bench's records, `lfbo`'s "
                  "among them, or it ran before or without one of those shapes); kept apart "
                  "from today's numbers, and rerun by `kiln bench` on the table's store."]
    return lines + [""]


def coverage_line(run: dict[str, Any], declared: list[str]) -> str:
    """``14 of 36 declared cases ...; not yet: matmul (small, medium, large); ...``, grouped by kernel."""
    c = coverage(run, declared)
    line = f"Table: {c['with_lfbo']} of the {c['declared']} declared cases have an `lfbo` baseline"
    if not c["without_lfbo"]:
        return line + "."
    shapes: dict[str, list[str]] = {}
    for label in c["without_lfbo"]:
        kernel, _, shape = label.partition("@")
        shapes.setdefault(kernel.rpartition(":")[2], []).append(shape)
    return line + "; not yet: " + "; ".join(f"{k} ({', '.join(v)})" for k, v in shapes.items()) + "."


def markdown(store: Store, plots: dict[str, list[str]] | None = None, limits: dict[str, Any] | None = None,
             declared: list[str] | None = None, spreads: list[dict[str, Any]] | None = None) -> str:
    lines = ["# kiln bench", "",
             f"Store: `{store.path}`. Latencies are re-measured after tuning in a fresh process (tuning.measure.time_ms); "
             "ratios are against `lfbo` on the same case: tuning time and configs as lfbo/strategy (higher is cheaper), "
             "latency as strategy/lfbo (lower is faster), from one interleaved fresh process where available.", ""]
    for key, run in store.runs():
        a = analyse(run, limits, declared=declared)
        peaks = run.get("peaks") or {}
        lines += [f"## {run['gpu'].get('name')} ({run['gpu'].get('arch')}), "
                  + ", ".join(f"{k} {v}" for k, v in run["versions"].items()), ""]
        scale = best_peaks([peaks, *((row["record"].get("roofline") or {}).get("peaks") for row in a["rows"])])
        if peaks.get("copy_gbps"):
            lines += [f"Peaks measured in the run: copy {peaks['copy_gbps']} GB/s, bf16 matmul {peaks['bf16_tflops']} TFLOP/s.", ""]
        else:
            lines += [f"Roofline: {peaks.get('reason') or 'peaks not measured'}.", ""]
        if run.get(PROXY_OF):
            lines += [f"**A proxy run, against the lfbo picks of {run[PROXY_OF]}**: {PROXY_NOTE}.", ""]
        if declared is not None:
            lines += [coverage_line(run, declared), ""]
        lines += ["### Summary against lfbo", "",
                  "| strategy | cases | tuning-time ratio (lfbo/s) | configs ratio (lfbo/s) | latency ratio (s/lfbo) | worst latency ratio |",
                  "|---|---|---|---|---|---|"]
        for name, s in a["strategies"].items():
            lines.append(f"| {name} | {s['cases']} | {_f(s['geomean_time_ratio'], 2)} | {_f(s['geomean_configs_ratio'], 2)} "
                         f"| {_f(s['geomean_latency_ratio'], 4)} | {_f(s['worst_latency_ratio'], 4)} |")
        lines.append("")
        lines += bar_lines(a)
        for name, s in a["strategies"].items():
            if s.get("llm_models"):
                label = "; ".join(f"`{m}`" + (" (a local server with fixed answers: **not an LLM's numbers**)"
                                               if m in s["not_an_llm"] else "") for m in s["llm_models"])
                lines.append(f"- `{name}` talked to {label}; {s['llm_fallbacks']} case(s) fell back to `seeded`.")
        if any(s.get("llm_models") for s in a["strategies"].values()):
            lines.append("")
        if a["lfbo_hit_seconds_cap"]:
            lines += ["`lfbo` stopped at its `seconds` cap, not at convergence, on these cases (kept in the geomeans; "
                      "their time ratios are lower bounds of full LFBO's and their latency ratios may flatter the strategy):", ""]
            lines += [f"- {label}" for label in a["lfbo_hit_seconds_cap"]]
            lines.append("")
        lines += noise_floor_lines(noise_floor(spreads or [], key))
        if a["excluded"]:
            lines += ["Excluded from the geomeans:", ""]
            lines += [f"- {e['case']} `{e['strategy']}`: {e['why']}" for e in a["excluded"]]
            lines.append("")
        lines += ["### Per case", "",
                  "Seeds: what a build with that strategy would have known there (cases in build order, per kernel the "
                  "middle shape first): its own configs at the kernel's shapes finished before, and `kiln.lock` entries; "
                  "`cold` = none. `lfbo` takes no seeds.", "",
                  "| case | strategy | seeds | configs | tuning s | ms | torch ref ms | ref/ms | roofline | time ratio | configs ratio | latency ratio |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        over_one = False
        for row in a["rows"]:
            r, q = row["record"], row["ratios"] or {}
            roof = _on_scale(r, scale)
            over_one = over_one or (roof.get("fraction") or 0) > 1
            roof_s = f"{roof['fraction']:.2f} ({roof.get('bound')})" if roof.get("fraction") is not None else "-"
            speed = r["ref_ms"] / r["ms"] if r.get("ref_ms") and r.get("ms") else None
            lat = q.get("latency_ratio")
            lat_s = "-" if lat is None else f"{lat:.4f}" + ("" if q.get("latency_from") == "same process" else "*")
            if row["ratios"] is None:
                lat_s = row["why"]
            lines.append(f"| {row['case']} | {row['strategy']} | {seeds_label(r)} | {_f(r.get('configs_tested'))} | {_f(r.get('tuning_seconds'), 4)} "
                         f"| {_f(r.get('ms'), 4)} | {_f(r.get('ref_ms'), 4)} | {_f(speed, 3)} | {roof_s} "
                         f"| {_f(q.get('time_ratio'), 3)} | {_f(q.get('configs_ratio'), 3)} | {lat_s} |")
        lines += ["", "`*`: latency ratio from two separate fresh processes (no same-process pair with the current lfbo config).",
                  "Roofline: max(bytes / copy bandwidth, FLOPs / bf16 rate) / measured time; bytes = inputs + outputs; every row "
                  f"on one scale, the fastest peaks this GPU showed in the store (copy {scale['copy_gbps']} GB/s, bf16 "
                  f"{scale['bf16_tflops']} TFLOP/s; each record keeps its own run's under `roofline.peaks`).", ""]
        if over_one:
            lines += [ROOF_OVER_ONE, ""]
        kinds = sorted({(row["case"].partition("@")[0], row["record"].get("ref_kind")) for row in a["rows"]
                        if row["record"].get("ref_kind")})
        if kinds:
            lines += ["torch ref ms is, per kernel:", ""] + [f"- {k}: {kind}" for k, kind in kinds] + [""]
        for title, files in (plots or {}).get(key, {}).items():
            lines += [f"![{title}]({f})" for f in files] + [""]
    return "\n".join(lines)


def _slug(key: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in key).strip("_")[:80]


def write_plots(store: Store, out_dir: Path, max_cases: int = 4, limits: dict[str, Any] | None = None,
                declared: list[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """Per run: best latency vs configs explored (a few cases), and per-case tuning-time ratio bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: dict[str, dict[str, list[str]]] = {}
    for key, run in store.runs():
        slug = _slug(key)
        mine: dict[str, list[str]] = {}
        a = analyse(run, limits, declared=declared)
        # One colour per strategy in every panel and both figures, so a reader matches them at a glance.
        names = sorted({row["strategy"] for row in a["rows"]})
        color = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(names)}
        # trajectories: cases with a trajectory for the most strategies, longest lfbo search first
        by_case: dict[str, dict[str, Any]] = {}
        for row in a["rows"]:
            r = row["record"]
            if not r.get("error") and (r.get("trajectory") or {}).get("points"):
                by_case.setdefault(row["case"], {})[row["strategy"]] = r["trajectory"]["points"]
        cands = []
        for label, case in run["cases"].items():
            traj = by_case.get(label, {})
            if traj:
                lf = case["strategies"].get(BASELINE, {}).get("configs_tested") or 0
                cands.append((-len(traj), -lf, label, traj))
        cands.sort()
        chosen = cands[:max_cases]
        if chosen:
            fig, axes = plt.subplots(1, len(chosen), figsize=(4.5 * len(chosen), 3.6), squeeze=False)
            for ax, (_, _, label, traj) in zip(axes[0], chosen):
                for name, pts in sorted(traj.items()):
                    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                    ax.step(xs, ys, where="post", marker="o", markersize=3, label=name, color=color.get(name))
                # The first configs are often several times slower; zoom on the end game, where strategies differ.
                lo = min(p[1] for pts in traj.values() for p in pts)
                ax.set_ylim(lo * 0.97, lo * 1.5)
                ax.set_title(label.rpartition(":")[2], fontsize=9)
                ax.set_xlabel("configs explored")
                ax.set_ylabel("best ms found")
                ax.legend(fontsize=8)
            mine["best latency vs configs explored"] = [_save(plt, fig, out_dir / f"trajectory_{slug}.png")]
        bars = [(row["case"], row["strategy"], row["ratios"]["time_ratio"]) for row in a["rows"]
                if row["ratios"] and row["strategy"] != BASELINE]
        if bars:
            cases = sorted({b[0] for b in bars})
            vals = {(c, name): v for c, name, v in bars}
            present = {c: sorted(name for case, name in vals if case == c) for c in cases}
            width = 0.8 / max(len(p) for p in present.values())
            fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(vals) + 0.4 * len(cases) + 3), 4))
            labelled: set[str] = set()
            for j, c in enumerate(cases):  # each case's bars centred on its tick
                for i, name in enumerate(present[c]):
                    ax.bar(j + (i - (len(present[c]) - 1) / 2) * width, vals[(c, name)], width=width,
                           color=color.get(name), label=None if name in labelled else name)
                    labelled.add(name)
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.axhline(BAR_TIME_RATIO, color="red", linewidth=0.8, linestyle="--", label=f"bar ({BAR_TIME_RATIO:g}x geomean)")
            ax.set_yscale("log")
            ax.set_xticks(list(range(len(cases))))
            ax.set_xticklabels([c.rpartition(":")[2] for c in cases], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("tuning-time ratio (lfbo / strategy)")
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            mine["per-case tuning-time ratio"] = [_save(plt, fig, out_dir / f"time_ratio_{slug}.png")]
        written[key] = mine
    return written


def _save(plt: Any, fig: Any, path: Path) -> str:
    """Lay out, write and close one figure; returns the file name the report links."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def write_report(store: Store, out_dir: Path, limits: dict[str, Any] | None = None,
                 declared: list[str] | None = None, spreads: list[dict[str, Any]] | None = None) -> Path:
    """``spreads``: rows of ``lfbo_spread.json`` files (``noise_floor.load_spreads``), reported beside the bar."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = write_plots(store, out_dir, limits=limits, declared=declared)
    path = out_dir / "README.md"
    path.write_text(markdown(store, plots, limits, declared, spreads) + "\n")
    summary = with_noise_floor(summary_json(store, limits, declared), spreads or [])
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return path
