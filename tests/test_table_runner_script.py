"""bench/run_x2_gpu.sh, the driver of the H200 table runs, with stub GPU commands on this CPU.

Why test a bench script: every device minute is scarce (30 a session), and this script's
phases decide whether a call tunes or waits on nothing.  Session 15 lost a whole call when
the machine went back between calls and `table-wait` then waited on a fresh machine with no
job.  These tests run the real script with `nvidia-smi`, `python3` and `taskset` stubbed
(the stub `python3` records the `kiln bench` command it was given instead of tuning), so
what is checked is the script's own logic: one job or two shards, and the relaunch.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from build_backend.settings import KEYS

ROOT = Path(__file__).resolve().parents[1]
CASES = "model_kernels.rms_norm:rms_norm@small,model_kernels.softmax:softmax@large"


def _stubs(bin_dir: Path, gpus: int) -> None:
    bin_dir.mkdir()
    lines = "".join(f'echo "GPU {i}: NVIDIA H200 (UUID: stub-{i})"\n' for i in range(gpus))
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{lines}")
    # Records each call (one line per process) and answers as a finished `kiln bench` would.
    # It also records the KILN_* variables it inherits: the real `kiln bench` rejects unknown ones
    # (session 16's first table call died on the script's own KILN_GPU_RES).
    (bin_dir / "python3").write_text('#!/bin/sh\necho "$CUDA_VISIBLE_DEVICES $*" >> "$BENCH_GPU_RES/calls"\n'
                                     'env | grep "^KILN_" | cut -d= -f1 >> "$BENCH_GPU_RES/kiln_env"\n'
                                     '[ -n "${STUB_SECONDS:-}" ] && sleep "$STUB_SECONDS"\n'
                                     'echo "kiln bench: done stub"\n')
    (bin_dir / "taskset").write_text('#!/bin/sh\necho "$2" >> "$BENCH_GPU_RES/cores"\nshift 2\nexec "$@"\n')
    # Records each job's time limit, then runs the command without one.
    (bin_dir / "timeout").write_text('#!/bin/sh\n[ "$1" = -s ] && shift 2\necho "$1" >> "$BENCH_GPU_RES/limits"\nshift\nexec "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)


def _run(tmp_path: Path, gpus: int, *phase: str, **extra: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    res, out, site = tmp_path / "res", tmp_path / "out", tmp_path / "site"
    (site / "helion").mkdir(parents=True, exist_ok=True)  # the wheels count as installed
    if not (tmp_path / "bin").exists():
        _stubs(tmp_path / "bin", gpus)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env = {**inherited, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "OUT": str(out),
           "BENCH_GPU_RES": str(res), "BENCH_GPU_SITE": str(site), "TABLE_CASES": CASES, **extra}
    proc = subprocess.run(["bash", "bench/run_x2_gpu.sh", *phase], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=120)
    return proc, res, out


def test_table_wait_on_a_fresh_one_gpu_machine_relaunches_one_unsharded_job(tmp_path: Path) -> None:
    proc, res, out = _run(tmp_path, 1, "table-wait", "30")
    assert proc.returncode == 0, proc.stderr
    assert "no table job on this machine" in proc.stdout
    calls = (res / "calls").read_text().splitlines()
    assert len(calls) == 1, calls  # one job on GPU0; GPU1's job saw no second GPU and only marked itself done
    gpu, _, cmd = calls[0].partition(" ")
    assert gpu == "0" and f"--cases {CASES}" in cmd and "--strategies lfbo,seeded" in cmd and "--shard" not in cmd
    assert (res / "cores").read_text().split() == [f"0-{len(os.sched_getaffinity(0)) - 1}"]  # nproc  # every core for the one job
    assert (res / "A.done").exists() and (res / "B.done").exists()
    assert (out / "store.json").exists() and (out / "res.tgz").exists()  # the committed store came back as resumed
    # The log comes back as a plain file at every tick, not only inside the final pack (a call cut by
    # the device budget never reaches its pack).
    assert "kiln bench: done stub" in (out / "table0.log").read_text()
    assert "kiln bench: done stub" in proc.stdout
    # The relaunched job keeps tuning after this wait returns: table's own limit, not the wait's 30 s
    # (session 21: a job limit shorter than the device session cut a run with 206 s of device time left).
    assert (res / "limits").read_text().split() == ["1780"]
    # Whatever KILN_* the script passes on must be a setting kiln reads, or `kiln bench` stops at once.
    passed = set((res / "kiln_env").read_text().split()) if (res / "kiln_env").exists() else set()
    assert {name.removeprefix("KILN_").lower() for name in passed} <= set(KEYS), passed


def test_table_on_two_gpus_runs_two_shards_and_a_later_wait_does_not_relaunch(tmp_path: Path) -> None:
    proc, res, _ = _run(tmp_path, 2, "table", "30")
    assert proc.returncode == 0, proc.stderr
    proc, res, _ = _run(tmp_path, 2, "table-wait", "30")
    assert proc.returncode == 0, proc.stderr
    assert "no table job" not in proc.stdout  # the job ran here: nothing to relaunch
    calls = sorted((res / "calls").read_text().splitlines())
    assert [c.split()[0] for c in calls] == ["0", "1"]
    assert "--shard 0/2" in calls[0] and "--shard 1/2" in calls[1]
    assert sorted((res / "cores").read_text().split()) == ["0-15", "16-31"]
    assert (res / "limits").read_text().split() == ["30", "30"]  # `table 30`: the limit given


def test_table_wait_while_pre_a_runs_does_not_launch_a_second_table(tmp_path: Path) -> None:
    """A wait issued while PRE_A (e.g. a seeded variant run) still runs finds no table0.log yet; it must not relaunch."""
    proc, res, _ = _run(tmp_path, 1, "table", "30", PRE_A="sleep 12")  # outlasts launch's 5 s
    assert proc.returncode == 0, proc.stderr
    proc, res, _ = _run(tmp_path, 1, "table-wait", "30")
    assert proc.returncode == 0, proc.stderr
    assert "no table job" not in proc.stdout
    assert len((res / "calls").read_text().splitlines()) == 1  # one `kiln bench`, after PRE_A


def test_variants_pass_their_extra_bench_arguments_and_bring_each_trial_back(tmp_path: Path) -> None:
    """A spread trial is the same search with another random seed; a variants call on its own must
    return each store (session 20 copied its trial store to $OUT by hand)."""
    proc, res, out = _run(tmp_path, 1, "variants", CASES="model_kernels.attention:attention@medium",
                          VARIANTS="s1=C:seed=1|s2=C:seed=2,with_seeds.copies=3")
    assert proc.returncode == 0, proc.stderr
    s1, s2 = (res / "calls").read_text().splitlines()
    assert "bench/seeded_variant.py -- bench --cases model_kernels.attention:attention@medium" in s1, s1
    assert "-C seed=1 --store" in s1 and "--set" not in s1  # today's search, another random draw
    assert "--set with_seeds.copies=3 -- bench" in s2 and "-C seed=2 --store" in s2, s2
    assert {"var_s1.json", "var_s1.log", "var_s2.json", "var_s2.log"} <= {f.name for f in out.iterdir()}


def test_a_variants_call_on_a_warm_machine_brings_back_its_own_trials_only(tmp_path: Path) -> None:
    """The device returns 8 files a call. Session 45's third call, on a machine still holding the second
    call's three trials, came back with those and without its own new trial, which took a fourth call."""
    proc, res, _ = _run(tmp_path, 1, "variants", CASES="model_kernels.attention:attention@small",
                        VARIANTS="old1=seed_check.widen=30|old2=search_stop.patience=2", OUT=str(tmp_path / "out1"))
    assert proc.returncode == 0, proc.stderr
    (res / "spread.json").write_text("{}")  # an lfbo-spread draw's store, from a call of its own
    # the copier ticks while the (stub) search runs, as it does every 10 s on the device
    proc, res, _ = _run(tmp_path, 1, "variants", CASES="model_kernels.attention:attention@large",
                        VARIANTS="new=search_verify.within_pct=2", OUT=str(tmp_path / "out2"), COPY_EVERY="0.2",
                        STUB_SECONDS="1")
    assert proc.returncode == 0, proc.stderr
    assert sorted(f.name for f in (tmp_path / "out2").iterdir()) == ["var_new.json", "var_new.log"]
    assert {"var_old1.json", "var_old2.json", "var_new.json"} <= {f.name for f in res.iterdir()}  # all kept on the machine


