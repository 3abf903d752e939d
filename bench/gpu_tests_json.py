"""Summarise one run of the `gpu`-marked tests (pytest's JUnit XML) as the JSON kept under bench/results/gpu_tests/.

Why: a GPU run is only evidence with its card, versions and commit beside it, and pytest's XML
has none of them; ``bench/run_gpu_tests.sh`` writes the card and versions to ``gpu_tests_env.txt``.

    python bench/gpu_tests_json.py --xml $OUT/gpu_tests.xml --env $OUT/gpu_tests_env.txt \\
        --what "..." --commit abc1234 --out bench/results/gpu_tests/NAME.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def summary(xml_path: Path, env_path: Path, log_path: Path | None = None) -> dict[str, Any]:
    """Card, versions, counts and per-test outcome and seconds of one pytest run.

    A run cut by its timeout leaves a nameless <testcase> and no record of the test it cut; the
    log (pytest -v) names it, so the record says which test did not finish instead of only
    counting fewer tests.
    """
    suite = ET.parse(xml_path).getroot().find("testsuite")
    assert suite is not None, f"{xml_path}: no <testsuite>"
    card, versions_line = env_path.read_text().splitlines()[:2]
    words = versions_line.split()
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    cases = suite.findall("testcase")
    tests = {}
    for case in cases:
        if case.get("name"):
            outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
            tests[case.get("name")] = {"outcome": outcome, "seconds": float(case.get("time", 0))}
    interrupted = any(not case.get("name") for case in cases)
    if log_path is not None:
        started = re.findall(r"^tests/\S+::(\w+)", log_path.read_text(), flags=re.M)
        for name in dict.fromkeys(started):
            if name not in tests:
                tests[name] = {"outcome": "not finished (run cut)" if interrupted else "not run", "seconds": None}
    return {
        "interrupted": interrupted,
        "date": suite.get("timestamp"), "gpu": card.strip(), "versions": dict(zip(words[0::2], words[1::2])),
        "passed": int(suite.get("tests", 0)) - failed - skipped, "failed": failed, "skipped": skipped,
        "seconds": float(suite.get("time", 0)), "tests": tests,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xml", type=Path, required=True)
    ap.add_argument("--env", type=Path, required=True)
    ap.add_argument("--log", type=Path, default=None, help="pytest -v output: names a test the run was cut in")
    ap.add_argument("--what", default="python -m pytest -m gpu tests/test_gpu.py (bench/run_gpu_tests.sh)")
    ap.add_argument("--commit", default=None, help="what git reports where the tests ran")
    ap.add_argument("--hash", type=Path, nargs="*", default=[],
                    help="files whose sha256 to record: the device's .git can lag the tree it was sent, the hashes cannot")
    ap.add_argument("--session", type=int, default=None)
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()
    doc = {"what": ns.what, **summary(ns.xml, ns.env, ns.log)}
    if ns.commit:
        doc["commit"] = ns.commit
    if ns.session is not None:
        doc["session"] = ns.session
    if ns.hash:
        doc["sha256"] = {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in ns.hash}
    ns.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
