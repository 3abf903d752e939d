"""`kiln bench`: the resumable store, the report against lfbo, and one real run under Pallas interpret."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import PALLAS_INTERPRET, clean_env, fixed_answer_llm, run
from tuning.bench.compare import analyse, display_name, summary_json
from tuning.bench.report import ROOF_OVER_ONE, markdown
from tuning.bench.run import BenchOptions, Engine, run_bench
from tuning.bench.seeding import LOCK_SEEDING, SEEDING, seed_digest
from tuning.bench.store import Store, run_key
from tuning.cli import main as kiln_main
from tuning.lock import LockEntry
from tuning.plan import Case
from tuning.strategies import _REGISTRY, strategy_limits
from tuning.runtime.keys import DeviceKey
from tuning.specs import ShapeSpec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- (1) store round trip and resume

FAKE_SHAPE_KEYS = {"small": "f32[4]", "medium": "f32[8]", "large": "f32[16]"}  # what a record says it measured


class FakeTune:
    """A named stand-in for the engine's tune: no Helion; records what it was asked to tune."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.seeds: list[tuple[dict[str, Any], ...]] = []  # context.seeds of each call
        self.seed_shapes: list[tuple[str, ...]] = []  # context.seed_shapes of each call
        self.interrupt_at: int | None = None
        self.tag = ""  # appended to non-lfbo configs: a rerun that picks another config
        self.search_best_ms: dict[str, float] = {}  # shape name -> the search's best reading, where given

    def __call__(self, case: Case, name: str, budget: Any, device: str, dev_key: DeviceKey, context: Any) -> Any:
        self.calls.append((f"{case.kernel_id}@{case.spec.name}", name))
        self.seeds.append(tuple(context.seeds))
        self.seed_shapes.append(tuple(context.seed_shapes))
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt  # a run stopped mid-way (Ctrl-C, lost machine)
        lfbo = name == "lfbo"
        config = {"block_sizes": [64]} if lfbo else {"block_sizes": [32], "by": f"{name}@{case.spec.name}{self.tag}"}
        extra = {} if lfbo else {"seeds": len(context.seeds), "as_shipped": {"finalists": 3, "changed": True}}
        if case.spec.name in self.search_best_ms:
            extra["search_best_ms"] = self.search_best_ms[case.spec.name]
        return SimpleNamespace(config=config, shape=FAKE_SHAPE_KEYS.get(case.spec.name),
                               provenance={"configs_tested": 400 if lfbo else 50, "seconds": 100.0 if lfbo else 25.0,
                                           "ms": 1.0, "strategy": name, "budget": {"effort": "quick"},
                                           "versions": {"helion": "1.5.0"}, **extra})


def _fake_engine(cases: list[Case], tune: FakeTune, measured: list[dict[str, Any]],
                 lock_entries: list[LockEntry] | None = None) -> Engine:
    settings = SimpleNamespace(effort="quick", max_generations=1, initial_population=2, polish_rounds=1, seconds=None,
                               seed=0, max_configs=None, llm_settings=lambda: None)
    prep = SimpleNamespace(settings=settings, device="cpu", plan=SimpleNamespace(device=DeviceKey("Fake GPU", "triton:sm00")),
                           cases=cases, lock=SimpleNamespace(sorted_entries=lambda: list(lock_entries or [])))

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
    # What the strategy did (here an as-shipped finish) stays in the record; what the record or the run key
    # already holds under its own name (budget, versions, configs, seconds, ms) is not repeated.
    assert rec["provenance"] == {"strategy": "seeded", "seeds": 0, "as_shipped": {"finalists": 3, "changed": True}}
    assert Store.load(store_path).doc == store.doc  # round trip

    # A second identical run reruns nothing.
    tune.calls.clear()
    bench(["lfbo", "seeded"])
    assert tune.calls == []

    # An edited kernel (new source hash) invalidates that kernel's records, baseline included.
    cases[:] = [_case("pkg.m:k", s, digest="sha256:bbbb") for s in ("small", "large")]
    bench(["lfbo", "seeded"])
    assert tune.calls == [(f"pkg.m:k@{s}", n) for s in ("small", "large") for n in ("lfbo", "seeded")]

    # A changed seeded search (other strategy_limits) reruns seeded's records, and only those.
    import tuning.strategies.seeded as seeded_mod

    assert rec["strategy_limits"] == seeded_mod.search_limits()
    tune.calls.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(seeded_mod.WITH_SEEDS, "polish_rounds", 99)
        bench(["lfbo", "seeded"])
    assert tune.calls == [("pkg.m:k@small", "seeded"), ("pkg.m:k@large", "seeded")]


def test_seeded_variant_changes_the_search_and_the_records_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tuning.strategies.seeded as seeded_mod
    from bench.seeded_variant import apply

    monkeypatch.setattr(seeded_mod, "WITH_SEEDS", dict(seeded_mod.WITH_SEEDS))
    monkeypatch.setattr(seeded_mod, "COMPILER_SEEDS_ONLY", dict(seeded_mod.COMPILER_SEEDS_ONLY))
    monkeypatch.setattr(seeded_mod, "FAST_FINISH", dict(seeded_mod.FAST_FINISH))
    apply(["with_seeds.copies=3", "compiler_seeds_only.initial_population=40", "fast_finish.adaptive_timeout_floor_s=5"])
    assert seeded_mod.WITH_SEEDS["copies"] == 3 and seeded_mod.COMPILER_SEEDS_ONLY["initial_population"] == 40
    assert seeded_mod.search_limits()["fast_finish"]["adaptive_timeout_floor_s"] == 5
    opts = BenchOptions(tmp_path, {}, None, ["seeded"], tmp_path / "store.json")
    store = run_bench(opts, log=lambda m: None, engine=_fake_engine([_case("pkg.m:k", "s")], FakeTune(), []))
    (run_doc,) = store.doc["runs"].values()
    limits = run_doc["cases"]["pkg.m:k@s"]["strategies"]["seeded"]["strategy_limits"]
    assert limits["with_seeds"]["copies"] == 3 and limits["compiler_seeds_only"]["initial_population"] == 40
    # A variant run on one shape starts from the seeds today's seeded had there: its records at the other shapes.
    import tuning.bench.run as bench_run
    from bench.seeded_variant import seed_from_stored_picks

    original_own_seeds = bench_run.own_seeds
    monkeypatch.setattr(bench_run, "own_seeds", original_own_seeds)  # restored after the test
    tune = FakeTune()
    with pytest.MonkeyPatch.context() as mp:
        for table in ("WITH_SEEDS", "COMPILER_SEEDS_ONLY"):
            mp.setattr(seeded_mod, table, dict(getattr(seeded_mod, table)))
        mp.setitem(seeded_mod.WITH_SEEDS, "copies", 2)  # today's limits as the test's baseline
        mp.setitem(seeded_mod.COMPILER_SEEDS_ONLY, "initial_population", 30)
        shipped = json.loads(json.dumps(seeded_mod.search_limits()))  # a copy: the limits hold the live tables
        both = [_case("pkg.m:k", "m"), _case("pkg.m:k", "s")]  # declared; a variant call picks s alone
        opts = BenchOptions(tmp_path, {}, None, ["seeded"], tmp_path / "var.json")
        run_bench(opts, log=lambda m: None, engine=_fake_engine(both, tune, []))
        opts = BenchOptions(tmp_path, {}, ["pkg.m:k@s"], ["seeded"], tmp_path / "var.json")
        mp.setitem(seeded_mod.WITH_SEEDS, "copies", 3)  # the variant
        tune.seeds.clear()
        run_bench(opts, log=lambda m: None, engine=_fake_engine(both, tune, []))
        assert tune.seeds == [()]  # the bench alone: today's record at m is another search's, no seed
        seed_from_stored_picks(shipped)
        tune.seeds.clear()
        mp.setitem(seeded_mod.WITH_SEEDS, "copies", 4)  # another variant, so s runs again
        run_bench(opts, log=lambda m: None, engine=_fake_engine(both, tune, []))
        assert tune.seeds == [({"block_sizes": [32], "by": "seeded@m"},)]
        # What the script does since session 27 changed today's search (the warm worker): the stored record at m,
        # made by a search that is no longer today's, still seeds the variant (None: records of any limits).
        mp.setitem(seeded_mod.WITH_SEEDS, "polish_rounds", 77)  # today's search moved on; m's record is older now
        monkeypatch.setattr(bench_run, "own_seeds", original_own_seeds)
        seed_from_stored_picks(None)
        tune.seeds.clear()
        mp.setitem(seeded_mod.WITH_SEEDS, "copies", 5)  # another variant
        run_bench(opts, log=lambda m: None, engine=_fake_engine(both, tune, []))
        assert tune.seeds == [({"block_sizes": [32], "by": "seeded@m"},)]
    with pytest.raises(SystemExit, match=r"unknown limit 'with_seeds\.nope'; valid: with_seeds\.initial_population, "):
        apply(["with_seeds.nope=1"])
    with pytest.raises(SystemExit, match="with_seeds.copies wants an integer, got 'two'"):
        apply(["with_seeds.copies=two"])


# ----------------------------------------------------------------------------- (2) report on a synthetic store

