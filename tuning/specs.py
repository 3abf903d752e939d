"""Declared shapes -> example inputs.

A shape is declared in ``[tool.kiln.shapes."pkg.mod:kernel"]`` as one of:

* a list of positional arguments: tensors as ``"bf16[4096,1024]"``, scalars plainly;
* a table of arguments by parameter name, same value forms;
* a table with ``factory = "pkg.mod:func"``: ``func(device, **rest)`` returns the
  positional arguments, for inputs a spec can't describe (offsets, index tensors).

Parsing is separate from materializing so that a bad spec fails every build,
including CPU-only builds that never create a tensor.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SpecError

DTYPE_ALIASES: dict[str, str] = {
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "f16": "float16", "fp16": "float16", "half": "float16", "float16": "float16",
    "f32": "float32", "fp32": "float32", "float": "float32", "float32": "float32",
    "f64": "float64", "fp64": "float64", "double": "float64", "float64": "float64",
    "fp8e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "e4m3": "float8_e4m3fn",
    "float8_e4m3fn": "float8_e4m3fn",
    "fp8e5m2": "float8_e5m2", "fp8_e5m2": "float8_e5m2", "e5m2": "float8_e5m2", "float8_e5m2": "float8_e5m2",
    "i8": "int8", "int8": "int8", "i16": "int16", "int16": "int16",
    "i32": "int32", "int32": "int32", "int": "int32", "i64": "int64", "int64": "int64", "long": "int64",
    "u8": "uint8", "uint8": "uint8", "bool": "bool",
}
_TENSOR_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[\s*([0-9,\s]*)\]\s*$")


@dataclass(frozen=True)
class TensorSpec:
    dtype: str  # torch attribute name, e.g. "bfloat16"
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ShapeSpec:
    """One declared shape of one kernel, validated but not yet materialized."""

    kernel_id: str
    name: str
    positional: tuple[Any, ...] = ()
    keyword: Mapping[str, Any] = field(default_factory=dict)
    factory: str | None = None
    factory_params: Mapping[str, Any] = field(default_factory=dict)
    declared: str = ""  # canonical JSON of the declaration; a changed spec is a new case


def _where(kernel_id: str, shape: str, arg: str | int | None = None) -> str:
    w = f'[tool.kiln.shapes."{kernel_id}"] {shape}'
    return f"{w}, argument {arg}" if arg is not None else w


def _closest(word: str, choices: list[str]) -> str:
    import difflib

    near = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


def parse_value(kernel_id: str, shape: str, arg: str | int, value: Any) -> Any:
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        m = _TENSOR_RE.match(value)
        if not m:
            raise SpecError(
                f"{_where(kernel_id, shape, arg)}: {value!r} is not a tensor spec. Write tensors as "
                '"bf16[4096,1024]" (dtype, then dimensions), scalars as plain numbers, and use '
                '{ factory = "pkg.module:func", ... } for inputs a spec cannot describe.'
            )
        dtype_word, dims = m.group(1), m.group(2)
        dtype = DTYPE_ALIASES.get(dtype_word.lower())
        if dtype is None:
            raise SpecError(
                f"{_where(kernel_id, shape, arg)}: unknown dtype {dtype_word!r} in {value!r}"
                f"{_closest(dtype_word.lower(), sorted(DTYPE_ALIASES))} "
                f"(valid: {', '.join(sorted(set(DTYPE_ALIASES)))})"
            )
        try:
            parts = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            parts = ()
        if not parts or any(d <= 0 for d in parts):
            raise SpecError(f"{_where(kernel_id, shape, arg)}: {value!r} needs at least one positive dimension")
        return TensorSpec(dtype, parts)
    raise SpecError(
        f"{_where(kernel_id, shape, arg)}: {value!r} ({type(value).__name__}) is neither a tensor spec "
        "nor a scalar; use an input factory for it"
    )


def parse_shape(kernel_id: str, name: str, raw: Any) -> ShapeSpec:
    spec = _parse_shape(kernel_id, name, raw)
    return dataclasses.replace(spec, declared=json.dumps(raw, sort_keys=True, separators=(",", ":")))


def _parse_shape(kernel_id: str, name: str, raw: Any) -> ShapeSpec:
    if isinstance(raw, list):
        return ShapeSpec(kernel_id, name, tuple(parse_value(kernel_id, name, i, v) for i, v in enumerate(raw)))
    if isinstance(raw, str) and ":" in raw and "[" not in raw:
        return ShapeSpec(kernel_id, name, factory=_check_factory(kernel_id, name, raw))
    if isinstance(raw, Mapping):
        if "factory" in raw:
            params = {k: v for k, v in raw.items() if k != "factory"}
            return ShapeSpec(kernel_id, name, factory=_check_factory(kernel_id, name, raw["factory"]), factory_params=params)
        return ShapeSpec(kernel_id, name, keyword={k: parse_value(kernel_id, name, k, v) for k, v in raw.items()})
    raise SpecError(
        f"{_where(kernel_id, name)}: expected a list of arguments, a table of arguments by name, "
        f'or {{ factory = "pkg.module:func" }}; got {raw!r}'
    )


def _check_factory(kernel_id: str, name: str, ref: Any) -> str:
    if not isinstance(ref, str) or ref.count(":") != 1 or not all(ref.split(":")):
        raise SpecError(f'{_where(kernel_id, name)}: factory must be "pkg.module:function", got {ref!r}')
    return ref


def parse_shapes(declared: Mapping[str, Any]) -> dict[str, list[ShapeSpec]]:
    """All declared shapes, by kernel id, in declaration order."""
    out: dict[str, list[ShapeSpec]] = {}
    for kernel_id, shapes in declared.items():
        if ":" not in kernel_id:
            raise SpecError(f'[tool.kiln.shapes."{kernel_id}"]: kernel ids are written "pkg.module:kernel_name"')
        if not isinstance(shapes, Mapping) or not shapes:
            raise SpecError(f'[tool.kiln.shapes."{kernel_id}"]: expected a table of named shapes, e.g. small = ["bf16[1024,1024]"]')
        out[kernel_id] = [parse_shape(kernel_id, n, v) for n, v in shapes.items()]
    return out


def _seed(spec: ShapeSpec, arg: str | int) -> int:
    digest = hashlib.sha256(f"{spec.kernel_id}|{spec.name}|{arg}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _tensor(t: TensorSpec, device: Any, seed: int) -> Any:
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, t.dtype)
    if dtype.is_floating_point:
        x = torch.randn(t.shape, generator=gen, dtype=torch.float32)
        return x.to(device=device, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, t.shape, generator=gen).to(device=device, dtype=torch.bool)
    return torch.randint(0, 16, t.shape, generator=gen).to(device=device, dtype=dtype)


def _materialize(spec: ShapeSpec, arg: str | int, value: Any, device: Any) -> Any:
    return _tensor(value, device, _seed(spec, arg)) if isinstance(value, TensorSpec) else value


def make_inputs(spec: ShapeSpec, kernel: Any, device: Any) -> tuple[Any, ...]:
    """Example arguments for one declared shape, deterministic for a given spec."""
    if spec.factory is not None:
        module_name, _, func_name = spec.factory.partition(":")
        try:
            func = getattr(importlib.import_module(module_name), func_name)
        except (ImportError, AttributeError) as e:
            raise SpecError(f"{_where(spec.kernel_id, spec.name)}: input factory {spec.factory} not found ({e})") from e
        try:
            args = func(device, **spec.factory_params)
        except TypeError as e:
            raise SpecError(f"{_where(spec.kernel_id, spec.name)}: input factory {spec.factory} rejected its parameters: {e}") from e
        return tuple(args)
    args = [_materialize(spec, i, v, device) for i, v in enumerate(spec.positional)]
    kwargs = {k: _materialize(spec, k, v, device) for k, v in spec.keyword.items()}
    try:
        return tuple(kernel.normalize_args(*args, **kwargs))
    except TypeError as e:
        raise SpecError(f"{_where(spec.kernel_id, spec.name)}: arguments don't fit the kernel's signature: {e}") from e
