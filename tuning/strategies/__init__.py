"""Tuning strategies by name.  Adding one means adding a module and a row here."""

from __future__ import annotations

from .base import Budget, Strategy, TuneOutcome

STRATEGY_NAMES: tuple[str, ...] = ("lfbo",)


def get_strategy(name: str) -> Strategy:
    if name == "lfbo":
        from .lfbo import LfboStrategy

        return LfboStrategy()
    raise KeyError(f"unknown strategy {name!r}; valid: {', '.join(STRATEGY_NAMES)}")


__all__ = ["STRATEGY_NAMES", "Budget", "Strategy", "TuneOutcome", "get_strategy"]
