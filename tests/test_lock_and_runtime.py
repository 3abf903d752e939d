"""The lock's guarantees and the runtime's fallback chain, without a GPU.

`test_crash_mid_build_keeps_finished_cases` fakes the benchmark: its strategy
(FakeSearch) returns fixed configs instead of running Helion, because what it
tests is the lock's write-as-you-go behaviour, not the search.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from tuning import lock as lockfile
from tuning.errors import LockError
from tuning.lock import LockEntry
from tuning.runtime.keys import DeviceKey, shape_distance
from tuning.runtime.lookup import DEFAULT, EXACT, NEAREST_SHAPE, SAME_ARCH, choose
from tuning.runtime.table import Table, TableEntry, TableError, decode, encode


def _entry(kernel: str = "p.m:k", shape: str = "bf16[1024,1024]", device: str = "NVIDIA H200", **cfg: int) -> LockEntry:
    return LockEntry(kernel, "sha256:0", device, "triton:sm90", shape, "s", cfg or {"block_sizes": [64]}, {"ms": 1.0})


def test_lock_text_is_canonical_whatever_the_insert_order(tmp_path: Path) -> None:
    a, b, c = _entry(shape="bf16[2]"), _entry(shape="bf16[1]"), _entry(kernel="a.b:c")
    one = lockfile.Lock.from_entries([a, b, c]).dumps()
    two = lockfile.Lock.from_entries([c, b, a]).dumps()
    assert one == two
    doc = json.loads(one)
    assert [e["kernel"] for e in doc["entries"]] == ["a.b:c", "p.m:k", "p.m:k"]
    assert lockfile.loads(one).dumps() == one


def test_corrupt_lock_says_how_to_recover(tmp_path: Path) -> None:
    bad = tmp_path / "kiln.lock"
    bad.write_text("{not json")
    with pytest.raises(LockError, match="Restore it from version control"):
        lockfile.load(bad)


def _record_many(path: str, start: int) -> None:
    for i in range(start, start + 20):
        lockfile.record(Path(path), _entry(shape=f"bf16[{i}]"))


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kiln.lock"
    procs = [multiprocessing.get_context("spawn").Process(target=_record_many, args=(str(path), s)) for s in (0, 100)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert len(lockfile.load(path).entries) == 40


def test_merge_keeps_both_gpus_and_rejects_conflicts() -> None:
    h200 = lockfile.Lock.from_entries([_entry()])
    b200 = lockfile.Lock.from_entries([_entry(device="NVIDIA B200")])
    merged = lockfile.merge([("h200.lock", h200), ("b200.lock", b200)])
    assert len(merged.entries) == 2
    other = lockfile.Lock.from_entries([_entry(block_sizes=[128])])
    with pytest.raises(LockError, match="h200.lock and other.lock chose different configs"):
        lockfile.merge([("h200.lock", h200), ("other.lock", other)])


def test_crash_mid_build_keeps_finished_cases(tmp_path: Path) -> None:
    """A build that dies on its third case keeps the first two in the lock; the rerun tunes only the rest."""
    from tuning.plan import Case, make_plan
    from tuning.specs import parse_shapes
    from tuning.strategies import Budget
    from tuning.tune import TuneRun, run_plan

    specs = parse_shapes({"p.m:k": {"a": ["f32[4]"], "b": ["f32[8]"], "c": ["f32[16]"]}})["p.m:k"]
    cases = [Case("p.m:k", object(), "sha256:1", s) for s in specs]
    dev = DeviceKey("cpu", "pallas:interpret")
    path = tmp_path / "kiln.lock"

    import tuning.tune as tune_mod

    class FakeSearch:  # named fake: no Helion, no benchmark
        name = "fake"

        def __init__(self, die_on: str | None) -> None:
            self.die_on, self.seen = die_on, []

        def entry(self, case: Case, strategy: object, budget: Budget, device: str, key: DeviceKey, context: object = None) -> LockEntry:
            self.seen.append(case.spec.name)
            if case.spec.name == self.die_on:
                raise KeyboardInterrupt  # like Ctrl-C or a killed build: not an ordinary failure
            return LockEntry(case.kernel_id, case.source_hash, key.name, key.arch, case.spec.name,
                             case.spec.name, {"block_sizes": [4]}, {"spec": case.spec.declared, "ms": 1.0})

    fake = FakeSearch(die_on="c")
    orig = tune_mod.tune_case
    tune_mod.tune_case = fake.entry  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            run_plan(TuneRun(make_plan(cases, lockfile.load(path), dev, ["*"]), FakeSearch(None), Budget(), "cpu", path))  # type: ignore[arg-type]
        # The middle shape is tuned first (it seeds the others), then the rest in order.
        assert [e.shape_name for e in lockfile.load(path).sorted_entries()] == ["a", "b"]
        fake.die_on = None
        plan = make_plan(cases, lockfile.load(path), dev, ["*"])
        assert [c.spec.name for c in plan.todo] == ["c"] and len(plan.hits) == 2
        run_plan(TuneRun(plan, FakeSearch(None), Budget(), "cpu", path))  # type: ignore[arg-type]
    finally:
        tune_mod.tune_case = orig  # type: ignore[assignment]
    assert fake.seen == ["b", "a", "c", "c"]
    assert [e.shape_name for e in lockfile.load(path).sorted_entries()] == ["a", "b", "c"]


def test_fallback_chain_order() -> None:
    h200 = DeviceKey("NVIDIA H200", "triton:sm90")
    h100 = DeviceKey("NVIDIA H100 80GB HBM3", "triton:sm90")
    b200 = DeviceKey("NVIDIA B200", "triton:sm100")
    entries = [
        TableEntry("k", "NVIDIA H200", "triton:sm90", "bf16[1024,1024], bf16[1024,1024]", {"n": 1}),
        TableEntry("k", "NVIDIA H200", "triton:sm90", "bf16[4096,4096], bf16[4096,4096]", {"n": 4}),
    ]
    assert choose(entries, h200, "bf16[1024,1024], bf16[1024,1024]") == (EXACT, entries[0])
    assert choose(entries, h100, "bf16[4096,4096], bf16[4096,4096]") == (SAME_ARCH, entries[1])
    assert choose(entries, h200, "bf16[3000,4096], bf16[4096,4096]") == (NEAREST_SHAPE, entries[1])
    assert choose(entries, h200, "bf16[1100,1024], bf16[1024,1024]") == (NEAREST_SHAPE, entries[0])
    assert choose(entries, h200, "f16[1024,1024], f16[1024,1024]") == (DEFAULT, None)  # other dtype
    assert choose(entries, h200, "bf16[1024], bf16[1024]") == (DEFAULT, None)  # other rank
    assert choose(entries, b200, "bf16[1024,1024], bf16[1024,1024]") == (DEFAULT, None)  # other arch


def test_shape_distance_prefers_closer_sizes_and_penalizes_scalars() -> None:
    assert shape_distance("bf16[1024], 1e-06", "bf16[1024], 1e-06") == 0
    assert shape_distance("bf16[1024], 1e-06", "bf16[1024], 1e-05") == 0.5
    assert shape_distance("bf16[1024]", "bf16[2048]") == 1
    assert shape_distance("bf16[1024]", "f32[1024]") is None


def test_table_roundtrip_is_canonical_and_corruption_is_reported() -> None:
    e1 = TableEntry("k", "cpu", "a", "s", {"b": 1, "a": [1, 2]})
    e2 = TableEntry("k", "NVIDIA H200", "a", "s", {"a": 1})
    t1 = encode(Table.from_entries("p", ["k", "j"], [e1, e2]))
    t2 = encode(Table.from_entries("p", ["j", "k"], [e2, e1]))
    assert t1 == t2
    back = decode(t1)
    assert back.kernels["j"] == [] and [e.device for e in back.kernels["k"]] == ["NVIDIA H200", "cpu"]
    with pytest.raises(TableError, match="corrupt"):
        decode(b"\xc1")
    import msgpack

    with pytest.raises(TableError, match="format 99"):
        decode(msgpack.packb({"format": 99}))


def test_seeds_prefer_this_gpu_and_feed_forward_within_a_build() -> None:
    from tuning.plan import Case
    from tuning.specs import parse_shapes
    from tuning.tune import context_for, tuning_order

    specs = parse_shapes({"p.m:k": {"s": ["f32[4]"], "m": ["f32[8]"], "l": ["f32[16]"]}})["p.m:k"]
    cases = [Case("p.m:k", object(), "sha256:1", s) for s in specs]
    assert [c.spec.name for c in tuning_order(cases)] == ["m", "s", "l"]
    h200 = DeviceKey("NVIDIA H200", "triton:sm90")
    known = [
        _entry(device="NVIDIA B200", block_sizes=[1]),
        _entry(shape="bf16[8]", block_sizes=[2]),
        _entry(kernel="other:k", block_sizes=[3]),
        _entry(shape="bf16[9]", block_sizes=[2]),  # duplicate config: offered once
    ]
    context = context_for(cases[0], known, h200, None)  # what a build hands the strategy: each seed with its shape
    assert context.seeds == ({"block_sizes": [2]}, {"block_sizes": [1]})
    assert context.seed_shapes == ("bf16[8]", "bf16[1024,1024]")


def test_config_budget_stops_the_search_between_rounds() -> None:
    from tuning.strategies.lfbo import cap_configs

    class FakeMetrics:
        num_configs_tested = 0

    class FakeHelionSearch:  # named fake: only the two attributes the seam touches
        _autotune_metrics = FakeMetrics()

        def _autotune_budget_exceeded(self) -> bool:
            return False

        def log(self, msg: str) -> None:
            self.last = msg

    s = FakeHelionSearch()
    cap_configs(s, 10)
    assert not s._autotune_budget_exceeded()
    s._autotune_metrics.num_configs_tested = 10
    assert s._autotune_budget_exceeded() and "config budget 10" in s.last
