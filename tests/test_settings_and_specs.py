"""Settings precedence and validation, and shape-spec parsing: the messages users see."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_backend.settings import load_settings
from tuning.errors import SettingsError, SpecError
from tuning.specs import TensorSpec, parse_shapes


def _project(tmp_path: Path, kiln: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "my-pkg"\nversion = "1"\n\n[tool.kiln]\n{kiln}\n')
    return tmp_path


def test_precedence_pyproject_then_config_settings_then_env(tmp_path: Path) -> None:
    p = _project(tmp_path, 'effort = "quick"\nseconds = 10\ninclude = ["a:*"]')
    s = load_settings(p, {}, {})
    assert (s.effort, s.seconds, s.include, s.packages) == ("quick", 10, ["a:*"], ["my_pkg"])
    s = load_settings(p, {"kiln.effort": "full", "kiln.seconds": "20", "--build-option": "x"}, {})
    assert (s.effort, s.seconds) == ("full", 20)
    assert s.origins["effort"] == "-C kiln.effort"
    s = load_settings(p, {"kiln.effort": "full"}, {"KILN_EFFORT": "quick", "KILN_INCLUDE": "x:y, z:*", "KILN_STRICT": "1"})
    assert (s.effort, s.include) == ("quick", ["x:y", "z:*"])
    assert load_settings(p, {}, {"KILN_SECONDS": "none"}).seconds is None


@pytest.mark.parametrize(
    ("kiln", "cs", "env", "needle"),
    [
        ('stratgy = "lfbo"', {}, {}, "unknown setting 'stratgy' (from pyproject.toml [tool.kiln]). Did you mean 'strategy'?"),
        ("", {"kiln.efort": "quick"}, {}, "unknown setting 'kiln.efort' (from -C kiln.efort). Did you mean 'kiln.effort'?"),
        ("", {}, {"KILN_MISING": "warn"}, "unknown setting 'KILN_MISING' (from environment KILN_MISING). Did you mean 'KILN_MISSING'?"),
        ('strategy = "lfob"', {}, {}, "setting 'strategy' (from pyproject.toml [tool.kiln]): 'lfob' is not valid. Did you mean 'lfbo'?"),
        ("", {}, {"KILN_EFFORT": "quik"}, "setting 'effort' (from environment KILN_EFFORT): 'quik' is not valid. Did you mean 'quick'? Valid: quick, full."),
        ("", {"kiln.seconds": "ten"}, {}, "setting 'seconds' (from -C kiln.seconds): expected an integer, got 'ten'."),
        ("seconds = -1", {}, {}, "expected a non-negative integer"),
        ("", {"kiln.shapes": "x"}, {}, "shapes can only be declared in pyproject.toml"),
    ],
)
def test_bad_settings_name_key_source_and_suggestion(tmp_path: Path, kiln: str, cs: dict, env: dict, needle: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(_project(tmp_path, kiln), cs, env)
    assert needle in str(info.value)


def test_shape_forms() -> None:
    shapes = parse_shapes({
        "pkg.mod:k": {
            "pos": ["bf16[4096,1024]", "fp8e4m3[8]", 1e-6, 3, True],
            "named": {"x": "float32[2,3]", "eps": 0.5},
            "fac": {"factory": "pkg.mod:make", "groups": 4},
            "fac_short": "pkg.mod:make",
        }
    })
    pos, named, fac, short = shapes["pkg.mod:k"]
    assert pos.positional == (TensorSpec("bfloat16", (4096, 1024)), TensorSpec("float8_e4m3fn", (8,)), 1e-6, 3, True)
    assert named.keyword == {"x": TensorSpec("float32", (2, 3)), "eps": 0.5}
    assert (fac.factory, dict(fac.factory_params)) == ("pkg.mod:make", {"groups": 4})
    assert short.factory == "pkg.mod:make"
    assert pos.declared != named.declared  # the spec text is part of the lock match


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (["bf17[64]"], '[tool.kiln.shapes."pkg.mod:k"] s, argument 0: unknown dtype \'bf17\' in \'bf17[64]\'; did you mean \'bf16\'?'),
        (["bf16[64,x]"], "argument 0: 'bf16[64,x]' is not a tensor spec"),
        (["bf16[0]"], "argument 0: 'bf16[0]' needs at least one positive dimension"),
        ({"x": [1, 2]}, "argument x: [1, 2] (list) is neither a tensor spec nor a scalar"),
        ({"factory": "nocolon"}, 'factory must be "pkg.module:function"'),
        (42, "expected a list of arguments"),
    ],
)
def test_bad_spec_names_kernel_shape_and_argument(raw: object, needle: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_shapes({"pkg.mod:k": {"s": raw}})
    assert needle in str(info.value)


def test_declared_shape_for_missing_kernel_fails_naming_both(tmp_path: Path) -> None:
    import shutil

    from build_backend.discover import discover
    from tuning.errors import DiscoveryError

    shutil.copytree(Path(__file__).parent / "fixtures" / "tinypkg", tmp_path / "p")
    shapes = parse_shapes({"tinypkg.ops:ad": {"s": ["f32[4]", "f32[4]"]}, "tinypkg.ops:add": {"s": ["f32[4]", "f32[4]"]}})
    with pytest.raises(DiscoveryError) as info:
        discover(tmp_path / "p", ["tinypkg"], shapes)
    msg = str(info.value)
    assert '[tool.kiln.shapes."tinypkg.ops:ad"] names no kernel (did you mean \'tinypkg.ops:add\'?)' in msg
    assert "Kernels found in tinypkg: tinypkg.ops:add, tinypkg.ops:scale" in msg


def test_undeclared_kernel_warns_by_name(tmp_path: Path) -> None:
    import shutil

    from build_backend.discover import KilnUndeclaredWarning, discover

    shutil.copytree(Path(__file__).parent / "fixtures" / "tinypkg", tmp_path / "p")
    with pytest.warns(KilnUndeclaredWarning, match=r"tinypkg\.ops:scale has no declared shapes"):
        found = discover(tmp_path / "p", ["tinypkg"], parse_shapes({"tinypkg.ops:add": {"s": ["f32[4]", "f32[4]"]}}))
    assert sorted(found.kernels) == ["tinypkg.ops:add", "tinypkg.ops:scale"]


def test_build_backend_import_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = "import sys, build_backend; assert 'torch' not in sys.modules and 'helion' not in sys.modules; print('ok')"
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
