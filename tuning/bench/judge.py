"""The bench's judge: one fresh process per measurement, spawned ahead of need.

Why ahead: every measurement of the table is a new Python that imports torch,
Helion and Triton before it compiles anything, and on the H200 that was 15-23 s
of each 25-45 s measurement (session 29's 16 rows: ``measure_phases_s.imports``
in bench/results/store.json), about a tenth of a device session spent waiting on
imports while the GPU idled.  So one spare judge is started before it is needed:
it does its imports while the case is still tuning, then blocks on its stdin.
The measurement hands it the request, and the spare runs exactly the code a cold
judge runs (:func:`.fresh_measure.measure_main`), once: it compiles the configs
from scratch, times them interleaved, answers, and exits.  A new spare is
started right after, for the next case.

What stays as it was: each measurement still gets its own process that has run
no kernel before (the point of a fresh judge, DESIGN.md), and a spare is used
only if its environment is the one a cold judge would get at that moment (the
bench's tuning contexts set ``TRITON_CACHE_DIR`` and Helion variables while a
case tunes; the judge is asked outside them, and a spare spawned under any other
environment is dropped for a cold start).  Nothing it does reaches the ratios:
they come from one process either way.  Each record says which judge measured
it (``measure_judge``) and how long the imports took before the request.

An idle spare holds no CUDA context (it imports, it does not touch the GPU),
and it exits when its stdin closes, so it never outlives the bench.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "tuning.bench.fresh_measure", "--serve"]


def measure_request(project: Path | str, kernel_id: str, shape_name: str, device: str, configs: dict[str, Any],
                    rounds: int, config_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request a judge answers (:func:`.fresh_measure.measure_main` reads it): configs timed interleaved, by name."""
    return {"project": str(project), "config_settings": config_settings or {}, "kernel_id": kernel_id,
            "shape_name": shape_name, "device": device, "configs": dict(configs), "rounds": rounds}


def judge_env() -> dict[str, str]:
    """The environment a judge started now gets: this process's, with the repo importable and the build flag set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env["KILN_BUILDING"] = "1"
    return env


@dataclasses.dataclass
class _Judge:
    """One started judge process and the folder its request, answer and log go in."""

    process: subprocess.Popen[str]
    env: dict[str, str]
    folder: tempfile.TemporaryDirectory[str]
    started: float

    @property
    def log(self) -> Path:
        return Path(self.folder.name) / "judge.log"

    def discard(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):  # a request it never read: closing would flush it into a dead pipe
                self.process.stdin.close()
        self.folder.cleanup()


class Judge:
    """Measures a request in a fresh process; with ``warm``, that process was spawned (and imported) ahead.

    ``measure`` has the signature of the bench engine's ``measure`` seam;
    ``prestart`` starts the first spare before the first case tunes; ``close``
    ends the spare left over at the end of the run.
    """

    def __init__(self, warm: bool = True, command: list[str] | None = None) -> None:
        self.warm = warm
        self.command = command or SERVE
        self._spare: _Judge | None = None

    def _spawn(self, env: dict[str, str]) -> _Judge:
        folder = tempfile.TemporaryDirectory(prefix="kiln-bench-judge-")
        log = open(Path(folder.name) / "judge.log", "w")  # a file, not a pipe: an idle spare must never block on output
        try:
            proc = subprocess.Popen(self.command, env=env, stdin=subprocess.PIPE, stdout=log,
                                    stderr=subprocess.STDOUT, text=True)
        finally:
            log.close()
        return _Judge(proc, env, folder, time.perf_counter())

    def prestart(self) -> None:
        """Start a spare now if none is waiting (a no-op for a cold judge)."""
        if self.warm and self._spare is None:
            self._spare = self._spawn(judge_env())

    def close(self) -> None:
        if self._spare is not None:
            self._spare.discard()
            self._spare = None

    def measure(self, request: dict[str, Any], timeout_s: float = 900) -> dict[str, Any]:
        """The judge's JSON answer to ``request`` (see :mod:`.fresh_measure`), or ``{"error": ...}``."""
        env = judge_env()
        judge, self._spare = self._spare, None
        why_cold = self._unusable(judge, env)
        spare = judge is not None and not why_cold
        if not spare:
            if judge is not None:
                judge.discard()  # spawned under another environment, or died: a cold start, as without a spare
            judge = self._spawn(env)
        try:
            answer, asked = self._ask(judge, request, timeout_s)
        finally:
            judge.discard()
        if "error" not in answer:
            answer["judge"] = {"spare": spare, **answer.get("judge", {}),
                               **({"spawned_s_before": round(asked - judge.started, 2)} if spare else {}),
                               **({"cold_because": why_cold} if why_cold and self.warm else {})}
        self.prestart()  # the next case's judge does its imports while that case tunes
        return answer

    @staticmethod
    def _unusable(judge: _Judge | None, env: dict[str, str]) -> str:
        """Why ``judge`` cannot take this measurement ('' when it can); environment keys by name, never their values."""
        if judge is None:
            return "no spare"
        if judge.process.poll() is not None:
            return f"the spare exited ({judge.process.returncode})"
        changed = sorted(k for k in set(env) | set(judge.env) if env.get(k) != judge.env.get(k))
        return f"environment changed since the spare started: {', '.join(changed)}" if changed else ""

    def _ask(self, judge: _Judge, request: dict[str, Any], timeout_s: float) -> tuple[dict[str, Any], float]:
        """Hand ``judge`` the request and wait for its answer; also when it was asked (perf_counter)."""
        folder = Path(judge.folder.name)
        req, out = folder / "request.json", folder / "result.json"
        req.write_text(json.dumps(request))
        start = time.perf_counter()
        assert judge.process.stdin is not None
        try:
            judge.process.stdin.write(json.dumps({"measure": str(req), "result": str(out)}) + "\n")
            judge.process.stdin.close()
        except BrokenPipeError:
            pass  # it died while waiting: its log says why, below
        try:
            rc = judge.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"error": f"measurement process timed out after {timeout_s} s"}, start
        if rc != 0 or not out.exists():
            tail = judge.log.read_text(errors="replace")[-3000:] if judge.log.exists() else ""
            return {"error": f"measurement process failed ({rc}): {tail}"}, start
        result: dict[str, Any] = json.loads(out.read_text())
        result.setdefault("phases_s", {})["process"] = round(time.perf_counter() - start, 2)
        return result, start
