"""The strategy seam: one case in, one chosen config and its cost out.

Strategies differ only in how they search; the engine around them (inputs,
measurement, lock, report) is shared, so comparing strategies compares
searches and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Budget:
    """Limits for one case.  None means: the effort profile decides."""

    effort: str = "full"
    max_generations: int | None = None
    initial_population: int | None = None
    polish_rounds: int | None = None
    seconds: int | None = None
    seed: int = 0
    max_configs: int | None = None

    def as_provenance(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class TuneOutcome:
    config: dict[str, Any]
    configs_tested: int
    seconds: float
    search_best_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# What a build or a bench says when an LLM strategy is asked for and no LLM is configured.
NO_LLM = "no LLM configured (set llm_model)"


@dataclass(frozen=True)
class LlmSettings:
    """How to reach the LLM.  The API key is never here: litellm reads it from the environment."""

    model: str
    api_base: str | None = None
    timeout_s: float = 60.0
    retries: int = 2
    rounds: int = 1
    configs_per_round: int = 6
    send_source: bool = True
    log_path: str | None = None


@dataclass(frozen=True)
class TuneContext:
    """What a strategy may know beyond the kernel and its inputs.

    ``seeds`` are configs already known to be good for this kernel: lock
    entries at other shapes or on other GPUs, and shapes finished earlier in
    this build, nearest first.  ``seed_shapes``: the shape key each seed was
    tuned at, in the same order (shorter, or "" for a seed, where not known), so
    a strategy can tell a seed from a larger problem from one of a smaller.
    """

    kernel_id: str = ""
    shape_name: str = ""
    seeds: tuple[dict[str, Any], ...] = ()
    llm: LlmSettings | None = None
    seed_shapes: tuple[str, ...] = ()


class Strategy(Protocol):
    name: str

    def tune(self, bound_kernel: Any, args: Sequence[object], budget: Budget, context: TuneContext) -> TuneOutcome: ...