def test_variants_go_on_from_var_base_so_a_cut_trial_seeds_its_later_shapes(tmp_path: Path) -> None:
    """Session 33's trial was cut after mamba2 medium; the next call had to seed small from that pick."""
    base = tmp_path / "cut_trial.json"
    base.write_text('{"from": "the cut trial"}')
    proc, res, out = _run(tmp_path, 1, "variants", CASES="model_kernels.mamba2_chunk_scan:mamba2_chunk_scan@small",
                          VARIANTS="w=compiler_seeds_only.copies=4", VAR_BASE=str(base))
    assert proc.returncode == 0, proc.stderr
    assert (res / "var_w.json").read_text() == base.read_text()
    assert (out / "var_w.json").read_text() == base.read_text()


def test_variants_with_var_proxy_draw_into_a_proxy_copy_of_the_store_and_merge_nothing(tmp_path: Path) -> None:
    """Sessions 47-49 were lent H100s where the table is the H200's: VAR_PROXY makes the trial store with
    bench/probes/proxy_store.py (the table's picks under this card's run key) instead of a plain copy."""
    proc, res, out = _run(tmp_path, 1, "variants", CASES="model_kernels.attention:attention@small",
                          VARIANTS="st1=seed_variants.scaled_tiles=1|ship=", VAR_PROXY="1")
    assert proc.returncode == 0, proc.stderr
    calls = (res / "calls").read_text().splitlines()
    assert len(calls) == 4 and not any("--merge-from" in c for c in calls)  # the proxy copies the baselines itself
    for name, (proxy, variant) in zip(["st1", "ship"], [calls[:2], calls[2:]]):
        assert (f"bench/probes/proxy_store.py --from bench/results/store.json --out {res / f'var_{name}.json'} "
                f"--draw model_kernels.attention:attention@small") in proxy
        assert f"--store {res / f'var_{name}.json'}" in variant
    assert "--set seed_variants.scaled_tiles=1 -- bench" in calls[1] and "--set" not in calls[3]  # today's search
    log = (out / "var_st1.log").read_text()
    assert log.index("== variants st1 ") < log.index("kiln bench: done stub")  # the proxy's output under the header


