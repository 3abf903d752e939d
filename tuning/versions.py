"""Versions that decide what a config means, recorded in every lock entry."""

from __future__ import annotations

from importlib import metadata


def _dist(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def toolchain_versions() -> dict[str, str]:
    import torch

    out = {
        "helion": _dist("helion"),
        "torch": torch.__version__,
        "triton": _dist("triton") or _dist("pytorch-triton"),
        "cuda": torch.version.cuda,
    }
    return {k: v for k, v in out.items() if v}
