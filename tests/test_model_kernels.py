"""CPU correctness tests for the model_kernels reference package.

Every family's Helion kernel runs in Helion's eager interpret mode
(``HELION_INTERPRET=1``: the kernel body runs as eager PyTorch, hl.tile
loops become Python loops) at tiny shapes, against the ``<family>_ref``
PyTorch implementation, with fresh random inputs. No GPU is needed.

How HELION_INTERPRET is honoured (checked against helion 1.5.0):
  * ``helion.runtime.settings._get_ref_mode`` reads the variable once, when a
    kernel's ``Settings`` are built, i.e. when ``@helion.kernel`` decorates the
    function at module import. Setting it later has no effect on an already
    created kernel object.
  * So each test sets it (monkeypatch, restored afterwards, so other test
    modules in the same session are unaffected) and builds a fresh kernel from
    the module kernel's function with the same decorator settings; the test
    asserts that this kernel really is in eager ref mode.
  * ``test_interpret_env_at_import`` checks the module objects themselves in a
    subprocess that sets the variable before importing them.

Two CPU-only shims/notes:
  * helion's ref implementation of ``hl.dot`` calls
    ``torch.mm(a, b, out_dtype=...)``; ``aten::mm.dtype`` has no CPU kernel in
    torch 2.13 ("Could not run 'aten::mm.dtype' with arguments from the 'CPU'
    backend"), so every kernel with a matmul fails in interpret mode on CPU.
    The fixture ``_cpu_dot`` swaps in an equivalent ref (upcast to fp32,
    matmul, cast to the requested dtype: exact for fp8/bf16 inputs with fp32
    accumulation) for CPU tensors only, for the duration of each test.
  * In interpret mode ``hl.register_tunable`` needs a config (it asserts one
    is set), so ``matmul_split_k`` is run with an explicit ``split_k=4``
    config (which also exercises the atomic-add combine).
In interpret mode each ``hl.tile`` without an explicit block size is one tile
covering the whole range, so these tests check the math, not tile-boundary
handling; ``test_triton_codegen`` additionally lowers every kernel to Triton
source on CPU with the default config (compile-time checks, no launch).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

import helion
import helion.language as hl
from helion.language import matmul_ops
from helion.runtime.ref_mode import RefMode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Fresh inputs on every run; set KILN_TEST_SEED to reproduce a failure.
SEED = int(os.environ.get("KILN_TEST_SEED", int.from_bytes(os.urandom(4), "little")))

FP8 = torch.float8_e4m3fn

# Tolerances (atol, rtol) by output dtype:
#  * fp32: inputs and compute in fp32, only summation order differs -> tight.
#  * bf16: the kernel's output is rounded to bf16 (8 bits of mantissa, relative
#    step 2^-8 ~ 4e-3) and some kernels round intermediates to bf16 before a
#    matmul (attention P, mamba2 weights, gdn state) -> ~1-2e-2.
#  * fp8 attention: the kernel rounds the probabilities P to e4m3 (3 mantissa
#    bits, relative step 2^-3) before the P@V GEMM while the reference keeps P
#    in fp32, so errors of a few 1e-2 in the averaged output are expected.
TOL = {
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (2e-2, 2e-2),
    FP8: (6e-2, 6e-2),
}


@pytest.fixture(autouse=True)
def _cpu_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    original = hl.dot._ref_fn

    def cpu_dot_ref(mat1, mat2, acc=None, out_dtype=None):  # noqa: ANN001, ANN202
        if mat1.device.type != "cpu":
            return original(mat1, mat2, acc, out_dtype)
        dtype = out_dtype or matmul_ops._compute_out_dtype(
            mat1.dtype, mat2.dtype, None if acc is None else acc.dtype
        )
        result = torch.matmul(mat1.float(), mat2.float()).to(dtype)
        return result if acc is None else acc + result

    monkeypatch.setattr(hl.dot, "_ref_fn", cpu_dot_ref)


def _gen(offset: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(SEED + offset)


def _randn(*shape: int, dtype: torch.dtype = torch.bfloat16, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=_gen(len(shape) + shape[-1])) * scale).to(dtype)


def _eager_kernel(
    monkeypatch: pytest.MonkeyPatch, kernel: helion.Kernel, config: helion.Config | None = None
) -> helion.Kernel:
    """A fresh kernel from ``kernel``'s function, created under HELION_INTERPRET=1."""
    monkeypatch.setenv("HELION_INTERPRET", "1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    kwargs: dict[str, Any] = {"static_shapes": kernel.settings.static_shapes}
    if config is not None:
        kwargs["config"] = config
    fresh = helion.kernel(kernel.fn, **kwargs)
    assert fresh.settings.ref_mode == RefMode.EAGER, "HELION_INTERPRET=1 was not honoured"
    return fresh


def _compare(out: Any, ref: Any, what: str, fp8_inputs: bool = False) -> None:
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    assert len(outs) == len(refs), what
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert o.dtype == r.dtype, f"{what}[{i}]: dtype {o.dtype} != {r.dtype}"
        assert o.shape == r.shape, f"{what}[{i}]: shape {tuple(o.shape)} != {tuple(r.shape)}"
        # fp8 attention returns bf16, but its error comes from rounding P to e4m3:
        # judge it by the fp8 tolerance, not by its output dtype.
        atol, rtol = TOL[FP8] if fp8_inputs else TOL[r.dtype]
        torch.testing.assert_close(
            o.float(), r.float(), atol=atol, rtol=rtol,
            msg=lambda m: f"{what}[{i}] (KILN_TEST_SEED={SEED}): {m}",
        )


def _module(family: str):  # noqa: ANN202
    return importlib.import_module(f"model_kernels.{family}")


def _cases() -> list[tuple[str, str, Callable[[], tuple], helion.Config | None]]:
    """(family, kernel name, tiny-input builder, config for interpret mode)."""

    def mm(dtype: torch.dtype, m: int, k: int, n: int) -> Callable[[], tuple]:
        return lambda: (_randn(m, k, dtype=dtype), _randn(k, n, dtype=dtype, scale=k**-0.5))

    def attn(dtype: torch.dtype) -> Callable[[], tuple]:
        return lambda: tuple(
            torch.randn(2, 3, 64, 32, generator=_gen(i)).to(dtype) for i in range(3)
        )

    def fp8_attn() -> tuple:
        q = torch.randn(2, 2, 64, 32, generator=_gen(1)).to(FP8)
        k = torch.randn(2, 2, 64, 32, generator=_gen(2)).to(FP8)
        v_t = torch.randn(2, 2, 32, 64, generator=_gen(3)).to(FP8)
        return q, k, v_t

    def factory(family: str, **params: Any) -> Callable[[], tuple]:
        return lambda: _module(family).make_inputs("cpu", seed=SEED % 2**31, **params)

    return [
        ("matmul", "matmul", mm(torch.bfloat16, 64, 96, 80), None),
        ("matmul", "matmul", mm(torch.float32, 48, 64, 32), None),
        ("matmul_split_k", "matmul_split_k", mm(torch.bfloat16, 16, 512, 32),
         helion.Config(split_k=4)),
        ("matmul_split_k", "matmul_split_k", mm(torch.float32, 16, 256, 32),
         helion.Config(split_k=8)),
        ("grouped_gemm", "grouped_gemm", factory("grouped_gemm", groups=3, m=24, n=32, k=48), None),
        ("attention", "attention", attn(torch.bfloat16), None),
        ("attention", "attention_causal", attn(torch.bfloat16), None),
        ("fp8_attention", "fp8_attention", fp8_attn, None),
        ("softmax", "softmax", lambda: (_randn(64, 96, scale=3.0),), None),
        ("softmax", "softmax", lambda: (_randn(32, 128, dtype=torch.float32, scale=3.0),), None),
        ("rms_norm", "rms_norm", lambda: (_randn(64, 96), _randn(96), 1e-6), None),
        ("rms_norm", "rms_norm",
         lambda: (_randn(32, 64, dtype=torch.float32), _randn(64, dtype=torch.float32), 1e-5), None),
        ("rope", "rope", factory("rope", batch=2, seq=16, heads=4, kv_heads=2, head_dim=32), None),
        ("swiglu", "swiglu", lambda: (_randn(64, 96, scale=2.0), _randn(64, 96)), None),
        ("mamba2_chunk_scan", "mamba2_chunk_scan",
         factory("mamba2_chunk_scan", batch=1, seqlen=64, nheads=4, headdim=16, ngroups=2,
                 dstate=16, chunk=32), None),
        ("gdn_fwd_h", "gdn_fwd_h",
         factory("gdn_fwd_h", batch=1, seqlen=128, heads=2, dk=32, dv=32, chunk_size=32), None),
    ]


def _case_id(case: tuple) -> str:
    family, name, build, _ = case
    args = build()
    dt = next((str(a.dtype).replace("torch.", "") for a in args if isinstance(a, torch.Tensor)), "")
    return f"{name}-{dt}"


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_interpret_matches_reference(monkeypatch: pytest.MonkeyPatch, case: tuple) -> None:
    family, name, build, config = case
    mod = _module(family)
    kernel = _eager_kernel(monkeypatch, getattr(mod, name), config)
    args = build()
    out = kernel(*args)
    ref = getattr(mod, f"{name}_ref")(*args)
    _compare(out, ref, name, fp8_inputs=any(isinstance(a, torch.Tensor) and a.dtype == FP8 for a in args))


FAMILIES = [
    "matmul", "matmul_split_k", "grouped_gemm", "attention", "fp8_attention", "softmax",
    "rms_norm", "rope", "swiglu", "mamba2_chunk_scan", "gdn_fwd_h",
]


def test_every_family_is_covered() -> None:
    covered = {c[0] for c in CASES}
    assert covered == set(FAMILIES)
    for family in FAMILIES:
        mod = _module(family)
        assert isinstance(getattr(mod, family), helion.Kernel), family
        assert callable(getattr(mod, f"{family}_ref")), family


_FIRST_PER_KERNEL = list({c[1]: c for c in reversed(CASES)}.values())[::-1]


@pytest.mark.parametrize("case", _FIRST_PER_KERNEL, ids=[c[1] for c in _FIRST_PER_KERNEL])
def test_triton_codegen(monkeypatch: pytest.MonkeyPatch, case: tuple) -> None:
    """Lower each kernel to Triton source on CPU with its default config (no launch)."""
    family, name, build, _ = case
    monkeypatch.delenv("HELION_INTERPRET", raising=False)
    kernel = getattr(_module(family), name)
    fresh = helion.kernel(kernel.fn, static_shapes=kernel.settings.static_shapes)
    assert fresh.settings.ref_mode == RefMode.OFF
    bound = fresh.bind(build())
    code = bound.to_triton_code(bound.config_spec.default_config())
    assert "@triton.jit" in code


def test_interpret_env_at_import() -> None:
    """HELION_INTERPRET=1 set before import puts the module's own kernel in eager mode."""
    script = (
        "import torch\n"
        "from helion.runtime.ref_mode import RefMode\n"
        "from model_kernels.softmax import softmax, softmax_ref\n"
        "assert softmax.settings.ref_mode == RefMode.EAGER, softmax.settings.ref_mode\n"
        "x = torch.randn(8, 32)\n"
        "torch.testing.assert_close(softmax(x), softmax_ref(x))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "HELION_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]
