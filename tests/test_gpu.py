"""The main job on a real CUDA GPU: `pip wheel` tunes, the installed wheel runs, rebuilds are byte-identical.

Why these exist beside test_wheel_build.py: the CPU tests tune on Helion's Pallas backend in
interpret mode, so nothing there compiles a Triton kernel, times it on a GPU, or keys an entry
by a GPU's name.  These run the same flow on the CUDA device the machine has, with nothing
faked: Helion's searches benchmark on the GPU, the lock and the baked table carry that GPU's
name and arch, and the installed wheel runs its kernels there with Helion's search disabled.

They are marked ``gpu`` (deselected by default) and run through the device tool:

    python -m pytest -m gpu tests/test_gpu.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import ROOT, clean_env, install, only_wheel, pip_wheel, run_python, sha256

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run through the device tool)"),
]

SECRET = "sk-kiln-gpu-test-SECRET4711"

# Runs inside the installed target on the GPU: any entry into Helion's search is a failure.
RUN_ADD_ON_CUDA = """
import sys, json
sys.path.insert(0, {target!r})
import helion.autotuner.base_search as bs
def _no_search(*a, **k):
    raise AssertionError("Helion's autotuner search was entered at run time")
bs.BaseSearch.__init__ = _no_search
import torch
import tinypkg, tinypkg.ops as ops
assert tinypkg.__file__.startswith({target!r}), tinypkg.__file__
for shape in ([64, 128], [32, 256]):
    x, y = torch.randn(*shape, device="cuda"), torch.randn(*shape, device="cuda")
    torch.testing.assert_close(ops.add(x, y), x + y)
print("RESULT" + json.dumps([[r.shape, r.level_name, r.config] for r in tinypkg.baked.resolutions]))
"""


def _gpu() -> tuple[str, str]:
    """This machine's GPU name and the arch string kiln keys its entries by."""
    major, minor = torch.cuda.get_device_capability()
    return torch.cuda.get_device_name(), f"triton:sm{major}{minor}"


def _entries(project: Path) -> dict[str, dict]:
    lock = json.loads((project / "kiln.lock").read_text())
    return {e["shape_name"]: e for e in lock["entries"]}


def _resolutions(stdout: str) -> list[list]:
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


@pytest.fixture
def fixed_answer_server(tmp_path: Path) -> Iterator[Callable[[Path], str]]:
    """Starts bench/fixed_answer_llm.py (configs from a given lock: not an LLM) and yields its api_base."""
    procs: list[subprocess.Popen] = []

    def start(lock: Path) -> str:
        port_file = tmp_path / f"port{len(procs)}"
        procs.append(subprocess.Popen([sys.executable, str(ROOT / "bench" / "fixed_answer_llm.py"), "--lock", str(lock),
                                       "--port-file", str(port_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(400):
            if port_file.exists() and port_file.read_text():
                return f"http://127.0.0.1:{port_file.read_text()}/v1"
            time.sleep(0.05)
        raise AssertionError("bench/fixed_answer_llm.py did not start")

    yield start
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


def test_pip_wheel_tunes_on_the_gpu_and_the_installed_wheel_runs_its_configs(tinypkg: Path, tmp_path: Path) -> None:
    name, arch = _gpu()
    env = clean_env()  # device auto: the CUDA GPU
    build = pip_wheel(tinypkg, tmp_path / "dist", env)
    assert "2 to tune" in build.stderr + build.stdout

    entries = _entries(tinypkg)
    assert set(entries) == {"small", "wide"}
    for e in entries.values():
        assert (e["device"], e["arch"]) == (name, arch)
        prov = e["provenance"]
        # No LLM configured: the default strategy is the offline `seeded` one, benchmarked on the GPU.
        assert prov["strategy"] == "seeded" and prov["configs_tested"] >= 1 and 0 < prov["ms"] < 1.0
        assert "num_warps" in e["config"]  # a Triton config, not a Pallas one

    wheel = only_wheel(tmp_path / "dist")
    target = tmp_path / "target"
    install(wheel, target, env)
    res = _resolutions(run_python(RUN_ADD_ON_CUDA.format(target=str(target)), tmp_path, env).stdout)
    assert [(shape, level) for shape, level, _ in res] == [
        ("f32[64,128], f32[64,128]", "exact"),
        ("f32[32,256], f32[32,256]", "exact"),
    ]
    assert res[0][2] == entries["small"]["config"] and res[1][2] == entries["wide"]["config"]

    # The same lock rebuilds the same bytes, on the GPU machine too: nothing is tuned again.
    first = sha256(wheel)
    wheel.unlink()
    again = pip_wheel(tinypkg, tmp_path / "dist", env)
    assert "0 to tune" in again.stderr + again.stdout
    assert sha256(only_wheel(tmp_path / "dist")) == first


def test_hybrid_build_on_the_gpu_through_litellm_and_an_outage_falls_back(
        tinypkg: Path, tmp_path: Path, fixed_answer_server: Callable[[Path], str]) -> None:
    """`hybrid` in a real `pip wheel` on the GPU, its LLM a loopback server with fixed answers (not an LLM).

    The server answers with configs of a lock tuned on this GPU earlier, so the LLM stage has
    something that compiles here.  A second build whose endpoint is down must still finish, with
    every case tuned by `seeded` and the reason recorded.  The API key is never written anywhere.
    """
    name, _ = _gpu()
    env = clean_env(OPENAI_API_KEY=SECRET)
    pip_wheel(tinypkg, tmp_path / "seed", env)  # no LLM configured: seeded, as above
    answers = tmp_path / "answers.lock"
    answers.write_text((tinypkg / "kiln.lock").read_text())
    (tinypkg / "kiln.lock").unlink()

    api_base = fixed_answer_server(answers)
    build = pip_wheel(tinypkg, tmp_path / "hybrid", env, "kiln.llm_model=openai/fixed-answers",
                      f"kiln.llm_api_base={api_base}", "kiln.llm_log=llm.log")
    assert "2 to tune" in build.stderr + build.stdout
    for e in _entries(tinypkg).values():
        prov = e["provenance"]
        assert e["device"] == name and prov["strategy"] == "hybrid", prov
        assert prov["llm"]["model"] == "openai/fixed-answers" and prov["llm"]["accepted"] >= 1, prov["llm"]
    texts = {"lock": (tinypkg / "kiln.lock").read_text(), "llm log": (tinypkg / "llm.log").read_text(),
             "build output": build.stdout + build.stderr}
    with zipfile.ZipFile(only_wheel(tmp_path / "hybrid")) as zf:
        texts.update({f"wheel {n}": zf.read(n).decode("latin-1") for n in zf.namelist()})
    assert not [where for where, text in texts.items() if SECRET in text]

    # The endpoint goes down: the build still succeeds, every case tuned offline, the reason kept.
    (tinypkg / "kiln.lock").unlink()
    down = pip_wheel(tinypkg, tmp_path / "down", env, "kiln.llm_model=openai/fixed-answers",
                     "kiln.llm_api_base=http://127.0.0.1:9/v1", "kiln.llm_retries=0", "kiln.llm_timeout=5")
    assert "LLM not usable" in down.stderr + down.stdout
    for e in _entries(tinypkg).values():
        assert e["provenance"]["strategy"] == "seeded" and e["provenance"]["fallback"], e["provenance"]
    assert only_wheel(tmp_path / "down").exists()
