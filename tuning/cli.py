"""`kiln`: tune without building, inspect wheels and locks, merge locks, check the environment."""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import KilnError

if TYPE_CHECKING:
    from .bench.store import Store


def _config_settings(pairs: list[str], strategy: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise KilnError(f"-C {pair!r}: write settings as key=value, e.g. -C effort=quick")
        out[key if key.startswith("kiln.") else f"kiln.{key}"] = value
    if strategy:
        out["kiln.strategy"] = strategy
    return out


def _table_rows(path: Path) -> list[dict[str, Any]]:
    from .runtime.table import TABLE_FILENAME, decode

    rows: list[dict[str, Any]] = []
    with zipfile.ZipFile(path) as zf:
        for name in sorted(zf.namelist()):
            if not name.endswith("/" + TABLE_FILENAME):
                continue
            table = decode(zf.read(name))
            for kid, entries in table.kernels.items():
                if not entries:
                    rows.append({"table": name, "kernel": kid, "device": None, "arch": None, "shape": None, "config": None})
                for e in entries:
                    rows.append({"table": name, "kernel": kid, "device": e.device, "arch": e.arch,
                                 "shape": e.shape, "config": dict(e.config)})
    return rows


def cmd_inspect(ns: argparse.Namespace) -> int:
    from . import lock as lockfile

    path = Path(ns.path)
    if not path.exists():
        raise KilnError(f"{path}: no such file")
    if path.suffix == ".whl":
        rows = _table_rows(path)
        if ns.json:
            print(json.dumps({"wheel": path.name, "entries": rows}, indent=2, sort_keys=True))
            return 0
        if not rows:
            print(f"{path.name}: no kiln table inside (not built with the kiln backend?)")
            return 1
        for r in rows:
            cfg = "(no entry: default config)" if r["config"] is None else json.dumps(r["config"], sort_keys=True)
            print(f"{r['kernel']}  {r['device'] or '-'}  {r['arch'] or '-'}  [{r['shape'] or '-'}]  {cfg}")
        return 0
    lock = lockfile.load(path)
    entries = [e.to_json() for e in lock.sorted_entries()]
    if ns.json:
        print(json.dumps({"lock": str(path), "entries": entries}, indent=2, sort_keys=True))
        return 0
    for e in entries:
        p = e["provenance"]
        print(f"{e['kernel']} [{e['shape_name']}] {e['device']} ({e['arch']}): {p.get('strategy')} "
              f"{p.get('configs_tested')} configs {p.get('seconds')} s -> {p.get('ms')} ms")
    print(f"{len(entries)} entries")
    return 0


def cmd_tune(ns: argparse.Namespace) -> int:
    from build_backend.builder import run_build

    outcome = run_build(Path(ns.project), _config_settings(ns.config, ns.strategy))
    failed = [r for r in outcome.results if r.status == "failed"]
    return 1 if failed else 0


def cmd_merge(ns: argparse.Namespace) -> int:
    from . import lock as lockfile

    merged = lockfile.merge((p, lockfile.load(Path(p))) for p in ns.locks)
    lockfile.save(Path(ns.output), merged)
    print(f"merged {len(ns.locks)} locks into {ns.output}: {len(merged.entries)} entries")
    return 0


def cmd_doctor(ns: argparse.Namespace) -> int:
    import platform

    from build_backend.builder import prepare_build

    info: dict[str, Any] = {"python": platform.python_version()}
    try:
        import torch

        from .versions import toolchain_versions

        info["versions"] = toolchain_versions()
        info["cuda_available"] = torch.cuda.is_available()
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except ImportError as e:
        info["error"] = f"torch/helion not importable: {e}"
    prep = prepare_build(Path(ns.project), _config_settings(ns.config, None))
    plan = prep.plan
    info["tune_on"] = None if plan.device is None else plan.device.as_dict()
    info["lock"] = str(prep.settings.lock_path)
    info["lock_entries"] = len(prep.lock.entries)
    info["cases"] = len(prep.cases)
    info["plan"] = {
        "from_lock": [c.label for c, _ in plan.hits],
        "to_tune": [c.label for c in plan.todo],
        "missing": [c.label for c in plan.missing],
    }
    info["undeclared_kernels"] = prep.discovery.undeclared
    if ns.json:
        print(json.dumps(info, indent=2, sort_keys=True))
    else:
        print(f"python {info['python']}; {info.get('versions')}; GPUs: {info.get('gpus') or 'none'}")
        where = info["tune_on"] or "nowhere (bake from lock only)"
        print(f"lock {info['lock']}: {info['lock_entries']} entries; {info['cases']} declared cases; tune on: {where}")
        for k, v in info["plan"].items():
            print(f"  {k}: {len(v)}" + "".join(f"\n    {x}" for x in v))
    return 0


def cmd_bench(ns: argparse.Namespace) -> int:
    from .bench import DEFAULT_STORE

    project = Path(ns.project).resolve()
    store_path = Path(ns.store) if ns.store else project / DEFAULT_STORE
    if ns.spread and not ns.report:
        raise KilnError("--spread goes with --report (it adds lfbo's measured spread to the report); add --report")
    if ns.report:
        from .bench.compare import summary_json
        from .bench.noise_floor import load_spreads, with_noise_floor
        from .bench.report import write_report
        from .strategies import _REGISTRY, strategy_limits

        store = _existing_store(store_path)
        limits = {name: strategy_limits(name) for name in _REGISTRY}  # today's searches: older results shown apart
        declared = _declared_cases(ns, project)
        spreads = load_spreads([Path(p) for p in ns.spread])
        if ns.json:
            print(json.dumps(with_noise_floor(summary_json(store, limits, declared), spreads), indent=2, sort_keys=True))
        else:
            path = write_report(store, Path(ns.out) if ns.out else store_path.parent / "report", limits, declared,
                                spreads)
            print(f"kiln bench: report written to {path}")
        return 0
    if ns.to_lock:
        return _bench_to_lock(ns, project, store_path)
    if ns.merge_from:
        return _bench_merge(ns.merge_from, store_path, _strategy_list(ns.strategies))
    from .bench.gpus import parse_shard
    from .bench.run import BenchOptions, run_bench

    if ns.all and ns.cases:
        raise KilnError("--cases and --all: give one")
    if ns.gpus is not None:
        if ns.shard is not None:
            raise KilnError("--gpus and --shard: give one (--gpus gives each GPU's process its --shard)")
        return _bench_on_gpus(ns, project, store_path)
    shard = parse_shard(ns.shard) if ns.shard is not None else None
    cases = None if ns.all or not ns.cases else [c.strip() for c in ns.cases.split(",") if c.strip()]
    strategies = _strategy_list(ns.strategies)
    store = run_bench(BenchOptions(project, _config_settings(ns.config, None), cases, strategies, store_path,
                                   lfbo_effort=ns.lfbo_effort, rounds=ns.rounds, shard=shard,
                                   warm_judge=not ns.cold_judge))
    failed = store.failures()
    for label, name in failed:
        print(f"kiln bench: FAILED {label} {name} (see {store.path})", file=sys.stderr)
    return 1 if failed else 0


def _declared_cases(ns: argparse.Namespace, project: Path) -> list[str] | None:
    """The project's declared case labels, for the report's coverage line; None (and why) when unreadable.

    A report is still worth writing for a store read away from its project, so a project
    that cannot be read costs only that line.
    """
    from .bench.seeding import declared_labels

    try:
        return declared_labels(project, _config_settings(ns.config, None))
    except KilnError as e:
        print(f"kiln bench: no coverage line ({project} gives no declared cases: {e})", file=sys.stderr)
        return None


def _existing_store(store_path: Path) -> Store:
    """The bench store for --report and --to-lock, which read results and never make them."""
    from .bench.store import Store

    if not store_path.exists():
        raise KilnError(f"{store_path}: no bench store yet (run `kiln bench` first)")
    return Store.load(store_path)


def _bench_to_lock(ns: argparse.Namespace, project: Path, store_path: Path) -> int:
    """`kiln bench --to-lock`: each case's best bench config into the project's kiln.lock (no tuning)."""
    from build_backend.builder import prepare_build

    from .bench.to_lock import adopt

    store = _existing_store(store_path)
    prep = prepare_build(project, _config_settings(ns.config, None), tune=False)
    adopted = adopt(store, prep.cases, prep.settings.lock_path)
    for a in adopted:
        what = f"{a.strategy}'s config{' (replaced the lock entry)' if a.replaced else ''}" if a.strategy else "left out"
        print(f"kiln bench: {a.label}: {what}: {a.why}", file=sys.stderr)
    taken = sum(1 for a in adopted if a.strategy)
    print(f"kiln bench: {taken} of {len(adopted)} stored cases in {prep.settings.lock_path}", file=sys.stderr)
    return 0


def _strategy_list(text: str | None) -> list[str] | None:
    """``--strategies a,b`` as a list; None when not given (each command's own default)."""
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def _bench_merge(sources: list[str], store_path: Path, strategies: list[str] | None = None) -> int:
    """`kiln bench --merge-from A --merge-from B [--strategies lfbo]`: the newest copy of every record of A and B
    (of those strategies only, when given) into --store."""
    from .bench.store import Store, merge_into

    others = [_existing_store(Path(s)) for s in sources]
    moved = merge_into(Store(store_path), others, strategies)  # update() reads the target under its lock: no load first
    for label, name, source in moved:
        print(f"kiln bench: merged {label} {name} from {source}", file=sys.stderr)
    print(f"kiln bench: {len(moved)} records merged into {store_path}", file=sys.stderr)
    return 0


def _bench_child_args(ns: argparse.Namespace, project: Path, store_path: Path) -> list[str]:
    """The options every `--gpus` child gets: this command's, less --gpus, with absolute paths."""
    args = ["--project", str(project), "--store", str(store_path.resolve()),
            "--lfbo-effort", ns.lfbo_effort, "--rounds", str(ns.rounds)]
    if ns.cases and not ns.all:
        args += ["--cases", ns.cases]
    if ns.strategies:
        args += ["--strategies", ns.strategies]
    if ns.cold_judge:
        args.append("--cold-judge")
    for pair in ns.config:
        args += ["-C", pair]
    return args


def _bench_on_gpus(ns: argparse.Namespace, project: Path, store_path: Path) -> int:
    """`kiln bench --gpus`: a `--shard i/N` child per GPU, all into one store; non-zero if any child failed."""
    import os

    from build_backend.settings import load_settings

    from .bench import gpus as multi

    settings = load_settings(project, _config_settings(ns.config, None), os.environ)
    multi.refuse_cpu(settings.device)
    devices = multi.parse_gpus(ns.gpus)
    print(f"kiln bench: {len(devices)} GPUs ({', '.join(devices)}), one shard each, into {store_path}", file=sys.stderr)
    try:
        outcomes = multi.run_children(devices, _bench_child_args(ns, project, store_path))
    except KeyboardInterrupt:
        print("kiln bench: interrupted; the children were stopped and what they stored is kept: "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    failures = multi.describe_failures(outcomes)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kiln", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("inspect", help="show the baked table of a wheel, or the entries of a lock")
    p.add_argument("path")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    for name, func, hlp in (("tune", cmd_tune, "fill the lock for the declared shapes, without building a wheel"),
                            ("doctor", cmd_doctor, "versions, GPU, and what a build here would do")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("--project", default=".")
        p.add_argument("-C", "--config", action="append", default=[], metavar="KEY=VALUE",
                       help="a [tool.kiln] setting, as with pip's -C kiln.KEY=VALUE")
        if name == "tune":
            p.add_argument("--strategy")
        else:
            p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("merge", help="merge locks from several builders (e.g. several GPU types)")
    p.add_argument("locks", nargs="+")
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("bench", help="tune cases x strategies against lfbo into a resumable store; --report renders it")
    p.add_argument("--project", default=".")
    p.add_argument("--cases", help="comma list of kernel_id@shape_name (default: all declared cases)")
    p.add_argument("--all", action="store_true", help="every declared case (the default)")
    p.add_argument("--strategies", help="comma list (default: lfbo,seeded, plus hybrid,llm when an LLM is configured)")
    p.add_argument("--store", help="results store (default: <project>/bench/results/store.json)")
    p.add_argument("-C", "--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a [tool.kiln] setting (budgets: effort, max_generations, ...), as with kiln tune")
    p.add_argument("--lfbo-effort", default="full", help="effort of the lfbo baseline (default: full)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds in the fresh measuring process")
    p.add_argument("--cold-judge", action="store_true", help="start each measuring process only when its case is done "
                   "(default: spawned ahead, its imports done while the case tunes)")
    p.add_argument("--shard", metavar="K/N", help="only the kernels whose index (0-based, in declared or --cases order) "
                   "satisfies index %% N == K, all their cases; several shards may share one --store")
    p.add_argument("--gpus", metavar="auto|0,1,...", help="one `--shard i/N` child per GPU (CUDA_VISIBLE_DEVICES pinned, "
                   "cores split for precompile), all writing the same store; auto = every visible GPU")
    p.add_argument("--report", action="store_true", help="write the markdown report and PNG plots (no tuning)")
    p.add_argument("--json", action="store_true", help="with --report: print the summary JSON instead")
    p.add_argument("--out", help="with --report: the report folder (default: next to the store, report/)")
    p.add_argument("--spread", action="append", default=[], metavar="LFBO_SPREAD_JSON",
                   help="with --report: an lfbo_spread.json (bench/probes/lfbo_spread.py: lfbo drawn twice, re-timed "
                        "in one process), reported beside the bar as lfbo's own spread; repeatable")
    p.add_argument("--to-lock", action="store_true",
                   help="put each case's best stored config (lfbo's, or a strategy's that beat it in the same "
                        "process) into the project's kiln.lock, so a build ships it without tuning (no tuning)")
    p.add_argument("--merge-from", action="append", default=[], metavar="STORE",
                   help="copy into --store every record of STORE that it lacks or holds an older copy of "
                        "(newest finished_at wins; repeatable; no tuning), e.g. the stores of device calls "
                        "that each started from the committed one; with --strategies, only those strategies' "
                        "records, e.g. the table's lfbo baselines into a variant trial's store")
    p.set_defaults(func=cmd_bench)

    ns = parser.parse_args(argv)
    try:
        return int(ns.func(ns))
    except KilnError as e:
        print(f"kiln: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