def test_variants_from_a_var_base_that_is_not_there_stop_before_any_search(tmp_path: Path) -> None:
    """Session 39: a call on a fresh machine named the last machine's /tmp/res store; the copy failed and
    the trial ran on from an empty store, so grouped GEMM small ran cold where a build seeds it."""
    proc, res, out = _run(tmp_path, 1, "variants", CASES="model_kernels.grouped_gemm:grouped_gemm@small",
                          VARIANTS="w=compiler_seeds_only.copies=4", VAR_BASE=str(tmp_path / "gone" / "var_w.json"))
    assert proc.returncode == 2
    assert "VAR_BASE" in proc.stdout and "does not exist" in proc.stdout and "bench/results/variants_session" in proc.stdout
    assert not (res / "calls").exists()  # no merge, no search


def test_variants_on_their_own_trial_store_merge_the_baselines_and_keep_every_log(tmp_path: Path) -> None:
    """Session 34: a second invocation on the machine's own trial store overwrote the first one's log, and
    the trial store (from session 33) lacked mamba2 large's lfbo row, so that variant row had no ratio."""
    base = tmp_path / "older_trial.json"
    base.write_text('{"from": "an older trial"}')
    first = dict(CASES="model_kernels.grouped_gemm:grouped_gemm@small", VARIANTS="w=compiler_seeds_only.copies=4")
    proc, res, _ = _run(tmp_path, 1, "variants", **first, VAR_BASE=str(base))
    assert proc.returncode == 0, proc.stderr
    proc, res, out = _run(tmp_path, 1, "variants", CASES="model_kernels.attention:attention_causal@medium",
                          VARIANTS="w=compiler_seeds_only.copies=4", VAR_BASE=str(res / "var_w.json"))
    assert proc.returncode == 0, proc.stderr
    assert "same file" not in proc.stderr  # going on in its own store is no copy
    merge1, variant1, merge2, variant2 = (res / "calls").read_text().splitlines()
    for merge in (merge1, merge2):  # the committed store's baselines, and nothing else of it
        assert f"-m tuning.cli bench --store {res / 'var_w.json'} --merge-from bench/results/store.json --strategies lfbo" in merge
    assert "grouped_gemm@small" in variant1 and "attention_causal@medium" in variant2
    log = (out / "var_w.log").read_text()
    assert [line.split()[-1] for line in log.splitlines() if line.startswith("== variants w ")] == [
        "model_kernels.grouped_gemm:grouped_gemm@small", "model_kernels.attention:attention_causal@medium"]
    assert log.count("kiln bench: done stub") == 4  # both invocations' output kept (stub: merge and bench each)


