"""`lfbo` against itself: the spread of two `lfbo` draws of one case, reported beside the bar.

Why: the bar holds a strategy to 1.05 of one `lfbo` draw.  If `lfbo` drawn again (another random
seed) landed more than 5% from itself, no single draw of any search could be held to that, and a
report that only said "over 1.05" would blame the strategy for the baseline's noise.  So the
report shows the measured spread (``bench/probes/lfbo_spread.py`` re-times both draws interleaved
in one fresh process and writes ``lfbo_spread.json``) and says which way it points: a narrow
spread means the strategy's misses are its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import KilnError
from .compare import BAR_WORST_LATENCY


def load_spreads(paths: list[Path]) -> list[dict[str, Any]]:
    """Every row of the given ``lfbo_spread.json`` files, each tagged with the file it came from."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise KilnError(f"--spread {path}: cannot read it as JSON ({e}); give the lfbo_spread.json that "
                            "bench/probes/lfbo_spread.py wrote") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            raise KilnError(f"--spread {path}: no 'rows' list; give the lfbo_spread.json that "
                            "bench/probes/lfbo_spread.py wrote, not a bench store")
        rows += [{**row, "file": str(path)} for row in doc["rows"] if isinstance(row, dict) and row.get("case")]
    return rows


def apart(ratio: float) -> float:
    """How far apart two draws are, whichever is faster: 0.9956 and 1.0044 are the same spread."""
    return max(ratio, 1 / ratio)


def noise_floor(rows: list[dict[str, Any]], run_key: str) -> dict[str, Any] | None:
    """The spread rows of one store run (GPU and versions), or None when none were measured there.

    A case measured in several files counts once per file: each is another pair of draws.
    """
    mine = [r for r in rows if r.get("run") == run_key or (r.get("error") and not r.get("run"))]
    if not mine:
        return None
    compared = [r for r in mine if isinstance(r.get("second_over_first"), (int, float)) and r["second_over_first"] > 0]
    out: dict[str, Any] = {
        "what": "lfbo drawn twice (other random seeds), both re-timed interleaved in one fresh process: "
                "second / first latency",
        "rows": [{"case": r["case"], "second_over_first": r["second_over_first"], "same_config": r.get("same_config"),
                  "capped": any(d.get("capped") for d in r.get("draws") or []),
                  "draws": [{k: d.get(k) for k in ("seed", "configs_tested", "tuning_seconds", "capped")}
                            for d in r.get("draws") or []], "file": r["file"]} for r in compared],
        "not_compared": [{"case": r["case"], "why": r.get("error", "no ratio"), "file": r["file"]}
                         for r in mine if r not in compared]}
    if compared:
        worst = max(apart(r["second_over_first"]) for r in compared)
        out["worst_apart"] = round(worst, 4)
        out["within_bar"] = worst <= BAR_WORST_LATENCY
    return out


def with_noise_floor(summary: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``summary_json``'s output with each run's noise floor under ``lfbo_noise_floor`` where one was measured."""
    for run in summary["runs"]:
        floor = noise_floor(rows, run["key"])
        if floor:
            run["lfbo_noise_floor"] = floor
    return summary


def noise_floor_lines(floor: dict[str, Any] | None) -> list[str]:
    """The report's section: each pair of draws, then what the spread says about the bar."""
    if not floor:
        return []
    lines = ["### `lfbo` against itself", "",
             "The bar compares each strategy with one `lfbo` draw. Here `lfbo` was drawn again with another random "
             "seed, and both picks were re-timed interleaved in one fresh process (`bench/probes/lfbo_spread.py`).", ""]
    if floor["rows"]:
        lines += ["| case | second / first | draws: seed, configs, tuning s | same config |", "|---|---|---|---|"]
        for r in floor["rows"]:
            draws = "; ".join(f"{d['seed']}, {d['configs_tested']}, {d['tuning_seconds']}"
                              + (" (capped)" if d.get("capped") else "") for d in r["draws"])
            lines.append(f"| {r['case']} | {r['second_over_first']:.4f} | {draws} | "
                         f"{'yes' if r['same_config'] else 'no'} |")
        lines.append("")
        worst = floor["worst_apart"]
        if floor["within_bar"]:
            lines.append(f"The two draws land at most {worst:.4f}x apart on {len(floor['rows'])} case(s), inside the "
                         f"{BAR_WORST_LATENCY} bar: where this holds, a strategy more than {BAR_WORST_LATENCY - 1:.0%} behind "
                         "`lfbo` is behind by its own search, not by the baseline's noise (measured on these cases only).")
        else:
            lines.append(f"The two draws land up to {worst:.4f}x apart, wider than the {BAR_WORST_LATENCY} bar: there no "
                         "single draw of any search can be held to it, and the shortfall is partly the baseline's.")
        if any(r["capped"] for r in floor["rows"]):
            lines.append("A capped draw stopped at its `seconds` cap, so it is cheaper than full `lfbo`: its ratio bounds "
                         "the spread from one side only.")
    for r in floor["not_compared"]:
        lines.append(f"- not compared: {r['case']}: {r['why']}")
    return lines + [""]
