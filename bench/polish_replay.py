"""Where seeded's polish descent spends its time, read back from `kiln bench` logs (no GPU).

Why: on the H200 (session 14) seeded tuned rope 2.0x faster than lfbo, not the 4x
bar, and most of that time was Helion's polish descent (full radius-1 neighbourhood,
60-95 configs a round on rope's 6 block sizes and 12 indexings).  Before spending
device time on a shorter polish, this replays each logged seeded search: when its
main loop ended, when each polish round ended and what it reached, so the time a
round cap would save and the search-clock latency it would give up are read off the
runs we already have.  It estimates, it does not measure: a capped search's final
re-benchmark could pick differently, and the fresh-process latency is not in the log.

    python bench/polish_replay.py bench/logs/table_session14/*.log --out bench/results/polish_replay.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.seeded_phases import parse  # noqa: E402  (one reader of seeded's log lines for both replays)

CAPS = (0, 1, 2, 3)


def with_caps(search: dict[str, Any]) -> dict[str, Any]:
    """Estimated seconds and search-clock best at each polish cap.

    A cap of k stops after round k: the search then ends k rounds' time in, plus the
    finish it ran after its last round (final re-benchmark), which a cap does not remove.
    """
    rounds = search["rounds"]
    last_end = rounds[-1]["end_s"] if rounds else search["main_end_s"] or 0
    finish_s = search["total_s"] - last_end
    final_best = rounds[-1]["best_ms"] if rounds else search["main_best_ms"]
    out = {}
    for k in CAPS:
        if k >= len(rounds):
            out[str(k)] = {"seconds": search["total_s"], "best_ms": final_best, "loss": 0.0}
            continue
        end = rounds[k - 1]["end_s"] if k else search["main_end_s"]
        best = rounds[k - 1]["best_ms"] if k else search["main_best_ms"]
        if end is None or best is None or not final_best:
            continue
        out[str(k)] = {"seconds": round(end + finish_s, 1), "best_ms": best, "loss": round(best / final_best - 1, 4)}
    polish_s = (last_end - search["main_end_s"]) if search["main_end_s"] is not None else None
    return {**search, "polish_s": polish_s, "caps": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = [with_caps(s) for p in args.logs for s in parse(p)]
    if not rows:
        print("polish_replay: no finished seeded search in these logs", file=sys.stderr)
        return 1
    for r in rows:
        caps = "  ".join(f"cap {k}: {c['seconds']:.0f} s {c['loss']:+.1%}" for k, c in r["caps"].items())
        print(f"{r['case']:<48} {r['total_s']:6.1f} s, polish {r['polish_s']} s in {len(r['rounds'])} rounds | {caps}")
    if args.out:
        args.out.write_text(json.dumps({"source": "kiln bench logs (search clock; estimates, not measurements)",
                                        "searches": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