def test_variants_x2_draw_two_case_lists_at_once_one_per_gpu_and_bring_both_back(tmp_path: Path) -> None:
    """Session 40 held 1706 s of one GPU for 12 rows; on a 2-GPU machine each half takes a GPU and half
    the cores, both starting from the same VAR_BASE, so neither overwrites the other's trial store."""
    base = tmp_path / "var_td2.json"
    base.write_text('{"from": "the last call"}')
    a, b = "model_kernels.matmul:matmul@medium,model_kernels.matmul:matmul@small", "model_kernels.rope:rope@medium"
    proc, res, out = _run(tmp_path, 2, "variants-x2", CASES_A=a, CASES_B=b, VAR_BASE=str(base),
                          VARIANTS="td2=seed_variants.tensor_descriptors=2")
    assert proc.returncode == 0, proc.stderr
    for half, gpu, cases in (("a", "0", a), ("b", "1", b)):
        merge, variant = (res / half / "calls").read_text().splitlines()
        assert merge.startswith(f"{gpu} -m tuning.cli bench --store {res / half / 'var_td2.json'} --merge-from")
        assert variant.startswith(f"{gpu} bench/seeded_variant.py --set seed_variants.tensor_descriptors=2 -- bench --cases {cases} ")
        assert (out / half / "var_td2.json").read_text() == base.read_text()
        assert (out / half / "var_td2.log").exists()
        assert f"== half {half}" in proc.stdout
    cores = len(os.sched_getaffinity(0))  # what `nproc` counts; the script halves it
    assert (res / "a" / "cores").read_text().split() == [f"0-{cores // 2 - 1}"]
    assert (res / "b" / "cores").read_text().split() == [f"{cores // 2}-{cores - 1}"]


def test_variants_x2_on_one_gpu_runs_the_halves_one_after_the_other(tmp_path: Path) -> None:
    proc, res, out = _run(tmp_path, 1, "variants-x2", CASES_A="model_kernels.matmul:matmul@medium",
                          CASES_B="model_kernels.rope:rope@medium", VARIANTS="td2=seed_variants.tensor_descriptors=2")
    assert proc.returncode == 0, proc.stderr
    assert not (res / "a" / "cores").exists() and not (res / "b" / "cores").exists()  # no pinning: the one GPU, all cores
    assert "matmul@medium" in (res / "a" / "calls").read_text() and "rope@medium" in (res / "b" / "calls").read_text()
    assert {f.name for f in (out / "a").iterdir()} >= {"var_td2.json", "var_td2.log"}


