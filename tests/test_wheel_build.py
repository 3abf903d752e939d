"""End to end: real `pip wheel` builds of the tinypkg fixture, installed into a fresh target and run.

Nothing here fakes Helion: the tuning test runs LFBOTreeSearch for real on
Helion's Pallas backend in interpret mode (CPU), and the runtime tests run the
installed wheel's kernels.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import (
    NO_SEARCH,
    PALLAS_INTERPRET,
    clean_env,
    install,
    lock_entries,
    only_wheel,
    pip_wheel,
    run_python,
    script_result,
    sha256,
)

pytest.importorskip("jax", reason="Pallas interpret mode needs jax (pip install -r requirements/test.txt)")

RUN_ADD = NO_SEARCH + """
import tinypkg, tinypkg.ops as ops
assert tinypkg.__file__.startswith({target!r}), tinypkg.__file__
out = {{}}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for shape in ([64, 128], [32, 256], [48, 128]):
        x, y = torch.randn(*shape), torch.randn(*shape)
        torch.testing.assert_close(ops.add(x, y), x + y)
out["resolutions"] = [[r.shape, r.level_name, r.config] for r in tinypkg.baked.resolutions]
out["warnings"] = [str(w.message) for w in caught if "kiln" in str(w.message)]
print("RESULT" + json.dumps(out))
"""


def _table(wheel: Path) -> dict:
    import msgpack

    with zipfile.ZipFile(wheel) as zf:
        return msgpack.unpackb(zf.read("tinypkg/_kiln_table.msgpack"))


def _source_hash(project: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from tuning.plan import source_hash

    monkeypatch.setenv("KILN_BUILDING", "1")
    monkeypatch.syspath_prepend(str(project))
    for name in [m for m in sys.modules if m.startswith("tinypkg")]:
        del sys.modules[name]
    import tinypkg.ops

    try:
        return source_hash(tinypkg.ops.add)
    finally:
        for name in [m for m in sys.modules if m.startswith("tinypkg")]:
            del sys.modules[name]


def _write_lock(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (Path(__file__).parent / "fixtures" / "tinypkg_lock.json").read_text()
    (project / "kiln.lock").write_text(text.replace("SOURCE_HASH", _source_hash(project, monkeypatch)))


def test_tune_on_pallas_interpret_then_installed_wheel_runs_lock_configs(tinypkg: Path, tmp_path: Path) -> None:
    env = clean_env(KILN_DEVICE="cpu", **PALLAS_INTERPRET)
    build = pip_wheel(tinypkg, tmp_path / "dist", env)
    assert "2 to tune" in build.stderr + build.stdout

    entries = lock_entries(tinypkg)
    assert set(entries) == {"small", "wide"}
    for e in entries.values():
        assert (e["device"], e["arch"]) == ("cpu", "pallas:interpret")
        prov = e["provenance"]
        # No LLM configured, so the default strategy is the offline `seeded` one.
        assert prov["strategy"] == "seeded" and prov["configs_tested"] >= 1 and prov["seconds"] > 0 and prov["ms"] > 0
        assert prov["versions"]["helion"] == "1.5.0" and "torch" in prov["versions"]
    assert entries["small"]["shape"] == "f32[64,128], f32[64,128]"
    # Within one build the first finished shape seeds the next.
    assert (entries["small"]["provenance"]["seeds"], entries["wide"]["provenance"]["seeds"]) == (0, 1)

    wheel = only_wheel(tmp_path / "dist")
    table = _table(wheel)
    assert sorted(table["kernels"]) == ["tinypkg.ops:add", "tinypkg.ops:scale"]
    assert len(table["kernels"]["tinypkg.ops:add"]) == 2 and table["kernels"]["tinypkg.ops:scale"] == []

    target = tmp_path / "target"
    install(wheel, target, env)
    res = script_result(run_python(RUN_ADD.format(target=str(target)), tmp_path, env).stdout)
    levels = [(shape, level) for shape, level, _ in res["resolutions"]]
    assert levels == [
        ("f32[64,128], f32[64,128]", "exact"),
        ("f32[32,256], f32[32,256]", "exact"),
        ("f32[48,128], f32[48,128]", "nearest-shape"),
    ]
    assert res["resolutions"][0][2] == entries["small"]["config"]
    assert res["resolutions"][1][2] == entries["wide"]["config"]
    assert len(res["warnings"]) == 1 and "nearest declared shape" in res["warnings"][0]

    # The lock now covers everything: a rebuild does no tuning and gives the same bytes.
    first = sha256(wheel)
    wheel.unlink()
    again = pip_wheel(tinypkg, tmp_path / "dist", env)
    assert "0 to tune" in again.stderr + again.stdout
    assert sha256(only_wheel(tmp_path / "dist")) == first


def test_rebuild_from_same_lock_is_byte_identical(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_lock(tinypkg, monkeypatch)
    env = clean_env(KILN_DEVICE="none")
    a = pip_wheel(tinypkg, tmp_path / "a", env)
    # Different file times and modes on the second copy must not leak into the wheel.
    for f in tinypkg.rglob("*.py"):
        f.touch()
        f.chmod(0o664)
    b = pip_wheel(tinypkg, tmp_path / "b", env)
    wa, wb = only_wheel(tmp_path / "a"), only_wheel(tmp_path / "b")
    assert sha256(wa) == sha256(wb)
    with zipfile.ZipFile(wa) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos][-1].endswith(".dist-info/RECORD")
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {(i.external_attr >> 16) & 0o777 for i in infos} == {0o644}
    table = _table(wa)
    assert [e["device"] for e in table["kernels"]["tinypkg.ops:add"]] == ["cpu", "NVIDIA H200"]
    # A declared shape with no entry: warned about by default, named in the message.
    assert "tinypkg.ops:add [wide]: missing" in a.stderr + a.stdout
    assert "without tuning (no GPU; baking from the lock)" in b.stderr + b.stdout

    env_epoch = clean_env(KILN_DEVICE="none", SOURCE_DATE_EPOCH="1700000000")
    pip_wheel(tinypkg, tmp_path / "c", env_epoch)
    with zipfile.ZipFile(only_wheel(tmp_path / "c")) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}


def test_missing_policy_error_fails_the_build_and_names_cases(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_lock(tinypkg, monkeypatch)
    proc = pip_wheel(tinypkg, tmp_path / "dist", clean_env(KILN_DEVICE="none"), "kiln.missing=error", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "tinypkg.ops:add [wide]: missing" in out
    assert 'missing = "error"' in out
    assert not list((tmp_path / "dist").glob("*.whl")) if (tmp_path / "dist").exists() else True


def test_installed_wheel_strict_mode_and_corrupt_table(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_lock(tinypkg, monkeypatch)
    env = clean_env(KILN_DEVICE="none", **PALLAS_INTERPRET)
    pip_wheel(tinypkg, tmp_path / "dist", env)
    target = tmp_path / "target"
    install(only_wheel(tmp_path / "dist"), target, env)

    strict = NO_SEARCH + """
