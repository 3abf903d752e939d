"""Run `kiln bench` with `seeded`'s search limits changed, to measure a candidate search before adopting it.

Why a wrapper and not a setting: the limits (tuning/strategies/seeded.py: WITH_SEEDS,
COMPILER_SEEDS_ONLY, AS_SHIPPED, FAST_FINISH, and the optional tables of seeded.option_tables()) are the strategy's design, not a user knob; trying a new design
should not add one.  The bench records `strategy_limits` with every result, so the
variant's records say exactly which search made them, and the committed table never
mixes them with today's `seeded` (run variants on a copy of the store).

A variant starts from the seeds the stored `seeded` rows had: the store's `seeded` records at
the kernel's earlier shapes count as seeds whatever search made them (the bench alone would
take only records made under the variant's limits, so a variant run on one shape would lose
them and differ from the stored row in two things, not one).  Not "today's search only": since
session 27 turned the warm worker on, every stored row is an older search until the table
reruns it, and a variant of swiglu small would then start with no seed where its stored row
had its medium's pick.  A variant run on several shapes of a kernel seeds the later ones from
its own earlier picks (its copy of the store holds them), as a build under the variant would.

    python bench/seeded_variant.py --set with_seeds.copies=2 --set with_seeds.initial_population=24 \\
        -- bench --cases model_kernels.attention:attention@medium --strategies seeded --store /tmp/var.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def apply(settings: list[str]) -> dict[str, dict[str, int]]:
    """Set ``table.key=int`` items on seeded's limit tables in place; return the tables as changed."""
    from tuning.strategies import seeded

    tables = {"with_seeds": seeded.WITH_SEEDS, "compiler_seeds_only": seeded.COMPILER_SEEDS_ONLY,
              "as_shipped": seeded.AS_SHIPPED, "fast_finish": seeded.FAST_FINISH, **seeded.option_tables()}
    for item in settings:
        target, _, value = item.partition("=")
        table, _, key = target.partition(".")
        if table not in tables or key not in tables[table]:
            valid = ", ".join(f"{t}.{k}" for t, d in tables.items() for k in d)
            raise SystemExit(f"seeded_variant: unknown limit {target!r}; valid: {valid}")
        try:
            tables[table][key] = int(value)
        except ValueError:
            raise SystemExit(f"seeded_variant: {target} wants an integer, got {value!r}") from None
    return tables


def seed_from_stored_picks(made_under: dict[str, Any] | None) -> None:
    """Make the bench seed ``seeded`` from its stored picks made under ``made_under`` (None: under any limits), not the variant's."""
    from tuning.bench import run as bench_run

    original = bench_run.own_seeds

    def own_seeds(run: Any, case: Any, strategy: str, limits: Any = None, earlier: Any = None) -> dict[str, dict[str, Any]]:
        return original(run, case, strategy, made_under if strategy == "seeded" else limits, earlier)

    bench_run.own_seeds = own_seeds


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, kiln = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[], metavar="TABLE.KEY=INT",
                    help="e.g. with_seeds.copies=2 (tables: with_seeds, compiler_seeds_only, as_shipped, fast_finish, and seeded.option_tables(): "
                         "polish, seed_variants, search_clock, first_population, small_kernel_finish, search_stop, seed_check, search_verify, warm_worker, grid_order)")
    ns = ap.parse_args(ours)
    if not kiln:
        ap.error("give the kiln command after --, e.g. -- bench --cases ... --store ...")
    tables = apply(ns.set)
    seed_from_stored_picks(None)  # the stored picks, whatever search made them (see the module's docstring)
    print(f"seeded_variant: {tables}", file=sys.stderr, flush=True)
    from tuning.cli import main as kiln_main

    return kiln_main(kiln)


if __name__ == "__main__":
    sys.exit(main())