def test_table_strategies_narrows_the_table_to_the_baselines(tmp_path: Path) -> None:
    """TABLE_STRATEGIES=lfbo: a session can run the missing lfbo baselines while a change to seeded's
    limits is still being measured, so no seeded row is run under limits about to change."""
    proc, res, _ = _run(tmp_path, 1, "table-wait", "30", TABLE_STRATEGIES="lfbo")
    assert proc.returncode == 0, proc.stderr
    (call,) = (res / "calls").read_text().splitlines()
    assert "--strategies lfbo " in call and "seeded" not in call


def test_lfbo_spread_draws_lfbo_again_into_a_copy_of_the_store_then_compares(tmp_path: Path) -> None:
    proc, res, out = _run(tmp_path, 1, "lfbo-spread", "60", CASES=CASES, SPREAD_SEED="2")
    assert proc.returncode == 0, proc.stderr
    bench, probe = (res / "calls").read_text().splitlines()
    assert f"--cases {CASES} --strategies lfbo -C seconds=900 -C seed=2 --store {res / 'spread.json'}" in bench
    assert bench.split(" ", 1)[1].startswith("-m tuning.cli bench")
    assert f"bench/probes/lfbo_spread.py --other {res / 'spread.json'} --cases {CASES}" in probe
    assert (res / "spread.json").read_text() == (ROOT / "bench/results/store.json").read_text()  # never the committed one
    assert (res / "limits").read_text().split() == ["60"]


def test_judge_repeat_pairs_the_rows_over_the_bar_again_without_tuning(tmp_path: Path) -> None:
    proc, res, out = _run(tmp_path, 1, "judge-repeat", "300", REPEATS="2")
    assert proc.returncode == 0, proc.stderr
    (probe,) = (res / "calls").read_text().splitlines()  # no `kiln bench`: nothing is tuned
    assert "bench/probes/judge_repeat.py --cases model_kernels.attention:attention@small," in probe
    assert "model_kernels.gdn_fwd_h:gdn_fwd_h@large," in probe and "--repeats 2" in probe
    cases = probe.split("--cases ")[1].split()[0].split(",")
    assert len(cases) == 10 and all(c.startswith("model_kernels.") for c in cases)
    assert (res / "limits").read_text().split() == ["300"]


def test_knob_swap_times_lfbo_s_knobs_in_the_picks_over_the_bar_without_tuning(tmp_path: Path) -> None:
    proc, res, out = _run(tmp_path, 1, "knob-swap", "200")
    assert proc.returncode == 0, proc.stderr
    (probe,) = (res / "calls").read_text().splitlines()  # no `kiln bench`: nothing is tuned
    cases = probe.split("--cases ")[1].split()[0].split(",")
    assert len(cases) == 8 and cases[:3] == ["model_kernels.attention:attention@small",
                                             "model_kernels.gdn_fwd_h:gdn_fwd_h@large",
                                             "model_kernels.fp8_attention:fp8_attention@large"]
    assert "bench/probes/knob_swap.py" in probe and (res / "limits").read_text().split() == ["200"]


