"""``lfbo``: Helion's own LFBOTreeSearch, the baseline every strategy is judged against."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Sequence
from typing import Any

from .base import Budget, TuneContext, TuneOutcome


def search_kwargs(search_cls: type, bound_kernel: Any, budget: Budget) -> dict[str, Any]:
    """Helion's effort-profile arguments for ``search_cls``, with our budget on top."""
    from helion.autotuner.effort_profile import get_effort_profile

    profile = get_effort_profile(budget.effort)
    kwargs = dict(search_cls.get_kwargs_from_profile(profile, bound_kernel.settings))
    overrides = {
        "max_generations": budget.max_generations,
        "initial_population": budget.initial_population,
        "polish_rounds": budget.polish_rounds,
    }
    kwargs.update({k: v for k, v in overrides.items() if v is not None})
    accepted = inspect.signature(search_cls.__init__).parameters
    return {k: v for k, v in kwargs.items() if k in accepted}


# Floor for the budget-derived compile timeout: a healthy Triton compile of a
# large kernel (attention, grouped GEMM) takes several seconds on an H200, and
# timing those out would throw away good configs to save little.
MIN_COMPILE_TIMEOUT_S = 10


def budget_compile_timeout(current: int, seconds: int | None) -> int:
    """Helion's per-config compile timeout under a wall-clock budget of ``seconds``.

    Helion precompiles a whole population in parallel and waits for each
    compile up to ``autotune_compile_timeout`` (60 s by default).  One hung
    compile therefore stalls the first generation for that long, and with
    ``seconds=45`` the budget ran out before any config was benchmarked, so
    the search raised NoConfigFound (H200, rms_norm/swiglu).  Capping the
    timeout at a third of the budget means a hung compile costs at most a
    third, leaving the rest for benchmarking; the floor keeps slow but
    healthy compiles alive on tiny budgets.  The timeout is only ever
    lowered, never raised, and without a budget it is left alone.
    """
    if seconds is None:
        return current
    return min(current, max(MIN_COMPILE_TIMEOUT_S, seconds // 3))


def apply_budget_settings(bound_kernel: Any, budget: Budget) -> None:
    """Put ``budget`` into the kernel's Helion settings; every strategy calls this before searching.

    The compile timeout is capped here (see ``budget_compile_timeout``).
    Helion's adaptive timeout (``set_adaptive_compile_timeout``) only ever
    lowers it from this value, so the cap holds for the whole search.  The
    settings object is the kernel's, shared by its other shapes: tune_case
    restores the timeout afterwards so an unbudgeted case is untouched.
    """
    settings = bound_kernel.settings
    settings.autotune_random_seed = budget.seed
    settings.autotune_budget_seconds = budget.seconds
    settings.autotune_effort = budget.effort
    settings.autotune_compile_timeout = budget_compile_timeout(settings.autotune_compile_timeout, budget.seconds)


def cap_configs(search: Any, max_configs: int | None) -> None:
    """Stop the search at the next generation boundary once it has tested ``max_configs``.

    Helion has a wall-clock budget but no config budget; its budget check
    (``_autotune_budget_exceeded``, consulted between rounds) is the seam.
    """
    if max_configs is None:
        return
    seconds_exceeded = search._autotune_budget_exceeded

    def exceeded() -> bool:
        if search._autotune_metrics.num_configs_tested >= max_configs:
            search.log(f"kiln: config budget {max_configs} reached; returning best-so-far.")
            return True
        return bool(seconds_exceeded())

    search._autotune_budget_exceeded = exceeded


def run_search(search: Any, max_configs: int | None = None) -> TuneOutcome:
    cap_configs(search, max_configs)
    start = time.perf_counter()
    config = search.autotune(skip_cache=True)
    seconds = time.perf_counter() - start
    metrics = search._autotune_metrics
    best = getattr(metrics, "best_perf_ms", None)
    return TuneOutcome(
        config=dict(config),
        configs_tested=int(metrics.num_configs_tested),
        seconds=seconds,
        search_best_ms=float(best) if isinstance(best, (int, float)) and math.isfinite(best) else None,
    )


class LfboStrategy:
    name = "lfbo"

    def tune(self, bound_kernel: Any, args: Sequence[object], budget: Budget, context: TuneContext) -> TuneOutcome:
        from helion.autotuner import LFBOTreeSearch

        apply_budget_settings(bound_kernel, budget)
        search = LFBOTreeSearch(bound_kernel, args, **search_kwargs(LFBOTreeSearch, bound_kernel, budget))
        return run_search(search, budget.max_configs)
