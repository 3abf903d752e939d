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
import shutil
import zipfile
from pathlib import Path

import pytest

from conftest import (FIXTURES, NO_SEARCH, ROOT, clean_env, fixed_answer_llm, install, lock_entries, only_wheel, pip_wheel,
                      run_python, script_result, sha256)
from tuning import lock as lockfile

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run through the device tool)"),
]

SECRET = "sk-kiln-gpu-test-SECRET4711"

# Runs inside the installed target on the GPU: any entry into Helion's search is a failure.
RUN_ADD_ON_CUDA = NO_SEARCH + """
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


# Each case's search is capped (Helion's wall-clock budget), so the module fits one device call.
CAP = "kiln.seconds=30"


@pytest.fixture(scope="module")
def gpu_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """tinypkg built once with `pip wheel` on this GPU, no LLM configured: (project, wheel)."""
    root = tmp_path_factory.mktemp("gpu_build")
    project = root / "tinypkg"
    shutil.copytree(FIXTURES / "tinypkg", project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "kiln.lock"))
    build = pip_wheel(project, root / "dist", clean_env(), CAP)  # device auto: the CUDA GPU
    assert "2 to tune" in build.stderr + build.stdout
    return project, only_wheel(root / "dist")


def _copy_without(project: Path, dest: Path, shape_name: str) -> Path:
    """A copy of the built project whose lock lacks ``shape_name``'s entry, so one case tunes again."""
    shutil.copytree(project, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    path = dest / "kiln.lock"
    lockfile.save(path, lockfile.Lock.from_entries(e for e in lockfile.load(path).sorted_entries() if e.shape_name != shape_name))
    return dest


def test_pip_wheel_tunes_on_the_gpu_and_the_installed_wheel_runs_its_configs(
        gpu_build: tuple[Path, Path], tmp_path: Path) -> None:
    project, wheel = gpu_build
    name, arch = _gpu()
    entries = lock_entries(project)
    assert set(entries) == {"small", "wide"}
    for e in entries.values():
        assert (e["device"], e["arch"]) == (name, arch)
        prov = e["provenance"]
        # No LLM configured: the default strategy is the offline `seeded` one, benchmarked on the GPU.
        assert prov["strategy"] == "seeded" and prov["configs_tested"] >= 1 and 0 < prov["ms"] < 1.0
        assert "num_warps" in e["config"]  # a Triton config, not a Pallas one

    env = clean_env()
    target = tmp_path / "target"
    install(wheel, target, env)
    res = script_result(run_python(RUN_ADD_ON_CUDA.format(target=str(target)), tmp_path, env).stdout)
    assert [(shape, level) for shape, level, _ in res] == [
        ("f32[64,128], f32[64,128]", "exact"),
        ("f32[32,256], f32[32,256]", "exact"),
    ]
    assert res[0][2] == entries["small"]["config"] and res[1][2] == entries["wide"]["config"]

    # The same lock rebuilds the same bytes, on the GPU machine too: nothing is tuned again.
    again = pip_wheel(project, tmp_path / "again", env, CAP)
    assert "0 to tune" in again.stderr + again.stdout
    assert sha256(only_wheel(tmp_path / "again")) == sha256(wheel)


def test_hybrid_build_on_the_gpu_through_litellm_and_an_outage_falls_back(
        gpu_build: tuple[Path, Path], tmp_path: Path) -> None:
    """`hybrid` in a real `pip wheel` on the GPU, its LLM a loopback server with fixed answers (not an LLM).

    The server answers with the configs `gpu_build` tuned on this GPU, so the LLM stage has
    something that compiles here.  A second build whose endpoint is down must still finish, the
    case tuned by `seeded` and the reason recorded.  The API key is never written anywhere.
    """
    built, _ = gpu_build
    name, _ = _gpu()
    env = clean_env(OPENAI_API_KEY=SECRET)
    project = _copy_without(built, tmp_path / "hybrid", "wide")
    with fixed_answer_llm(built / "kiln.lock", tmp_path) as api_base:
        build = pip_wheel(project, tmp_path / "hybrid_dist", env, CAP, "kiln.llm_model=openai/fixed-answers",
                          f"kiln.llm_api_base={api_base}", "kiln.llm_log=llm.log")
    assert "1 to tune" in build.stderr + build.stdout
    wide = lock_entries(project)["wide"]
    prov = wide["provenance"]
    assert wide["device"] == name and prov["strategy"] == "hybrid", prov
    assert prov["llm"]["model"] == "openai/fixed-answers" and prov["llm"]["accepted"] >= 1, prov["llm"]
    texts = {"lock": (project / "kiln.lock").read_text(), "llm log": (project / "llm.log").read_text(),
             "build output": build.stdout + build.stderr}
    with zipfile.ZipFile(only_wheel(tmp_path / "hybrid_dist")) as zf:
        texts.update({f"wheel {n}": zf.read(n).decode("latin-1") for n in zf.namelist()})
    assert not [where for where, text in texts.items() if SECRET in text]

    # The endpoint is down: the build still succeeds, the case tuned offline, the reason kept.
    project = _copy_without(built, tmp_path / "down", "wide")
    down = pip_wheel(project, tmp_path / "down_dist", env, CAP, "kiln.llm_model=openai/fixed-answers",
                     "kiln.llm_api_base=http://127.0.0.1:9/v1", "kiln.llm_retries=0", "kiln.llm_timeout=5")
    assert "LLM not usable" in down.stderr + down.stdout
    prov = lock_entries(project)["wide"]["provenance"]
    assert prov["strategy"] == "seeded" and prov["fallback"], prov
    assert only_wheel(tmp_path / "down_dist").exists()


# Runs inside the installed target on the GPU: every kernel of the shipped model_kernels at its small shape.
RUN_MODEL_KERNELS = NO_SEARCH + """
import importlib, tomllib
import model_kernels
assert model_kernels.__file__.startswith({target!r}), model_kernels.__file__
from bench.model_kernels_gpu import build_inputs, compare, reference
from tuning.runtime import installed
baked = installed("model_kernels")
rows = []
with open({pyproject!r}, "rb") as f:
    shapes = tomllib.load(f)["tool"]["kiln"]["shapes"]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for kernel_id, declared in shapes.items():
        module, _, name = kernel_id.partition(":")
        mod = importlib.import_module(module)
        args = build_inputs(declared["small"], "cuda")
        out = getattr(mod, name)(*args)
        torch.cuda.synchronize()
        res = baked.resolutions[-1]
        assert res.kernel == kernel_id, (res.kernel, kernel_id)
        rows.append({{"kernel": kernel_id, "shape": res.shape, "level": res.level_name, "config": res.config,
                      "ok": compare(out, reference(name, mod, args), name)["ok"]}})
print("RESULT" + json.dumps({{"rows": rows, "warnings": [str(w.message) for w in caught if "kiln" in str(w.message)]}}))
"""


def test_the_committed_model_kernels_wheel_runs_every_kernel_on_the_gpu_without_search(tmp_path: Path) -> None:
    """README command 1 on a machine without tuning, then the shipped wheel on this GPU.

    The wheel is baked from the committed kiln.lock (H200 entries).  On an H200 every kernel
    must run its exact lock config; on another card of the same arch the H200's config, with a
    warning that says so; on another arch Helion's default config, with a warning.  Each output
    is checked against the kernel's PyTorch reference, with Helion's search disabled.
    """
    project = tmp_path / "repo"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(
        ".git", ".whl", "bench", "tests", "dist", "build", "*.egg-info", "__pycache__", ".ci"))
    env = clean_env(KILN_DEVICE="none")  # bake from the lock: no tuning, as on a machine without a GPU
    build = pip_wheel(project, tmp_path / "dist", env)
    assert "baked 36 entries for 12 kernels into model_kernels" in build.stdout + build.stderr
    target = tmp_path / "target"
    install(only_wheel(tmp_path / "dist"), target, env)

    code = RUN_MODEL_KERNELS.format(target=str(target), pyproject=str(ROOT / "pyproject.toml"))
    result = script_result(run_python(code, tmp_path, clean_env()).stdout)

    name, arch = _gpu()
    lock = json.loads((ROOT / "kiln.lock").read_text())["entries"]
    cards = {(e["device"], e["arch"]) for e in lock}
    expected = "exact" if (name, arch) in cards else "same-arch" if arch in {a for _, a in cards} else "default"
    rows = result["rows"]
    assert len(rows) == 12 and all(r["ok"] for r in rows), [r for r in rows if not r["ok"]]
    assert {r["level"] for r in rows} == {expected}, [(r["kernel"], r["level"]) for r in rows]
    if expected != "default":
        small = {e["kernel"]: e["config"] for e in lock if e["shape_name"] == "small"}
        assert all(r["config"] == small[r["kernel"]] for r in rows)
    if expected == "exact":
        assert result["warnings"] == []
    else:
        assert len(result["warnings"]) == 12 and all(f"on {name}" in w for w in result["warnings"]), result["warnings"]