def test_post_a_runs_after_the_table_and_a_wait_brings_its_trial_back(tmp_path: Path) -> None:
    """POST_A (a seeded variant trial) runs after the table's bench, so it never delays a missing row;
    its store and log come back at every tick of the wait, as the table's do (a call cut by the device
    budget never reaches its pack)."""
    post = 'CASES=model_kernels.grouped_gemm:grouped_gemm@medium VARIANTS="w=compiler_seeds_only.copies=4" bash bench/run_x2_gpu.sh variants'
    proc, res, _ = _run(tmp_path, 1, "table", "30", POST_A=post)
    assert proc.returncode == 0, proc.stderr
    proc, res, out = _run(tmp_path, 1, "table-wait", "30")
    assert proc.returncode == 0, proc.stderr
    table, variant = (res / "calls").read_text().splitlines()
    assert "-m tuning.cli bench" in table and f"--cases {CASES}" in table
    assert "--set compiler_seeds_only.copies=4 -- bench --cases model_kernels.grouped_gemm:grouped_gemm@medium" in variant
    assert {"var_w.json", "var_w.log", "table0.log"} <= {f.name for f in out.iterdir()}


def test_wait_on_a_fresh_machine_starts_the_job_over_or_returns_at_once(tmp_path: Path) -> None:
    """Session 35's second call found a fresh machine and `wait` sat out 553 s of the session's 1800
    on no job.  Given the job's command it starts it over; without one it says so and stops."""
    import time

    started = time.monotonic()
    proc, res, _ = _run(tmp_path, 1, "wait", "60")
    assert proc.returncode == 3 and "nothing to wait for" in proc.stdout
    assert time.monotonic() - started < 30 and not (res / "calls").exists()

    job = 'python3 -m tuning.cli bench --cases X --store "$R/spread.json"'
    proc, res, out = _run(tmp_path, 1, "wait", "60", JOB_A=job, JOB_B="true")
    assert proc.returncode == 0, proc.stderr
    assert "relaunching JOB_A / JOB_B" in proc.stdout and (res / "A.done").exists()
    # $R in a single-quoted JOB_A is the results folder (it was unset in the job's shell until session 35)
    assert f"-m tuning.cli bench --cases X --store {res / 'spread.json'}" in (res / "calls").read_text()
    proc, _, _ = _run(tmp_path, 1, "wait", "60")  # the machine's jobs are done: nothing is started again
    assert proc.returncode == 0 and "relaunching" not in proc.stdout
    assert len((res / "calls").read_text().splitlines()) == 1


def test_a_cut_lfbo_spread_draw_comes_back_at_every_tick(tmp_path: Path) -> None:
    """Session 35's spread draw was lost with its machine: the wait now copies its store and log each tick."""
    job = 'echo "{}" > "$R/spread.json"; echo "[485s] Polish round 10" > "$R/spread.log"'  # a draw's files, never copied by the job
    proc, res, out = _run(tmp_path, 1, "wait", "60", JOB_A=job, JOB_B="true")
    assert proc.returncode == 0, proc.stderr
    assert {"spread.json", "spread.log"} <= {f.name for f in out.iterdir()}


def test_lfbo_spread_goes_on_from_a_returned_spread_store(tmp_path: Path) -> None:
    """SPREAD_BASE: each call draws what fits its 600 s and the next goes on in the store it brought back."""
    returned = tmp_path / "returned_spread.json"
    returned.write_text('{"runs": {}, "from": "call 1"}')
    proc, res, _ = _run(tmp_path, 1, "lfbo-spread", "60", CASES=CASES, SPREAD_BASE=str(returned))
    assert proc.returncode == 0, proc.stderr
    assert (res / "spread.json").read_text() == returned.read_text()


def test_lfbo_spread_caps_the_draw_to_fit_a_call_when_asked(tmp_path: Path) -> None:
    """Session 36's seed-1 draw outran its call's limit and was killed with nothing kept; SPREAD_SECONDS
    caps lfbo's own search instead, so the draw ends with a result inside the call."""
    proc, res, _ = _run(tmp_path, 1, "lfbo-spread", "560", CASES=CASES, SPREAD_SECONDS="480")
    assert proc.returncode == 0, proc.stderr
    bench = (res / "calls").read_text().splitlines()[0]
    assert "--strategies lfbo -C seconds=480 -C seed=1 " in bench
