"""Summarise one run of the `gpu`-marked tests (pytest's JUnit XML) as the JSON kept under bench/results/gpu_tests/.

Why: a GPU run is only evidence with its card, versions and commit beside it, and pytest's XML
has none of them; ``bench/run_gpu_tests.sh`` writes the card and versions to ``gpu_tests_env.txt``.

    python bench/gpu_tests_json.py --xml $OUT/gpu_tests.xml --env $OUT/gpu_tests_env.txt \\
        --what "..." --commit abc1234 --out bench/results/gpu_tests/NAME.json
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def summary(xml_path: Path, env_path: Path) -> dict[str, Any]:
    """Card, versions, counts and per-test outcome and seconds of one pytest run."""
    suite = ET.parse(xml_path).getroot().find("testsuite")
    assert suite is not None, f"{xml_path}: no <testsuite>"
    card, versions_line = env_path.read_text().splitlines()[:2]
    words = versions_line.split()
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    tests = {}
    for case in suite.findall("testcase"):
        if case.get("name"):
            outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
            tests[case.get("name")] = {"outcome": outcome, "seconds": float(case.get("time", 0))}
    return {
        "date": suite.get("timestamp"), "gpu": card.strip(), "versions": dict(zip(words[0::2], words[1::2])),
        "passed": int(suite.get("tests", 0)) - failed - skipped, "failed": failed, "skipped": skipped,
        "seconds": float(suite.get("time", 0)), "tests": tests,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xml", type=Path, required=True)
    ap.add_argument("--env", type=Path, required=True)
    ap.add_argument("--what", default="python -m pytest -m gpu tests/test_gpu.py (bench/run_gpu_tests.sh)")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--session", type=int, default=None)
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()
    doc = {"what": ns.what, **summary(ns.xml, ns.env)}
    if ns.commit:
        doc["commit"] = ns.commit
    if ns.session is not None:
        doc["session"] = ns.session
    ns.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
