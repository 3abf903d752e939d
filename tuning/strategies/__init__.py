"""Tuning strategies by name.  Adding one means adding a module and a row here."""

from __future__ import annotations

import importlib

from .base import Budget, LlmSettings, Strategy, TuneContext, TuneOutcome

# name -> "module:Class", imported only when chosen (helion and litellm are heavy).
_REGISTRY: dict[str, str] = {
    "lfbo": "tuning.strategies.lfbo:LfboStrategy",
    "seeded": "tuning.strategies.seeded:SeededStrategy",
    "llm": "tuning.strategies.llm:LlmStrategy",
    "hybrid": "tuning.strategies.llm:HybridStrategy",
}
STRATEGY_NAMES: tuple[str, ...] = ("auto", *_REGISTRY)


def resolve_name(name: str, llm_configured: bool) -> str:
    """``auto``: hybrid when an LLM is configured, else the offline ``seeded``."""
    if name == "auto":
        return "hybrid" if llm_configured else "seeded"
    return name


def get_strategy(name: str) -> Strategy:
    """A registered strategy by name, or any importable ``module:Class`` (how tests name a fake benchmark).

    Build settings only accept registered names; the ``module:Class`` form is
    for code that calls the executors directly, so a worker can import the
    same strategy the caller named.
    """
    if name not in _REGISTRY and ":" in name:
        module, _, cls = name.partition(":")
        return getattr(importlib.import_module(module), cls)()
    try:
        module, _, cls = _REGISTRY[name].partition(":")
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; valid: {', '.join(STRATEGY_NAMES)}") from None
    return getattr(importlib.import_module(module), cls)()


def strategy_limits(name: str) -> dict[str, object] | None:
    """What shapes ``name``'s search beyond its budget (``limits()``), or None where Helion's profile decides.

    For provenance: a result is only comparable with results made under the same limits.
    """
    module, _, cls = _REGISTRY[name].partition(":")
    limits = getattr(getattr(importlib.import_module(module), cls), "limits", None)
    return limits() if callable(limits) else None


__all__ = ["STRATEGY_NAMES", "Budget", "LlmSettings", "Strategy", "TuneContext", "TuneOutcome", "get_strategy", "resolve_name", "strategy_limits"]