import tinypkg.ops as ops
from tuning.runtime import KilnMissError
ops.add(torch.randn(64, 128), torch.randn(64, 128))  # exact: fine even in strict mode
try:
    ops.add(torch.randn(8, 8), torch.randn(8, 8))
except KilnMissError as e:
    print("MISS", e)
"""
    proc = run_python(strict.format(target=str(target)), tmp_path, {**env, "KILN_STRICT": "1"})
    assert "MISS kiln: no config tuned for tinypkg.ops:add" in proc.stdout

    (target / "tinypkg" / "_kiln_table.msgpack").write_bytes(b"\xc1not msgpack")
    corrupt = NO_SEARCH + """
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import tinypkg, tinypkg.ops as ops
    x = torch.randn(64, 128)
    torch.testing.assert_close(ops.add(x, x), x + x)
print("LEVELS", [r.level_name for r in tinypkg.baked.resolutions])
print("WARN", [str(w.message) for w in caught if "kiln" in str(w.message)])
"""
    proc = run_python(corrupt.format(target=str(target)), tmp_path, env)
    assert "LEVELS ['default']" in proc.stdout
    assert "baked table is corrupt" in proc.stdout


def test_bad_setting_fails_pip_wheel_with_key_and_suggestion(tinypkg: Path, tmp_path: Path) -> None:
    proc = pip_wheel(tinypkg, tmp_path / "dist", clean_env(KILN_DEVICE="none"), "kiln.stratgy=lfbo", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "unknown setting 'kiln.stratgy' (from -C kiln.stratgy)" in out
    assert "Did you mean 'kiln.strategy'?" in out


def test_sdist_carries_the_lock(tinypkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tarfile

    _write_lock(tinypkg, monkeypatch)
    code = "import build_backend, sys; print(build_backend.build_sdist(sys.argv[1]))"
    from conftest import run

    proc = run([sys.executable, "-c", code, str(tmp_path / "sd")], tinypkg, clean_env())
    name = proc.stdout.strip().splitlines()[-1]
    with tarfile.open(tmp_path / "sd" / name) as tf:
        lock = tf.extractfile("tinypkg-0.1.0/kiln.lock")
        assert lock is not None and lock.read() == (tinypkg / "kiln.lock").read_bytes()
        assert {m.mtime for m in tf.getmembers()} == {315532800}


def test_kiln_tune_fills_the_lock_without_a_wheel(tinypkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kiln tune` tunes only what the lock lacks (here the `wide` shape), for real, and builds nothing."""
    from conftest import run

    _write_lock(tinypkg, monkeypatch)
    before = json.loads((tinypkg / "kiln.lock").read_text())["entries"]
    env = clean_env(**PALLAS_INTERPRET)
    proc = run([sys.executable, "-m", "tuning.cli", "tune", "-C", "device=cpu", "--strategy", "lfbo"], tinypkg, env)
    assert "1 to tune" in proc.stderr
    after = json.loads((tinypkg / "kiln.lock").read_text())["entries"]
    assert [e for e in after if e["shape_name"] == "small"] == before  # untouched
    wide = [e for e in after if e["shape_name"] == "wide"]
    assert len(wide) == 1 and wide[0]["provenance"]["strategy"] == "lfbo" and wide[0]["provenance"]["configs_tested"] >= 1
    assert not list(tinypkg.glob("**/*.whl")) and not (tinypkg / "build").exists()
