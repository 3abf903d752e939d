"""File one session's `variants` device calls into a trial's results folder, nothing lost and nothing twice.

Why: each ``bench/run_x2_gpu.sh variants`` call returns its trial store and its log, and on a warm
machine both go on from the call before: the returned log then begins with the earlier calls'
parts, and a call on a fresh machine starts from the committed store.  Sessions 50-54 filed these
by hand (copy the newest store, cut each call's own part from the log at its ``== variants``
header, summarise); this does it the same way every time:

- the store: the last call's, with every record of the earlier calls' stores and of the trial
  store already in ``--dest`` merged in by ``finished_at`` (``tuning.bench.store.merge_into``, the
  newest wins), so a call that started from an older store loses nothing;
- the logs: each call's own part, from the first ``== variants <name>`` header no earlier call's
  log holds, as ``var_<name>_s<session>_c<K>.log`` (K: the call's place in the arguments, from 1,
  or its number in the session's ``calls.log`` given by ``--numbers`` when calls between them ran
  something else);
- ``gpu.txt``: the card each call ran on;
- ``summary.json``: ``bench/variant_summary.py`` of the filed store.

It prints, per call, the rows it finished (``kiln bench: done`` lines in its own part), for the
folder's ``calls.log``, which stays written by hand: only the session knows the calls that got no
machine, the budget, and why a timeout was shortened.

    python bench/after_calls.py --name skf8pc4 --session 54 --dest bench/results/skf8pc4 \\
        /work/.device/3 /work/.device/4 /work/.device/5
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.json_out import emit  # noqa: E402
from bench.variant_summary import document  # noqa: E402
from tuning.bench.store import Store, merge_into  # noqa: E402

DONE = re.compile(r"^kiln bench: done (\S+) ")


def own_parts(logs: Sequence[str], name: str) -> list[str]:
    """Each call's own part of its returned log: from its first header that no earlier log holds."""
    marker = f"== variants {name} "
    seen: set[str] = set()
    parts: list[str] = []
    for text in logs:
        lines = text.splitlines(keepends=True)
        headers = [i for i, line in enumerate(lines) if line.startswith(marker)]
        new = [i for i in headers if lines[i] not in seen]
        parts.append("".join(lines[new[0]:]) if new else "")
        seen.update(lines[i] for i in headers)
    return parts


def finished(part: str) -> list[str]:
    """The cases a log part finished, in order."""
    return [m.group(1) for m in map(DONE.match, part.splitlines()) if m]


def file_calls(calls: Sequence[Path], name: str, session: int, dest: Path,
               numbers: Sequence[int] | None = None) -> dict[str, object]:
    """Copy, merge, split and summarise; return what was filed, per call."""
    numbers = list(numbers) if numbers else list(range(1, len(calls) + 1))
    if len(numbers) != len(calls) or len(set(numbers)) != len(numbers):
        raise SystemExit(f"after_calls: --numbers {numbers} must give one distinct number per call ({len(calls)} calls)")
    stores = [c / f"var_{name}.json" for c in calls]
    missing = [str(p) for p in stores if not p.exists()]
    if missing:
        raise SystemExit(f"after_calls: no trial store in {', '.join(missing)}; is --name {name!r} the variant's name?")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"var_{name}.json"
    with tempfile.TemporaryDirectory() as tmp:
        earlier = [*stores[:-1]]
        if target.exists():  # the trial as committed before this session: kept whole under the new calls
            earlier.insert(0, Path(shutil.copy(target, Path(tmp) / "committed.json")))
        shutil.copy(stores[-1], target)
        store = Store.load(target)
        moved = merge_into(store, [Store.load(p) for p in earlier])
    store.lock_path.unlink(missing_ok=True)
    logs = [(c / f"var_{name}.log").read_text() if (c / f"var_{name}.log").exists() else "" for c in calls]
    filed = []
    for k, call, part in zip(numbers, calls, own_parts(logs, name)):
        log = dest / f"var_{name}_s{session}_c{k}.log"
        if part:
            log.write_text(part)
        gpu = (call / "gpu.txt").read_text().strip() if (call / "gpu.txt").exists() else "unknown"
        filed.append({"call": k, "from": str(call), "gpu": gpu, "log": log.name if part else None,
                      "finished": finished(part)})
    cards = [f["gpu"] for f in filed]
    (dest / "gpu.txt").write_text(cards[0] + "\n" if len(set(cards)) == 1 else
                                  "".join(f"call {f['call']}: {f['gpu']}\n" for f in filed))
    emit(document([target]), dest / "summary.json")
    for path in dest.iterdir():
        if path.is_file():
            path.chmod(0o644)
    return {"store": str(target), "merged_in": [f"{label} {strategy} from {src}" for label, strategy, src in moved],
            "calls": filed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("calls", nargs="+", type=Path, help="each call's returned folder (files_at), in call order")
    ap.add_argument("--name", required=True, help="the variant's name in VARIANTS (name=knobs)")
    ap.add_argument("--session", required=True, type=int)
    ap.add_argument("--dest", required=True, type=Path, help="the trial's folder under bench/results/")
    ap.add_argument("--numbers", type=lambda text: [int(n) for n in text.split(",")], default=None,
                    help="each call's number in the session, comma-separated (default 1,2,...): "
                         "names its log var_<name>_s<S>_c<K>.log")
    ns = ap.parse_args(argv)
    result = file_calls(ns.calls, ns.name, ns.session, ns.dest, ns.numbers)
    for call in result["calls"]:
        print(f"call {call['call']} ({call['gpu']}): {call['log'] or 'no log part of its own'}; finished "
              f"{len(call['finished'])}: {', '.join(call['finished']) or '-'}")
    if result["merged_in"]:
        print("merged in from earlier stores: " + "; ".join(result["merged_in"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
