"""The ray executor against a real Ray cluster that the test starts on loopback.

One build tunes tinypkg for real (Pallas interpret on CPU) through Ray and is
compared with the local executor's lock for the same project.  One run uses a
named fake benchmark (``kiln_fake_bench:FakeBench``, written into the project
and shipped to the workers by Ray) so that the scheduling logic (a worker
that dies once, one that always dies, a case that raises) is checked in
seconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PALLAS_INTERPRET, clean_env, lock_entries, only_wheel, pip_wheel, run_python, script_result

FAST_FINAL_CHECK = {"HELION_AUTOTUNE_FINAL_REBENCHMARK_TOP_K": "3", "HELION_AUTOTUNE_FINAL_REBENCHMARK_TARGET_MS": "300"}
# RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray take 127.0.0.1 as the node address (as it does on macOS): with it
# the GCS, raylet and worker servers bind to loopback only; --node-ip-address=127.0.0.1 alone still binds to all.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
BUDGET = ("kiln.max_configs=3",)  # a real search, kept short for CI's 2 cores


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A one-node Ray cluster on 127.0.0.1 with 2 CPUs; stopped (only its own processes) afterwards."""
    pytest.importorskip("ray")
    pytest.importorskip("jax", reason="Pallas interpret mode needs jax (pip install -r requirements/test.txt)")
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="kray")  # short: Ray's unix socket paths must fit in 107 bytes
    ray_cli = Path(sys.executable).with_name("ray")
    cmd = [str(ray_cli), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
           "--num-cpus=2", "--num-gpus=0", "--include-dashboard=false", "--disable-usage-stats",
           f"--temp-dir={temp}", "--object-store-memory=100000000"]
    log = open(Path(temp) / "ray-start.log", "w")
    head = subprocess.Popen(cmd, env=clean_env(**RAY_ENV), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        probe = ("import ray; ray.init(address=%r); assert ray.cluster_resources().get('CPU') == 2; "
                 "assert [n['NodeManagerAddress'] for n in ray.nodes()] == ['127.0.0.1']" % address)
        deadline = time.monotonic() + 120
        while True:
            if head.poll() is not None:
                raise AssertionError(f"ray start exited: {(Path(temp) / 'ray-start.log').read_text()[-4000:]}")
            if run_python(probe, Path(temp), clean_env(**RAY_ENV), check=False).returncode == 0:
                break
            if time.monotonic() > deadline:
                raise AssertionError("the Ray cluster did not come up in 120 s")
            time.sleep(1)
        yield address
    finally:
        head.send_signal(signal.SIGTERM)  # ray start --block stops the node it started
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
        try:  # anything left in the session this test started (never `ray stop`: it kills every Ray here)
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def _baked(wheel: Path) -> list[tuple[str, str, dict]]:
    from tuning.runtime.table import decode

    with zipfile.ZipFile(wheel) as zf:
        table = decode(zf.read("tinypkg/_kiln_table.msgpack"))
    return sorted((kid, e.shape, dict(e.config)) for kid, entries in table.kernels.items() for e in entries)


def test_ray_build_gives_the_local_executors_lock(ray_cluster: str, tinypkg: Path, tmp_path: Path) -> None:
    local_project = tmp_path / "local" / "tinypkg"
    shutil.copytree(tinypkg, local_project)
    env = clean_env(KILN_DEVICE="cpu", **PALLAS_INTERPRET, **FAST_FINAL_CHECK, **RAY_ENV)

    local = pip_wheel(local_project, tmp_path / "local-dist", env, "kiln.executor=local", "kiln.workers=2", *BUDGET)
    assert "local executor, 2 workers" in local.stdout + local.stderr
    ray_build = pip_wheel(tinypkg, tmp_path / "ray-dist", env, "kiln.executor=ray", f"kiln.ray_address={ray_cluster}",
                          *BUDGET)
    out = ray_build.stdout + ray_build.stderr
    assert f"ray executor at {ray_cluster}" in out
    assert "2 to tune" in out and "FAILED" not in out

    # Everything that names a case comes out the same.  The chosen config's values, its timings and how many
    # configs the search got through may differ: Pallas interpret ranks configs by wall time, which is noise on a
    # shared CPU (two runs of the same executor differ the same way); the config's keys may not.
    by_ray, by_local = lock_entries(tinypkg), lock_entries(local_project)
    assert set(by_ray) == set(by_local) == {"small", "wide"}
    for name in by_ray:
        ray, local = by_ray[name], by_local[name]
        same = ("kernel", "shape_name", "shape", "source_hash", "device", "arch")
        assert {k: ray[k] for k in same} == {k: local[k] for k in same}
        assert sorted(ray["config"]) == sorted(local["config"])
        for k in ("strategy", "spec", "budget", "versions", "seeds"):
            assert ray["provenance"][k] == local["provenance"][k], k
        assert ray["provenance"]["strategy"] == "seeded" and ray["provenance"]["budget"]["max_configs"] == 3
    # The anchor (first shape) seeded the other one on Ray too.
    assert (by_ray["small"]["provenance"]["seeds"], by_ray["wide"]["provenance"]["seeds"]) == (0, 1)

    baked = _baked(only_wheel(tmp_path / "ray-dist"))
    assert baked == sorted(("tinypkg.ops:add", e["shape"], e["config"]) for e in by_ray.values())


FAKE_BENCH = '''
"""A named fake benchmark: no search, the kernel's default config, and scripted deaths."""
import os
from pathlib import Path

from tuning.strategies import TuneOutcome

LOG = Path({log!r})


class FakeBench:
    name = "fake-bench"

    def tune(self, bound_kernel, args, budget, context):
        with LOG.open("a") as fh:
            fh.write(f"{{context.shape_name}} {{len(context.seeds)}} {{os.getpid()}}\\n")
        calls = [line.split()[0] for line in LOG.read_text().splitlines()].count(context.shape_name)
        if context.shape_name == "doomed" or (context.shape_name == "crashy" and calls == 1):
            os._exit(3)  # the worker process dies under the case
        if context.shape_name == "broken":
            raise ValueError("fake bench: this case is broken")
        return TuneOutcome(config=dict(bound_kernel.config_spec.default_config()), configs_tested=1, seconds=0.01,
                           extra={{"seeds": len(context.seeds)}})
'''

DRIVE = '''
import json, sys
from pathlib import Path
from build_backend.builder import prepare_build
from tuning.ray_executor import run_ray
from tuning.tune import TuneRun
from tuning.strategies import Budget

project, address = Path(sys.argv[1]), sys.argv[2]
prep = prepare_build(project, {"kiln.device": "cpu"})
results = run_ray(TuneRun(prep.plan, "kiln_fake_bench:FakeBench", Budget("quick"), "cpu", prep.settings.lock_path,
                          project), address=address)
print("RESULT" + json.dumps({r.case.spec.name: [r.status, r.error] for r in results}))
'''


def test_ray_retries_a_dead_worker_once_and_reports_failures(ray_cluster: str, tinypkg: Path, tmp_path: Path) -> None:
    pyproject = tinypkg / "pyproject.toml"
    same = '["f32[16,128]", "f32[16,128]"]'
    pyproject.write_text(pyproject.read_text() + f"crashy = {same}\ndoomed = {same}\nbroken = {same}\n")
    log = tmp_path / "fake-bench.log"
    (tinypkg / "kiln_fake_bench.py").write_text(FAKE_BENCH.format(log=str(log)))  # reaches the workers by working_dir

    env = clean_env(**PALLAS_INTERPRET, **RAY_ENV)
    start = time.monotonic()
    code_args = [sys.executable, "-c", DRIVE, str(tinypkg), ray_cluster]
    proc = subprocess.run(code_args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-6000:]
    seconds = time.monotonic() - start
    results = script_result(proc.stdout)

    assert {k: v[0] for k, v in results.items()} == {
        "small": "tuned", "wide": "tuned", "crashy": "tuned", "doomed": "failed", "broken": "failed"}
    assert "died twice" in results["doomed"][1] and "WorkerCrashedError" in results["doomed"][1]
    assert results["broken"][1] == "ValueError: fake bench: this case is broken"

    calls = [line.split() for line in log.read_text().splitlines()]
    count = {name: sum(1 for c in calls if c[0] == name) for name in results}
    assert count == {"small": 1, "wide": 1, "crashy": 2, "doomed": 2, "broken": 1}  # Ray's one retry, deaths only
    # tuning_order: the middle declared shape (crashy) is the anchor; every other case waited for it and got its seed.
    assert calls[0][0] == "crashy" and calls[1][0] == "crashy" and calls[0][2] != calls[1][2]
    assert all(int(c[1]) >= 1 for c in calls[2:])
    assert set(lock_entries(tinypkg)) == {"small", "wide", "crashy"}  # finished cases kept
    assert seconds < 120


def test_ray_settings_choices_env_and_errors(tinypkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No cluster needed: the keys, their sources, the suggestions, and Ray being optional."""
    from build_backend.settings import load_settings
    from tuning.errors import SettingsError
    from tuning.ray_executor import import_ray

    s = load_settings(tinypkg, {"kiln.executor": "ray", "kiln.ray_address": "10.0.0.5:6379"}, {})
    assert (s.executor, s.ray_address) == ("ray", "10.0.0.5:6379")
    s = load_settings(tinypkg, {"kiln.ray_address": "10.0.0.5:6379"}, {"KILN_RAY_ADDRESS": "auto"})
    assert s.ray_address == "auto" and s.origins["ray_address"] == "environment KILN_RAY_ADDRESS"
    assert load_settings(tinypkg, {}, {}).ray_address is None  # a local Ray runtime, as ray.init() starts
    with pytest.raises(SettingsError, match=r"'rya' is not valid\. Did you mean 'ray'\?"):
        load_settings(tinypkg, {"kiln.executor": "rya"}, {})
    with pytest.raises(SettingsError, match=r"Did you mean 'kiln\.ray_address'\?"):
        load_settings(tinypkg, {"kiln.ray_adress": "auto"}, {})

    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(SettingsError, match=r"pip install ray==2\.60\.0"):
        import_ray()


def test_ledger_skips_every_case_once_the_build_budget_is_spent(tmp_path: Path) -> None:
    """total_seconds: nothing starts after the deadline; the cases are reported skipped, not failed."""
    from tuning.ledger import Ledger
    from tuning.plan import Case, Plan
    from tuning.runtime.keys import DeviceKey
    from tuning.specs import parse_shapes
    from tuning.strategies import Budget
    from tuning.tune import TuneRun

    specs = parse_shapes({"m:k": {"a": ["f32[8]"], "b": ["f32[16]"]}})["m:k"]
    plan = Plan(DeviceKey("cpu", "pallas:interpret"), todo=[Case("m:k", None, "h", spec) for spec in specs])
    seen: list[str] = []
    ledger = Ledger(TuneRun(plan, "seeded", Budget("quick"), "cpu", tmp_path / "kiln.lock", tmp_path, total_seconds=0,
                            on_case=lambda r: seen.append(r.status)))
    assert ledger.next_job() is None
    assert seen == ["skipped", "skipped"] and "total_seconds=0 spent" in (ledger.results[0].error or "")
    assert not (tmp_path / "kiln.lock").exists()
