"""Seed variants: each seed again with one choice a neighbourhood search rarely makes by itself.

Why a module of its own: every variant here answers the same question (which configs next to a
seed from another shape or GPU deserve a population slot), each was built as a candidate fix
for a measured row, and each stays on or off by a measurement recorded beside its switch.  Both
searches that start from known seeds (``seeded``, and ``hybrid``'s stage 2) take them from
:func:`with_seed_variants`, so the limits both record hold for both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..runtime.keys import parse_shape_key
from .seed_transfer import reduction_axes, transfer_errors

# Seed variants, added after the seeds themselves.  ``pid_types`` (on): the first seed again
# at every other program-id layout the kernel allows.  The fix for swiglu@small, the one case
# over the 1.05 worst-case bar (1.052 against lfbo in sessions 14 and 17): its search, started
# from its medium shape's `flat` pick, stayed among `flat` configs while lfbo's found
# `persistent_blocked` ([8, 512], 6 stages); the layout is one categorical choice a
# neighbourhood search rarely crosses together with the block sizes it suits.  Measured on the
# H200 as a variant against the stored lfbo config re-timed beside it, twice: 1.0272 at 3.71x
# less time (session 17) and 1.0282 at 4.20x (session 18; bench/results/variants_session1{7,8}/).
# Cost: one population slot per variant, and one more finalist in Helion's final re-benchmark
# each (Helion pins every seed as a finalist), about 1 s apiece under the fast finish's 1000 ms
# target.  Turning it on changed seeded's recorded limits, so every `seeded` row measured
# before it is "other search" in the bench report until the table reruns it.
#
# ``reduction_loops``: the first seeds again with each reduction they hold whole (persistent,
# ``None``) rolled into a loop over a half and a quarter of the axis.  Off: a candidate fix
# for softmax@large (session 16, 1.0485 against lfbo).  Its seeds came from the medium and
# small shapes (8192 and 1024 columns), where a persistent reduction is best.  At 32768
# columns both searches first stood on the same persistent config (32 warps: lfbo's random
# 100 at 0.1865 ms, seeded's 24 at 0.1862); lfbo's first generation (49 neighbours, 5 search
# paths) found a loop (8192, 16 warps, 0.1839) and reached 0.1775 by its third,
# while seeded's two generations (12 and 10 neighbours, 2 paths) stayed persistent and
# stopped there (bench/logs/table_session16).
# A seed from a smaller shape held its own, shorter axis whole, and declared shapes are a few
# times apart (softmax: 4x, 8x), so a half and a quarter of the new axis bracket the chunk the
# seed held.  Cost: two population slots per seed and axis, and two finalists (as above).
# Measured once on the H200 (session 17, bench/results/variants_session17/var_rloop1.json):
# softmax@large 1.0500 against lfbo, no gain over the search without it (1.0485), so it
# stays off; try it with bench/seeded_variant.py (--set seed_variants.reduction_loops=1).
#
# ``tensor_descriptors`` = N: the first N seeds again with every memory access through a tensor
# descriptor (TMA on the H200), once with device-built and once with host-built descriptors; on a
# cold start, where the search has no seeds of its own, the first N of Helion's compiler seeds and
# default config.  Built as a candidate fix for the rows furthest over the bar.  In the table (#5,
# bench/results/store.json) lfbo's picks for mamba2 medium and large and fp8 attention medium and
# large read 8-10 of 11 (mamba2) or 3 of 4 (fp8) accesses as tensor descriptors, host-built, where
# seeded's picks, 1.107-1.215 against them, read 0-1; grouped GEMM small likewise (4 of 5 against
# none, 1.081).  Session 31's log of mamba2 medium (bench/logs/table_session31/table0.log) shows
# every path's best with all 11 accesses as pointers from the first population to the polish:
# switching them is 11 single-knob steps, each of which alone need not pay, so a neighbourhood
# search does not make it, as with ``pid_types``.  Cost: two population slots per seed (they take
# the random pad's place) and two pinned finalists.
# Measured on the H200 in session 39 as a variant (``td2``: tensor_descriptors=2; stores, logs and
# bench/draws.py's verdict in bench/results/variants_session39/), on 10 rows drawn in build order,
# each against lfbo's stored pick re-timed beside it: mamba2 medium 1.124 -> 0.946, small 1.236 ->
# 1.115, large 1.215 -> 1.001; fp8 attention medium 1.107 -> 1.030, small 1.180 -> 1.095, large
# 1.117 -> 1.063; grouped GEMM medium 1.054 and 1.107 (two draws) -> 1.041; rms_norm medium, small,
# large 1.000/1.124/1.001 -> 1.000/1.110/1.001 (table -> variant, draws.json's same-process ratios).
# On those 10 rows: latency 1.0389 against the table's 1.1159, time 5.367x
# against 5.939x, 4 over 1.05 against 8.  Its picks on mamba2 and fp8 read 9 of 11 and 2 of 4
# accesses as host-built descriptors, as lfbo's do, so the gain is the mechanism, not the draw.
# Sessions 40 and 41 drew it on 23 more rows (bench/results/variants_session4{0,1}/): on the 33
# drawn, latency 1.0053 against the table's 1.0262, 8 over 1.05 against 13, time 4.99x against
# 5.26x, the worst row attention small at 1.589 (seeded from a td2 medium pick that transfers badly).
# Session 42 drew swiglu's three (bench/results/variants_session42/): over all 36 rows, in place of
# the table's, 5.136x, latency 1.0047, worst 1.589, 8 over 1.05, against the table search's 5.375x,
# 1.0247, 1.236 and 13 (draws.json).  On: adopted on all 36 rows, as every search must be, never
# on the rows picked for it (``coldwide_bounded`` gained 1.154 -> 1.088 on its first three and lost
# over all 36).  Its worst row is worse than the table's: attention small, whose second draw under
# ``td2`` (session 42, ``td2chk``, where the seed check did not fire) read 1.075.
#
# ``pointers`` = N: the first N seeds again with every access through a pointer, the way back.  Off:
# a candidate fix for the small shapes still over the bar under ``tensor_descriptors`` (session 39).
# lfbo's picks at mamba2, fp8 attention and rms_norm small read none of their accesses through
# descriptors (0 of 11, 0 of 4, 0 of 7), while td2's picks there, two of them seeded from a
# descriptor medium, read 9 of 11 (host-built), 2 of 4 (host-built) and 6 of 7, and stayed
# 1.095-1.115 behind; mamba2 small's search itself rated its pick 17.6% behind lfbo's best, so it is the region,
# not the clock (bench/results/variants_session39/report/).  Seeds only: on a cold start Helion's
# own starts already read through pointers.  Measured (bench/TABLE.md, sessions 40 and 45): mamba2
# small 1.006 and grouped GEMM small 1.000 once each, rms_norm small 1.079, fp8 attention small
# 1.301 and then 1.092 (1.095 and 1.086 without it): no fix there, so it stays off.  Try it with
# bench/seeded_variant.py (--set seed_variants.pointers=2).
#
# ``scaled_tiles`` = N: the first N seeds again with their tile scaled toward this shape, halved
# where the seed was tuned at a larger problem and doubled where at a smaller one (total tensor
# elements of the shape keys), one block axis at a time and then all of them together; warps,
# stages and the rest stay the seed's.  Off: a candidate fix for the rows whose search never
# left the tile of the shape it was seeded from (bench/results/pick_split.json, ``tiles`` per row and
# ``seed_tile_kept_where_picks_over_bar``; from the stores by bench/probes/pick_split.py): all 6
# stored picks at gdn large kept the medium seed's [64] and read 1.070-1.086 against lfbo's [128];
# at fp8 attention large the 3 that kept their seed's tile read 1.042-1.117 and none is on lfbo's
# [128, 128], the table's medium pick [128, 64] with its second axis doubled; at attention small
# the 4 on lfbo's [128, 64] read 1.028-1.098 and the 3 that kept the medium's [256, 64]
# 1.100-1.140 (the table's own, [64, 16], 1.589).  A tile is one knob per axis, but what suits
# a new shape often moves two or three of them together with the grid it makes, and one step of
# one axis can read worse before the pair reads better.  Cost: at most one slot per block axis and one more for all of
# them, per seed (three for a two-axis tile), and as many pinned finalists.  Drawn on the H200 in
# session 61 and not adopted (bench/results/variants_session61/draws.json, bench/TABLE.md): attention
# small 1.050 and, with seed 1, 1.164 (the table's 1.589; its second pick left the halved tile for
# the medium's [256, 64]); gdn large 1.080, the doubled [128] seeded but the pick on [64] again;
# fp8 attention large 1.052; fp8 attention small 1.088; causal attention large 1.039 and small
# 1.040.  Drawn once on attention small on an H100 (session 49, against the H200's lfbo pick re-timed
# there, bench/results/proxy_session49/): 1.0495, its pick on lfbo's tile [128, 64] but with other
# warps, stages and L2 grouping, where today's search drawn beside it found lfbo's very config
# (1.0006).  Try it with bench/seeded_variant.py (--set seed_variants.scaled_tiles=1).
SEED_VARIANTS = {"pid_types": 1, "reduction_loops": 0, "tensor_descriptors": 2, "pointers": 0, "scaled_tiles": 0}
POINTER = "pointer"
TENSOR_DESCRIPTOR = "tensor_descriptor"
REDUCTION_LOOP_MIN = 8  # Helion's smallest reduction loop chunk (ReductionLoopSpec's fragment low)


def _with_variants(seeds: Sequence[dict[str, Any]], count: int,
                   variants_of: Callable[[int, dict[str, Any]], Iterable[dict[str, Any]]]) -> list[dict[str, Any]]:
    """``seeds``, then ``variants_of(position, seed)`` each of the first ``count`` of them, each config once.

    The position is the seed's in ``seeds``, for a variant that depends on where the seed came
    from (the scaled tiles read its direction by it).
    """
    out = [dict(s) for s in seeds]
    for position, seed in enumerate(seeds[:max(0, count)]):
        for variant in variants_of(position, seed):
            if variant not in out:
                out.append(variant)
    return out


def pid_type_variants(seeds: Sequence[dict[str, Any]], allowed: Sequence[str], count: int) -> list[dict[str, Any]]:
    """``seeds``, then the first ``count`` of them at each other allowed ``pid_type`` (deduplicated).

    Helion transfers every seed onto the kernel's config space and drops one it cannot
    (base_search's best-available population), so a layout a config cannot use costs
    nothing but the log line.
    """
    return _with_variants(seeds, count, lambda _, seed: (
        {**seed, "pid_type": p} for p in allowed if p != seed.get("pid_type", "flat")))  # Helion's default is flat


def reduction_loop_variants(seeds: Sequence[dict[str, Any]], size_hints: Sequence[int],
                            count: int) -> list[dict[str, Any]]:
    """``seeds``, then the first ``count`` of them with each whole-axis reduction rolled at a half and a quarter of the axis.

    ``size_hints`` are the kernel's reduction axes at this shape, in ``reduction_loops``
    order.  A seed that names no ``reduction_loops``, or another number of entries than there are
    axes, was made for another code shape and is left as it is.
    """
    def rolled(_: int, seed: dict[str, Any]) -> Iterator[dict[str, Any]]:
        loops = seed.get("reduction_loops")
        if not isinstance(loops, list) or len(loops) != len(size_hints):
            return
        for i, size in enumerate(size_hints):
            top = 1 << max(0, int(size) - 1).bit_length()  # next power of two, as Helion rounds the axis
            for chunk in (top // 2, top // 4):
                if loops[i] is None and REDUCTION_LOOP_MIN <= chunk < size:
                    yield {**seed, "reduction_loops": [*loops[:i], chunk, *loops[i + 1:]]}

    return _with_variants(seeds, count, rolled)


def tensor_descriptor_variants(seeds: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``seeds``, then the first ``count`` of them with every ``indexing`` entry a tensor descriptor, built on the device and on the host.

    A seed that names no ``indexing`` (Helion fills in its default) is left as it is: the
    number of accesses is the kernel's, and only a full config says it.
    """
    def described(_: int, seed: dict[str, Any]) -> Iterator[dict[str, Any]]:
        indexing = seed.get("indexing")
        if isinstance(indexing, list) and indexing:
            for host in (False, True):
                yield {**seed, "indexing": [TENSOR_DESCRIPTOR] * len(indexing), "host_tensor_descriptors": host}

    return _with_variants(seeds, count, described)


def pointer_variants(seeds: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``seeds``, then the first ``count`` of them with every ``indexing`` entry a pointer (no descriptors to build).

    Why both directions: a seed from a larger shape carries its descriptors to a shape where their
    setup may not pay, and the way back is as many single-knob steps as the way there.
    """
    def pointed(_: int, seed: dict[str, Any]) -> Iterator[dict[str, Any]]:
        indexing = seed.get("indexing")
        if isinstance(indexing, list) and any(i != POINTER for i in indexing):
            # Clear the host-descriptor switch only where the config names it (a backend without TMA has no such key).
            host = {"host_tensor_descriptors": False} if "host_tensor_descriptors" in seed else {}
            yield {**seed, "indexing": [POINTER] * len(indexing), **host}

    return _with_variants(seeds, count, pointed)


def takes_descriptors(config_spec: Any) -> bool:
    """Whether this GPU and backend offer tensor-descriptor indexing (Helion's own test; not on a CPU)."""
    valid = getattr(config_spec, "valid_indexing_types", None)
    return callable(valid) and TENSOR_DESCRIPTOR in valid()


def cold_start_variants(config_gen: Any) -> list[dict[str, Any]]:
    """On a search with no seeds of its own: the ``SEED_VARIANTS`` that are on, made from Helion's own starts.

    Helion's starts are its compiler seeds, then its default config, each as the full config
    this shape's space makes of it (a compiler seed may name only a few keys).  Only the
    variants are returned: Helion puts its starts in the first population itself.
    """
    count = SEED_VARIANTS["tensor_descriptors"] if takes_descriptors(config_gen.config_spec) else 0
    if count <= 0:
        return []
    errors = transfer_errors()
    starts: list[dict[str, Any]] = []
    for config in [*config_gen.config_spec.compiler_seed_configs, config_gen.unflatten(config_gen.default_flat())]:
        try:
            full = dict(config_gen.unflatten(config_gen.flatten(config)))
        except errors:
            continue
        if full not in starts:
            starts.append(full)
    return tensor_descriptor_variants(starts, count)[len(starts):]


def problem_size(shape: str) -> int | None:
    """Total elements of a shape key's tensors, or None where it names none (a key another tool wrote)."""
    sizes = [_product(arg.dims) for arg in parse_shape_key(shape) if arg.dims is not None]
    return sum(sizes) if sizes else None


def _product(dims: Sequence[int]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def tile_directions(seed_shapes: Sequence[str], shape: str) -> list[int]:
    """Per seed: +1 where it was tuned at a smaller problem than ``shape``, -1 at a larger, 0 at the same or unknown.

    Total elements is a coarse measure on purpose: it says which way the grid a tile makes
    has grown, which is all :func:`scaled_tile_variants` needs; how far is the search's job.
    """
    here = problem_size(shape) if shape else None
    out: list[int] = []
    for seed_shape in seed_shapes:
        there = problem_size(seed_shape) if seed_shape else None
        out.append(0 if here is None or there is None or here == there else (1 if here > there else -1))
    return out


def tile_bounds(config_spec: Any) -> list[tuple[int, int]]:
    """This shape's smallest and largest block size per block axis, in ``block_sizes`` order (Helion's specs)."""
    return [(int(getattr(spec, "min_size", 1)), int(getattr(spec, "max_size", spec.size_hint)))
            for spec in getattr(config_spec, "block_sizes", ())]


def scaled_tile_variants(seeds: Sequence[dict[str, Any]], directions: Sequence[int],
                         bounds: Sequence[tuple[int, int]] | None, count: int) -> list[dict[str, Any]]:
    """``seeds``, then the first ``count`` of them with their tile halved or doubled toward this shape: each axis alone, then all.

    ``directions`` (from :func:`tile_directions`) says which way, per seed; a seed with none
    (the same shape, or one not known) is left as it is.  A block size that would leave this
    shape's ``bounds`` stays the seed's, so no variant is one Helion would clamp back onto its
    seed; a seed with another number of block axes was made for another code shape and is left
    as it is.  ``bounds`` None: no config space at hand (the report, a preview), only sizes of 1 or
    more.
    """
    way = dict(enumerate(directions))

    def scaled(position: int, seed: dict[str, Any]) -> Iterator[dict[str, Any]]:
        sizes, step = seed.get("block_sizes"), way.get(position, 0)
        if step == 0 or not isinstance(sizes, list) or (bounds is not None and len(sizes) != len(bounds)):
            return
        moved: dict[int, int] = {}
        for axis, size in enumerate(sizes):
            if isinstance(size, int):
                new = size * 2 if step > 0 else size // 2
                if new >= 1 and (bounds is None or bounds[axis][0] <= new <= bounds[axis][1]):
                    moved[axis] = new
        for axis, size in moved.items():
            yield {**seed, "block_sizes": [size if i == axis else s for i, s in enumerate(sizes)]}
        if len(moved) > 1:
            yield {**seed, "block_sizes": [moved.get(i, s) for i, s in enumerate(sizes)]}

    return _with_variants(seeds, count, scaled)


def scaled_tiles(seeds: Sequence[dict[str, Any]], directions: Sequence[int], config_spec: Any) -> dict[str, Any]:
    """For the record: which way the scaled-tile variants went and how many there were; empty when none were made.

    A draw is read from its records, so a row whose seed came from the same shape (no
    variant) must be told apart from one whose variants the search passed over.
    """
    count = SEED_VARIANTS["scaled_tiles"]
    made = len(scaled_tile_variants(seeds, directions, tile_bounds(config_spec), count)) - len(seeds)
    if made <= 0:
        return {}
    ways = {1: "doubled", -1: "halved"}
    return {"variants": made, "ways": [ways.get(d, "none") for d in list(directions)[:count]]}


def with_seed_variants(seeds: Sequence[dict[str, Any]], config_spec: Any,
                       directions: Sequence[int] = ()) -> list[dict[str, Any]]:
    """``seeds`` plus the ``SEED_VARIANTS`` that are on, for this kernel's config space.

    One place for both searches that start from known seeds: ``seeded`` and ``hybrid``'s
    stage 2 (whose first seed is the LLM's best), so the limits both record hold for both.
    ``directions`` (:func:`tile_directions`), per seed, where the seeds' shapes are known:
    ``hybrid`` gives its LLM's best 0 (proposed for this very shape) and its known seeds theirs.
    """
    allowed = tuple(getattr(config_spec, "allowed_pid_types", ()))
    out = scaled_tile_variants(seeds, directions, tile_bounds(config_spec), SEED_VARIANTS["scaled_tiles"])
    out = pid_type_variants(out, allowed, SEED_VARIANTS["pid_types"])
    out = reduction_loop_variants(out, reduction_axes(config_spec), SEED_VARIANTS["reduction_loops"])
    described = SEED_VARIANTS["tensor_descriptors"] if takes_descriptors(config_spec) else 0
    out = tensor_descriptor_variants(out, described)
    return pointer_variants(out, SEED_VARIANTS["pointers"])  # the first seeds lead all five
