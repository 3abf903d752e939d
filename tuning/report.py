"""What the build did, per case: printed as a table, optionally written as JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .tune import CaseResult


def _row(r: CaseResult) -> dict[str, Any]:
    prov = dict(r.entry.provenance) if r.entry else {}
    prev_ms = r.previous.provenance.get("ms") if r.previous else None
    ms = prov.get("ms")
    change = None
    if isinstance(ms, (int, float)) and isinstance(prev_ms, (int, float)) and prev_ms > 0 and r.status == "tuned":
        change = ms / prev_ms - 1.0
    return {
        "kernel": r.case.kernel_id,
        "shape": r.case.spec.name,
        "status": r.status,
        "strategy": prov.get("strategy"),
        "configs_tested": prov.get("configs_tested"),
        "seconds": prov.get("seconds"),
        "ms": ms,
        "change_vs_previous": change,
        "device": r.entry.device if r.entry else None,
        "error": r.error,
    }


def print_table(results: Sequence[CaseResult], title: str = "kiln") -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title)
    for col in ("kernel", "shape", "status", "strategy", "configs", "seconds", "ms", "change"):
        table.add_column(col)
    for r in results:
        row = _row(r)
        fmt = lambda v, f: "" if v is None else f.format(v)  # noqa: E731
        cells = (
            row["kernel"], row["shape"], row["status"] + (f": {row['error']}" if row["error"] else ""),
            row["strategy"] or "", fmt(row["configs_tested"], "{}"), fmt(row["seconds"], "{:.1f}"),
            fmt(row["ms"], "{:.4f}"), fmt(row["change_vs_previous"], "{:+.1%}"),
        )
        table.add_row(*(escape(c) for c in cells))  # error texts hold [brackets] rich would read as markup
    Console(file=sys.stderr, width=160).print(table)


def write_json(results: Sequence[CaseResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cases": [_row(r) for r in results]}, indent=2, sort_keys=True) + "\n")