def _rec(sec: float, cfgs: int, ms: float, config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"source_hash": "h", "spec": "s", "budget": {}, "tuning_seconds": sec, "configs_tested": cfgs, "ms": ms,
            "config": config, "ref_ms": 2 * ms, "roofline": {"fraction": None, "reason": "cpu"},
            "trajectory": {"points": [[1, 3 * ms], [cfgs // 2, 1.5 * ms], [cfgs, ms]]}, **extra}


def test_a_finish_that_would_not_act_keeps_a_record_as_todays_search(tmp_path: Path) -> None:
    """Turning on seeded's small-kernel finish reruns only the cases it would act on (session 43).

    The finish runs after an unchanged search and acts only where the search's best reads under its
    threshold; a record over it is what the search with the finish makes, so neither the bench nor
    the report may treat it as another search (that would rerun 26 of the H200 table's 36 rows).
    """
    import tuning.strategies.seeded as seeded_mod
    from tuning.bench.same_search import before_finishes, same_search

    store_path = tmp_path / "store.json"
    cases = [_case("pkg.m:k", "small"), _case("pkg.m:k", "large")]
    tune, measured = FakeTune(), []
    tune.search_best_ms = {"small": 0.0074, "large": 0.2}

    def bench() -> Store:
        return run_bench(BenchOptions(tmp_path, {}, None, ["lfbo", "seeded"], store_path), log=lambda m: None,
                         engine=_fake_engine(cases, tune, measured))

    bench()
    tune.calls.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(seeded_mod.SMALL_KERNEL_FINISH, "finalists", 8)
        today = {"seeded": strategy_limits("seeded")}
        # Before the rerun the report keeps the small case apart (the finish would act there), not the large one.
        (run,) = summary_json(Store.load(store_path), today)["runs"]
        assert run["strategies"]["seeded"]["cases"] == 1
        assert run["strategies"]["seeded (other search: small_kernel_finish)"]["cases"] == 1
        store = bench()
        assert tune.calls == [("pkg.m:k@small", "seeded")]
        (run,) = summary_json(store, today)["runs"]
        assert run["strategies"]["seeded"]["cases"] == 2
    # Turned off again, the record the finish made on the small case is another search; the large one is not.
    tune.calls.clear()
    bench()
    assert tune.calls == [("pkg.m:k@small", "seeded")]

    on = {**LIMITS["seeded"], "small_kernel_finish": {"finalists": 8, "below_ms": 0.025}}
    wider = {**LIMITS["seeded"], "small_kernel_finish": {"finalists": 16, "below_ms": 0.025}}
    off = LIMITS["seeded"]
    assert same_search({"strategy_limits": off, "search_best_ms": 0.03}, on)
    assert same_search({"strategy_limits": on, "search_best_ms": 0.025}, off)  # at the threshold: it does not act
    assert same_search({"strategy_limits": on, "search_best_ms": 0.03}, wider)
    assert not same_search({"strategy_limits": off, "search_best_ms": 0.0074}, on)
    assert not same_search({"strategy_limits": off}, on)  # no reading to compare: another search
    assert not same_search({"strategy_limits": {**off, "polish": {"max_neighbors": 24}}, "search_best_ms": 0.03}, on)
    assert not same_search({"search_best_ms": 0.03}, off)  # limits not recorded
    # The search before the finish is one search, finish on or off, acting or not (search_repeat pairs such draws).
    assert before_finishes(on) == before_finishes(wider) == before_finishes(off) == off and before_finishes(None) is None


LIMITS = {name: strategy_limits(name) for name in _REGISTRY}  # today's searches, as `kiln bench --report` passes them
NOW = {"strategy_limits": LIMITS["seeded"], "seeding": SEEDING}  # a seeded record made by today's search and seeding


def _synthetic_store(path: Path) -> Store:
    lf_a, lf_b = {"b": [64]}, {"b": [128]}
    cases = {
        # same-process pair with the current lfbo config: latency ratio 1.0 / 0.98
        "p.m:a@small": {"lfbo": _rec(100, 400, 1.0, lf_a),
                        "seeded": _rec(25, 50, 1.02, {"b": [32]}, vs_lfbo={"lfbo_config": lf_a, "lfbo_ms": 0.98, "ms": 1.0}, **NOW)},
        # pair measured against an older lfbo config: falls back to 2.1 / 2.0
        # lfbo stopped at its 60 s cap (58 s >= 0.95 x 60): flagged, still in the geomeans
        "p.m:b@small": {"lfbo": _rec(58, 300, 2.0, lf_b, budget={"seconds": 60}),
                        "seeded": _rec(20, 100, 2.1, {"b": [16]}, vs_lfbo={"lfbo_config": {"b": [1]}, "lfbo_ms": 1.0, "ms": 1.0},
                                       **NOW)},
        "p.m:c@small": {"seeded": _rec(10, 10, 1.0, {"b": [8]}, **NOW)},  # no lfbo baseline
        "p.m:d@small": {"lfbo": _rec(50, 200, 1.0, lf_a),
                        "seeded": {"error": "RuntimeError: boom", "source_hash": "h", "spec": "s", **NOW}},
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
    (run_summary,) = summary_json(store, LIMITS)["runs"]
    s = run_summary["strategies"]
    # By hand: time ratios 100/25=4 and 58/20=2.9; configs 400/50=8 and 300/100=3; latency 1/0.98 and 2.1/2.0.
    assert s["seeded"]["cases"] == 2
    assert s["seeded"]["geomean_time_ratio"] == pytest.approx(math.sqrt(4 * 2.9))
    assert run_summary["lfbo_hit_seconds_cap"] == ["p.m:b@small"]
    assert s["seeded"]["geomean_configs_ratio"] == pytest.approx(math.sqrt(24))
    assert s["seeded"]["geomean_latency_ratio"] == pytest.approx(math.sqrt(1 / 0.98 * 1.05))
    assert s["seeded"]["worst_latency_ratio"] == pytest.approx(1.05)
    # The bar: 4x time (3.41: no), latency geomean <= 1.01 (1.0351: no), worst <= 1.05 (1.05: yes, nothing over).
    assert s["seeded"]["meets_bar"] == {"time_ratio": False, "latency_geomean": False, "worst_latency": True}
    assert s["seeded"]["cases_over_worst_bar"] == []
    assert s["lfbo"] == {"cases": 3, "geomean_time_ratio": 1.0, "geomean_configs_ratio": 1.0,
                         "geomean_latency_ratio": 1.0, "worst_latency_ratio": 1.0}
    assert {(e["case"], e["strategy"]) for e in run_summary["excluded_from_geomeans"]} == {
        ("p.m:c@small", "seeded"), ("p.m:d@small", "seeded")}
    rows = {(r["case"], r["strategy"]): r for r in analyse(store.doc["runs"][run_summary["key"]])["rows"]}
    assert rows[("p.m:a@small", "seeded")]["ratios"]["latency_from"] == "same process"
    assert rows[("p.m:b@small", "seeded")]["ratios"]["latency_from"] == "separate processes"

    # The CLI prints the same summary.
    # (--project: a folder with no project, so no coverage line; its absence costs only that line.)
    away = ["--project", str(tmp_path)]
    assert kiln_main(["bench", "--report", "--json", "--store", str(store.path), *away]) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out)["runs"][0]["strategies"] == json.loads(json.dumps(s))
    assert "no coverage line" in printed.err and "pyproject.toml not found" in printed.err
    assert "coverage" not in json.loads(printed.out)["runs"][0]

    out = tmp_path / "report"
    assert kiln_main(["bench", "--report", "--store", str(store.path), "--out", str(out), *away]) == 0
    md = (out / "README.md").read_text()
    assert md == markdown(store, {run_summary["key"]: {"best latency vs configs explored": [p.name for p in out.glob("trajectory_*.png")],
                                                          "per-case tuning-time ratio": [p.name for p in out.glob("time_ratio_*.png")]}},
                          LIMITS) + "\n"
    assert f"| seeded | 2 | {math.sqrt(4 * 2.9):.2f} **no** | {math.sqrt(1 / 0.98 * 1.05):.4f} **no** | 1.0500 yes | 0 |" in md
    assert f"| seeded | 2 | {math.sqrt(4 * 2.9):.2f} | {math.sqrt(24):.2f} | {math.sqrt(1 / 0.98 * 1.05):.4f} | 1.0500 |" in md
    assert "`lfbo` stopped at its `seconds` cap" in md and "\n- p.m:b@small\n" in md
    assert "p.m:c@small `seeded`: no matching lfbo baseline" in md and "p.m:d@small `seeded`: failed: RuntimeError: boom" in md
    assert "Fractions over 1" not in md  # every roofline here is null

    # A fraction over 1 (seen on the H200 for rms_norm and softmax) comes with the note that says how to read it.
    (run_doc,) = store.doc["runs"].values()
    run_doc["cases"]["p.m:a@small"]["strategies"]["lfbo"]["roofline"] = {"fraction": 1.42, "bound": "bytes"}
    assert ROOF_OVER_ONE in markdown(store, {}, LIMITS)

    # Rows measured under different copy peaks are put on one scale: the fastest this GPU showed in the store.
    rec = run_doc["cases"]["p.m:a@small"]["strategies"]["lfbo"]
    nbytes = int(rec["ms"] * 1e-3 * 2000e9)  # exactly the old 2000 GB/s peak: fraction 1.0 as stored
    rec["roofline"] = {"bytes": nbytes, "flops": None, "family": "a", "bound": "bytes", "fraction": 1.0,
                       "peaks": {"copy_gbps": 2000.0, "bf16_tflops": 500.0}}
    run_doc["peaks"] = {"copy_gbps": 4000.0, "bf16_tflops": 400.0}
    scaled = markdown(store, {}, LIMITS)
    row = next(line for line in scaled.splitlines() if line.startswith("| p.m:a@small | lfbo |"))
    assert "| 0.50 (bytes) |" in row and "copy 4000.0 GB/s, bf16 500.0 TFLOP/s" in scaled
    assert ROOF_OVER_ONE not in scaled
    assert rec["roofline"]["fraction"] == 1.0  # the store itself keeps what the run measured

    pngs = sorted(out.glob("*.png"))
    assert [p.name.split("_")[0] for p in pngs] == ["time", "trajectory"]
    for p in pngs:
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000
        assert f"]({p.name})" in md


def _store_of(cases: dict[str, dict[str, Any]], path: Path) -> Store:
    """A one-run H200 store holding ``cases`` (label -> strategy -> record)."""
    doc = {"format": 1, "runs": {"H200|x": {
        "gpu": {"name": "H200", "arch": "triton:sm90"}, "versions": {"helion": "1.5.0"}, "peaks": {},
        "cases": {label: {"kernel_id": label.partition("@")[0], "shape_name": label.partition("@")[2], "strategies": s}
                  for label, s in cases.items()}}}}
    return Store(path, doc)


def _drawn(ms: float, best: float, limits: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A `seeded` record paired with `lfbo`'s pick (1.0 ms) in one process, its search's best read ``best`` ms."""
    return {**_rec(50, 80, ms, {"b": [32]}, vs_lfbo={"lfbo_config": {"b": [64]}, "lfbo_ms": 1.0, "ms": ms},
                   strategy_limits=limits, finished_at=f"t{ms}", search_best_ms=best, **extra),
            "budget": {"effort": "quick", "seconds": 900, "seed": 0}}


def test_report_says_when_the_fresh_process_saw_far_more_than_the_search_and_where_a_wide_search_settled() -> None:
    """Session 24's attention_causal@small: its search rated its pick 3.8% behind lfbo's best, the fresh
    process 25% (at 0.018 ms, Helion's clock is mostly launch overhead); and a wide search that stood
    within 1% of its final best long before it stopped says so, with the config count where it did."""
    from tuning.bench.compare import settled_after, shortfall_why, slow_why

    base = {"search_best_ms": 0.01763, "configs_tested": 529, "tuning_seconds": 290.7, "strategy_limits": {}}
    rec = {"search_best_ms": 0.0183, "seeded_from_shapes": ["medium"], "configs_tested": 231, "tuning_seconds": 141.3,
           "strategy_limits": {}, "trajectory": {"entries": 234, "points": [[1, 0.0434], [82, 0.0188], [128, 0.01846],
                                                                         [234, 0.0183]]}}
    why = shortfall_why(rec, base, 1.2512)
    assert "already rated its pick 3.8% behind" in why
    assert "the fresh process puts it 25.1% behind, over twice what the search saw (under 0.025 ms" in why
    assert "small_kernel_finish" in why
    # A gap the search saw most of is not blamed on the clock, and a slower kernel gets no launch-overhead remark.
    assert "over twice" not in shortfall_why(rec, base, 1.06)
    assert "launch overhead" not in shortfall_why({**rec, "search_best_ms": 0.05}, {**base, "search_best_ms": 0.04}, 1.9)
    # Session 28's rms_norm@small: the search saw its pick level (0.9% behind), the fresh process 12.4%;
    # the clock flattered it, and at 0.0075 ms that is the launch-overhead case too.
    level = shortfall_why({**rec, "search_best_ms": 0.007488}, {**base, "search_best_ms": 0.007424}, 1.1242)
    assert "rated its pick 0.9% behind lfbo's best (0.007488 vs 0.007424 ms" in level
    assert "the search's timings flattered its pick (under 0.025 ms, where Helion's clock is mostly launch overhead" in level
    assert "launch overhead" not in shortfall_why({**rec, "search_best_ms": 2.6}, {**base, "search_best_ms": 2.6}, 1.08)
    # rms_norm small's picks (bench/results/pick_split.json): descriptors where lfbo's reads none, at a tiny kernel.
    P, T = "pointer", "tensor_descriptor"
    tiny = {**rec, "search_best_ms": 0.007424, "config": {"indexing": [T, T, P]}}
    lfbo_tiny = {**base, "search_best_ms": 0.007424, "config": {"indexing": [P, P, P]}}
    assert ("; its pick reads 2 of 3 accesses through tensor descriptors, lfbo's none (tried on the H200 and not "
            "adopted (bench/results/skf8pc4/): seeded's small_kernel_finish.pointer_copies") in shortfall_why(tiny, lfbo_tiny, 1.11)
    assert "pointer_copies" not in shortfall_why({**tiny, "search_best_ms": 0.05}, lfbo_tiny, 1.11)  # not a tiny kernel
    assert "pointer_copies" not in shortfall_why(tiny, {**lfbo_tiny, "config": {"indexing": [T, P, P]}}, 1.11)

    assert settled_after(rec) == (128, 234) and settled_after({"trajectory": {}}) is None
    assert ("its search was wide: 231 configs against lfbo's 529 (2.29x fewer); within 1% of its final best after "
            "the first 128 of 234 configs in its trajectory; 141 s against lfbo's 291 s") in slow_why(rec, base)


def test_report_says_when_lfbo_s_tile_is_the_pick_s_seed_tile_scaled_toward_its_shape() -> None:
    """gdn large (H200): every stored pick kept the medium seed's [64], lfbo's is [128]; the report names the fix built.

    ``seed_tile`` finds the first seed a first build hands the search and which way the row's
    shape lies from it; ``tile_remark`` speaks only where lfbo's tile is that seed's scaled.
    """
    from tuning.bench.compare import seed_tile, tile_remark
    from tuning.bench.seeding import BuildSeeds

    lfbo = {"config": {"block_sizes": [128]}}
    kept = {"config": {"block_sizes": [64]}}
    assert tile_remark(kept, lfbo, [64], 1) == (
        "; lfbo's tile [128] is its seed's [64] doubled toward this shape, and the pick kept it (tried on the H200 and "
        "not adopted (bench/results/variants_session61/): seeded's seed_variants.scaled_tiles, the seed again with its "
        "tile scaled)")
    assert "the pick is on [32, 16]" in tile_remark({"config": {"block_sizes": [32, 16]}},
                                                  {"config": {"block_sizes": [128, 64]}}, [256, 64], -1)
    assert tile_remark(kept, lfbo, [64], -1) == ""  # halving [64] does not reach lfbo's [128]
    assert tile_remark(kept, lfbo, [64], 0) == "" and tile_remark(kept, lfbo, None, 1) == ""  # same shape; cold start
    assert tile_remark(lfbo, lfbo, [64], 1) == ""  # already on lfbo's tile

    def rec(tile: list[int], shape: str, seeded_from: list[str]) -> dict[str, Any]:
        return {"config": {"block_sizes": tile}, "shape": shape, "seeded_from_shapes": seeded_from, "source_hash": "h", **NOW}

    run = {"cases": {
        "p.m:k@medium": {"kernel_id": "p.m:k", "shape_name": "medium", "strategies": {"seeded": rec([64], "f32[8]", [])}},
        "p.m:k@large": {"kernel_id": "p.m:k", "shape_name": "large",
                        "strategies": {"seeded": rec([64], "f32[16]", ["medium"])}}}}
    build = BuildSeeds(run, {"p.m:k@medium": frozenset(), "p.m:k@large": frozenset({"medium"})}, LIMITS)  # the build order
    assert seed_tile(build, run, "p.m:k@large", "seeded", run["cases"]["p.m:k@large"]["strategies"]["seeded"]) == ([64], 1)
    assert seed_tile(build, run, "p.m:k@medium", "seeded", run["cases"]["p.m:k@medium"]["strategies"]["seeded"]) == (None, 0)


def test_report_keeps_an_earlier_search_apart_and_says_why_a_case_misses_the_bar(tmp_path: Path) -> None:
    lf = {"b": [64]}
    older = {**LIMITS["seeded"], "with_seeds": {**LIMITS["seeded"]["with_seeds"], "polish_rounds": 2}}
    cases = {
        # today's seeded, 1.10x in the same process; its search saw its pick 10% behind lfbo's best
        # (right after each search, its own tuning process read the two picks 1.1x apart too)
        "p.m:a@medium": {"lfbo": _rec(400, 500, 1.0, lf, search_best_ms=0.9, tune_ms=1.0),
                         "seeded": _rec(50, 80, 1.1, {"b": [32]}, search_best_ms=0.99, seeded_from_shapes=[], tune_ms=1.1,
                                        vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": 1.1}, **NOW)},
        # today's seeded, 1.08x, though its search rated it level with lfbo's (a flattering clock)
        # (and the tuning processes read the two picks only 1.02x apart: nearer than the pairing)
        "p.m:a@small": {"lfbo": _rec(300, 400, 1.0, lf, search_best_ms=0.5, tune_ms=1.0),
                        "seeded": _rec(60, 90, 1.08, {"b": [16]}, search_best_ms=0.5, seeded_from_shapes=["medium"], tune_ms=1.02,
                                       vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": 1.08}, **NOW)},
        # an earlier seeded search (other limits) and one from before limits were recorded: both kept apart
        "p.m:b@small": {"lfbo": _rec(300, 400, 1.0, lf), "seeded": _rec(30, 40, 1.0, {"b": [8]}, strategy_limits=older,
                                                                       seeding=SEEDING)},
        "p.m:c@small": {"lfbo": _rec(300, 400, 1.0, lf), "seeded": _rec(30, 40, 1.0, {"b": [4]})},
        # today's search, but seeded from the lock (sessions 10-22's rule): lfbo's configs at other shapes
        "p.m:g@small": {"lfbo": _rec(300, 400, 1.0, lf), "seeded": _rec(30, 40, 0.9, {"b": [4]}, **{
            **NOW, "seeding": LOCK_SEEDING, "seeds_from_lock": 2})},
        # today's seeded, level on latency but only 2x less time: once from a wide search, once from dear configs
        "p.m:e@medium": {"lfbo": _rec(400, 900, 1.0, lf), "seeded": _rec(200, 600, 1.0, {"b": [2]}, **NOW)},
        "p.m:f@medium": {"lfbo": _rec(400, 800, 1.0, lf), "seeded": _rec(200, 100, 1.0, {"b": [2]}, **NOW)},
    }
    store = _store_of(cases, tmp_path / "store.json")
    (run,) = summary_json(store, LIMITS)["runs"]
    s = run["strategies"]
    # Each older search is its own group, named by the parts of its limits that differ from today's.
    assert s["seeded"]["cases"] == 4
    assert s["seeded (other search: with_seeds)"]["cases"] == 1
    assert s["seeded (other search: not recorded, seeding)"]["cases"] == 1
    assert s["seeded (other search: seeding)"]["cases"] == 1
    assert s["seeded"]["meets_bar"] == {"time_ratio": False, "latency_geomean": False, "worst_latency": False}
    assert s["seeded"]["cases_over_worst_bar"] == ["p.m:a@medium", "p.m:a@small"]
    assert s["seeded"]["cases_under_time_bar"] == ["p.m:e@medium", "p.m:f@medium"]
    # Each case over the bar split into the gap its search saw and what appeared only after it.
    assert s["seeded"]["over_worst_bar_split"] == [
        {"case": "p.m:a@medium", "latency_ratio": pytest.approx(1.1), "search_gap": 1.1, "after_search": 1.0,
         "mostly": "in the search", "right_after_search": 1.1},
        {"case": "p.m:a@small", "latency_ratio": pytest.approx(1.08), "search_gap": 1.0, "after_search": 1.08,
         "mostly": "after the search", "right_after_search": 1.02}]
    assert s["seeded (other search: with_seeds)"]["worst_latency_ratio"] == pytest.approx(1.0)
    # Split by how each search started: the cold first shapes apart from the shapes seeded from them.
    cold, seeded = s["seeded"]["by_seeds"]["cold"], s["seeded"]["by_seeds"]["seeded"]
    assert cold["cases"] == 3 and cold["cases_over_worst_bar"] == ["p.m:a@medium"]
    assert cold["geomean_latency_ratio"] == pytest.approx(1.1 ** (1 / 3)) and cold["worst_latency_ratio"] == pytest.approx(1.1)
    assert seeded["cases"] == 1 and seeded["cases_over_worst_bar"] == ["p.m:a@small"]
    assert seeded["geomean_time_ratio"] == pytest.approx(5.0)
    md = markdown(store, None, LIMITS)
    assert "| seeded | cold | 3 | 3.17 | 1.0323 | 1.1000 | 1 |" in md and "| seeded | seeded | 1 | 5.00 | 1.0800 | 1.0800 | 1 |" in md
    assert "- p.m:a@medium `seeded` 1.1000: cold start (no seeds); its search already rated its pick 10.0% behind" in md
    assert "1 of 2 lost more after their search than in it" in md
    assert "| p.m:a@medium | seeded | 1.1000 | 1.100 | 1.000 | in the search | 1.100 |" in md
    assert "| p.m:a@small | seeded | 1.0800 | 1.000 | 1.080 | after the search | 1.020 |" in md
    assert "1 of 2 are over 1.05 there too" in md and "On p.m:a@small (1.020) the two picks' own readings were nearer" in md
    assert ("- p.m:a@small `seeded` 1.0800: seeded from medium; its search rated its pick 0.0% ahead of lfbo's best "
            "(0.5 vs 0.5 ms, each search's clock), the fresh process 1.080x: the search's timings flattered its pick; "
            "1 knob from lfbo's config (b)") in md
    assert ("- p.m:e@medium `seeded` 2.00x: cold start (no seeds); its search was wide: 600 configs against lfbo's 900 "
            "(1.50x fewer); 200 s against lfbo's 400 s") in md
    assert ("- p.m:f@medium `seeded` 2.00x: cold start (no seeds); each config cost 2.00 s against lfbo's 0.50 s") in md
    assert "`name (other search: keys)`: made by an earlier or trial version" in md
    assert "| seeded (other search: with_seeds) | 1 |" in md
    assert "`seeding`: its search did not start from what a first build hands it" in md
    assert "it took `kiln.lock`'s entries" in md
    # Read without today's limits (no strategies at hand), nothing is relabelled.
    assert set(summary_json(store)["runs"][0]["strategies"]) == {"lfbo", "seeded"}


def test_report_gives_the_latency_geomean_without_cases_where_lfbo_ended_far_behind(tmp_path: Path) -> None:
    """One case where lfbo's own search ended 30% slower (rope@small, session 15) must not hide that the rest miss 1.01."""
    lf = {"b": [64]}

    def pair(ms: float) -> dict[str, Any]:
        return {"lfbo": _rec(400, 500, 1.0, lf),
                "seeded": _rec(80, 100, ms, {"b": [32]}, vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": ms}, **NOW)}

    cases = {"p.m:a@small": pair(0.7), "p.m:a@medium": pair(1.02), "p.m:a@large": pair(1.03)}
    store = _store_of(cases, tmp_path / "store.json")
    (run,) = summary_json(store, LIMITS)["runs"]
    s = run["strategies"]["seeded"]
    assert s["geomean_latency_ratio"] == pytest.approx((0.7 * 1.02 * 1.03) ** (1 / 3))  # under 1.01: the bar reads yes
    assert s["meets_bar"]["latency_geomean"] is True
    assert s["cases_far_ahead_of_lfbo"] == ["p.m:a@small"]
    assert s["geomean_latency_ratio_without_far_ahead"] == pytest.approx((1.02 * 1.03) ** 0.5)
    assert run["strategies"]["lfbo"].get("cases_far_ahead_of_lfbo") is None
    md = markdown(store, None, LIMITS)
    assert ("`seeded` ran faster than `lfbo` by more than 5% on p.m:a@small (0.7000): `lfbo`'s full search ended on a "
            "slower config there, and such a case pulls the latency geomean down. Without it (2 cases): latency geomean "
            "1.0250 **no**.") in md


def test_copy_peak_is_the_fastest_of_streams_that_really_copy() -> None:
    """Each candidate moves the same bytes (checked on CPU tensors); the fastest sets copy_gbps, all are kept."""
    import torch

    from tuning.bench.roofline import best_copy, copy_candidates

    src = torch.arange(64, dtype=torch.uint8)
    for name in copy_candidates(src, torch.empty_like(src)):
        dst = torch.zeros_like(src)
        copy_candidates(src, dst)[name]()
        assert torch.equal(dst, src), name

    fake_ms = {"memcpy": 0.79, "elementwise": 0.5}
    timed: list[str] = []

    def timer(fn: Any, device: str) -> tuple[float, str]:
        name = next(n for n, f in cands.items() if f is fn)
        timed.append(name)
        return fake_ms[name], "cudagraph"

    cands = {"memcpy": lambda: None, "elementwise": lambda: None}
    out = best_copy(cands, 1 << 30, "cuda", timer)
    assert sorted(timed) == ["elementwise", "memcpy"]
    assert out["copy"]["by"] == "elementwise" and out["copy"]["candidates_ms"] == fake_ms
    assert out["copy_gbps"] == pytest.approx(2 * (1 << 30) / 0.5e-3 / 1e9, abs=0.01)


def test_polish_replay_reads_rounds_back_from_a_log(tmp_path: Path) -> None:
    """bench/polish_replay.py on a log cut the way `kiln bench` and Helion write it (session 14's rope@medium, shortened)."""
    from bench.polish_replay import main, parse, with_caps

    log = tmp_path / "table.log"
    log.write_text("\n".join([
        "kiln bench: tune p.m:k@medium with lfbo",
        "[5s] Generation 1 complete: ",
        "kiln bench: tune p.m:k@medium with seeded",
        "[21s] Qualified population of 30, 2 retained search paths: ",
        "ok=30 | min=0.2727 mid=0.8019 max=30.8837",
        "[72s] Generation 5 complete: ",
        "ok=33 | min=0.1000 mid=0.12 max=0.4",
        "[99s] Polish round 1: 95 neighbors, best 0.0951ms",
        "[123s] Polish round 2: 74 neighbors, best 0.0922ms",
        "[146s] Polish round 3: 71 neighbors, best 0.0920ms",
        "[217s] Final verification selected a different config: 0.0916ms -> 0.0912ms",
        "[219s] Autotuning complete in 219.5s after searching 642 configs.",
        "kiln bench: tune p.m:k@small with seeded",  # cut before it finished: not a search to replay
        "[3s] Polish round 1: 9 neighbors, best 0.01ms",
    ]) + "\n")
    (search,) = parse(log)
    assert (search["case"], search["main_end_s"], search["configs"]) == ("p.m:k@medium", 72, 642)
    assert [r["best_ms"] for r in search["rounds"]] == [0.0951, 0.0922, 0.0920]
    row = with_caps(search)
    assert row["polish_s"] == 146 - 72
    # A cap of 1 ends at round 1 plus the finish it ran after its last round (219.5 - 146 s).
    assert row["caps"]["1"] == {"seconds": 99 + 73.5, "best_ms": 0.0951, "loss": round(0.0951 / 0.0920 - 1, 4)}
    assert row["caps"]["3"]["loss"] == 0.0 and row["caps"]["0"]["best_ms"] == 0.1
    out = tmp_path / "replay.json"
    assert main([str(log), "--out", str(out)]) == 0 and len(json.loads(out.read_text())["searches"]) == 1


def test_seeded_phases_splits_a_logged_search_and_estimates_shorter_compile_waits(tmp_path: Path) -> None:
    """bench/seeded_phases.py on a log shaped like session 24's swiglu@large (shortened), judged against a store."""
    from bench.seeded_phases import WARM_WORKER_SAVES_S, main, outside_bars, parse, phases, shorter_waits_saving

    log = tmp_path / "table.log"
    log.write_text("\n".join([
        "kiln bench: tune p.m:k@large with seeded",
        "[2s] Starting with seed/default configs",
        "[23s] Timeout after 20s compiling Config(block_sizes=[256, 256])",
        "Initial population precompiling 100% ━━━━━━━━━ 24/24   1.0 configs/s",
        "Initial population exploring neighbors 100% ━━━━━━━━━ 24/24   6.0 configs/s",
        "[43s] Adaptive compile timeout: 10s (90% percentile=8.1s, bounds=[10s, 20s])",
        "[44s] Qualified population of 24, 2 retained search paths: ",
        "timeout=1 ok=23 | min=0.3204 mid=0.4829 max=26.5332",
        "[50s] Timeout after 10s compiling Config(block_sizes=[512, 64])",
        "[52s] Timeout after 10s compiling Config(block_sizes=[512, 128])",
        "[60s] Generation 2 complete: ",
        "[60s] Autotuning stop at generation 3 because of no active search path",
        "[64s] Polish round 1: 24 of 40 (surrogate-picked) neighbors, best 0.3150ms",
        "[67s] Autotuning complete in 67.0s after searching 82 configs.",
    ]) + "\n")
    (search,) = parse(log)
    assert search["rounds"][0]["neighbors"] == 24 and search["adaptive"] == {"timeout_s": 10, "p90_s": 8.1}
    assert phases(search) == {"first_population_s": 44.0, "main_s": 16.0, "polish_s": 4.0, "finish_s": 3.0}
    assert outside_bars(search) == 44.0 - (24 / 1.0 + 24 / 6.0)  # where the benchmark worker's cold start falls
    # The first population's 20 s wait drops to the 10 s cap; the generations' two overlapping 10 s waits
    # count once and drop to Helion's adaptive timeout under the new floor (its 90th percentile, 8 s).
    assert shorter_waits_saving(search) == {"waits": 2, "waited_s": 30, "saved_s": 12, "later_timeout_s": 8}

    store = tmp_path / "store.json"
    rec = {"tuning_seconds": 67.4}
    store.write_text(json.dumps({"format": 1, "runs": {"k": {"cases": {
        "p.m:k@large": {"strategies": {"seeded": rec, "lfbo": {"tuning_seconds": 335.0}}},
        "p.m:k@small": {"strategies": {"seeded": {"tuning_seconds": 50.0}, "lfbo": {"tuning_seconds": 100.0}}}}}}}))
    out = tmp_path / "phases.json"
    assert main([str(log), "--store", str(store), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert list(doc["cases"]) == ["p.m:k@large"] and doc["no_matching_log"] == ["p.m:k@small"]
    assert doc["cases"]["p.m:k@large"]["time_ratio_shorter_waits"] == round(335.0 / (67.4 - 12), 3)
    assert doc["cases"]["p.m:k@large"]["time_ratio_warm_worker"] == round(335.0 / (67.4 - WARM_WORKER_SAVES_S), 3)
    assert doc["geomean_time_ratio"] == pytest.approx(335.0 / 67.4)


def _variant_groups(path: Path, cases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """bench/variant_summary.py's groups for a one-run store holding ``cases`` (label -> strategy -> record)."""
    from bench.variant_summary import summarise

    path.write_text(json.dumps({"format": 1, "runs": {"H200|x": {
        "gpu": {"name": "H200"}, "versions": {}, "peaks": {},
        "cases": {label: {"kernel_id": label.partition("@")[0], "shape_name": label.partition("@")[2], "strategies": st}
                  for label, st in cases.items()}}}}))
    return summarise(path, today=LIMITS["seeded"])["groups"]


def test_variant_summary_judges_each_search_on_its_own_records(tmp_path: Path) -> None:
    """A variant store holds a trial search's records next to older ones: each search gets its own geomeans."""
    lf = {"b": [64]}
    wide = {**LIMITS["seeded"], "with_seeds": {**LIMITS["seeded"]["with_seeds"], "copies": 3}}
    cases = {
        "p.m:a@small": {"lfbo": _rec(400, 500, 1.0, lf),
                        "seeded": _rec(100, 80, 1.0, {"b": [32]}, vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": 1.02},
                                       strategy_limits=wide)},
        "p.m:a@large": {"lfbo": _rec(300, 400, 2.0, lf),
                        "seeded": _rec(150, 90, 2.2, {"b": [16]}, strategy_limits=wide)},  # no pair: 2.2 / 2.0
        "p.m:b@small": {"lfbo": _rec(300, 400, 1.0, lf), "seeded": _rec(30, 40, 1.2, {"b": [8]})},  # limits not recorded
        "p.m:c@small": {"seeded": _rec(30, 40, 1.0, {"b": [4]}, strategy_limits=wide)},  # no baseline: left out
    }
    groups = _variant_groups(tmp_path / "var.json", cases)
    assert len(groups) == 2
    # The label names the one nested knob that differs, value and all, so no two trials share a group.
    trial = groups["today's search but with_seeds.copies=3"]
    assert trial["limits"] == wide
    assert sorted(trial["cases"]) == ["p.m:a@large", "p.m:a@small"]
    summary = trial["summary"]
    assert summary["geomean_time_ratio"] == pytest.approx(math.sqrt(4 * 2))
    assert summary["geomean_latency_ratio"] == pytest.approx(math.sqrt(1.02 * 1.1))
    assert summary["worst_latency_ratio"] == pytest.approx(1.1)
    assert summary["meets_bar"] == {"time_ratio": False, "latency_geomean": False, "worst_latency": False}
    assert groups["older search (limits not recorded)"]["summary"]["worst_latency_ratio"] == pytest.approx(1.2)


def test_every_reader_of_a_proxy_store_sees_only_its_own_draws_and_none_locks_another_card_s_picks(tmp_path: Path) -> None:
    """A proxy store (bench/probes/proxy_store.py) holds another card's seeded picks copied under this card's run
    key, as seeds: summarised as this card's draws, they would read as draws made here, with that card's ratios;
    and its lfbo copies, locked, would be another card's picks entered as this card's."""
    from bench.draws import collect, same_process_draws
    from bench.probes.proxy_store import proxy_doc
    from bench.variant_summary import summarise
    from tuning.bench.compare import PROXY_NOTE
    from tuning.bench.to_lock import adopt

    lf = {"b": [64]}
    medium_pick = _rec(90, 80, 1.3, {"b": [32]}, shape="f32[8]", strategy_limits=LIMITS["seeded"],
                       vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": 1.3})
    cases = {"p.m:a@medium": {"lfbo": _rec(400, 500, 1.0, lf, shape="f32[8]"), "seeded": medium_pick},
             "p.m:a@small": {"lfbo": _rec(300, 400, 1.0, lf, shape="f32[4]")}}
    h200, h100 = {"name": "H200", "arch": "sm90"}, {"name": "H100", "arch": "sm90"}
    table = {"format": 1, "runs": {run_key(h200, {}): {"gpu": h200, "versions": {}, "peaks": {}, "cases": {
        label: {"kernel_id": label.partition("@")[0], "shape_name": label.partition("@")[2], "strategies": st}
        for label, st in cases.items()}}}}
    doc, copied = proxy_doc(table, h100, ["p.m:a@small"])
    assert copied == ["p.m:a@medium lfbo", "p.m:a@medium seeded", "p.m:a@small lfbo"]
    here = doc["runs"][run_key(h100, {})]
    here["cases"]["p.m:a@small"]["strategies"]["seeded"] = _rec(
        60, 50, 1.1, {"b": [16]}, strategy_limits=LIMITS["seeded"], vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": 1.04})
    (tmp_path / "proxy.json").write_text(json.dumps(doc))
    # A fresh machine going on from the committed proxy store (session 52): its draws are kept, nothing is copied again.
    again, copied_again = proxy_doc(doc, h100, ["p.m:a@small", "p.m:a@medium"])
    assert again == doc and copied_again == []
    groups = summarise(tmp_path / "proxy.json", today=LIMITS["seeded"])["groups"]
    (drawn,) = [g for label, g in groups.items() if label.startswith(f"{run_key(h100, {})} (against the lfbo picks of ")]
    assert list(drawn["cases"]) == ["p.m:a@small"] and drawn["cases"]["p.m:a@small"]["latency_ratio"] == 1.04
    assert drawn["proxy_note"] == PROXY_NOTE  # the medium's copied pick (1.3) is the H200's, summarised only there
    (source,) = [g for label, g in groups.items() if label.startswith(f"{run_key(h200, {})}: ")]
    assert list(source["cases"]) == ["p.m:a@medium"] and "proxy_note" not in source
    # A draw on another card never stands in for a table row.
    assert list(collect([summarise(tmp_path / "proxy.json", today=LIMITS["seeded"])], {})) == ["p.m:a@medium"]
    # The proxy screen reads the same stores through the same loop with the opposite filter; a copy counts once.
    twice = [summarise(tmp_path / "proxy.json", today=LIMITS["seeded"])] * 2
    assert [(case, label.startswith(run_key(h100, {}))) for _, label, case, _ in same_process_draws(twice, proxy=True)] \
        == [("p.m:a@small", True)]
    assert [case for _, _, case, _ in same_process_draws(twice, proxy=False)] == ["p.m:a@medium"]

    store = Store.load(tmp_path / "proxy.json")
    views = dict(store.runs())
    assert set(views[run_key(h100, {})]["cases"]["p.m:a@medium"]["strategies"]) == {"lfbo"}  # the seeds are not its own
    assert views[run_key(h200, {})] == table["runs"][run_key(h200, {})]
    assert store.doc == doc  # a view: the file's document keeps the seeds the next draw needs
    text = markdown(store, limits=LIMITS)
    assert text.count("**A proxy run, against the lfbo picks of ") == 1 and PROXY_NOTE in text
    runs = {r["key"]: r for r in summary_json(store, limits=LIMITS)["runs"]}
    assert runs[run_key(h100, {})]["proxy_of"] == {"source": run_key(h200, {}), "note": PROXY_NOTE}
    assert "proxy_of" not in runs[run_key(h200, {})]
    kernel = SimpleNamespace(kernel_id="p.m:a", source_hash="h")
    cases_declared = [SimpleNamespace(**vars(kernel), spec=SimpleNamespace(name=n, declared="s")) for n in ("medium", "small")]
    got = adopt(store, cases_declared, tmp_path / "kiln.lock")
    proxied = [a for a in got if a.strategy is None and "a proxy run on H100 against the lfbo picks of" in a.why]
    assert sorted(a.label for a in proxied) == ["p.m:a@medium", "p.m:a@small"]  # none of the H100 run is locked
    assert {a.label for a in got if a.strategy} == {"p.m:a@medium", "p.m:a@small"}  # the H200's, as before
    locked = json.loads((tmp_path / "kiln.lock").read_text())["entries"]
    assert {e["device"] for e in locked} == {"H200"}


def test_after_calls_files_each_call_s_own_log_part_and_merges_every_call_s_store(tmp_path: Path) -> None:
    """bench/after_calls.py: a warm call's log repeats the earlier calls'; a fresh call's store lacks their rows."""
    from bench.after_calls import main

    def store_doc(*cases: tuple[str, str]) -> dict[str, Any]:
        return {"format": 1, "runs": {"H200|x": {"gpu": {"name": "H200"}, "versions": {}, "peaks": None, "cases": {
            label: {"kernel_id": label.partition("@")[0], "shape_name": label.partition("@")[2],
                    "strategies": {"seeded": _rec(10, 20, 1.0, {"b": [16]}, finished_at=at)}} for label, at in cases}}}}

    def call(name: str, log: str, *cases: tuple[str, str]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "var_v.json").write_text(json.dumps(store_doc(*cases)))
        (folder / "var_v.log").write_text(log)
        (folder / "gpu.txt").write_text("NVIDIA H200\n")
        return folder

    one = "== variants v 2026-01-01T00:00:00Z cases a\nkiln bench: done p.m:k@small seeded: 9 configs\n"
    two = "== variants v 2026-01-01T00:10:00Z cases a\nkiln bench: done p.m:k@large seeded: 9 configs\n"
    three = "== variants v 2026-01-01T00:20:00Z cases b\nkiln bench: done p.m:k@medium seeded: 9 configs\n"
    calls = [call("c1", one, ("p.m:k@small", "t1")),
             call("c2", one + two, ("p.m:k@small", "t1"), ("p.m:k@large", "t2")),  # warm: goes on from call 1
             call("c3", three, ("p.m:k@medium", "t3"))]  # a fresh machine: call 2's rows are not in its store
    dest = tmp_path / "results"
    dest.mkdir()
    (dest / "var_v.json").write_text(json.dumps(store_doc(("p.m:j@small", "t0"))))  # committed before: kept
    assert main(["--name", "v", "--session", "7", "--dest", str(dest), *map(str, calls)]) == 0
    assert [(dest / f"var_v_s7_c{k}.log").read_text() for k in (1, 2, 3)] == [one, two, three]
    cases = json.loads((dest / "var_v.json").read_text())["runs"]["H200|x"]["cases"]
    assert sorted(cases) == ["p.m:j@small", "p.m:k@large", "p.m:k@medium", "p.m:k@small"]
    assert (dest / "gpu.txt").read_text() == "NVIDIA H200\n"
    assert json.loads((dest / "summary.json").read_text())["stores"][0]["store"] == str(dest / "var_v.json")
    assert not (dest / "var_v.json.lock").exists()
    with pytest.raises(SystemExit, match="no trial store"):
        main(["--name", "w", "--session", "7", "--dest", str(dest), str(calls[0])])
    # Calls between them that ran something else (no trial store): the logs keep the session's call numbers.
    assert main(["--name", "v", "--session", "8", "--dest", str(dest), "--numbers", "1,3", str(calls[0]), str(calls[2])]) == 0
    assert [(dest / f"var_v_s8_c{k}.log").read_text() for k in (1, 3)] == [one, three]
    assert not (dest / "var_v_s8_c2.log").exists()
    with pytest.raises(SystemExit, match="one distinct number per call"):
        main(["--name", "v", "--session", "8", "--dest", str(dest), "--numbers", "1", str(calls[0]), str(calls[2])])


def test_proxy_screen_sets_a_variant_s_proxy_draws_beside_the_same_card_s_other_draws_and_rules_only_out(
        tmp_path: Path) -> None:
    """bench/probes/proxy_screen.py: a screen on another card rules a candidate out on its built-for rows, never in."""
    from bench.probes.proxy_screen import main, split_label
    from bench.probes.proxy_store import proxy_doc

    lf = {"b": [64]}
    h200, h100 = {"name": "H200", "arch": "sm90"}, {"name": "H100", "arch": "sm90"}
    variant = {**LIMITS["seeded"], "small_kernel_finish": {"finalists": 8}}

    def pick(ms: float, at: str, limits: dict[str, Any]) -> dict[str, Any]:
        return _rec(60, 50, ms, {"b": [16]}, strategy_limits=limits, finished_at=at,
                    vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": ms})

    table = {"format": 1, "runs": {run_key(h200, {}): {"gpu": h200, "versions": {}, "peaks": {}, "cases": {
        label: {"kernel_id": "p.m:a", "shape_name": label.partition("@")[2],
                "strategies": {"lfbo": _rec(400, 500, 1.0, lf, shape=shape), "seeded": pick(ms, "t0", LIMITS["seeded"])}}
        for label, shape, ms in (("p.m:a@small", "f32[4]", 1.11), ("p.m:a@large", "f32[16]", 1.0))}}}}

    def proxy(path: Path, draws: dict[str, tuple[float, str, dict[str, Any]]]) -> None:
        doc, _ = proxy_doc(table, h100, list(draws))
        for label, (ms, at, limits) in draws.items():
            doc["runs"][run_key(h100, {})]["cases"][label]["strategies"]["seeded"] = pick(ms, at, limits)
        path.write_text(json.dumps(doc))

    (tmp_path / "table.json").write_text(json.dumps(table))
    proxy(tmp_path / "var_today.json", {"p.m:a@small": (1.03, "t1", LIMITS["seeded"])})  # today's search on the H100
    trial = tmp_path / "var_trial.json"
    proxy(trial, {"p.m:a@small": (0.98, "t2", variant), "p.m:a@large": (1.07, "t3", variant)})
    out = tmp_path / "screen.json"
    args = ["--trial", str(trial), "--stores", str(tmp_path / "var_*.json"), "--table", str(tmp_path / "table.json"),
            "--out", str(out)]
    assert main([*args, "--built-for", "p.m:a@small"]) == 0
    got = json.loads(out.read_text())
    (small,) = [row for row in got["cases"].values() if row["case"] == "p.m:a@small"]
    assert (small["ratio"], small["over"], small["table"]) == (0.98, False, 1.11)
    assert small["same_card"] == {"today's search": [1.03]} and small["card"] == run_key(h100, {})
    assert split_label(f"{run_key(h100, {})} (against the lfbo picks of {run_key(h200, {})}): {small['search']}") == (
        run_key(h100, {}), small["search"])
    assert got["summary"]["over"] == [f"p.m:a@large [{small['search']}]"]  # over on the H100, but not built for it
    assert got["summary"]["verdict"].startswith("not ruled out")
    assert main([*args, "--built-for", "p.m:a@large"]) == 0
    assert json.loads(out.read_text())["summary"]["verdict"].startswith("ruled out")
    assert main([*args, "--built-for", "p.m:a@medium"]) == 0  # no draw of the row it was built for: no verdict
    assert json.loads(out.read_text())["summary"]["built_for_missing"] == ["p.m:a@medium"]


def test_variant_summary_sets_a_spread_trial_apart_by_its_budget(tmp_path: Path) -> None:
    """A spread trial (`C:seed=1`) is today's search under another seed, in a copy of the table's store:
    its record must not be summarised together with the table's records it sits beside."""
    lf, now = {"b": [64]}, {"strategy_limits": LIMITS["seeded"]}
    usual = {"effort": "quick", "seconds": 900, "seed": 0}

    def seeded(ms: float, seed: int) -> dict[str, Any]:
        return {**_rec(100, 80, ms, {"b": [32]}, vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": ms}, **now),
                "budget": {**usual, "seed": seed}}

    cases = {"p.m:a@medium": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(0.99, 1)},  # the trial
             "p.m:a@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.10, 0)},  # the table's, copied
             "p.m:b@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.00, 0)}}
    groups = _variant_groups(tmp_path / "var_seed1.json", cases)
    assert sorted(groups) == ["today's search", "today's search (budget seed=1)"]
    assert list(groups["today's search (budget seed=1)"]["cases"]) == ["p.m:a@medium"]
    assert groups["today's search (budget seed=1)"]["summary"]["worst_latency_ratio"] == pytest.approx(0.99)
    assert sorted(groups["today's search"]["cases"]) == ["p.m:a@small", "p.m:b@small"]


# ----------------------------------------------------------------------------- (3) one real run, Pallas interpret

def test_kiln_bench_end_to_end_on_tinypkg(tinypkg: Path) -> None:
    env = clean_env(**PALLAS_INTERPRET, KILN_DEVICE="cpu", HELION_AUTOTUNE_FINAL_REBENCHMARK_TOP_K="3",
                    HELION_AUTOTUNE_FINAL_REBENCHMARK_TARGET_MS="300")
    store_path = tinypkg / "bench" / "results" / "store.json"
    cmd = [sys.executable, "-m", "tuning.cli", "bench", "--cases", "tinypkg.ops:add@small", "--strategies", "lfbo,seeded",
           "--lfbo-effort", "quick", "--rounds", "2"]
    first = run(cmd, tinypkg, env, timeout=240)
    assert "ms (fresh process), ref " in first.stderr and "; measured in " in first.stderr

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
        phases = rec["measure_phases_s"]  # where the measurement's time went, the process's own wall last
        assert set(phases) == {"imports", "inputs", "compile", "first_call_and_reference", "timing", "process"}
        assert all(v >= 0 for v in phases.values()) and phases["process"] >= phases["compile"] + phases["timing"]
        assert rec["configs_tested"] >= 1 and rec["tuning_seconds"] > 0 and rec["config"]["block_sizes"]
        # tinypkg.ops.add_baseline is timed in the same fresh process (no add_ref is needed for that)
        assert rec["ref_ms"] > 0 and rec["ref_kind"] == "x + y (torch)" and rec["ref_reason"] is None
        assert rec["roofline"]["bytes"] == 3 * 64 * 128 * 4 and rec["roofline"]["fraction"] is None
        pts = rec["trajectory"]["points"]
        assert rec["trajectory"]["source"].startswith("helion search") and pts and pts[-1][0] == rec["trajectory"]["entries"]
        assert all(b[1] <= a[1] for a, b in zip(pts, pts[1:]))  # best-so-far never worsens
    assert recs["lfbo"]["measure_pid"] != recs["seeded"]["measure_pid"]
    # seeded's judge was spawned ahead, as lfbo's answered: its imports were done before the request, so the
    # measurement's own imports phase is only the kernel's module.  lfbo's spare was spawned before the first
    # tune, which imports jax (Pallas) and so sets jax's variables in this process: it may not match the
    # environment of the measurement any more, and is then dropped for a cold judge, which the record says.
    seeded_judge = recs["seeded"]["measure_judge"]
    assert seeded_judge["spare"] is True, seeded_judge
    assert seeded_judge["imports_before_request_s"] > 0 and seeded_judge["spawned_s_before"] > 0
    assert recs["seeded"]["measure_phases_s"]["imports"] < seeded_judge["imports_before_request_s"]
    lfbo_judge = recs["lfbo"]["measure_judge"]
    assert lfbo_judge["spare"] or lfbo_judge["cold_because"].startswith("environment changed since the spare started: ")
    assert recs["seeded"]["vs_lfbo"]["lfbo_config"] == recs["lfbo"]["config"] and recs["seeded"]["vs_lfbo"]["lfbo_ms"] > 0
    assert recs["lfbo"]["budget"]["effort"] == "quick" and recs["lfbo"]["budget"]["initial_population"] == 2

    # Asked for the LLM strategies too, with no LLM configured: they are named as skipped, and why.
    with_llm = [*cmd[:cmd.index("lfbo,seeded")], "lfbo,seeded,hybrid,llm", *cmd[cmd.index("lfbo,seeded") + 1:]]
    again = run(with_llm, tinypkg, env, timeout=120)
    assert "2 reused" in again.stderr and "0 to run" in again.stderr
    assert "skipping hybrid, llm: no LLM configured (set llm_model)" in again.stderr

    # bench/probes/judge_repeat.py pairs the stored row again in real judge processes, one per pairing.
    probe = [sys.executable, str(Path(__file__).resolve().parents[1] / "bench/probes/judge_repeat.py"), "--cases",
             "tinypkg.ops:add@small", "--store", str(store_path), "--project", ".", "--device", "cpu", "--repeats", "2",
             "--rounds", "2", "--out", str(tinypkg / "judge_repeat.json")]
    run(probe, tinypkg, env, timeout=240)
    (row,) = json.loads((tinypkg / "judge_repeat.json").read_text())["rows"]
    assert [r["first"] for r in row["readings"]] == ["seeded", "lfbo"] and all(r["ratio"] > 0 for r in row["readings"])
    assert len({r["pid"] for r in row["readings"]} | {os.getpid()}) == 3  # each pairing in its own fresh process
    assert row["stored"]["paired"] == round(recs["seeded"]["vs_lfbo"]["ms"] / recs["seeded"]["vs_lfbo"]["lfbo_ms"], 4)
    assert row["spread"]["pairings"] == 3
    assert json.loads(store_path.read_text()) == doc

    # bench/probes/knob_swap.py: lfbo's knobs put one at a time into a pick that differs from lfbo's in its tile and
    # its loop order, each copy normalized by this shape's real config space and timed with both in real judges.
    lf = recs["seeded"]["vs_lfbo"]["lfbo_config"]
    far = copy.deepcopy(doc)
    pick = next(iter(far["runs"].values()))["cases"]["tinypkg.ops:add@small"]["strategies"]["seeded"]
    pick["config"] = {**lf, "block_sizes": [lf["block_sizes"][0] // 2, *lf["block_sizes"][1:]],
                      "loop_orders": [lf["loop_orders"][0][::-1]]}
    (tinypkg / "far.json").write_text(json.dumps(far))
    swap = [sys.executable, str(Path(__file__).resolve().parents[1] / "bench/probes/knob_swap.py"), "--cases",
            "tinypkg.ops:add@small,tinypkg.ops:add@large", "--store", str(tinypkg / "far.json"), "--project", ".",
            "--device", "cpu", "--repeats", "2", "--rounds", "2", "--out", str(tinypkg / "knob_swap.json")]
    assert run(swap, tinypkg, env, timeout=240, check=False).returncode == 1  # a case with no stored pick fails the run
    swapped, unstored = json.loads((tinypkg / "knob_swap.json").read_text())["rows"]
    assert unstored["error"] == "no seeded record of this case in --store"
    assert set(swapped["configs"]) == {"mine", "lfbo", "block_sizes", "loop_orders"}, swapped.get("notes")
    assert swapped["configs"]["block_sizes"] == {**pick["config"], "block_sizes": lf["block_sizes"]}
    assert [r["first"] for r in swapped["readings"]] == ["mine", "loop_orders"]  # the order reversed
    assert len({r["pid"] for r in swapped["readings"]} | {os.getpid()}) == 3
    assert set(swapped["median_ratio"]) == set(swapped["configs"]) and swapped["median_ratio"]["lfbo"] == 1.0

    # bench/probes/proxy_store.py: the store's records as another card's (the table's H200 on an H100 here), copied
    # under this card's run key; a seeded variant drawn there is paired with the copied lfbo pick by the real bench.
    other = copy.deepcopy(doc)
    (src,) = other["runs"].values()
    src["gpu"] = {"name": "NVIDIA H200", "arch": "triton:sm90"}
    other["runs"] = {run_key(src["gpu"], src["versions"]): src}
    (tinypkg / "h200.json").write_text(json.dumps(other))
    probes = Path(__file__).resolve().parents[1] / "bench/probes"
    proxied = run([sys.executable, str(probes / "proxy_store.py"), "--from", str(tinypkg / "h200.json"), "--out",
                   str(tinypkg / "proxy.json"), "--draw", "tinypkg.ops:add@small", "--gpu", "cpu@pallas:interpret"],
                  tinypkg, env, timeout=60)
    assert "1 records copied" in proxied.stdout and "tinypkg.ops:add@small lfbo" in proxied.stdout
    variant = [sys.executable, str(Path(__file__).resolve().parents[1] / "bench/seeded_variant.py"), "--set",
               "seed_variants.scaled_tiles=1", "--set", "grid_order.loop_orders=1", "--", "bench", "--cases", "tinypkg.ops:add@small", "--strategies",
               "seeded", "--rounds", "2", "--store", str(tinypkg / "proxy.json")]
    drawn = run(variant, tinypkg, env, timeout=240)
    assert "0 reused" in drawn.stderr and "1 to run" in drawn.stderr
    proxy_doc = json.loads((tinypkg / "proxy.json").read_text())
    assert proxy_doc["runs"][run_key(src["gpu"], src["versions"])] == src  # the source card's run untouched
    here = proxy_doc["runs"][key]
    assert here["proxy_of"] == run_key(src["gpu"], src["versions"])
    mine = here["cases"]["tinypkg.ops:add@small"]["strategies"]
    assert mine["lfbo"] == {**recs["lfbo"], "proxy_of": here["proxy_of"]}
    assert "proxy_of" not in mine["seeded"] and mine["seeded"]["finished_at"] > recs["seeded"]["finished_at"]
    assert mine["seeded"]["vs_lfbo"]["lfbo_config"] == recs["lfbo"]["config"] and mine["seeded"]["vs_lfbo"]["lfbo_ms"] > 0
    assert mine["seeded"]["strategy_limits"]["grid_order"] == {"loop_orders": 1}  # the variant's search, and
    assert mine["seeded"]["provenance"]["grid_order"]["loop_orders"] == 1  # its grid-order round ran in the real search

    # --to-lock: the stored config goes into kiln.lock under the engine's own shape key, and the plan then
    # takes that case from the lock instead of tuning it.
    doctor = [sys.executable, "-m", "tuning.cli", "doctor", "--json"]
    assert "tinypkg.ops:add [small]" in json.loads(run(doctor, tinypkg, env, timeout=120).stdout)["plan"]["to_tune"]
    out = run([sys.executable, "-m", "tuning.cli", "bench", "--to-lock"], tinypkg, env, timeout=120)
    assert "1 of 1 stored cases" in out.stderr
    (entry,) = json.loads((tinypkg / "kiln.lock").read_text())["entries"]
    chosen = "seeded" if recs["seeded"]["vs_lfbo"]["ms"] < recs["seeded"]["vs_lfbo"]["lfbo_ms"] else "lfbo"
    assert entry["config"] == recs[chosen]["config"] and entry["provenance"]["strategy"] == chosen
    assert (entry["device"], entry["arch"], entry["shape"]) == ("cpu", "pallas:interpret", recs["lfbo"]["shape"])
    assert entry["provenance"]["from_bench"]["store"] == "bench/results/store.json"
    plan = json.loads(run(doctor, tinypkg, env, timeout=120).stdout)["plan"]
    assert "tinypkg.ops:add [small]" in plan["from_lock"] and "tinypkg.ops:add [small]" not in plan["to_tune"]


# A stand-in judge child for the process bookkeeping (the real one, fresh_measure --serve, runs in the
# tinypkg test above): it "imports" for a moment, then answers the one request on stdin with its pid and one
# variable of the environment it was spawned with, or fails when the request asks it to.
_STUB_JUDGE = """
import json, os, sys, time
time.sleep(0.2)
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
ask = json.loads(line)
req = json.load(open(ask["measure"]))
if req.get("fail"):
    print("stub judge: asked to fail", file=sys.stderr)
    sys.exit(3)
json.dump({"pid": os.getpid(), "marker": os.environ.get("KILN_TEST_MARKER"), "judge": {"imports_before_request_s": 0.2}},
          open(ask["result"], "w"))
"""


def test_judge_spawns_the_next_fresh_process_ahead_and_drops_one_spawned_under_another_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tuning.bench.judge import Judge

    monkeypatch.setenv("KILN_TEST_MARKER", "a")
    judge = Judge(command=[sys.executable, "-c", _STUB_JUDGE])
    judge.prestart()
    first_spare = judge._spare.process
    time.sleep(0.5)
    one = judge.measure({}, 30)
    assert one["pid"] == first_spare.pid and one["judge"]["spare"] is True and one["judge"]["spawned_s_before"] >= 0.5
    assert one["judge"]["imports_before_request_s"] == 0.2 and one["phases_s"]["process"] >= 0
    assert first_spare.poll() is not None  # one process, one measurement
    second_spare = judge._spare.process  # started as the first answered
    two = judge.measure({}, 30)
    assert two["pid"] == second_spare.pid != one["pid"] and two["judge"]["spare"] is True

    # A spare spawned under another environment (say, inside a case's tuning context) is never used:
    # the measurement gets a cold judge with today's environment, as it would without spares.
    stale = judge._spare.process
    monkeypatch.setenv("KILN_TEST_MARKER", "b")
    three = judge.measure({}, 30)
    assert three["pid"] != stale.pid and three["marker"] == "b" and three["judge"] == {
        "spare": False, "imports_before_request_s": 0.2, "cold_because": "environment changed since the spare started: KILN_TEST_MARKER"}
    assert stale.poll() is not None

    # A spare that died while it waited is replaced by a cold judge, and the record says why.
    judge._spare.process.kill()
    judge._spare.process.wait()
    revived = judge.measure({}, 30)
    assert revived["judge"]["spare"] is False and revived["judge"]["cold_because"].startswith("the spare exited (")

    # A judge that fails says how; the next measurement still has its spare.
    failed = judge.measure({"fail": True}, 30)
    assert "measurement process failed (3)" in failed["error"] and "asked to fail" in failed["error"]
    assert judge._spare is not None
    left = judge._spare.process
    judge.close()
    assert left.poll() is not None and judge._spare is None

    cold = Judge(warm=False, command=[sys.executable, "-c", _STUB_JUDGE])
    cold.prestart()
    assert cold._spare is None
    assert cold.measure({}, 30)["judge"]["spare"] is False and cold._spare is None


def test_to_lock_takes_lfbo_unless_beaten_in_the_same_process_and_skips_stale_records(tmp_path: Path) -> None:
    from tuning.bench.to_lock import adopt, choose

    lf = {"config": {"b": [64]}, "ms": 1.0}
    beaten = {"config": {"b": [32]}, "ms": 1.1, "vs_lfbo": {"lfbo_config": {"b": [64]}, "lfbo_ms": 1.0, "ms": 0.95}}
    slower = {**beaten, "vs_lfbo": {"lfbo_config": {"b": [64]}, "lfbo_ms": 1.0, "ms": 1.02}}
    old_pair = {**beaten, "vs_lfbo": {"lfbo_config": {"b": [1]}, "lfbo_ms": 1.0, "ms": 0.5}}
    assert choose({"lfbo": lf, "seeded": beaten})[0] == "seeded"
    assert choose({"lfbo": lf, "seeded": slower})[0] == "lfbo"
    assert choose({"lfbo": lf, "seeded": old_pair})[0] == "lfbo"  # paired with another lfbo config: no evidence
    best = {**beaten, "vs_lfbo": {**beaten["vs_lfbo"], "ms": 0.9}}
    assert choose({"lfbo": lf, "hybrid": beaten, "seeded": best})[0] == "seeded"  # each against lfbo, lowest wins
    assert choose({"seeded": {"config": {"b": [8]}, "ms": 2.0}, "llm": {"config": {"b": [4]}, "ms": 1.5}})[0] == "llm"
    assert choose({"lfbo": {"error": "boom"}}) is None

    cases = [_case("pkg.m:k", "small"), _case("pkg.m:k", "large", digest="sha256:new")]
    store = Store(tmp_path / "store.json")
    run_doc = store.run({"name": "Fake GPU", "arch": "triton:sm00"}, {"helion": "1.5.0"})
    for case in (cases[0], _case("pkg.m:k", "large")):  # the large record predates the kernel's new source
        store.case(run_doc, case.kernel_id, case.spec.name)["strategies"]["lfbo"] = {
            **lf, "source_hash": "sha256:aaaa", "spec": case.spec.declared, "shape": f"f32[{case.spec.name}]"}
    store.case(run_doc, "pkg.m:gone", "small")["strategies"]["lfbo"] = {**lf, "source_hash": "h", "spec": "s"}
    lock_path = tmp_path / "kiln.lock"
    got = {a.label: a for a in adopt(store, cases, lock_path)}
    assert got["pkg.m:k@small"].strategy == "lfbo"
    assert got["pkg.m:k@large"].strategy is None and "older kernel source" in got["pkg.m:k@large"].why
    assert got["pkg.m:gone@small"].strategy is None and "not a declared case" in got["pkg.m:gone@small"].why
    (entry,) = json.loads(lock_path.read_text())["entries"]
    assert (entry["shape"], entry["device"], entry["config"]) == ("f32[small]", "Fake GPU", {"b": [64]})
    before = lock_path.read_bytes()
    again = {a.label: a for a in adopt(store, cases, lock_path)}
    assert again["pkg.m:k@small"].why.endswith("(already in the lock)") and lock_path.read_bytes() == before


# ----------------------------------------------------------------------------- (4) several processes, one store

_WRITER = """
import sys, time
from pathlib import Path
from tuning.bench.store import Store, run_key
store_path, tag, gate = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
(gate.parent / f"ready-{tag}").touch()
while not gate.exists():  # start both writers together, so their puts really overlap
    time.sleep(0.005)
store = Store.load(store_path)  # both load the (empty) store first: a stale copy, as each shard has
run = store.run({"name": "Fake GPU", "arch": "triton:sm00"}, {"helion": "1.5.0"})
for i in range(20):
    store.put(run, f"pkg.m:{tag}", f"s{i}", "lfbo", {"i": i, "writer": tag})
store.set_peaks(run, {"copy_gbps": None, "by": tag})
"""


def test_store_put_from_two_processes_loses_nothing(tmp_path: Path) -> None:
    store_path, gate = tmp_path / "results" / "store.json", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(store_path), tag, str(gate)], env=clean_env())
             for tag in ("a", "b")]
    deadline = time.monotonic() + 30
    while not all((tmp_path / f"ready-{t}").exists() for t in ("a", "b")) and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.touch()
    assert [p.wait(timeout=60) for p in procs] == [0, 0]

    (run_doc,) = Store.load(store_path).doc["runs"].values()
    got = {(label, rec["writer"], rec["i"]) for label, case in run_doc["cases"].items() for rec in case["strategies"].values()}
    assert got == {(f"pkg.m:{t}@s{i}", t, i) for t in ("a", "b") for i in range(20)}
    assert run_doc["peaks"]["by"] in ("a", "b")


def test_a_record_tuned_before_its_baseline_is_re_timed_beside_it_not_retuned(tmp_path: Path) -> None:
    """Session 34: a variant row tuned in a trial store that had no lfbo row for its case got no
    same-process ratio; once the baseline is in the store, the bench re-times the two stored configs
    in one fresh process and tunes nothing."""
    store_path = tmp_path / "store.json"
    cases = [_case("pkg.m:k", "small")]
    tune, measured = FakeTune(), []

    def bench(strategies: list[str], log: list[str] | None = None) -> Store:
        opts = BenchOptions(tmp_path, {}, None, strategies, store_path)
        return run_bench(opts, log=(log if log is not None else []).append, engine=_fake_engine(cases, tune, measured))

    bench(["seeded"])  # no baseline yet: a record with its own fresh-process ms and no ratio
    (run_doc,) = Store.load(store_path).doc["runs"].values()
    before = run_doc["cases"]["pkg.m:k@small"]["strategies"]["seeded"]
    assert "vs_lfbo" not in before and [set(r["configs"]) for r in measured] == [{"seeded"}]

    bench(["lfbo"])  # the baseline arrives (as `kiln bench --merge-from ... --strategies lfbo` brings it)
    tune.calls.clear(), measured.clear()
    log: list[str] = []
    store = bench(["seeded"], log)
    assert tune.calls == []  # the search is not run again
    (request,) = measured
    assert request["configs"] == {"seeded": before["config"], "lfbo": {"block_sizes": [64]}}
    after = store.doc["runs"][next(iter(store.doc["runs"]))]["cases"]["pkg.m:k@small"]["strategies"]["seeded"]
    assert after["vs_lfbo"]["lfbo_ms"] == 1.0 and after["vs_lfbo"]["ms"] == 1.02 and "after the tune" in after["vs_lfbo"]["note"]
    assert {k: v for k, v in after.items() if k not in ("vs_lfbo", "finished_at")} == \
        {k: v for k, v in before.items() if k != "finished_at"}  # the search's own record untouched
    assert any("1 reused without a same-process lfbo ratio" in line for line in log)
    assert any(line.startswith("paired pkg.m:k@small seeded") for line in log)

    measured.clear()
    bench(["lfbo", "seeded"])  # paired once: nothing more to do
    assert tune.calls == [] and measured == []


def test_merge_from_keeps_the_newest_copy_of_every_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two device calls that each began from the committed store: every finished record survives the merge."""
    old_lfbo = {"ms": 1.0, "finished_at": "2026-12-01T05:00:00Z"}
    committed = _store_of({"p.m:a@small": {"lfbo": old_lfbo}}, tmp_path / "store.json")
    committed.doc["runs"]["H200|x"]["peaks"] = {"copy_gbps": 4241.0, "measured_at": "2026-12-01T04:00:00Z"}
    committed.save()
    call2 = _store_of({"p.m:a@small": {"lfbo": old_lfbo, "seeded": {"ms": 1.1, "finished_at": "2026-12-01T09:24:00Z"}},
                       "p.m:a@medium": {"lfbo": {"ms": 2.0, "finished_at": "2026-12-01T09:20:00Z"}}},
                      tmp_path / "call2.json")
    call2.doc["runs"]["H200|x"]["peaks"] = {"copy_gbps": 4257.7, "measured_at": "2026-12-01T09:16:00Z"}
    call2.save()
    # call 3 holds an older copy of a@small's seeded (a stale record must not replace the newer one)
    call3 = _store_of({"p.m:a@small": {"seeded": {"ms": 9.9, "finished_at": "2026-11-30T01:00:00Z"}},
                       "p.m:a@large": {"lfbo": {"ms": 3.0, "finished_at": "2026-12-01T09:36:00Z"}}},
                      tmp_path / "call3.json")
    call3.doc["runs"]["H200|x"]["peaks"] = {"copy_gbps": 4000.0, "measured_at": "2026-12-01T01:00:00Z"}
    call3.save()

    rc = kiln_main(["bench", "--project", str(tmp_path), "--store", str(tmp_path / "store.json"),
                    "--merge-from", str(tmp_path / "call2.json"), "--merge-from", str(tmp_path / "call3.json")])
    assert rc == 0
    assert "3 records merged" in capsys.readouterr().err
    (run_doc,) = Store.load(tmp_path / "store.json").doc["runs"].values()
    got = {(label, name): rec["ms"] for label, case in run_doc["cases"].items() for name, rec in case["strategies"].items()}
    assert got == {("p.m:a@small", "lfbo"): 1.0, ("p.m:a@small", "seeded"): 1.1,
                   ("p.m:a@medium", "lfbo"): 2.0, ("p.m:a@large", "lfbo"): 3.0}
    assert run_doc["peaks"]["copy_gbps"] == 4257.7  # the newest measurement, not the largest or the last named

    assert kiln_main(["bench", "--project", str(tmp_path), "--store", str(tmp_path / "store.json"),
                      "--merge-from", str(tmp_path / "nope.json")]) == 2
    assert "no bench store yet" in capsys.readouterr().err


def test_merge_from_with_strategies_brings_only_those_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A variant trial's store takes the table's lfbo baselines it lacks, never the table's newer seeded rows
    (another search than the trial's)."""
    _store_of({"p.m:a@medium": {"seeded": {"ms": 1.5, "finished_at": "2026-12-01T00:00:00Z"}}}, tmp_path / "trial.json").save()
    _store_of({"p.m:a@medium": {"lfbo": {"ms": 1.0, "finished_at": "2026-11-30T00:00:00Z"},
                                "seeded": {"ms": 1.2, "finished_at": "2026-12-02T00:00:00Z"}},
               "p.m:a@large": {"lfbo": {"ms": 2.0, "finished_at": "2026-11-30T00:00:00Z"}}}, tmp_path / "table.json").save()
    rc = kiln_main(["bench", "--project", str(tmp_path), "--store", str(tmp_path / "trial.json"),
                    "--merge-from", str(tmp_path / "table.json"), "--strategies", "lfbo"])
    assert rc == 0
    assert "2 records merged" in capsys.readouterr().err
    (run_doc,) = Store.load(tmp_path / "trial.json").doc["runs"].values()
    got = {(label, name): rec["ms"] for label, case in run_doc["cases"].items() for name, rec in case["strategies"].items()}
    assert got == {("p.m:a@medium", "seeded"): 1.5, ("p.m:a@medium", "lfbo"): 1.0, ("p.m:a@large", "lfbo"): 2.0}


def test_bench_seeds_by_the_declared_build_order_whichever_cases_are_picked(tmp_path: Path) -> None:
    """Session 23 picked attention_causal small and medium but not large (no baseline yet): small ran
    first and cold, and medium was seeded from small, where a build tunes medium first and seeds small
    from it.  Order and seeds come from all the declared shapes; records seeded otherwise are rerun,
    reported apart meanwhile, and a later shape whose seeds changed config is rerun too."""
    store_path = tmp_path / "store.json"
    cases = [_case("pkg.m:k", s) for s in ("small", "medium", "large")]
    declared = [f"pkg.m:k@{s}" for s in ("small", "medium", "large")]
    tune = FakeTune()
    bench = lambda picked: run_bench(BenchOptions(tmp_path, {}, picked, ["lfbo", "seeded"], store_path),  # noqa: E731
                                     log=lambda m: None, engine=_fake_engine(cases, tune, []))
    bench(["pkg.m:k@small", "pkg.m:k@medium"])
    assert tune.calls == [(f"pkg.m:k@{s}", n) for s in ("medium", "small") for n in ("lfbo", "seeded")]
    seeds = dict(zip(tune.calls, tune.seeds))
    assert seeds[("pkg.m:k@medium", "seeded")] == ()
    assert [c["by"] for c in seeds[("pkg.m:k@small", "seeded")]] == ["seeded@medium"]

    def seeded_records() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        doc = json.loads(store_path.read_text())
        return doc, {c["shape_name"]: c["strategies"]["seeded"] for c in next(iter(doc["runs"].values()))["cases"].values()
                     if "seeded" in c["strategies"]}

    def names(with_declared: bool) -> dict[str, str]:
        (run_doc,) = Store.load(store_path).doc["runs"].values()
        a = analyse(run_doc, LIMITS, declared=declared if with_declared else None)
        return {row["case"].rpartition("@")[2]: row["strategy"] for row in a["rows"] if row["strategy"] != "lfbo"}

    assert names(True) == {"medium": "seeded", "small": "seeded"}
    # Session 23's records: small cold, medium seeded from small.  Both rerun, medium first.
    doc, recs = seeded_records()
    recs["small"].update(seeded_from_shapes=[], seed_digest=seed_digest({}))
    recs["medium"].update(seeded_from_shapes=["small"])
    recs["medium"].pop("seed_digest")
    store_path.write_text(json.dumps(doc))
    apart = "seeded (other search: seeding)"
    assert names(True) == {"medium": apart, "small": apart}
    assert names(False) == {"medium": "seeded", "small": "seeded"}  # away from the project: only the rule is known
    tune.calls.clear()
    bench(["pkg.m:k@small", "pkg.m:k@medium"])
    assert tune.calls == [("pkg.m:k@medium", "seeded"), ("pkg.m:k@small", "seeded")]
    assert names(True) == {"medium": "seeded", "small": "seeded"}

    # The whole kernel: large runs last, seeded from both.  Then medium is rerun (stale) and picks the
    # same config: nothing else moves; it picks another config: small and large were seeded with the old
    # one, so they rerun.
    tune.calls.clear()
    bench(None)
    assert tune.calls == [("pkg.m:k@large", "lfbo"), ("pkg.m:k@large", "seeded")]
    assert sorted(c["by"] for c in tune.seeds[-1]) == ["seeded@medium", "seeded@small"]
    for tag, rerun in (("", ["medium"]), ("-v2", ["medium", "small", "large"])):
        doc, recs = seeded_records()
        recs["medium"]["strategy_limits"] = {"an": "older search"}
        store_path.write_text(json.dumps(doc))
        tune.tag, tune.calls = tag, []
        bench(None)
        assert tune.calls == [(f"pkg.m:k@{s}", "seeded") for s in rerun]

    # The report wants every earlier shape in place: small without a medium record is no first build's.
    doc, recs = seeded_records()
    del next(iter(doc["runs"].values()))["cases"]["pkg.m:k@medium"]["strategies"]["seeded"]
    store_path.write_text(json.dumps(doc))
    assert names(True) == {"small": apart, "large": apart}


# ----------------------------------------------------------------------------- (5) shards and --gpus (no GPU: a fake launch)

def test_select_shard_and_parse_shard() -> None:
    from tuning.bench.gpus import parse_shard
    from tuning.bench.run import select_shard
    from tuning.errors import KilnError

    # Whole kernels, round-robin over kernels: a kernel's shapes seed each other, so they share a process.
    cases = [_case(f"p.m:{k}", s) for k in "abcde" for s in ("small", "medium", "large")]
    kernels = lambda shard: "".join(dict.fromkeys(c.kernel_id[-1] for c in shard))  # noqa: E731
    assert kernels(select_shard(cases, 0, 2)) == "ace" and kernels(select_shard(cases, 1, 2)) == "bd"
    assert len(select_shard(cases, 1, 2)) == 6 and kernels(select_shard(cases, 2, 3)) == "c"
    assert sorted(sum((select_shard(cases, k, 3) for k in range(3)), []), key=cases.index) == cases  # disjoint, all covered
    assert select_shard(cases, 0, 1) == cases
    assert parse_shard("1/2") == (1, 2) and parse_shard(" 0 / 4 ") == (0, 4)
    for bad in ("2/2", "0/0", "1", "a/b", "-1/2", "1-2"):
        with pytest.raises(KilnError, match=r"--shard .*K/N with 0 <= K < N"):
            parse_shard(bad)


def test_run_bench_shard_tunes_only_its_cases_and_reports_only_its_failures(tmp_path: Path) -> None:
    store_path = tmp_path / "store.json"
    cases = [_case(f"pkg.m:k{i}", "s") for i in range(5)]
    tune = FakeTune()
    opts = BenchOptions(tmp_path, {}, None, ["lfbo", "seeded"], store_path, shard=(1, 2))
    store = run_bench(opts, log=lambda m: None, engine=_fake_engine(cases, tune, []))
    assert tune.calls == [("pkg.m:k1@s", "lfbo"), ("pkg.m:k1@s", "seeded"), ("pkg.m:k3@s", "lfbo"), ("pkg.m:k3@s", "seeded")]
    # Another shard's failure in the shared file is not this shard's failure.
    other = Store.load(store_path)
    other.put(next(iter(other.doc["runs"].values())), "pkg.m:k0", "s", "lfbo", {"error": "boom"})
    store = run_bench(opts, log=lambda m: None, engine=_fake_engine(cases, tune, []))
    assert store.failures() == [] and Store.load(store_path).failures() == [("pkg.m:k0@s", "lfbo")]


def test_each_strategy_is_seeded_as_a_first_build_with_it_would_be(tmp_path: Path) -> None:
    """Build order (middle shape first) and, per strategy, only its own earlier shapes as seeds:
    seeded starts cold on a kernel's first shape and never sees lfbo's configs, not even
    through the lock, which `kiln bench --to-lock` fills with them (sessions 10-22 seeded from it)."""

    store_path = tmp_path / "store.json"
    cases = [_case("pkg.m:k", s) for s in ("small", "medium", "large")]
    # The lock already holds lfbo's configs at the kernel's other shapes on this very GPU.
    lock = [LockEntry("pkg.m:k", "sha256:aaaa", "Fake GPU", "triton:sm00", f"f32[{s}]", s, {"by": f"lfbo@{s}"})
            for s in ("small", "large")]
    tune = FakeTune()
    opts = BenchOptions(tmp_path, {}, None, ["seeded", "lfbo"], store_path)
    store = run_bench(opts, log=lambda m: None, engine=_fake_engine(cases, tune, [], lock))
    assert tune.calls == [(f"pkg.m:k@{s}", n) for s in ("medium", "small", "large") for n in ("lfbo", "seeded")]
    seeds = dict(zip(tune.calls, tune.seeds))
    assert all(seeds[(f"pkg.m:k@{s}", "lfbo")] == () for s in ("small", "medium", "large"))
    assert seeds[("pkg.m:k@medium", "seeded")] == ()  # cold: nothing known yet
    assert [c["by"] for c in seeds[("pkg.m:k@small", "seeded")]] == ["seeded@medium"]
    assert sorted(c["by"] for c in seeds[("pkg.m:k@large", "seeded")]) == ["seeded@medium", "seeded@small"]
    # Each seed comes with the shape key it was tuned at (the scaled-tile variants read which way it goes).
    shapes = dict(zip(tune.calls, tune.seed_shapes))
    for label in ("pkg.m:k@small", "pkg.m:k@large"):
        assert shapes[(label, "seeded")] == tuple(FAKE_SHAPE_KEYS[c["by"].split("@")[1]] for c in seeds[(label, "seeded")])
    assert shapes[("pkg.m:k@medium", "seeded")] == ()
    (run_doc,) = store.doc["runs"].values()
    rec = run_doc["cases"]["pkg.m:k@large"]["strategies"]["seeded"]
    assert rec["seeding"] == SEEDING and rec["seeded_from_shapes"] == ["medium", "small"] and "seeds_from_lock" not in rec

    # Records of the older rule (lock entries as seeds): one that took a lock entry is rerun and, until then,
    # reported apart; one that took none (the kernel had no lock entry) had today's seeds and stands.
    doc = json.loads(store_path.read_text())
    strategies = {s: next(iter(doc["runs"].values()))["cases"][f"pkg.m:k@{s}"]["strategies"] for s in ("medium", "small")}
    strategies["medium"]["seeded"].update(seeding=LOCK_SEEDING, seeds_from_lock=0)
    strategies["small"]["seeded"].update(seeding=LOCK_SEEDING, seeds_from_lock=1)
    store_path.write_text(json.dumps(doc))
    limits = {"seeded": strategy_limits("seeded")}
    assert display_name("seeded", strategies["small"]["seeded"], limits) == "seeded (other search: seeding)"
    assert display_name("seeded", strategies["medium"]["seeded"], limits) == "seeded"
    tune.calls.clear()
    run_bench(opts, log=lambda m: None, engine=_fake_engine(cases, tune, [], lock))
    assert tune.calls == [("pkg.m:k@small", "seeded")]

    # A record made before this rule (no "seeding") is rerun, except the baseline's, which takes no seeds.
    doc = json.loads(store_path.read_text())
    for case in next(iter(doc["runs"].values()))["cases"].values():
        for rec in case["strategies"].values():
            rec.pop("seeding", None)
    store_path.write_text(json.dumps(doc))
    tune.calls.clear()
    run_bench(opts, log=lambda m: None, engine=_fake_engine(cases, tune, []))
    assert tune.calls == [(f"pkg.m:k@{s}", "seeded") for s in ("medium", "small", "large")]

    # --cases in any order keeps the build's order: the declared middle shape first.
    tune.calls.clear()
    picked = BenchOptions(tmp_path, {}, [f"pkg.m:k@{s}" for s in ("medium", "large", "small")], ["lfbo"],
                          tmp_path / "other.json")
    run_bench(picked, log=lambda m: None, engine=_fake_engine(cases, tune, []))
    assert tune.calls == [(f"pkg.m:k@{s}", "lfbo") for s in ("medium", "small", "large")]


class FakeChild:
    """A named stand-in for a launched `kiln bench --shard` child: canned output and exit code, no process."""

    def __init__(self, lines: list[str], rc: int, interrupt: bool = False) -> None:
        self.stdout, self.rc, self.interrupt = iter(lines), rc, interrupt
        self.signals: list[Any] = []

    def wait(self, timeout: float | None = None) -> int:
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt  # the parent got Ctrl-C while waiting
        if self.poll() is None:
            raise subprocess.TimeoutExpired("fake", timeout or 0)
        return self.rc

    def poll(self) -> int | None:
        return None if self.rc == 130 and not self.signals else self.rc  # an interrupted child runs until signalled

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)

    def kill(self) -> None:
        self.signals.append("kill")


class FakeLaunch:
    """Replaces tuning.bench.gpus.popen: records each child's command and environment, returns FakeChilds."""

    def __init__(self, rcs: list[int], interrupt: bool = False) -> None:
        self.rcs, self.interrupt = rcs, interrupt
        self.calls: list[tuple[list[str], dict[str, str]]] = []
        self.children: list[FakeChild] = []

    def __call__(self, cmd: list[str], env: dict[str, str]) -> FakeChild:
        i = len(self.calls)
        self.calls.append((cmd, env))
        self.children.append(FakeChild([f"kiln bench: tune case{i}\n", "done\n"], self.rcs[i], self.interrupt and i == 0))
        return self.children[-1]


def test_kiln_bench_gpus_launches_one_shard_per_gpu(tinypkg: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import tuning.bench.gpus as gpus

    fake = FakeLaunch([0, 0])
    monkeypatch.setattr(gpus, "popen", fake)
    monkeypatch.delenv("KILN_DEVICE", raising=False)
    args = ["bench", "--project", str(tinypkg), "--all", "--strategies", "lfbo,seeded", "--rounds", "3", "-C", "effort=quick"]
    assert kiln_main([*args, "--gpus", "0,1"]) == 0
    store = str((tinypkg / "bench" / "results" / "store.json").resolve())
    cores = str(max(1, (os.cpu_count() or 1) // 2))
    for i, (cmd, env) in enumerate(fake.calls):
        assert cmd == [sys.executable, "-m", "tuning.cli", "bench", "--project", str(tinypkg.resolve()), "--store", store,
                       "--lfbo-effort", "full", "--rounds", "3", "--strategies", "lfbo,seeded", "-C", "effort=quick",
                       "--shard", f"{i}/2"]
        assert env["CUDA_VISIBLE_DEVICES"] == str(i) and env["HELION_AUTOTUNE_PRECOMPILE_JOBS"] == cores
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(Path(gpus.__file__).resolve().parents[2])
    err = capsys.readouterr().err
    assert "[gpu0] kiln bench: tune case0" in err and "[gpu1] done" in err

    # auto: every visible GPU; a failed child makes the parent fail, naming it.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    fake = FakeLaunch([0, 1])
    monkeypatch.setattr(gpus, "popen", fake)
    assert kiln_main([*args, "--gpus", "auto"]) == 1
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in fake.calls] == ["3", "5"]
    assert "gpu5 (shard 1/2) exited 1" in capsys.readouterr().err

    # Ctrl-C in the parent: children still running get SIGINT; exit 130.
    fake = FakeLaunch([130, 130], interrupt=True)
    monkeypatch.setattr(gpus, "popen", fake)
    assert kiln_main([*args, "--gpus", "0,1"]) == 130
    assert [c.signals for c in fake.children] == [[signal.SIGINT], [signal.SIGINT]]
    assert "rerun the same command to resume" in capsys.readouterr().err


def test_kiln_bench_gpus_refusals(tinypkg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import tuning.bench.gpus as gpus

    fake = FakeLaunch([0, 0])
    monkeypatch.setattr(gpus, "popen", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    base = ["bench", "--project", str(tinypkg)]
    for extra, message in ((["--gpus", "0,1", "-C", "device=cpu"], "--gpus launches one process per CUDA GPU, but the device setting is 'cpu'"),
                           (["--gpus", "0,1", "--shard", "0/2"], "--gpus and --shard: give one"),
                           (["--gpus", "0;1"], "--gpus '0;1': write auto or a comma list"),
                           (["--gpus", "0,0"], "listed twice"),
                           (["--gpus", "auto"], "--gpus auto: no CUDA GPU visible"),
                           (["--shard", "1/1"], "--shard '1/1': write K/N")):
        assert kiln_main([*base, *extra]) == 2
        assert message in capsys.readouterr().err
    assert fake.calls == []


# ----------------------------------------------------------------------------- (6) hybrid and llm, labelled honestly

def test_kiln_bench_hybrid_and_llm_through_the_fixed_answer_server(tinypkg: Path) -> None:
    """Unfaked on kiln's side: litellm, prompts, sanitizer, Helion searches on Pallas interpret, store, report.

    The LLM is bench/fixed_answer_llm.py run as on the GPU machine: it answers
    with the lock's configs of the kernel the prompt names, and the report must
    say that these are not an LLM's numbers.
    """
    root = Path(__file__).resolve().parents[1]
    lock = tinypkg / "kiln.lock"
    lock.write_text((root / "tests" / "fixtures" / "tinypkg_pallas.lock.json").read_text())
    secret = "sk-test-FIXEDSECRET789"
    env = clean_env(**PALLAS_INTERPRET, KILN_DEVICE="cpu", OPENAI_API_KEY=secret,
                    HELION_AUTOTUNE_FINAL_REBENCHMARK_TOP_K="3", HELION_AUTOTUNE_FINAL_REBENCHMARK_TARGET_MS="300")
    with fixed_answer_llm(lock, tinypkg, wait_s=10) as api_base:
        cmd = [sys.executable, "-m", "tuning.cli", "bench", "--cases", "tinypkg.ops:add@small",
               "--strategies", "lfbo,hybrid,llm", "--lfbo-effort", "quick", "--rounds", "2",
               "-C", "llm_model=openai/fixed-answers", "-C", f"llm_api_base={api_base}", "-C", "llm_log=llm.log"]
        run(cmd, tinypkg, env, timeout=600)

    store_path = tinypkg / "bench" / "results" / "store.json"
    doc = json.loads(store_path.read_text())
    recs = next(iter(doc["runs"].values()))["cases"]["tinypkg.ops:add@small"]["strategies"]
    assert set(recs) == {"lfbo", "hybrid", "llm"}
    lock_configs = [e["config"] for e in json.loads(lock.read_text())["entries"]]
    for name in ("hybrid", "llm"):
        rec = recs[name]
        assert "error" not in rec and rec["ms"] > 0 and rec["configs_tested"] >= 1, rec
        llm = rec["provenance"]["llm"]
        assert llm["model"] == "openai/fixed-answers" and llm["proposed"] >= 1 and llm["accepted"] >= 1, llm
        assert "fallback" not in rec["provenance"]
        assert rec["vs_lfbo"]["lfbo_config"] == recs["lfbo"]["config"]
    # Served whole (tinypkg's other shape, "wide", has a config outside small's space, which the sanitizer
    # drops): llm alone benchmarks only what was proposed and kept.
    assert recs["llm"]["config"] in lock_configs
    assert recs["llm"]["provenance"]["llm"]["dropped"] == {"outside_space": 1}

    out = tinypkg / "report"
    assert kiln_main(["bench", "--report", "--store", str(store_path), "--out", str(out), "--project", str(tinypkg)]) == 0
    md = (out / "README.md").read_text()
    # The denominator beside the geomeans: tinypkg declares add@small and add@wide; only small was run.
    assert "Table: 1 of the 2 declared cases have an `lfbo` baseline; not yet: add (wide)." in md
    coverage = json.loads((out / "summary.json").read_text())["runs"][0]["coverage"]
    assert coverage == {"declared": 2, "with_lfbo": 1, "without_lfbo": ["tinypkg.ops:add@wide"]}
    assert "`hybrid` talked to `openai/fixed-answers` (a local server with fixed answers: **not an LLM's numbers**)" in md
    assert "`llm` talked to `openai/fixed-answers`" in md
    s = summary_json(Store.load(store_path))["runs"][0]["strategies"]
    assert s["hybrid"]["not_an_llm"] == ["openai/fixed-answers"] and s["llm"]["llm_fallbacks"] == 0
    for text in (store_path.read_text(), md, (tinypkg / "llm.log").read_text()):
        assert secret not in text  # the key stays in the environment


def test_fixed_answers_name_the_kernel_and_never_serve_an_excluded_case(tmp_path: Path) -> None:
    from bench.fixed_answer_llm import lock_answers

    def entry(kernel: str, shape: str, block: int) -> dict[str, Any]:
        return {"kernel": kernel, "shape_name": shape, "config": {"block_sizes": [block]}}

    lock = tmp_path / "kiln.lock"
    lock.write_text(json.dumps({"format": 1, "entries": [
        entry("pkg.m:rms_norm", "small", 1), entry("pkg.m:rms_norm", "medium", 3), entry("pkg.m:rms_norm", "large", 2),
        entry("pkg.m:rms_norm", "huge", 2), entry("pkg.m:norm", "small", 9)]}))
    answer = lock_answers(lock, frozenset({"pkg.m:rms_norm@medium"}))
    # The benchmarked case's own entry is not served; duplicates collapse; the longest matching name wins.
    assert answer("tune pkg.m:rms_norm for bf16[8192,4096]") == [{"block_sizes": [1]}, {"block_sizes": [2]}]
    assert answer("def rms_norm(x, w, eps):") == [{"block_sizes": [1]}, {"block_sizes": [2]}]
    assert answer("def norm(x):") == [{"block_sizes": [9]}]
    assert answer("some other kernel") == []


def test_config_gap_names_the_knobs_a_pick_differs_from_lfbos_in() -> None:
    from tuning.bench.compare import config_gap

    lf = {"pid_type": "persistent_interleaved", "num_stages": 3, "block_sizes": [64, 64], "num_sm_multiplier": 1}
    mine = {"pid_type": "flat", "num_stages": 4, "block_sizes": [64, 64]}
    assert config_gap(mine, lf) == "; 3 knobs from lfbo's config (num_sm_multiplier, num_stages, pid_type)"
    assert config_gap(lf, dict(lf)) == "; the same config as lfbo's"
    assert config_gap(None, lf) == ""


def test_variant_labels_tell_apart_trials_that_differ_one_table_down() -> None:
    """Session 20's two trials differed from today's search only inside nested tables; each gets its own name."""
    from bench.variant_summary import limits_label

    today = {"fast_finish": {"compile_timeout_s": 20, "adaptive_timeout_floor_s": 10}, "with_seeds": {"copies": 2}}
    shorter = {**today, "fast_finish": {"compile_timeout_s": 10, "adaptive_timeout_floor_s": 5}}
    finish = {**today, "small_kernel_finish": {"finalists": 8}}
    assert limits_label(today, today) == "today's search"
    assert limits_label(shorter, today) == (
        "today's search but fast_finish.adaptive_timeout_floor_s=5, fast_finish.compile_timeout_s=10")
    assert limits_label(finish, today) == "today's search but small_kernel_finish={\"finalists\": 8}"
    assert limits_label({"with_seeds": {"copies": 2}}, today) == "today's search but fast_finish=absent"
    assert limits_label(None, today) == "older search (limits not recorded)"


def test_crash_bisect_reads_the_crashed_configs_of_one_case_back_from_a_log() -> None:
    """bench/probes/crash_bisect.py: the configs Helion printed after a crash, only the asked case's, and their variants."""
    from bench.probes.crash_bisect import crashed_configs, variants

    printed = ("  Config: @helion.kernel(config=helion.Config(block_sizes=[16, 8, 16], host_tensor_descriptors=True, "
               "indexing=['tensor_descriptor', 'pointer'], range_flattens=[None, False], pid_type='flat'), static_shapes=True)")
    log = "\n".join([
        "kiln bench: tune p.m:k@medium with lfbo",
        "[35s] Skipping config that triggered an unrecoverable runtime error in the benchmark subprocess: "
        "AcceleratorError: CUDA error: misaligned address",
        printed,
        "kiln bench: tune p.m:other@medium with lfbo",
        printed.replace("[16, 8, 16]", "[64, 64, 64]"),
    ])
    (config,) = crashed_configs(log, "p.m:k@medium")
    assert config == {"block_sizes": [16, 8, 16], "host_tensor_descriptors": True,
                      "indexing": ["tensor_descriptor", "pointer"], "range_flattens": [None, False], "pid_type": "flat"}
    tried = variants(config)
    assert tried["pointers_only"]["indexing"] == ["pointer", "pointer"] and not tried["pointers_only"]["host_tensor_descriptors"]
    assert tried["tiles_16_to_32"]["block_sizes"] == [32, 8, 32] and tried["as_logged"] == config


def test_crash_bisect_plans_the_case_in_the_forked_child_and_reports_a_bad_label() -> None:
    """Planning asks the GPU its name, so the probe plans in each child, never in the parent (on the H200 the parent
    had initialized CUDA and refused to fork); a label that names no declared case comes back as the trial's error."""
    import torch

    from bench.probes.crash_bisect import run_trial

    result = run_trial("model_kernels.nope:nope@medium", {})
    assert not result["ok"] and "no declared case 'model_kernels.nope:nope@medium'" in result["error"]
    assert "declared: model_kernels.attention:attention@large" in result["error"]
    assert not torch.cuda.is_initialized()


def test_crash_bisect_spawns_its_trials_when_the_parent_touched_the_cuda_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 27's forked trials all failed with "CUDA error: initialization error": an import had called
    ``torch.cuda.is_available()`` (cuInit) while torch still said uninitialized.  The probe now checks the driver
    itself and spawns fresh children then; a spawned trial runs the same code and answers the same way."""
    from bench.probes import crash_bisect

    assert not crash_bisect.cuda_driver_initialized()  # no GPU driver here: nothing to inherit, forking is safe
    assert crash_bisect.start_method() == "fork"
    monkeypatch.setattr(crash_bisect, "cuda_driver_initialized", lambda: True)
    assert crash_bisect.start_method() == "spawn"
    result = crash_bisect.run_trial("model_kernels.nope:nope@medium", {}, "spawn")
    assert not result["ok"] and "no declared case 'model_kernels.nope:nope@medium'" in result["error"]


def test_judge_repeat_collects_pairings_made_more_than_once_and_pairs_a_stored_row_again(tmp_path: Path) -> None:
    """bench/probes/judge_repeat.py: how far one pairing (the bar's reading of a row) moves when made again."""
    from bench.probes.judge_repeat import from_stores, main, repeat, stored_pair

    lf, mine = {"b": [64]}, {"b": [32]}

    def store(ms: float, lfbo_ms: float, finished: str, **extra: Any) -> dict[str, Any]:
        rec = {"config": mine, "finished_at": finished, "tune_ms": 1.02,
               "vs_lfbo": {"lfbo_config": lf, "ms": ms, "lfbo_ms": lfbo_ms}, **extra}
        return {"runs": {"H200|x": {"cases": {"p.m:k@s": {"strategies": {"lfbo": {"config": lf, "tune_ms": 1.0},
                                                                         "seeded": rec}}}}}}

    first, copied, again = store(1.06, 1.0, "t0"), store(1.06, 1.0, "t0"), store(1.04, 1.0, "t1")
    lone = {"runs": {"H200|x": {"cases": {"p.m:j@s": store(1.2, 1.0, "t2")["runs"]["H200|x"]["cases"]["p.m:k@s"]}}}}
    (row,) = from_stores([("a.json", first), ("trial.json", copied), ("b.json", again), ("c.json", lone),
                          ("probe.json", {"rows": []}), ("preview.json", {"runs": {"H200|x": [{"case": "p.m:k@s"}]}}),
                          ("proxy.json", store(1.3, 1.0, "t9", proxy_of="H100|x"))])  # another card's copy: not read
    # the copy in the trial store is the same measurement, kept once; a pair paired only once is no row
    assert [r["ratio"] for r in row["readings"]] == [1.06, 1.04] and row["case"] == "p.m:k@s"
    assert row["spread"] == {"pairings": 2, "min": 1.04, "median": 1.05, "max": 1.06, "max_over_min": 1.0192,
                             "over_bar": 1, "both_sides_of_bar": True}
    out = tmp_path / "repeats.json"
    for name, doc in (("a.json", first), ("b.json", again), ("junk.json", None)):
        (tmp_path / name).write_text("not json" if doc is None else json.dumps(doc))
    assert main(["--from-stores", *(str(tmp_path / n) for n in ("a.json", "b.json", "junk.json")), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["pairs"] == 1 and doc["worst_max_over_min"] == 1.0192 and doc["rows_on_both_sides_of_bar"] == ["p.m:k@s"]

    # On the GPU: the stored pair paired again, each time in its own judge process, the order alternating.
    asked: list[dict[str, Any]] = []

    def measure(request: dict[str, Any], timeout: float) -> dict[str, Any]:
        asked.append(request)
        if len(asked) == 3:
            return {"error": "measurement process failed (1): boom"}
        slow = 1.07 if next(iter(request["configs"])) == "seeded" else 1.03
        return {"ms": {"seeded": slow, "lfbo": 1.0}, "pid": len(asked), "judge": {"spare": True}}

    rows = [stored_pair(first, "p.m:k@s", "seeded"), stored_pair(first, "p.m:k@q", "seeded"),
            stored_pair(store(1.06, 1.0, "t0", vs_lfbo={}), "p.m:k@s", "seeded")]
    saves: list[int] = []
    repeat(rows, measure, Path("/proj"), "cuda", 4, 5, lambda: saves.append(1))
    ok, missing, unpaired = rows
    assert missing["error"] == "no seeded record of this case in --store"
    assert "no same-process pairing" in unpaired["error"]
    assert ok["stored"] == {"paired": 1.06, "right_after_search": 1.02}
    assert [list(r["configs"]) for r in asked] == [["seeded", "lfbo"], ["lfbo", "seeded"]] * 2
    assert all(r["rounds"] == 5 and (r["kernel_id"], r["shape_name"]) == ("p.m:k", "s") for r in asked)
    assert [r.get("ratio") for r in ok["readings"]] == [1.07, 1.03, None, 1.03]
    assert "boom" in ok["readings"][2]["error"] and len(saves) == 4  # saved after every pairing, failed ones too
    # the stored pairing counts as one of the spread's; the order effect shows as a median per first config
    assert ok["spread"]["pairings"] == 4 and ok["spread"]["max_over_min"] == pytest.approx(1.07 / 1.03, abs=1e-4)
    assert ok["spread"]["median_by_first"] == {"lfbo": 1.03, "seeded": 1.07} and ok["spread"]["both_sides_of_bar"]


def test_proxy_store_copies_the_table_s_picks_under_another_card_s_run_key_and_leaves_the_drawn_rows_out() -> None:
    """Sessions 47-49 got H100s where the table is the H200's: a variant drawn there needs the H200's lfbo picks to be
    paired with, and the seeds a first build hands the drawn shape, under the H100's own run key, marked as copies."""
    from bench.probes.proxy_store import proxy_doc

    versions = {"helion": "1.5.0", "torch": "2.11.0+cu130", "triton": "3.6.0"}
    h200, h100 = {"name": "NVIDIA H200", "arch": "triton:sm90"}, {"name": "NVIDIA H100 80GB HBM3", "arch": "triton:sm90"}

    def case(kernel: str, shape: str, **recs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return f"{kernel}@{shape}", {"kernel_id": kernel, "shape_name": shape, "strategies": recs}

    cases = dict([case("m:attn", "medium", lfbo={"config": {"b": 1}}, seeded={"config": {"b": 2}}),
                  case("m:attn", "small", lfbo={"config": {"b": 3}}, seeded={"config": {"b": 4}}, llm={"config": {}}),
                  case("m:gdn", "large", lfbo={"config": {"b": 5}}, seeded={"config": {"b": 6}})])
    doc = {"format": 1, "runs": {run_key(h200, versions): {"gpu": h200, "versions": versions, "peaks": {"copy_gbps": 4000},
                                                           "cases": cases}}}
    out, copied = proxy_doc(doc, h100, ["m:attn@small"])
    src = run_key(h200, versions)
    assert out["runs"][src] == doc["runs"][src] and doc["runs"][src]["cases"] == cases  # the source untouched
    here = out["runs"][run_key(h100, versions)]
    assert here["proxy_of"] == src and here["peaks"] is None and here["gpu"] == h100  # this card measures its own peaks
    assert copied == ["m:attn@medium lfbo", "m:attn@medium seeded", "m:attn@small lfbo"]  # not gdn, not llm
    assert here["cases"]["m:attn@small"]["strategies"] == {"lfbo": {"config": {"b": 3}, "proxy_of": src}}
    assert here["cases"]["m:attn@medium"]["strategies"]["seeded"] == {"config": {"b": 2}, "proxy_of": src}
    # Going on from a store that already holds this card's draw keeps the draw (it is not redrawn).
    here["cases"]["m:attn@small"]["strategies"]["seeded"] = {"config": {"b": 7}}
    again, more = proxy_doc(out, h100, ["m:attn@small"])
    assert more == [] and again["runs"][run_key(h100, versions)]["cases"]["m:attn@small"]["strategies"]["seeded"] == {"config": {"b": 7}}
    # On the source card itself: the store as it is, so the same command draws a real table row.
    assert proxy_doc(doc, h200, ["m:attn@small"]) == (doc, [])
    with pytest.raises(SystemExit, match="m:attn@large not in the source run"):
        proxy_doc(doc, h100, ["m:attn@large"])
    two = {"format": 1, "runs": {**doc["runs"], run_key({"name": "B200", "arch": "triton:sm100"}, versions): {
        "gpu": {"name": "B200", "arch": "triton:sm100"}, "versions": versions, "cases": {}}}}
    with pytest.raises(SystemExit, match="more than one source run; give --source-gpu, one of: B200, NVIDIA H200"):
        proxy_doc(two, h100, ["m:attn@small"])
    assert run_key(h100, versions) in proxy_doc(two, h100, ["m:attn@small"], "NVIDIA H200")[0]["runs"]


def test_knob_swap_puts_each_of_lfbo_s_knobs_alone_into_the_pick_and_names_what_closes_the_gap() -> None:
    """bench/probes/knob_swap.py: a controlled reading of what the stores only show as patterns."""
    from bench.probes.knob_swap import checked, collect, measure_row, swaps

    mine = {"block_sizes": [256, 64], "num_stages": 2, "indexing": ["pointer"], "extra": 1}
    theirs = {"block_sizes": [128, 32], "num_stages": 3, "indexing": ["pointer"]}
    made = swaps(mine, theirs)
    assert sorted(made) == ["block_sizes", "block_sizes[0]", "block_sizes[1]", "extra", "num_stages"]
    assert made["block_sizes[1]"] == {**mine, "block_sizes": [256, 32]} and made["num_stages"]["num_stages"] == 3
    assert "extra" not in made["extra"]  # a knob lfbo's config lacks is dropped, as lfbo had Helion's default
    assert mine["block_sizes"] == [256, 64]  # the copies never alias the pick

    def normalize(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        if config["block_sizes"] == [128, 64]:
            raise AssertionError("not in this space")
        if config["block_sizes"] == [256, 32]:  # repaired: the stages move with the tile
            return {**config, "num_stages": 4}, ["num_stages"]
        return {k: v for k, v in config.items() if k != "extra"}, []  # Helion drops a knob it does not know
    kept, notes = checked(made, normalize, mine, theirs)
    assert sorted(kept) == ["block_sizes", "block_sizes[1]", "num_stages"]
    assert notes["block_sizes[0]"].startswith("dropped: not a config of this space, or does not launch (AssertionError")
    assert notes["extra"] == "dropped: as Helion normalizes it, the same config as mine"
    assert notes["block_sizes[1]"] == "repaired: num_stages"

    ms = {"mine": 1.10, "lfbo": 1.0, "block_sizes": 1.01, "block_sizes[1]": 1.12, "num_stages": 1.05}
    asked: list[list[str]] = []

    def measure(request: dict[str, Any], timeout: float) -> dict[str, Any]:
        asked.append(list(request["configs"]))
        return {"error": "boom"} if len(asked) == 3 else {"ms": {n: ms[n] * 2 for n in request["configs"]}, "pid": 7}
    row = {"case": "p.m:k@s", "readings": [], "configs": {"mine": mine, "lfbo": theirs, **kept}}
    measure_row(row, measure, Path("/p"), "cuda", 3, 5)
    assert asked[1] == asked[0][::-1] and "boom" in row["readings"][2]["error"]
    assert row["median_ratio"] == ms and row["closes_most"] == "block_sizes"
    assert row["gap_closed"] == {"block_sizes": 0.9, "block_sizes[1]": -0.2, "num_stages": 0.5}

    # Collected from the calls' JSON: one table, mine's ratio on this GPU beside the stored pairing's; a row where
    # mine is not behind lfbo here gets no shares (0.5% of a gap would make clock noise read as 10x closes).
    even = {"case": "p.m:k@l", "readings": [{"first": "mine", "ratio": {"mine": 0.995, "lfbo": 1.0, "tile": 1.09}}],
            "configs": {"mine": mine, "lfbo": theirs}, "stored_paired": 1.086}
    failed = {"case": "p.m:k@x", "error": "no seeded record of this case in --store", "readings": []}
    doc = collect([{"gpu": "NVIDIA H100 80GB HBM3", "versions": {"helion": "1.5.0"}, "rows": [row, even, failed]}])
    done, level = doc["rows"]
    assert done["closes_most_of_gap"] == ["block_sizes"] and list(done["gap_closed"])[0] == "block_sizes"
    assert (done["mine_here"], done["readings"], done["gpu"]) == (1.1, 2, "NVIDIA H100 80GB HBM3")
    assert (level["mine_here"], level["stored_paired"], level["gap_closed"], level["closes_most"]) == (0.995, 1.086, {}, None)


def test_miss_split_tells_misses_the_search_saw_from_those_only_the_judge_saw_and_reads_lfbo_at_a_quarter(
        tmp_path: Path) -> None:
    """bench/probes/miss_split.py: which fix a row over the bar needs (reach, or the last choice), from the stores."""
    from bench.probes.miss_split import kind_of, main
    from tuning.bench.store import PROXY_OF

    assert kind_of(1.04, 1.2) == "under" and kind_of(1.08, None) == "over, no search reading"
    assert kind_of(1.08, 1.06) == "over, the search saw it" and kind_of(1.08, 1.0) == "over, only the judge saw it"
    key = "NVIDIA H200|x"
    lfbo = {"config": {"b": 0}, "search_best_ms": 1.0,
            "trajectory": {"entries": 8, "points": [[1, 2.0], [2, 1.2], [5, 1.02], [8, 1.0]]}}

    def seeded(ms: float, best: float, at: str) -> dict[str, Any]:
        return {"config": {"b": 1}, "search_best_ms": best, "finished_at": at, "configs_tested": 3,
                "tuning_seconds": 1.0, "vs_lfbo": {"ms": ms, "lfbo_ms": 1.0}}

    def doc(**cases: dict[str, Any]) -> dict[str, Any]:
        return {"runs": {key: {"cases": {c: {"strategies": {"lfbo": lfbo, "seeded": rec}} for c, rec in cases.items()}}}}

    table = doc(**{"p.m:k@s": seeded(1.08, 1.01, "t1"), "p.m:k@m": seeded(1.0, 1.0, "t2")})
    trial = doc(**{"p.m:k@s": seeded(1.08, 1.01, "t1"), "p.m:k@m": seeded(1.09, 1.1, "t3")})  # the small is a copy
    trial["runs"]["H100|x"] = {PROXY_OF: key, **copy.deepcopy(trial["runs"][key])}  # another card's draws: left out
    paths = []
    for name, d in (("z_table.json", table), ("var_a.json", trial)):  # the trial sorts first; the copy is still the table's
        (tmp_path / name).write_text(json.dumps(d))
        paths.append(str(tmp_path / name))
    out = tmp_path / "miss_split.json"
    assert main(["--table", paths[0], "--stores", str(tmp_path / "var_*.json"), "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["summary"]["draws"] == 3  # the copied small counts once, the H100 run not at all
    assert got["summary"]["misses_by_case"] == {"p.m:k@m": {"over, the search saw it": 1},
                                                "p.m:k@s": {"over, only the judge saw it": 1}}
    # lfbo at a quarter of its 8 configs (config 2) read 1.2x its final best: over the bar on both rows
    assert got["lfbo_at_quarter"]["p.m:k@s"] == {"configs": 8, "at_quarter": 1.2, "seeded_searched": 1.01,
                                                 "seeded_configs": 3}
    assert got["summary"]["lfbo_at_quarter_over_bar"] == ["p.m:k@m", "p.m:k@s"]
    assert got["summary"]["table_seeded_searched_over_bar"] == []
    assert got["summary"]["table_misses"] == {"p.m:k@s": "over, only the judge saw it"}


def test_search_repeat_pairs_draws_of_one_search_from_the_same_seeds_and_sets_apart_what_a_finish_moved(
        tmp_path: Path) -> None:
    """bench/probes/search_repeat.py: how far a row moves when the same search runs again from the same seeds."""
    from bench.probes.search_repeat import collect, main

    off = {"polish": {"max_neighbors": 16}}
    on = {**off, "small_kernel_finish": {"below_ms": 0.025, "finalists": 8}}

    def store(case: str, ms: float, finished: str, limits: dict[str, Any] = off, digest: str = "d1",
              seed: int = 0, moved: float | None = None) -> dict[str, Any]:
        rec: dict[str, Any] = {"config": {"b": [32]}, "finished_at": finished, "configs_tested": 100,
                               "search_best_ms": 0.01, "seed_digest": digest, "strategy_limits": limits,
                               "budget": {"effort": "quick", "seed": seed},
                               "vs_lfbo": {"lfbo_config": {"b": [64]}, "ms": ms, "lfbo_ms": 1.0}}
        if moved is not None:
            rec["provenance"] = {"as_shipped": {"changed": True, "search_pick_ms": moved, "chosen_ms": 1.0}}
        return {"runs": {"H200|x": {"cases": {case: {"strategies": {"seeded": rec, "lfbo": {"config": {"b": [64]}}}}}}}}

    table = store("p.m:k@s", 1.10, "t0")
    docs = [("table.json", table), ("trial0.json", table),  # a trial store's copy is the same draw
            ("trial1.json", store("p.m:k@s", 1.01, "t1", limits=on, moved=1.001)),  # the finish barely moved it
            ("trial2.json", store("p.m:k@s", 0.90, "t2", limits=on, moved=1.07)),  # the finish moved it: set apart
            ("trial3.json", store("p.m:k@s", 1.30, "t3", digest="d2")),  # other seeds: another group, drawn once
            ("trial4.json", store("p.m:k@s", 1.30, "t4", limits={"polish": {"max_neighbors": 24}})),  # another search
            ("trial5.json", store("p.m:k@m", 1.02, "t5")), ("trial6.json", store("p.m:k@m", 1.03, "t6", seed=1)),
            ("probe.json", {"rows": []})]
    rows = collect(docs)
    assert [r["case"] for r in rows] == ["p.m:k@m", "p.m:k@s"]
    medium, small = rows
    assert [d["budget_seed"] for d in medium["draws"]] == [0, 1]  # a draw with another random seed is a draw again
    assert [d["ratio"] for d in small["draws"]] == [1.10, 1.01, 0.90] and small["left_out_finish_moved"] == ["t2"]
    assert [d["finish_moved"] for d in small["draws"]] == [1.0, 1.001, 1.07]
    assert small["spread"]["pairings"] == 2 and small["spread"]["both_sides_of_bar"]
    assert small["spread"]["max_over_min"] == pytest.approx(1.10 / 1.01, abs=1e-4)

    paths = []
    for name, doc in docs[:3] + [("junk.json", None)]:
        (tmp_path / name).write_text("not json" if doc is None else json.dumps(doc))
        paths.append(str(tmp_path / name))
    out = tmp_path / "search_repeats.json"
    assert main(["--stores", *paths, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["rows_counted"] == 1 and doc["rows_moved_over_5pct"] == ["p.m:k@s"]
    assert doc["rows_on_both_sides_of_bar"] == ["p.m:k@s"] and doc["bar"] == 1.05


def test_pick_split_groups_each_pick_once_by_its_descriptors_and_by_each_of_lfbo_s_knobs(tmp_path: Path) -> None:
    """bench/probes/pick_split.py: picks without tensor descriptors against picks with some, and by lfbo's knobs, per case."""
    from bench.probes.pick_split import main, picks, split
    from tuning.bench.compare import descriptor_count

    assert descriptor_count({"indexing": ["pointer", "tensor_descriptor"]}) == (1, 2)
    assert descriptor_count({"indexing": "tensor_descriptor"}) == (1, 1) and descriptor_count({}) == (0, 0)
    lfbo_cfg = {"indexing": ["pointer", "pointer"]}

    def store(case: str, *rows: tuple[list[str], float]) -> dict[str, Any]:
        strategies: dict[str, Any] = {"lfbo": {"config": lfbo_cfg}}
        for i, (indexing, ms) in enumerate(rows):
            strategies[f"s{i}"] = {"config": {"indexing": indexing, "b": i},
                                   "vs_lfbo": {"lfbo_config": lfbo_cfg, "ms": ms, "lfbo_ms": 1.0}}
        return {"runs": {"H200|x": {"cases": {case: {"strategies": strategies}}}}}

    P, T = "pointer", "tensor_descriptor"
    table = store("p.m:k@s", ([P, P], 1.01), ([T, P], 1.08), ([T, T], 1.2), ([P, P], 1.0))
    docs = [("table.json", table), ("trial.json", table),  # a copied pick is one pick
            ("mixed.json", store("p.m:k@m", ([P, P], 1.0), ([T, T], 0.99), ([P, P], 1.1), ([T, P], 1.02))),
            ("one.json", store("p.m:k@l", ([P, P], 1.0), ([T, T], 1.2))), ("probe.json", {"rows": []})]
    rows = {r["case"]: r for r in split(picks(docs))}
    small = rows["p.m:k@s"]
    assert small["pointers_only"]["picks"] == 2 and small["some_descriptors"]["picks"] == 2
    assert small["separates"] == "pointers ahead" and small["gap"] == 1.0693 and small["lfbo_descriptors"] == "0/2"
    assert [p["stores"] for p in small["picks"]][0] == ["table.json", "trial.json"]
    assert rows["p.m:k@m"]["separates"] == "no" and "gap" not in rows["p.m:k@m"]
    assert rows["p.m:k@l"]["separates"] == "too few picks"  # one pick a side decides nothing
    # lfbo's own knobs: here its indexing (all pointers) is held by the two picks ahead of the two without it
    assert set(small["lfbo_knob_ahead"]) == {"indexing"} and small["lfbo_knob_ahead"]["indexing"]["gap"] == 1.0693
    assert rows["p.m:k@m"]["lfbo_knob_ahead"] == {}  # held by picks on both sides

    paths = []
    for name, doc in docs:
        (tmp_path / name).write_text(json.dumps(doc))
        paths.append(str(tmp_path / name))
    out = tmp_path / "pick_split.json"
    assert main(["--stores", *paths, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["separates"] == {"p.m:k@s": "pointers ahead by 1.0693"}
    assert (doc["cases"], doc["picks"], doc["readings"]) == (3, 10, 10)  # the trial's copies of the table's picks count once
    assert doc["lfbo_knob_ahead_where_picks_over_bar"] == {"p.m:k@s": ["indexing"]}


def test_pick_split_tells_the_picks_that_kept_their_seed_s_tile_from_those_on_lfbo_s(tmp_path: Path) -> None:
    """bench/probes/pick_split.py's ``tiles``: the evidence ``seed_variants.scaled_tiles`` was built on.

    Each pick's seed tile is the same store's same-strategy pick at its nearest seed shape (the
    medium); a cold start has none.
    """
    from bench.probes.pick_split import main

    lfbo = {"block_sizes": [128]}

    def store(large: list[tuple[str, list[int], float]], medium: list[int]) -> dict[str, Any]:
        cases: dict[str, Any] = {"p.m:k@medium": {"strategies": {
            "lfbo": {"config": lfbo}, "seeded": {"config": {"block_sizes": medium}, "seeded_from_shapes": [],
                                                 "vs_lfbo": {"lfbo_config": lfbo, "ms": 1.0, "lfbo_ms": 1.0}}}}}
        strategies: dict[str, Any] = {"lfbo": {"config": lfbo}}
        for name, tile, ratio in large:
            strategies[name] = {"config": {"block_sizes": tile, "by": name}, "seeded_from_shapes": ["medium", "small"],
                                "vs_lfbo": {"lfbo_config": lfbo, "ms": ratio, "lfbo_ms": 1.0}}
        cases["p.m:k@large"] = {"strategies": strategies}
        return {"runs": {"H200|x": {"cases": cases}}}

    docs = {"a.json": store([("seeded", [64], 1.08), ("hybrid", [128], 1.01)], medium=[64]),
            "b.json": store([("seeded", [32], 1.2)], medium=[64])}
    paths = []
    for name, doc in docs.items():
        (tmp_path / name).write_text(json.dumps(doc))
        paths.append(str(tmp_path / name))
    out = tmp_path / "pick_split.json"
    assert main(["--stores", *paths, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = {r["case"]: r for r in doc["rows"]}
    tiles = rows["p.m:k@large"]["tiles"]
    assert tiles["lfbo"] == [128] and tiles["seeds"] == [[64]]
    assert (tiles["kept_seed_tile"]["picks"], tiles["kept_seed_tile"]["max"], tiles["kept_seed_tile"]["over_bar"]) == (1, 1.08, 1)
    assert tiles["on_lfbo_tile"]["picks"] == 1 and tiles["other_tile"]["picks"] == 1  # hybrid on lfbo's; [32] another
    assert rows["p.m:k@medium"]["tiles"]["seeds"] == []  # a cold start has no seed tile
    assert list(doc["seed_tile_kept_where_picks_over_bar"]) == ["p.m:k@large"]


def test_scaled_tiles_preview_runs_the_variant_on_the_table_s_own_seeds(tmp_path: Path) -> None:
    """bench/probes/scaled_tiles_preview.py: which tiles the variant would seed, per row, with no GPU."""
    from bench.probes.scaled_tiles_preview import main

    def rec(tile: list[int], shape: str, seeded_from: list[str]) -> dict[str, Any]:
        return {"config": {"block_sizes": tile}, "shape": shape, "seeded_from_shapes": seeded_from,
                "source_hash": "sha256:a", "seeding": SEEDING}

    cases = {f"p.m:k@{name}": {"kernel_id": "p.m:k", "shape_name": name, "strategies": {
        "lfbo": {"config": {"block_sizes": lfbo}, "shape": shape}, "seeded": rec(mine, shape, seeded_from)}}
        for name, shape, mine, lfbo, seeded_from in (
            ("small", "f32[4, 512]", [32, 64], [64, 64], ["medium"]),
            ("medium", "f32[8, 2048]", [128, 64], [128, 64], []),
            ("large", "f32[16, 8192]", [128, 64], [256, 64], ["medium", "small"]))}
    store = tmp_path / "store.json"
    store.write_text(json.dumps({"runs": {"H200|x": {"cases": cases}}}))
    out = tmp_path / "preview.json"
    assert main(["--store", str(store), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = {r["case"]: r for r in doc["runs"]["H200|x"]}
    assert set(rows) == {"p.m:k@small", "p.m:k@large"}  # the medium starts cold: no seed, no variant
    assert rows["p.m:k@small"]["ways"] == [-1] and rows["p.m:k@small"]["variants"] == [[64, 64], [128, 32], [64, 32]]
    assert rows["p.m:k@large"]["ways"] == [1]  # only the first seed, the medium, is scaled
    assert rows["p.m:k@large"]["variants"] == [[256, 64], [128, 128], [256, 128]]
    assert doc["reaches_lfbo_tile"] == ["p.m:k@large", "p.m:k@small"]


def test_lfbo_spread_re_times_two_lfbo_draws_in_one_process_and_refuses_draws_it_cannot_compare() -> None:
    """bench/probes/lfbo_spread.py: the noise floor under the latency bar, one judge process per case."""
    from bench.probes.lfbo_spread import compare

    def store(seed: int, block: int, **extra: Any) -> dict[str, Any]:
        rec = {"config": {"block_sizes": [block]}, "configs_tested": 400, "tuning_seconds": 300.0, "search_best_ms": 1.0,
               "source_hash": "sha256:a", "spec": "[\"f32[8]\"]", "budget": {"effort": "full", "seed": seed}, **extra}
        return {"runs": {"H200|x": {"cases": {"p.m:k@s": {"strategies": {"lfbo": rec}}}}}}

    asked: list[dict[str, Any]] = []

    def measure(request: dict[str, Any], timeout: float) -> dict[str, Any]:
        asked.append(request)
        return {"ms": {"first": 1.0, "second": 1.08}, "ref_ms": 2.0, "timers": {}, "judge": {"spare": False}}

    (row,) = compare(store(0, 64), store(1, 32), ["p.m:k@s"], Path("/proj"), "cuda", measure)
    assert row["second_over_first"] == 1.08 and row["same_config"] is False
    assert [d["capped"] for d in row["draws"]] == [False, False] and "note" not in row
    assert [d["seed"] for d in row["draws"]] == [0, 1] and row["run"] == "H200|x"
    (request,) = asked  # both configs in one request: one process, interleaved
    assert request["configs"] == {"first": {"block_sizes": [64]}, "second": {"block_sizes": [32]}}
    assert (request["kernel_id"], request["shape_name"]) == ("p.m:k", "s")

    asked.clear()
    (same_seed,) = compare(store(0, 64), store(0, 32), ["p.m:k@s"], Path("/proj"), "cuda", measure)
    assert "both draws have seed 0" in same_seed["error"] and not asked
    (other_source,) = compare(store(0, 64), store(1, 32, source_hash="sha256:b"), ["p.m:k@s"], Path("/proj"), "cuda", measure)
    assert "another kernel source" in other_source["error"]
    (missing,) = compare(store(0, 64), {"runs": {}}, ["p.m:k@s"], Path("/proj"), "cuda", measure)
    assert missing["error"] == "no lfbo record in --other" and not asked
    # a second draw capped to fit a device call (SPREAD_SECONDS) is compared, and said to be capped
    capped_store = store(1, 32)
    capped_store["runs"]["H200|x"]["cases"]["p.m:k@s"]["strategies"]["lfbo"]["budget"]["seconds"] = 300
    (capped,) = compare(store(0, 64), capped_store, ["p.m:k@s"], Path("/proj"), "cuda", measure)
    assert [d["capped"] for d in capped["draws"]] == [False, True] and [d["seconds"] for d in capped["draws"]] == [None, 300]
    assert "seconds cap" in capped["note"] and capped["second_over_first"] == 1.08
    asked.clear()
    (copied,) = compare(store(0, 64, finished_at="t0"), store(0, 64, finished_at="t0"), ["p.m:k@s"], Path("/proj"), "cuda", measure)
    assert copied["error"].startswith("no second draw in --other") and "longer limit" in copied["error"] and not asked


def test_draws_counts_each_draw_once_and_puts_a_search_in_the_table_on_the_mean_of_its_draws(tmp_path: Path) -> None:
    """bench/draws.py: a trial store is a copy of the table's, so a copied record is one draw, not two;
    a case drawn twice under one search counts as the mean of its draws (session 35: the table's draw
    was the favourable one on all three rows drawn again), and a variant's draws replace the table's rows."""
    import copy

    from bench.draws import main as draws_main

    lf = {"b": [64]}
    usual = {"effort": "quick", "seconds": 900, "seed": 0}
    variant = copy.deepcopy(LIMITS["seeded"])
    table_key = next(k for k, v in variant.items() if isinstance(v, dict))
    variant[table_key]["trial_knob"] = 2

    def seeded(ms: float, sec: float, seed: int = 0, limits: dict[str, Any] | None = None) -> dict[str, Any]:
        return {**_rec(sec, 80, ms, {"b": [32]}, vs_lfbo={"lfbo_config": lf, "lfbo_ms": 1.0, "ms": ms},
                       strategy_limits=limits or LIMITS["seeded"], finished_at=f"t{ms}{seed}"),
                "budget": {**usual, "seed": seed}}

    table = {"p.m:a@medium": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.00, 100)},
             "p.m:a@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.02, 100)}}
    _store_of(table, tmp_path / "store.json").save()
    second = copy.deepcopy(table)
    second["p.m:a@medium"]["seeded"] = seeded(1.10, 100, seed=1)  # today's search, drawn again
    _store_of(second, tmp_path / "var_seed1.json").save()
    trial = copy.deepcopy(table)
    trial["p.m:a@medium"]["seeded"] = seeded(0.98, 200, limits=variant)  # a variant's row; small stays the table's copy
    _store_of(trial, tmp_path / "var_trial.json").save()

    out = tmp_path / "draws.json"
    assert draws_main(["--table", str(tmp_path / "store.json"), str(tmp_path / "var_seed1.json"),
                       str(tmp_path / "var_trial.json"), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    today = doc["table_search"]
    assert today == "today's search" and "not measured in one run" in doc["what"]
    assert [d["latency_ratio"] for d in doc["draws"]["p.m:a@small"][today]] == [1.02]  # three copies, one draw
    assert [d["budget"] for d in doc["draws"]["p.m:a@medium"][today]] == ["as the table's", "seed=1"]
    assert doc["spreads"] == {"p.m:a@medium": {today: 1.1}}
    mine = doc["in_place_of_table"][today]
    assert mine["geomean_latency_ratio"] == pytest.approx(((1.10 ** 0.5) * 1.02) ** 0.5, abs=1e-4)  # mean of two draws
    (trial_search,) = set(doc["in_place_of_table"]) - {today}
    assert "trial_knob=2" in trial_search
    theirs = doc["in_place_of_table"][trial_search]
    assert theirs["cases_from_this_search"] == 1 and theirs["cases"] == 2
    assert theirs["cases_not_drawn"] == ["p.m:a@small"] and mine["cases_not_drawn"] == []
    assert theirs["geomean_latency_ratio"] == pytest.approx((0.98 * 1.02) ** 0.5, abs=1e-4)
    assert theirs["geomean_time_ratio"] == pytest.approx((2.0 * 4.0) ** 0.5, abs=1e-3)
    # side by side on the one row both drew: the table's search on the mean of its two draws
    shared = doc["on_shared_rows"][trial_search]
    assert set(shared) == {"all", str(tmp_path / "var_trial.json")} and shared["all"]["cases"] == 1
    assert shared["all"]["this_search"]["geomean_latency_ratio"] == 0.98
    assert shared["all"]["table_search"]["geomean_latency_ratio"] == pytest.approx(1.10 ** 0.5, abs=1e-4)
    assert shared["all"]["table_search"]["cases_over_worst_bar"] == [] and today not in doc["on_shared_rows"]
    assert doc["best_of_two"] == {trial_search: None}  # the trial has not drawn the small shape

    # once the trial draws every case: each case on the faster search's mean, and both searches' time
    trial["p.m:a@small"]["seeded"] = seeded(1.08, 100, limits=variant)
    _store_of(trial, tmp_path / "var_trial.json").save()
    assert draws_main(["--table", str(tmp_path / "store.json"), str(tmp_path / "var_seed1.json"),
                       str(tmp_path / "var_trial.json"), "--best-of-two-kernels", "b", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    both = doc["best_of_two"][trial_search]
    assert both["kernels"] == "all"
    assert both["geomean_latency_ratio"] == pytest.approx((0.98 * 1.02) ** 0.5, abs=1e-4)  # the trial's medium, the table's small
    # time: medium 1/(1/4 + 1/2) (table 100 s, trial 200 s, against lfbo's 400 s); small 1/(1/4 + 1/4)
    assert both["geomean_time_ratio"] == pytest.approx(((4 / 3) * 2.0) ** 0.5, abs=1e-3)
    narrowed = doc["best_of_two_on_some_kernels"][trial_search]  # kernel b has no cases: the table's rows throughout
    assert narrowed["kernels"] == ["b"] and narrowed["geomean_latency_ratio"] == pytest.approx(
        ((1.10 ** 0.5) * 1.02) ** 0.5, abs=1e-4)


def test_draws_count_the_rows_a_conditional_finish_leaves_unchanged_as_drawn(tmp_path: Path) -> None:
    """bench/draws.py: a small-kernel-finish trial drawn on the rows it acts on has nothing left to draw.

    The finish acts only where the search's best reads under its threshold; elsewhere the trial's
    search is the table's (tuning/bench/same_search.py), so those rows need no draw of their own.
    """
    import copy

    from bench.draws import main as draws_main

    lf = {"b": [64]}
    finish = {**LIMITS["seeded"], "small_kernel_finish": {"finalists": 8, "below_ms": 0.025}}

    seeded = _drawn

    table = {"p.m:a@medium": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.00, 0.05, LIMITS["seeded"])},
             "p.m:a@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.11, 0.0074, LIMITS["seeded"])},
             "p.m:b@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.02, 0.0081, LIMITS["seeded"])}}
    _store_of(table, tmp_path / "store.json").save()
    trial = copy.deepcopy(table)
    trial["p.m:a@small"]["seeded"] = seeded(1.01, 0.0075, finish)  # drawn where it acts; b@small not yet
    _store_of(trial, tmp_path / "var_skf8.json").save()

    out = tmp_path / "draws.json"
    assert draws_main(["--table", str(tmp_path / "store.json"), str(tmp_path / "var_skf8.json"), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    (trial_search,) = set(doc["in_place_of_table"]) - {doc["table_search"]}
    fig = doc["in_place_of_table"][trial_search]
    assert fig["cases_not_drawn"] == ["p.m:a@medium", "p.m:b@small"]
    assert fig["cases_unchanged"] == ["p.m:a@medium"]  # its search read 0.05 ms: the finish would not act
    assert fig["cases_left_to_draw"] == ["p.m:b@small"]  # 0.0081 ms: it would, so it must be drawn
    # the fewest rows over 1.05 it can end with: none among its draw and the row it leaves as the table's
    assert fig["cases_over_whatever_is_left"] == []
    assert doc["in_place_of_table"][doc["table_search"]]["cases_over_whatever_is_left"] == ["p.m:a@small"]
    assert doc["in_place_of_table"][doc["table_search"]]["cases_unchanged"] == []

    # A case seeded from a shape the finish acts on is not unchanged, though the finish would not act on it
    # (session 44: the 10 small rows' new picks seed the 10 large rows, which must be drawn too).
    from bench.draws import unchanged_by

    rows = {f"p.m:a@{shape}": {"search_best_ms": best} for shape, best in (("medium", 0.05), ("small", 0.0074),
                                                                            ("large", 0.3))}
    earlier = {"p.m:a@medium": frozenset(), "p.m:a@small": frozenset({"medium"}),
               "p.m:a@large": frozenset({"medium", "small"})}
    chained = unchanged_by(finish, LIMITS["seeded"], rows, earlier)
    assert [chained(f"p.m:a@{s}") for s in ("medium", "small", "large")] == [True, False, False]
    assert unchanged_by(finish, LIMITS["seeded"], rows)("p.m:a@large")  # without the build order: its own search only


def test_draws_credit_a_finish_only_with_the_rows_it_moved_and_pool_the_rest_with_the_table_s_draws(
        tmp_path: Path) -> None:
    """bench/draws.py: where a conditional finish kept the search's own pick, the draw is a draw of the table's
    search too (session 55: attention small 1.589 to 1.031 under `skf8pc4`, its finish keeping the pick).

    The figure reads both searches on the mean of the table's draw and that one there, so the finish is
    credited only with the rows it moved: on the small it changed, and on the large seeded from that small.
    """
    import copy

    from bench.draws import main as draws_main

    lf = {"b": [64]}
    finish = {**LIMITS["seeded"], "small_kernel_finish": {"finalists": 8, "below_ms": 0.025}}

    def seeded(ms: float, best: float, limits: dict[str, Any], changed: bool | None = None,
               shapes: list[str] | None = None) -> dict[str, Any]:
        extra: dict[str, Any] = {} if changed is None else {"provenance": {"as_shipped": {"changed": changed}}}
        return _drawn(ms, best, limits, seeded_from_shapes=shapes, **extra)

    table = {"p.m:a@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.11, 0.0074, LIMITS["seeded"])},
             "p.m:a@large": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.00, 0.3, LIMITS["seeded"])},
             "p.m:b@small": {"lfbo": _rec(400, 500, 1.0, lf), "seeded": seeded(1.20, 0.0081, LIMITS["seeded"])}}
    _store_of(table, tmp_path / "store.json").save()
    trial = copy.deepcopy(table)
    trial["p.m:a@small"]["seeded"] = seeded(1.01, 0.0075, finish, changed=True)  # the finish moved the pick
    trial["p.m:a@large"]["seeded"] = seeded(1.06, 0.3, finish, shapes=["small"])  # seeded from that moved pick
    trial["p.m:b@small"]["seeded"] = seeded(1.00, 0.0080, finish, changed=False)  # kept the search's pick
    _store_of(trial, tmp_path / "var_skf.json").save()

    out = tmp_path / "draws.json"
    assert draws_main(["--table", str(tmp_path / "store.json"), str(tmp_path / "var_skf.json"), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    today = doc["table_search"]
    (trial_search,) = set(doc["in_place_of_table"]) - {today}
    assert [d["its_finish_moved_it"] for c in ("p.m:a@small", "p.m:a@large", "p.m:b@small")
            for d in doc["draws"][c][trial_search]] == [True, True, False]
    assert all("its_finish_moved_it" not in d for by in doc["draws"].values() for d in by[today])
    # Counted as drawn, it would have one row over where the table has two: b@small's 1.20 to 1.00 is spread.
    assert doc["in_place_of_table"][trial_search]["cases_over_worst_bar"] == ["p.m:a@large"]
    fig = doc["where_its_finish_acted"][trial_search]
    assert fig["cases_its_finish_moved"] == ["p.m:a@large", "p.m:a@small"]
    assert fig["cases_it_drew_as_the_table_s_search"] == ["p.m:b@small"]
    pooled = (1.20 * 1.00) ** 0.5
    assert fig["this_search"]["cases_over_worst_bar"] == ["p.m:a@large", "p.m:b@small"]
    assert fig["table_search"]["cases_over_worst_bar"] == ["p.m:a@small", "p.m:b@small"]
    assert fig["this_search"]["geomean_latency_ratio"] == pytest.approx((1.01 * 1.06 * pooled) ** (1 / 3), abs=1e-4)
    assert fig["table_search"]["geomean_latency_ratio"] == pytest.approx((1.11 * 1.00 * pooled) ** (1 / 3), abs=1e-4)
    assert list(doc["where_its_finish_acted"]) == [trial_search]  # only a search that differs by a finish


def test_draws_leave_out_a_draw_seeded_otherwise_than_a_first_build() -> None:
    """Session 39: a call on a fresh machine lost its trial store, so grouped GEMM small ran cold and large
    from small alone; draws.py must not count them as the variant's draws of those rows."""
    from bench.draws import ROOT, collect, off_build_order
    from tuning.bench.seeding import build_earlier, declared_labels

    earlier = build_earlier(declared_labels(ROOT, {}))
    small, large = "model_kernels.grouped_gemm:grouped_gemm@small", "model_kernels.grouped_gemm:grouped_gemm@large"
    assert earlier[small] == {"medium"} and earlier[large] == {"medium", "small"}  # middle first, in declared order
    assert off_build_order(small, {"seeded_from_shapes": []}, earlier)
    assert off_build_order(large, {"seeded_from_shapes": ["small"]}, earlier)
    assert not off_build_order(large, {"seeded_from_shapes": ["small", "medium"]}, earlier)
    assert not off_build_order(small, {}, earlier)  # names no shapes: the report's own rule judges it
    assert not off_build_order("p.m:a@small", {"seeded_from_shapes": []}, earlier)  # not a declared case

    row = {"latency_from": "same process", "configs": 10, "seconds": 5.0, "latency_ratio": 1.0, "time_ratio": 4.0}
    summary = {"store": "var_x.json", "groups": {"x": {"cases": {
        small: {**row, "seeded_from_shapes": []}, large: {**row, "seeded_from_shapes": ["medium", "small"]}}}}}
    left: list[dict[str, Any]] = []
    draws = collect([summary], {}, earlier, left)
    assert list(draws) == [large]
    assert left == [{"case": small, "search": "x", "store": "var_x.json", "seeded_from_shapes": [],
                     "a_first_build_seeds_from": ["medium"]}]


def test_report_puts_lfbos_measured_spread_beside_the_bar_and_refuses_a_file_that_is_not_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kiln bench --report --spread lfbo_spread.json`: lfbo drawn twice and re-timed in one process (session 38:
    0.9993 and 0.9956) goes in the report and its JSON, with the verdict on which side of the bar it falls; a
    spread wider than the bar says the shortfall is partly the baseline's; a bench store given as --spread is
    refused by name, and --spread without --report says what it goes with."""
    from tuning.cli import main as kiln_main

    store = _synthetic_store(tmp_path / "store.json")
    store.save()
    (key,) = store.doc["runs"]

    def spread_file(name: str, ratios: dict[str, float], capped: bool = False) -> Path:
        rows = [{"case": c, "run": key, "second_over_first": r, "same_config": False,
                 "draws": [{"seed": 0, "configs_tested": 500, "tuning_seconds": 300.0, "capped": False},
                           {"seed": 1, "configs_tested": 400, "tuning_seconds": 240.0, "capped": capped}]}
                for c, r in ratios.items()]
        rows.append({"case": "p.m:z@small", "error": "no lfbo record in --other"})
        path = tmp_path / name
        path.write_text(json.dumps({"rows": rows, "worst_apart": None}))
        return path

    narrow = spread_file("narrow.json", {"p.m:a@small": 0.9956, "p.m:b@small": 1.0007})
    away = ["--project", str(tmp_path)]
    out = tmp_path / "report"
    assert kiln_main(["bench", "--report", "--store", str(store.path), "--out", str(out), "--spread", str(narrow), *away]) == 0
    md = (out / "README.md").read_text()
    assert "### `lfbo` against itself" in md
    assert "| p.m:a@small | 0.9956 | 0, 500, 300.0; 1, 400, 240.0 | no |" in md
    assert "at most 1.0044x apart on 2 case(s), inside the 1.05 bar" in md and "by its own search" in md
    assert "- not compared: p.m:z@small: no lfbo record in --other" in md
    floor = json.loads((out / "summary.json").read_text())["runs"][0]["lfbo_noise_floor"]
    assert floor["worst_apart"] == 1.0044 and floor["within_bar"] is True and len(floor["rows"]) == 2
    capsys.readouterr()
    assert kiln_main(["bench", "--report", "--json", "--store", str(store.path), "--spread", str(narrow), *away]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["lfbo_noise_floor"] == floor

    wide = spread_file("wide.json", {"p.m:a@small": 1.08}, capped=True)
    assert kiln_main(["bench", "--report", "--store", str(store.path), "--out", str(out), "--spread", str(wide), *away]) == 0
    md = (out / "README.md").read_text()
    assert "up to 1.0800x apart, wider than the 1.05 bar" in md and "partly the baseline's" in md
    assert "(capped)" in md and "bounds the spread from one side only" in md

    # Without --spread the report has no such section.
    assert kiln_main(["bench", "--report", "--store", str(store.path), "--out", str(out), *away]) == 0
    assert "against itself" not in (out / "README.md").read_text()

    capsys.readouterr()
    assert kiln_main(["bench", "--report", "--store", str(store.path), "--spread", str(store.path), *away]) == 2
    err = capsys.readouterr().err
    assert f"--spread {store.path}: no 'rows' list" in err and "bench/probes/lfbo_spread.py" in err
    assert kiln_main(["bench", "--store", str(store.path), "--spread", str(narrow), *away]) == 2
    assert "--spread goes with --report" in capsys.readouterr().err


def test_compile_times_times_each_config_s_first_call_into_a_fresh_triton_cache_and_restores_the_cache_setting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/probes/compile_times.py: the compile a search's timeout cuts off is the first call's, less a warm call."""
    import time

    from bench.probes.compile_times import timed_compile

    monkeypatch.setenv("TRITON_CACHE_DIR", "/kept")
    caches: list[str] = []

    class Bound:
        def compile_config(self, config: Any) -> Any:
            assert config.config["block_sizes"] == [4]
            built: list[bool] = []

            def fn(*args: Any) -> None:
                if not built:  # the first call compiles, into the cache this config was given
                    caches.append(os.environ["TRITON_CACHE_DIR"])
                    assert os.path.isdir(caches[-1]) and not os.listdir(caches[-1])
                    time.sleep(0.05)
                    built.append(True)
            return fn

    got = [timed_compile(Bound(), (), {"block_sizes": [4]}, "cpu") for _ in range(2)]
    assert all(t["compile_s"] >= 0.04 and t["second_call_s"] < 0.04 for t in got)
    assert len(set(caches)) == 2 and "/kept" not in caches  # a fresh cache per config, never the one set before
    assert os.environ["TRITON_CACHE_DIR"] == "/kept"


def test_search_paths_reads_where_each_search_stopped_from_its_log_and_joins_its_stored_ratio(tmp_path: Path) -> None:
    """bench/probes/search_paths.py: a log's search blocks, joined to the store by case, configs and seconds."""
    from bench.probes.search_paths import collect

    def block(case: str, gens: list[str], stop: bool, configs: int, seconds: float) -> list[str]:
        lines = [f"kiln bench: tune {case} with seeded", "[0s] Starting LFBOTreeSearch with initial_population="
                 "FROM_BEST_AVAILABLE, copies=2, max_generations=5, similarity_penalty=1.0",
                 "[16s] Qualified population of 30, 2 retained search paths: ", "error=3 ok=27 | min=0.3788 mid=1.4 max=27"]
        for i, g in enumerate(gens, 1):
            lines += [f"[30s] Generation {i} complete: ", g, "best:", "  block_sizes = [256, 64]"]
        if stop:
            lines += ["[42s] Copy 0 finish because of no improvement", "[42s] Copy 1 finish because of no improvement",
                      f"[42s] Autotuning stop at generation {len(gens) + 1} because of no active search path"]
        return lines + [f"[{int(seconds)}s] Autotuning complete in {seconds - 0.9:.1f}s after searching {configs} configs.",
                        f"kiln bench: done {case} seeded: {configs} configs, {seconds} s, 0.4 ms (fresh process)"]

    stalled = block("p.m:k@medium", ["error=16 timeout=2 ok=7 | min=0.3788 mid=1 max=4",
                                     "error=2 timeout=10 ok=12 | min=0.3790 mid=1 max=4"], True, 139, 78.594)
    improved = block("p.m:k@medium", ["error=1 ok=23 | min=0.3500 mid=1 max=4"] * 5, False, 200, 90.01)
    cut = ["kiln bench: tune p.m:k@small with seeded", "[0s] Qualified population of 24"]  # the call ended mid-search
    (tmp_path / "a.log").write_text("\n".join(stalled + improved + cut) + "\n")
    (tmp_path / "b.log").write_text("\n".join(stalled) + "\n")  # an appended log repeats a block
    proxy = block("p.m:k@small", ["error=0 ok=24 | min=0.01 mid=1 max=4"] * 5, False, 99, 50.0)
    (tmp_path / "c.log").write_text("\n".join(proxy) + "\n")

    def rec(configs: int, seconds: float, ratio: float, **extra: Any) -> dict[str, Any]:
        return {"strategies": {"seeded": {"configs_tested": configs, "tuning_seconds": seconds, "seeded_from_shapes": [],
                                          "vs_lfbo": {"ms": ratio, "lfbo_ms": 1.0}, **extra}}}
    h200 = "NVIDIA H200|triton:sm90|helion=1.5.0"
    store = tmp_path / "store.json"
    store.write_text(json.dumps({"runs": {h200: {"cases": {"p.m:k@medium": rec(139, 78.59412, 1.08)}}}}))
    trial = tmp_path / "trial.json"  # another draw of the same case, and a proxy copy no reader may count
    trial.write_text(json.dumps({"runs": {h200: {"cases": {"p.m:k@medium": rec(200, 90.0104, 1.0,
                                                                       strategy_limits={"search_stop": {"patience": 2}}),
                                                           "p.m:k@small": rec(99, 50.0, 1.2, proxy_of="H200")}}}}))

    doc = collect([tmp_path / "a.log", tmp_path / "b.log", tmp_path / "c.log"], [store, trial])
    assert doc["searches"] == 2 and doc["log_blocks_without_a_paired_record"] == 1  # the proxy copy's block
    rows = {r["ratio"]: r for r in doc["rows"]}
    assert rows[1.08]["stalled"] and rows[1.08]["stopped_early"] and rows[1.08]["generations_run"] == 2
    assert rows[1.08]["generation_failed_share"] == round(30 / 49, 3) and rows[1.08]["population_failed_share"] == 0.1
    assert not rows[1.0]["stalled"] and rows[1.0]["improved_on_population"] and rows[1.0]["generations_run"] == 5
    gpu = doc["by_gpu"]["NVIDIA H200"]
    assert gpu["stalled"]["over_bar"] == 1 and gpu["not_stalled"]["geomean_ratio"] == 1.0
    assert gpu["within_case"]["cases_drawn_both_ways"] == 1 and gpu["within_case"]["cases_where_stalled_read_worse"] == 1
    assert rows[1.08]["paths_ended"] == 2 and rows[1.08]["seconds_per_generation"] == 13.0  # [16s] to [42s], 2 generations
    assert rows[1.0]["paths_ended"] == 0
    assert rows[1.0]["patience"] == 2 and rows[1.08]["patience"] == 0  # read from the record's strategy_limits


def test_search_paths_credits_a_record_to_the_first_store_given(tmp_path: Path) -> None:
    """A trial store holds copies of the table's records: the table's store, given first, is the one named."""
    from bench.probes.search_paths import _paths, records

    rec = {"configs_tested": 139, "tuning_seconds": 78.5, "vs_lfbo": {"ms": 1.0, "lfbo_ms": 1.0}}
    doc = json.dumps({"runs": {"H200|v": {"cases": {"p.m:k@medium": {"strategies": {"seeded": rec}}}}}})
    (tmp_path / "a_trial").mkdir()
    for path in (tmp_path / "store.json", tmp_path / "a_trial" / "var_x.json"):
        path.write_text(doc)
    paths = _paths([str(tmp_path / "store.json"), str(tmp_path / "*" / "var_*.json"), str(tmp_path / "store.json")])
    assert paths == [tmp_path / "store.json", tmp_path / "a_trial" / "var_x.json"]  # the order given, each once
    assert [r["store"] for r in records(paths).values()] == [str(tmp_path / "store.json")]


def test_search_paths_patience_reach_names_the_table_rows_whose_paths_ended_and_projects_their_cost(tmp_path: Path) -> None:
    """patience_reach: only a row whose logged search ended a path is one a longer patience changes; its cost is projected."""
    from bench.probes.search_paths import PROJECTED_EXTRA_GENERATIONS, draw_order, patience_reach

    h200 = "NVIDIA H200|triton:sm90|helion=1.5.0"
    rows = [{"case": "p.m:k@medium", "configs": 139, "seconds": 78.594, "ratio": 1.08, "paths_ended": 2,
             "seconds_per_generation": 13.0, "generations_run": 2, "max_generations": 5, "run": h200, "log": "t.log"},
            {"case": "p.m:k@small", "configs": 90, "seconds": 40.0, "ratio": 1.0, "paths_ended": 0,
             "seconds_per_generation": 3.0, "generations_run": 5, "max_generations": 5, "run": h200, "log": "t.log"},
            {"case": "p.m:k@medium", "configs": 200, "seconds": 90.01, "ratio": 1.0, "paths_ended": 0,  # a trial's draw
             "seconds_per_generation": 2.8, "generations_run": 5, "max_generations": 5, "run": h200, "log": "v.log"},
            {"case": "p.m:k@medium", "configs": 210, "seconds": 99.0, "ratio": 1.02, "paths_ended": 2,  # pat2, H100 proxy
             "seconds_per_generation": 9.0, "generations_run": 4, "max_generations": 5, "patience": 2,
             "run": "H100|copy", "proxy_of": h200, "log": "p.log"}]

    def entry(configs: int, seconds: float, lfbo_seconds: float) -> dict[str, Any]:
        return {"strategies": {"seeded": {"configs_tested": configs, "tuning_seconds": seconds},
                               "lfbo": {"tuning_seconds": lfbo_seconds}}}
    table = {"runs": {h200: {"cases": {"p.m:k@medium": entry(139, 78.59412, 400.0), "p.m:k@small": entry(90, 40.0, 160.0),
                                       "p.m:k@large": entry(50, 50.0, 200.0)}},  # no log block: not reached, and named
                      "H100|copy": {"proxy_of": h200, "cases": {"p.m:k@medium": entry(139, 78.59412, 400.0)}}}}
    reach = patience_reach(rows, table)
    assert list(reach) == [h200]  # a proxy run is another card's picks: not a table of its own
    got = reach[h200]
    assert got["cases"] == 3 and got["reached"] == 1 and got["reached_cases"] == ["p.m:k@medium"]
    assert got["reached_over_bar"] == [{"case": "p.m:k@medium", "ratio": 1.08, "paths_ended": 2}]
    assert got["without_log"] == ["p.m:k@large"] and got["draw_order"] == ["p.m:k@medium"]
    # kernels with a row over the bar first (worst first), each kernel's middle shape before its others
    entries = [{"case": c, "ratio": r} for c, r in [("a.x:k@large", 1.0), ("a.x:k@small", 1.0), ("a.x:k@medium", 1.0),
                                                     ("b.y:k@small", 1.06), ("c.z:k@large", 1.2), ("c.z:k@medium", None)]]
    assert draw_order(entries) == ["c.z:k@medium", "c.z:k@large", "b.y:k@small",
                                   "a.x:k@medium", "a.x:k@small", "a.x:k@large"]
    assert [e["case"] for e in got["not_reached"]] == ["p.m:k@large", "p.m:k@small"]
    assert got["time_ratio_now"] == round((400 / 78.59412 * 4 * 4) ** (1 / 3), 3)
    for k in PROJECTED_EXTRA_GENERATIONS:  # each ended path: k more generations at half its search's 13 s each
        want = round((400 / (78.59412 + k * 2 * 6.5) * 4 * 4) ** (1 / 3), 3)
        assert got["projected_time_ratio"][f"{k}_more_generations_per_ended_path"] == want
    # a longer patience's draw of a reached row counts its generations against the table's search of that row;
    # the draw without patience (v.log) is not one
    assert got["drawn"] == [{"case": "p.m:k@medium", "card": "H100", "proxy": True, "patience": 2, "ratio": 1.02,
                             "table_ratio": 1.08, "generations_run": 4, "table_generations_run": 2,
                             "extra_generations": 2, "paths_ended": 2, "log": "p.log"}]
    # to the maximum: medium's 3 generations left at its 13 s; as drawn: the 2 the draw ran, at the table's 13 s
    want_max = round((400 / (78.59412 + 3 * 13.0) * 4 * 4) ** (1 / 3), 3)
    want_drawn = round((400 / (78.59412 + 2 * 13.0) * 4 * 4) ** (1 / 3), 3)
    assert got["projected_time_ratio"]["to_max_generations"] == want_max
    assert got["projected_time_ratio"]["drawn_as_measured_rest_to_max"] == want_drawn


def test_gpu_tests_json_keeps_card_versions_and_each_outcome(tmp_path: Path) -> None:
    """bench/run_gpu_tests.sh's record: pytest's JUnit XML has no card or versions, so they come from its env file.

    A run cut by its timeout leaves a nameless <testcase>; it is not a test and must not be counted as one.
    """
    import hashlib
    import json
    import subprocess
    import sys

    xml = tmp_path / "gpu_tests.xml"
    xml.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" '
        'failures="1" skipped="1" tests="3" time="12.5" timestamp="2026-12-06T06:16:15"><testcase classname="tests.test_gpu" '
        'name="test_a" time="4.25" /><testcase classname="tests.test_gpu" name="test_b" time="3.0"><failure message="x" />'
        '</testcase><testcase classname="tests.test_gpu" name="test_c" time="0.0"><skipped message="no GPU" /></testcase>'
        '<testcase time="0.002" /></testsuite></testsuites>')
    env = tmp_path / "gpu_tests_env.txt"
    env.write_text("NVIDIA H200\ntorch 2.11.0+cu130 triton 3.6.0 helion 1.5.0 litellm 1.80.0\n")
    log = tmp_path / "gpu_tests.log"
    log.write_text("collecting ... collected 4 items\n\ntests/test_gpu.py::test_a PASSED [ 25%]\n"
                   "tests/test_gpu.py::test_b FAILED [ 50%]\ntests/test_gpu.py::test_c SKIPPED [ 75%]\n"
                   "tests/test_gpu.py::test_d \n!!!! KeyboardInterrupt !!!!\n")
    out = tmp_path / "out.json"
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, str(root / "bench" / "gpu_tests_json.py"), "--xml", str(xml), "--env", str(env),
                    "--log", str(log), "--commit", "abc1234", "--session", "56", "--hash", str(env), "--out", str(out)],
                   check=True, cwd=root)
    doc = json.loads(out.read_text())
    assert doc["gpu"] == "NVIDIA H200" and doc["commit"] == "abc1234" and doc["session"] == 56
    assert doc["versions"] == {"torch": "2.11.0+cu130", "triton": "3.6.0", "helion": "1.5.0", "litellm": "1.80.0"}
    assert (doc["passed"], doc["failed"], doc["skipped"], doc["seconds"]) == (1, 1, 1, 12.5)
    assert doc["tests"] == {"test_a": {"outcome": "passed", "seconds": 4.25}, "test_b": {"outcome": "failure", "seconds": 3.0},
                            "test_c": {"outcome": "skipped", "seconds": 0.0},
                            "test_d": {"outcome": "not finished (run cut)", "seconds": None}}
    assert doc["interrupted"] is True
    assert doc["sha256"] == {str(env): hashlib.sha256(env.read_bytes()).hexdigest()}
