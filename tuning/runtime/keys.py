"""Keys that tie a baked config to the call that may use it.

The build computes these keys from example inputs and the installed runtime
computes them from real call arguments, with this one module, so the two can
never drift apart.  Keys are short human-readable strings because they appear
in ``kiln.lock``, which people review in pull requests.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Short dtype names, as written in shape specs ("bf16[4096,1024]").  Torch
# names are accepted as input too; these short ones are what keys use.
SHORT_DTYPES: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "float8_e4m3fn": "fp8e4m3",
    "float8_e5m2": "fp8e5m2",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "bool": "bool",
}


def dtype_short(dtype: Any) -> str:
    """``torch.bfloat16`` -> ``"bf16"``; unknown dtypes keep their torch name."""
    name = str(dtype).removeprefix("torch.")
    return SHORT_DTYPES.get(name, name)


def _arg_key(value: object) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{dtype_short(dtype)}[{','.join(str(int(d)) for d in shape)}]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ",".join(_arg_key(v) for v in value)
        return f"({inner})"
    return type(value).__name__


def shape_key(args: Sequence[object]) -> str:
    """The specialization key of one call: dtypes, exact shapes and scalars.

    It is at least as specific as Helion's own static-shape specialization, so
    two calls Helion would compile differently never share a key.
    """
    return ", ".join(_arg_key(a) for a in args)


@dataclass(frozen=True)
class ParsedArg:
    """One argument of a shape key, parsed back for nearest-shape matching."""

    dtype: str | None
    dims: tuple[int, ...] | None
    scalar: str | None


def parse_shape_key(key: str) -> tuple[ParsedArg, ...]:
    out: list[ParsedArg] = []
    depth = 0
    token = ""
    parts: list[str] = []
    for ch in key:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(token.strip())
            token = ""
        else:
            token += ch
    if token.strip():
        parts.append(token.strip())
    for part in parts:
        if part.endswith("]") and "[" in part:
            dtype, _, dims = part[:-1].partition("[")
            try:
                parsed = tuple(int(d) for d in dims.split(",") if d)
            except ValueError:
                out.append(ParsedArg(None, None, part))
                continue
            out.append(ParsedArg(dtype, parsed, None))
        else:
            out.append(ParsedArg(None, None, part))
    return tuple(out)


def shape_distance(a: str, b: str) -> float | None:
    """Distance between two keys of the same kernel, or None if incomparable.

    Comparable means the same tensor dtypes and ranks in the same positions.
    The distance sums |log2| ratios of dimensions, plus a small penalty for
    each differing scalar, so the nearest tuned problem size wins.
    """
    pa, pb = parse_shape_key(a), parse_shape_key(b)
    if len(pa) != len(pb):
        return None
    total = 0.0
    for x, y in zip(pa, pb):
        if (x.dims is None) != (y.dims is None):
            return None
        if x.dims is not None and y.dims is not None:
            if x.dtype != y.dtype or len(x.dims) != len(y.dims):
                return None
            for dx, dy in zip(x.dims, y.dims):
                total += abs(math.log2(max(dx, 1)) - math.log2(max(dy, 1)))
        elif x.scalar != y.scalar:
            total += 0.5
    return total


@dataclass(frozen=True, order=True)
class DeviceKey:
    """Which hardware a config was tuned for.

    ``arch`` carries the code-generation target (backend plus compute
    capability), which decides whether a config is even valid; ``name``
    separates parts of one architecture with different SM counts or clocks.
    """

    name: str
    arch: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "arch": self.arch}


def helion_backend() -> str:
    return os.environ.get("HELION_BACKEND", "triton") or "triton"


def device_key_for(device: Any) -> DeviceKey:
    """The key of a torch device, as the build and the runtime both see it."""
    import torch

    dev = torch.device(device)
    backend = helion_backend()
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        return DeviceKey(torch.cuda.get_device_name(index), f"{backend}:sm{major}{minor}")
    if backend == "pallas" and os.environ.get("HELION_PALLAS_INTERPRET") == "1":
        return DeviceKey("cpu", "pallas:interpret")
    if os.environ.get("HELION_INTERPRET") == "1":
        return DeviceKey("cpu", "eager:interpret")
    return DeviceKey(dev.type, f"{backend}:{dev.type}")


def first_device(args: Sequence[object]) -> Any:
    """The device of the first tensor argument (Helion launches there)."""
    for a in args:
        dev = getattr(a, "device", None)
        if dev is not None:
            return dev
    return "cpu"
