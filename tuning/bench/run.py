"""Run cases x strategies through the tuning engine, into the bench store.

For every case (``kernel_id@shape_name``) and strategy:

1. tune in this process through :func:`tuning.tune.tune_case` (the engine the
   build uses), from a fresh ``TRITON_CACHE_DIR`` and a reset kernel, so no
   strategy compiles faster because another ran first;
2. re-measure the chosen config in a fresh process
   (:mod:`tuning.bench.fresh_measure`, spawned ahead by :mod:`tuning.bench.judge`), with :func:`tuning.measure.time_ms` for all,
   together with the PyTorch reference (``<kernel>_ref`` in the kernel's module)
   and, for a strategy other than ``lfbo``, the stored ``lfbo`` config,
   interleaved over several rounds in that one process (DESIGN.md: noise
   between processes is 3-5%, so ratios come from one process);
3. write the record to the store at once, so a stopped run resumes there.

A stored record that still matches (same GPU and versions, kernel source
hash, declared spec and budget) is reused, not rerun.

Each strategy knows what a first ``pip wheel .`` with that strategy would know
at that point of the build, no more: cases run in the build's order (per kernel
the middle *declared* shape first, :func:`tuning.tune.middle_first`, whichever
cases the call picked), and a strategy's seeds are the configs *the same
strategy* already chose at the kernel's shapes that come before in that order,
never the lock's entries (``SEEDING``,
:mod:`.seeding`: the lock is filled from these very records, ``lfbo``'s among
them).  So ``seeded`` starts cold on a kernel's first shape, as in a first
build, and never sees what ``lfbo``'s long search found.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import BASELINE, DEFAULT_STORE
from .same_search import same_search
from .seeding import SEEDING, BuildSeeds, build_earlier, seed_digest, seed_shapes, seeded_as_now, seeds_match
from .store import Store, case_label, run_key

LLM_STRATEGIES = ("hybrid", "llm")
DEFAULT_STRATEGIES = ("lfbo", "seeded")
TRAJECTORY_FALLBACK = "final point only: no per-config results were seen from Helion's search (BaseSearch.benchmark_batch)"


def default_strategies(llm_configured: bool) -> list[str]:
    return [*DEFAULT_STRATEGIES, *(LLM_STRATEGIES if llm_configured else ())]


@contextlib.contextmanager
def fresh_triton_cache(prefix: str) -> Iterator[str]:
    saved = os.environ.get("TRITON_CACHE_DIR")
    path = tempfile.mkdtemp(prefix=f"kiln-bench-triton-{prefix}-")
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        yield path
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def capture_trajectory() -> Iterator[list[tuple[str, float | None]]]:
    """Every benchmark result of the search, in order: (status, perf_ms).

    The hook is ``helion.autotuner.base_search.BaseSearch.benchmark_batch``,
    through which every search (nested ones included) compiles and times its
    candidate configs.  Helion's final re-benchmark of the top configs does not
    pass there, so the trajectory is the search's own view.
    """
    seen: list[tuple[str, float | None]] = []
    try:
        from helion.autotuner.base_search import BaseSearch
    except ImportError:  # no such seam in this Helion: the caller records the final point only
        yield seen
        return
    original = BaseSearch.benchmark_batch

    @functools.wraps(original)
    def benchmark_batch(self: Any, *args: Any, **kwargs: Any) -> Any:
        results = original(self, *args, **kwargs)
        seen.extend((str(getattr(r, "status", "")), getattr(r, "perf", None)) for r in results)
        return results

    BaseSearch.benchmark_batch = benchmark_batch  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        BaseSearch.benchmark_batch = original  # type: ignore[method-assign]


def trajectory(entries: list[tuple[str, float | None]], configs_tested: int, final_ms: float | None) -> dict[str, Any]:
    """Best latency found against configs explored: a point wherever the best improves, and the end."""
    points: list[list[float]] = []
    best = math.inf
    for i, (status, ms) in enumerate(entries, 1):
        if status == "ok" and isinstance(ms, (int, float)) and math.isfinite(ms) and ms < best:
            best = float(ms)
            points.append([i, round(best, 6)])
    if points:
        if points[-1][0] != len(entries):
            points.append([len(entries), points[-1][1]])
        return {"source": "helion search (BaseSearch.benchmark_batch results, in order; filtered/failed configs count as explored)",
                "entries": len(entries), "points": points}
    return {"source": "final", "note": TRAJECTORY_FALLBACK,
            "points": [] if final_ms is None else [[configs_tested, round(final_ms, 6)]]}


# ----------------------------------------------------------------------------- the run

@dataclasses.dataclass
class BenchOptions:
    project: Path
    config_settings: dict[str, str]
    cases: list[str] | None  # None: all declared cases
    strategies: list[str] | None  # None: default_strategies()
    store: Path | None = None
    lfbo_effort: str = "full"
    rounds: int = 5
    measure_timeout_s: float = 900
    shard: tuple[int, int] | None = None  # (K, N): only the kernels whose index % N == K (see select_shard)
    warm_judge: bool = True  # each measurement's fresh process spawned ahead, its imports done while the case tunes (.judge)


@dataclasses.dataclass
class Engine:
    """The seams of a bench run; tests swap in fakes (no Helion), the CLI uses :func:`real_engine`."""

    prepare: Callable[[Path, Mapping[str, str]], Any]  # -> build_backend.builder.Prepared
    tune: Callable[..., Any]  # (case, strategy name, budget, device, device key, context) -> LockEntry
    measure: Callable[[dict[str, Any], float], dict[str, Any]]  # request -> fresh-process answer
    peaks: Callable[[str], dict[str, Any]]
    versions: Callable[[], dict[str, Any]]
    capture: Callable[[], Any] = capture_trajectory
    environment: Callable[[str], Any] = lambda device: contextlib.nullcontext()
    prestart: Callable[[], None] = lambda: None  # start the judge of the first measurement ahead (.judge.Judge)
    close: Callable[[], None] = lambda: None  # end whatever the engine left running (a spare judge)


def real_engine(warm_judge: bool = True) -> Engine:
    from build_backend.builder import prepare_build
    from tuning.strategies import get_strategy
    from tuning.tune import tune_case, tuning_environment
    from tuning.versions import toolchain_versions

    from .judge import Judge
    from .roofline import measure_peaks

    def tune(case: Any, name: str, budget: Any, device: str, dev_key: Any, context: Any) -> Any:
        return tune_case(case, get_strategy(name), budget, device, dev_key, context)

    judge = Judge(warm=warm_judge)
    return Engine(prepare=lambda project, cs: prepare_build(project, cs, tune=True), tune=tune,
                  measure=judge.measure, peaks=measure_peaks, versions=toolchain_versions,
                  environment=tuning_environment, prestart=judge.prestart, close=judge.close)


def _log(msg: str) -> None:
    print(f"kiln bench: {msg}", file=sys.stderr, flush=True)


def run_bench(opts: BenchOptions, log: Callable[[str], None] = _log, engine: Engine | None = None) -> Store:
    from tuning.errors import KilnError
    from tuning.strategies import _REGISTRY, Budget, strategy_limits
    from tuning.strategies.base import NO_LLM

    engine = engine or real_engine(opts.warm_judge)
    prep = engine.prepare(opts.project, opts.config_settings)
    settings, device, dev_key = prep.settings, prep.device, prep.plan.device
    if device is None or dev_key is None:
        raise KilnError("kiln bench tunes, so it needs a device: a CUDA GPU, or -C device=cpu (Pallas interpret)")
    llm = settings.llm_settings()
    strategies = list(opts.strategies or default_strategies(llm is not None))
    bad = [s for s in strategies if s not in _REGISTRY]
    if bad:
        raise KilnError(f"unknown strategy {', '.join(bad)}; valid: {', '.join(_REGISTRY)}")
    if llm is None and (skipped := [s for s in strategies if s in LLM_STRATEGIES]):
        log(f"skipping {', '.join(skipped)}: {NO_LLM}")
        strategies = [s for s in strategies if s not in LLM_STRATEGIES]
    strategies.sort(key=lambda s: s != BASELINE)  # the baseline first: others are re-measured against it

    by_label = {case_label(c.kernel_id, c.spec.name): c for c in prep.cases}
    earlier = build_earlier(list(by_label))
    if opts.cases is None:
        cases = build_order(list(prep.cases), earlier)
    else:
        unknown = [c for c in opts.cases if c not in by_label]
        if unknown:
            raise KilnError(f"unknown case(s) {', '.join(unknown)}; declared: {', '.join(by_label)}")
        cases = build_order([by_label[c] for c in opts.cases], earlier)
    if opts.shard is not None:
        cases = select_shard(cases, *opts.shard)

    store_path = opts.store or (opts.project / DEFAULT_STORE)
    store = Store.load(store_path)
    run = store.run(dev_key.as_dict(), engine.versions())
    store.scope = (run_key(run["gpu"], run["versions"]), [case_label(c.kernel_id, c.spec.name) for c in cases])
    base = Budget(settings.effort, settings.max_generations, settings.initial_population, settings.polish_rounds,
                  settings.seconds, settings.seed, settings.max_configs)
    budgets = {s: dataclasses.replace(base, effort=opts.lfbo_effort) if s == BASELINE else base for s in strategies}

    def stored(case: Any, name: str) -> dict[str, Any] | None:
        return run["cases"].get(case_label(case.kernel_id, case.spec.name), {}).get("strategies", {}).get(name)

    limits = {s: strategy_limits(s) for s in strategies}

    def to_run(case: Any, name: str) -> bool:
        return (not Store.reusable(stored(case, name), case.source_hash, case.spec.declared, budgets[name].as_provenance())
                or (name != BASELINE and not made_as_now(run, case, name, limits[name], earlier)))

    def to_pair(case: Any, name: str) -> bool:  # asked only of a record to_run() keeps
        return name != BASELINE and unpaired(stored(case, name), stored(case, BASELINE), case)

    todo: list[tuple[Any, str]] = []
    pairs: list[tuple[Any, str]] = []
    for c in cases:
        for s in strategies:
            if to_run(c, s):
                todo.append((c, s))
            elif to_pair(c, s):
                pairs.append((c, s))
    shard = "" if opts.shard is None else f" (shard {opts.shard[0]}/{opts.shard[1]})"
    log(f"{len(cases)} cases{shard} x {len(strategies)} strategies ({', '.join(strategies)}) on {dev_key.name} ({dev_key.arch}); "
        f"{len(cases) * len(strategies) - len(todo)} reused from {store_path}, {len(todo)} to run"
        + (" (more if a rerun hands a later shape other seeds)" if todo else "")
        + (f"; {len(pairs)} reused without a same-process {BASELINE} ratio to re-time beside it" if pairs else ""))
    if not todo and not pairs:
        return store

    peaks = engine.peaks(device)
    store.set_peaks(run, peaks)
    if peaks.get("copy_gbps"):
        log(f"peaks: copy {peaks['copy_gbps']} GB/s, bf16 matmul {peaks['bf16_tflops']} TFLOP/s")
    engine.prestart()  # after the peaks: the spare judge imports while the first case tunes, not while peaks are timed
    try:
        # Decided case by case, not from ``todo``: rerunning an earlier shape can change the seeds a build
        # hands a later one, whose stored record then no longer matches (session 23's attention_causal).
        for case in cases:
            for name in strategies:
                if to_run(case, name):
                    _run_one(store, run, case, name, budgets[name], device, dev_key, llm, peaks, opts, log, engine, earlier)
                    _release(device)
                elif to_pair(case, name):
                    _pair_with_baseline(store, run, case, name, device, opts, log, engine)
    finally:
        engine.close()
    return store


def unpaired(record: Mapping[str, Any] | None, base: Mapping[str, Any] | None, case: Any) -> bool:
    """A finished record with no same-process ratio against a baseline the store now holds.

    The report quotes a strategy against ``lfbo`` only from both configs re-timed in one
    fresh process.  A record tuned before its case's baseline existed has none, and
    rerunning its whole search to get one would cost minutes of device time and a new
    draw; re-timing the two stored configs costs one measurement (session 34's mamba2
    large variant row, tuned in a trial store that predated the baseline).
    """
    return bool(record and record.get("config") and not record.get("error") and not record.get("vs_lfbo")
                and _baseline_usable(base, case))


def _baseline_usable(base: Mapping[str, Any] | None, case: Any) -> bool:
    return Store.reusable(base, case.source_hash, case.spec.declared, (base or {}).get("budget", {}))


def _measure_request(opts: BenchOptions, case: Any, device: str, configs: Mapping[str, Any]) -> dict[str, Any]:
    from .judge import measure_request

    return measure_request(opts.project, case.kernel_id, case.spec.name, device, dict(configs), opts.rounds,
                           opts.config_settings)


def _vs_baseline(m: Mapping[str, Any], name: str, base_config: Any, note: str) -> dict[str, Any]:
    """A record's ``vs_lfbo``: both configs' times from one fresh-process answer ``m``."""
    return {"lfbo_config": base_config, "lfbo_ms": m["ms"][BASELINE], "ms": m["ms"][name], "note": note}


def _pair_with_baseline(store: Store, run: dict[str, Any], case: Any, name: str, device: str, opts: BenchOptions,
                        log: Callable[[str], None], engine: Engine) -> None:
    """Re-time a stored record's config beside the stored baseline's in one fresh process; tune nothing.

    Only ``vs_lfbo`` is added (marked as paired after the tune): the record's own ``ms``
    and everything its search did stay as they were.
    """
    label = case_label(case.kernel_id, case.spec.name)
    strategies = run["cases"][label]["strategies"]
    record, base = dict(strategies[name]), strategies[BASELINE]
    log(f"re-time {label} {name} beside {BASELINE} (stored configs; no tuning)")
    m = engine.measure(_measure_request(opts, case, device, {name: record["config"], BASELINE: base["config"]}),
                       opts.measure_timeout_s)
    if "error" in m:
        log(f"FAILED re-timing {label} {name} beside {BASELINE}: {m['error']}")
        return
    record["vs_lfbo"] = {**_vs_baseline(m, name, base["config"], "both re-measured interleaved in one fresh process, "
                                        "after the tune (the baseline came later)"), "measure_pid": m.get("pid")}
    store.put(run, case.kernel_id, case.spec.name, name, record)
    log(f"paired {label} {name}: {m['ms'][name]} ms beside {BASELINE}'s {m['ms'][BASELINE]} ms (one fresh process)")


def build_order(picked: list[Any], earlier: Mapping[str, frozenset[str]]) -> list[Any]:
    """``picked`` with kernels in the order given and each kernel's shapes in a build's order.

    A build tunes each kernel's *declared* shapes middle first, and the bench must seed
    as that build would.  The order comes from all the declared shapes, not the picked
    ones: taking ``--cases`` in the order typed made another shape the middle one
    (session 12), and so did a pick without the kernel's large shape (session 23:
    attention_causal small ran first, cold, where a build starts at medium).  A shape's
    place is the number of shapes a build tunes before it (``earlier``, from
    :func:`.seeding.build_earlier`), so running and seeding read one order.
    """
    first: dict[str, int] = {}
    for i, c in enumerate(picked):
        first.setdefault(c.kernel_id, i)
    return sorted(picked, key=lambda c: (first[c.kernel_id], len(earlier[case_label(c.kernel_id, c.spec.name)])))


def select_shard(cases: list[Any], index: int, count: int) -> list[Any]:
    """Shard ``index`` of ``count``: the kernels at positions ``index, index + count, ...``, all their shapes.

    Whole kernels, because a strategy's later shapes are seeded by its earlier
    ones (``SEEDING``) and so must run after them, in one process.  Round-robin
    over kernels rather than contiguous blocks spreads the heavy families.  A
    whole case, all of its strategies, stays in one shard too: its ratios
    against lfbo come from one process on one GPU.
    """
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}: need 0 <= K < N")
    kernels = list(dict.fromkeys(c.kernel_id for c in cases))
    mine = set(kernels[index::count])
    return [c for c in cases if c.kernel_id in mine]


def made_as_now(run: Mapping[str, Any], case: Any, strategy: str, limits: Mapping[str, Any] | None,
                earlier: Mapping[str, frozenset[str]] | None) -> bool:
    """Whether ``strategy``'s record of ``case`` came from the search a build runs today: these limits, a first build's seeds.

    A record from before a change to the strategy's search (``strategy_limits``, read by
    :func:`.same_search.same_search`, which lets a conditional finish that would not act pass)
    or whose seeds differ from what a build would hand it now
    (the rule, the earlier shapes, their configs: :func:`.seeding.seeds_match`,
    against :func:`own_seeds`) is rerun rather than reported, and never seeds a
    later shape.
    """
    record = run.get("cases", {}).get(case_label(case.kernel_id, case.spec.name), {}).get("strategies", {}).get(strategy)
    if not record or not same_search(record, limits):
        return False
    return seeded_as_now(record) and seeds_match(record, own_seeds(run, case, strategy, limits, earlier))


def own_seeds(run: Mapping[str, Any], case: Any, strategy: str, limits: Mapping[str, Any] | None = None,
              earlier: Mapping[str, frozenset[str]] | None = None) -> dict[str, dict[str, Any]]:
    """The configs ``strategy`` chose at the shapes a build tunes before ``case``, by shape name.

    What a build with ``strategy`` would have in hand when it reaches this shape
    (:class:`.seeding.BuildSeeds`); ``earlier`` from :func:`.seeding.build_earlier`.
    ``limits`` None counts records made under any limits (bench/seeded_variant.py: a
    variant starts from the stored picks, whatever search made them).
    """
    by_limits = None if limits is None else {strategy: limits}
    return BuildSeeds(run, earlier, by_limits).seeds(case_label(case.kernel_id, case.spec.name), strategy, case.source_hash)


def _release(device: str) -> None:
    """Drop the finished tune's tensors before the next one (the GPU holds large cases' inputs)."""
    import gc

    gc.collect()
    if device == "cuda" and "torch" in sys.modules:
        sys.modules["torch"].cuda.empty_cache()


# Lock-entry provenance the record already holds under its own names (configs_tested,
# tuning_seconds, tune_ms, search_best_ms, budget, spec) or that the run key holds
# (versions).  Everything else is what the strategy did (seeds, seed_transfer,
# as_shipped, fast_finish, polish, llm, fallback, ...) and stays in the record: a
# variant trial is only readable if the store says whether its extra step ran and
# what it chose (session 20's small-kernel finish left no trace in the store).
RECORDED_APART = frozenset({"configs_tested", "seconds", "ms", "search_best_ms", "budget", "spec", "versions"})


def _run_one(store: Store, run: dict[str, Any], case: Any, name: str, budget: Any, device: str, dev_key: Any,
             llm: Any, peaks: Mapping[str, Any], opts: BenchOptions,
             log: Callable[[str], None], engine: Engine, earlier: Mapping[str, frozenset[str]] | None = None) -> None:
    from tuning.strategies import TuneContext, strategy_limits
    from tuning.tune import SEED_LIMIT

    from .roofline import fraction

    label = case_label(case.kernel_id, case.spec.name)
    # What a first build with this strategy would know here (SEEDING): its own earlier shapes, nothing from the lock.
    limits = strategy_limits(name)
    own = own_seeds(run, case, name, limits, earlier) if name != BASELINE else {}
    seeds = tuple(own.values())[:SEED_LIMIT]
    context = TuneContext(case.kernel_id, case.spec.name, seeds, llm if name in LLM_STRATEGIES else None,
                          seed_shapes(run, case.kernel_id, list(own)[:SEED_LIMIT]))
    record: dict[str, Any] = {"strategy": name, "source_hash": case.source_hash, "spec": case.spec.declared,
                              "budget": budget.as_provenance(), "seeding": SEEDING, "strategy_limits": limits,
                              "seeded_from_shapes": sorted(own), "seed_digest": seed_digest(own)}
    log(f"tune {label} with {name}")
    t0 = time.perf_counter()
    reset = getattr(case.kernel, "reset", None)
    if callable(reset):
        reset()  # no bound kernel or compiled config carried over from the previous strategy
    try:
        with fresh_triton_cache(name), engine.environment(device), engine.capture() as seen:
            entry = engine.tune(case, name, budget, device, dev_key, context)
    except Exception as e:  # record and go on: one broken run must not cost the table
        record.update(error=traceback.format_exception_only(type(e), e)[-1].strip()[:3000],
                      wall_s=round(time.perf_counter() - t0, 2))
        store.put(run, case.kernel_id, case.spec.name, name, record)
        log(f"FAILED {label} {name}: {record['error']}")
        return
    p = entry.provenance
    record.update(
        configs_tested=p.get("configs_tested"), tuning_seconds=p.get("seconds"),
        wall_s=round(time.perf_counter() - t0, 2), config=dict(entry.config), shape=getattr(entry, "shape", None),
        tune_ms=p.get("ms"), search_best_ms=p.get("search_best_ms"),
        provenance={k: v for k, v in p.items() if k not in RECORDED_APART},
        trajectory=trajectory(seen, int(p.get("configs_tested") or 0), p.get("search_best_ms") or p.get("ms")),
    )
    configs = {name: dict(entry.config)}
    base = run["cases"].get(label, {}).get("strategies", {}).get(BASELINE)
    if name != BASELINE and _baseline_usable(base, case):
        configs[BASELINE] = base["config"]
    m = engine.measure(_measure_request(opts, case, device, configs), opts.measure_timeout_s)
    if "error" in m:
        record.update(ms=None, ms_error=m["error"], ref_ms=None, ref_reason="measurement process failed",
                      roofline=fraction(None, None, peaks))
    else:
        record.update(ms=m["ms"][name], timer=m["timers"].get(name), measure_rounds=m["rounds"], measure_pid=m["pid"],
                      measure_phases_s=m.get("phases_s"), measure_judge=m.get("judge"),
                      ref_ms=m["ref_ms"], ref_kind=m.get("ref_kind"), ref_reason=m.get("ref_reason"), roofline=fraction(m["work"], m["ms"][name], peaks))
        if BASELINE in configs and name != BASELINE:
            record["vs_lfbo"] = _vs_baseline(m, name, configs[BASELINE], "both re-measured interleaved in one fresh process")
    store.put(run, case.kernel_id, case.spec.name, name, record)
    log(f"done {label} {name}: {record.get('configs_tested')} configs, {record.get('tuning_seconds')} s, "
        f"{record.get('ms')} ms (fresh process), ref {record.get('ref_ms')} ms"
        + (f"; measured in {phases['process']} s ({', '.join(f'{k} {v}' for k, v in phases.items() if k != 'process')})"
           if (phases := record.get("measure_phases_s")) else ""))
