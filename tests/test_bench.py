"""`kiln bench`: the resumable store, the report against lfbo, and one real run under Pallas interpret."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import PALLAS_INTERPRET, clean_env, run
from tuning.bench.report import analyse, markdown, summary_json, write_report
from tuning.bench.run import BenchOptions, Engine, run_bench
from tuning.bench.store import Store
from tuning.cli import main as kiln_main
from tuning.plan import Case
from tuning.runtime.keys import DeviceKey
from tuning.specs import ShapeSpec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- (1) store round trip and resume

class FakeTune:
    """A named stand-in for the engine's tune: no Helion; records what it was asked to tune."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.interrupt_at: int | None = None

    def __call__(self, case: Case, name: str, budget: Any, device: str, dev_key: DeviceKey, context: Any) -> Any:
        self.calls.append((f"{case.kernel_id}@{case.spec.name}", name))
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt  # a run stopped mid-way (Ctrl-C, lost machine)
        lfbo = name == "lfbo"
        return SimpleNamespace(config={"block_sizes": [64 if lfbo else 32]},
                               provenance={"configs_tested": 400 if lfbo else 50, "seconds": 100.0 if lfbo else 25.0,
                                           "ms": 1.0, "strategy": name})


def _fake_engine(cases: list[Case], tune: FakeTune, measured: list[dict[str, Any]]) -> Engine:
    settings = SimpleNamespace(effort="quick", max_generations=1, initial_population=2, polish_rounds=1, seconds=None,
                               seed=0, max_configs=None, llm_settings=lambda: None)
    prep = SimpleNamespace(settings=settings, device="cpu", plan=SimpleNamespace(device=DeviceKey("Fake GPU", "triton:sm00")),
                           cases=cases, lock=SimpleNamespace(sorted_entries=lambda: []))

    def measure(request: dict[str, Any], timeout: float) -> dict[str, Any]:
        measured.append(request)
        return {"ms": {n: (1.0 if n == "lfbo" else 1.02) for n in request["configs"]}, "ref_ms": None,
                "ref_reason": "no fake_ref", "timers": {}, "rounds": 1, "pid": 4242,
                "work": {"bytes": 1024, "flops": None, "family": "k"}}

    return Engine(prepare=lambda project, cs: prep, tune=tune, measure=measure,
                  peaks=lambda device: {"copy_gbps": None, "bf16_tflops": None, "reason": "fake: no GPU"},
                  versions=lambda: {"helion": "1.5.0", "torch": "t", "triton": "x"},
                  capture=lambda: contextlib.nullcontext([]))


def _case(kernel: str, shape: str, digest: str = "sha256:aaaa") -> Case:
    return Case(kernel, None, digest, ShapeSpec(kernel, shape, declared=json.dumps([f"f32[{shape}]"])))


def test_store_resume_reuses_baseline_and_source_hash_invalidates(tmp_path: Path) -> None:
    store_path = tmp_path / "bench" / "store.json"
    cases = [_case("pkg.m:k", "small"), _case("pkg.m:k", "large")]
    tune, measured = FakeTune(), []

    def bench(strategies: list[str]) -> Store:
        opts = BenchOptions(tmp_path, {}, None, strategies, store_path)
        return run_bench(opts, log=lambda m: None, engine=_fake_engine(cases, tune, measured))

    # A run stopped on its second tune keeps the first result on disk (written at once, atomically).
    tune.interrupt_at = 2
    with pytest.raises(KeyboardInterrupt):
        bench(["lfbo"])
    on_disk = json.loads(store_path.read_text())
    (run_doc,) = on_disk["runs"].values()
    assert list(run_doc["cases"]) == ["pkg.m:k@small"] and run_doc["gpu"] == {"name": "Fake GPU", "arch": "triton:sm00"}
    tune.interrupt_at = None

    # Resume: only the missing lfbo case runs.
    tune.calls.clear()
    bench(["lfbo"])
    assert tune.calls == [("pkg.m:k@large", "lfbo")]

    # Adding seeded reuses both stored lfbo baselines and re-measures them next to seeded in one process.
    tune.calls.clear(), measured.clear()
    store = bench(["lfbo", "seeded"])
    assert tune.calls == [("pkg.m:k@small", "seeded"), ("pkg.m:k@large", "seeded")]
    assert all(set(r["configs"]) == {"seeded", "lfbo"} and r["configs"]["lfbo"] == {"block_sizes": [64]} for r in measured)
    rec = store.doc["runs"][next(iter(store.doc["runs"]))]["cases"]["pkg.m:k@small"]["strategies"]["seeded"]
    assert rec["vs_lfbo"]["lfbo_ms"] == 1.0 and rec["ms"] == 1.02 and rec["configs_tested"] == 50
    assert rec["ref_ms"] is None and rec["ref_reason"] == "no fake_ref"
    assert rec["roofline"]["fraction"] is None and rec["roofline"]["reason"] == "fake: no GPU"
    assert rec["trajectory"]["points"] == [[50, 1.0]] and "final point only" in rec["trajectory"]["note"]
    assert Store.load(store_path).doc == store.doc  # round trip

    # A second identical run reruns nothing.
    tune.calls.clear()
    bench(["lfbo", "seeded"])
    assert tune.calls == []

    # An edited kernel (new source hash) invalidates that kernel's records, baseline included.
    cases[0] = _case("pkg.m:k", "small", digest="sha256:bbbb")
    bench(["lfbo", "seeded"])
    assert tune.calls == [("pkg.m:k@small", "lfbo"), ("pkg.m:k@small", "seeded")]


# ----------------------------------------------------------------------------- (2) report on a synthetic store

def _rec(sec: float, cfgs: int, ms: float, config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"source_hash": "h", "spec": "s", "budget": {}, "tuning_seconds": sec, "configs_tested": cfgs, "ms": ms,
            "config": config, "ref_ms": 2 * ms, "roofline": {"fraction": None, "reason": "cpu"},
            "trajectory": {"points": [[1, 3 * ms], [cfgs // 2, 1.5 * ms], [cfgs, ms]]}, **extra}


def _synthetic_store(path: Path) -> Store:
    lf_a, lf_b = {"b": [64]}, {"b": [128]}
    cases = {
        # same-process pair with the current lfbo config: latency ratio 1.0 / 0.98
        "p.m:a@small": {"lfbo": _rec(100, 400, 1.0, lf_a),
                        "seeded": _rec(25, 50, 1.02, {"b": [32]}, vs_lfbo={"lfbo_config": lf_a, "lfbo_ms": 0.98, "ms": 1.0})},
        # pair measured against an older lfbo config: falls back to 2.1 / 2.0
        "p.m:b@small": {"lfbo": _rec(60, 300, 2.0, lf_b),
                        "seeded": _rec(20, 100, 2.1, {"b": [16]}, vs_lfbo={"lfbo_config": {"b": [1]}, "lfbo_ms": 1.0, "ms": 1.0})},
        "p.m:c@small": {"seeded": _rec(10, 10, 1.0, {"b": [8]})},  # no lfbo baseline
        "p.m:d@small": {"lfbo": _rec(50, 200, 1.0, lf_a), "seeded": {"error": "RuntimeError: boom", "source_hash": "h", "spec": "s"}},
    }
    doc = {"format": 1, "runs": {"H200|triton:sm90|helion=1.5.0|torch=2|triton=3": {
        "gpu": {"name": "H200", "arch": "triton:sm90"}, "versions": {"helion": "1.5.0", "torch": "2", "triton": "3"},
        "peaks": {"copy_gbps": 4000.0, "bf16_tflops": 800.0, "reason": None},
        "cases": {label: {"kernel_id": label.partition("@")[0], "shape_name": "small", "strategies": s} for label, s in cases.items()}}}}
    store = Store(path, doc)
    store.save()
    return store


def test_report_geomeans_markdown_and_pngs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _synthetic_store(tmp_path / "store.json")
    (run_summary,) = summary_json(store)["runs"]
    s = run_summary["strategies"]
    # By hand: time ratios 100/25=4 and 60/20=3; configs 400/50=8 and 300/100=3; latency 1/0.98 and 2.1/2.0.
    assert s["seeded"]["cases"] == 2
    assert s["seeded"]["geomean_time_ratio"] == pytest.approx(math.sqrt(12))
    assert s["seeded"]["geomean_configs_ratio"] == pytest.approx(math.sqrt(24))
    assert s["seeded"]["geomean_latency_ratio"] == pytest.approx(math.sqrt(1 / 0.98 * 1.05))
    assert s["seeded"]["worst_latency_ratio"] == pytest.approx(1.05)
    assert s["lfbo"] == {"cases": 3, "geomean_time_ratio": 1.0, "geomean_configs_ratio": 1.0,
                         "geomean_latency_ratio": 1.0, "worst_latency_ratio": 1.0}
    assert {(e["case"], e["strategy"]) for e in run_summary["excluded_from_geomeans"]} == {
        ("p.m:c@small", "seeded"), ("p.m:d@small", "seeded")}
    rows = {(r["case"], r["strategy"]): r for r in analyse(store.doc["runs"][run_summary["key"]])["rows"]}
    assert rows[("p.m:a@small", "seeded")]["ratios"]["latency_from"] == "same process"
    assert rows[("p.m:b@small", "seeded")]["ratios"]["latency_from"] == "separate processes"

    # The CLI prints the same summary.
    assert kiln_main(["bench", "--report", "--json", "--store", str(store.path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["strategies"] == json.loads(json.dumps(s))

    out = tmp_path / "report"
    assert kiln_main(["bench", "--report", "--store", str(store.path), "--out", str(out)]) == 0
    md = (out / "README.md").read_text()
    assert md == markdown(store, {run_summary["key"]: {"best latency vs configs explored": [p.name for p in out.glob("trajectory_*.png")],
                                                          "per-case tuning-time ratio": [p.name for p in out.glob("time_ratio_*.png")]}}) + "\n"
    assert f"| seeded | 2 | {math.sqrt(12):.2f} | {math.sqrt(24):.2f} | {math.sqrt(1 / 0.98 * 1.05):.4f} | 1.0500 |" in md
    assert "p.m:c@small `seeded`: no matching lfbo baseline" in md and "p.m:d@small `seeded`: failed: RuntimeError: boom" in md
    pngs = sorted(out.glob("*.png"))
    assert [p.name.split("_")[0] for p in pngs] == ["time", "trajectory"]
    for p in pngs:
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000
        assert f"]({p.name})" in md


# ----------------------------------------------------------------------------- (3) one real run, Pallas interpret

def test_kiln_bench_end_to_end_on_tinypkg(tinypkg: Path) -> None:
    env = clean_env(**PALLAS_INTERPRET, KILN_DEVICE="cpu", HELION_AUTOTUNE_FINAL_REBENCHMARK_TOP_K="3",
                    HELION_AUTOTUNE_FINAL_REBENCHMARK_TARGET_MS="300")
    store_path = tinypkg / "bench" / "results" / "store.json"
    cmd = [sys.executable, "-m", "tuning.cli", "bench", "--cases", "tinypkg.ops:add@small", "--strategies", "lfbo,seeded",
           "--lfbo-effort", "quick", "--rounds", "2"]
    run(cmd, tinypkg, env, timeout=240)

    doc = json.loads(store_path.read_text())
    (key, run_doc) = next(iter(doc["runs"].items()))
    assert run_doc["gpu"] == {"name": "cpu", "arch": "pallas:interpret"} and "helion=1.5.0" in key
    assert run_doc["peaks"]["copy_gbps"] is None and "no CUDA GPU" in run_doc["peaks"]["reason"]
    recs = run_doc["cases"]["tinypkg.ops:add@small"]["strategies"]
    assert set(recs) == {"lfbo", "seeded"}
    for name, rec in recs.items():
        assert "error" not in rec and "ms_error" not in rec, rec
        assert rec["ms"] > 0 and rec["timer"] == "wall" and rec["measure_rounds"] == 2
        assert rec["measure_pid"] != os.getpid()  # measured in a fresh process
        assert rec["configs_tested"] >= 1 and rec["tuning_seconds"] > 0 and rec["config"]["block_sizes"]
        assert rec["ref_ms"] is None and rec["ref_reason"] == "no add_ref in tinypkg.ops"
        assert rec["roofline"]["bytes"] == 3 * 64 * 128 * 4 and rec["roofline"]["fraction"] is None
        pts = rec["trajectory"]["points"]
        assert rec["trajectory"]["source"].startswith("helion search") and pts and pts[-1][0] == rec["trajectory"]["entries"]
        assert all(b[1] <= a[1] for a, b in zip(pts, pts[1:]))  # best-so-far never worsens
    assert recs["lfbo"]["measure_pid"] != recs["seeded"]["measure_pid"]
    assert recs["seeded"]["vs_lfbo"]["lfbo_config"] == recs["lfbo"]["config"] and recs["seeded"]["vs_lfbo"]["lfbo_ms"] > 0
    assert recs["lfbo"]["budget"]["effort"] == "quick" and recs["lfbo"]["budget"]["initial_population"] == 2

    again = run(cmd, tinypkg, env, timeout=120)
    assert "2 reused" in again.stderr and "0 to run" in again.stderr
    assert json.loads(store_path.read_text()) == doc
