"""When a budgeted search finds nothing in time: measure the configs already known instead.

A per-case budget (``seconds``, ``max_configs``, or what ``total_seconds``
leaves) limits how long a search may look; it must never turn a case that
has working configs into a build failure.  Helion raises NoConfigFound when
its budget runs out before any config was benchmarked (seen on an H200: one
hung compile in the parallel first population ate a 45 s budget).  The
configs we already trust are then measured directly: the context's seeds
(lock entries for the same kernel, nearest first) and Helion's default
config.  Without a budget NoConfigFound still propagates: there the search
had all the time it wanted, so finding nothing means the kernel is broken.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import KilnError, first_line
from .strategies import Budget, TuneContext, TuneOutcome

# Helion's accuracy tolerance when the kernel sets none (benchmark_provider.py, DEFAULT_TOL).
DEFAULT_TOL = 1e-2


class BudgetFallbackError(KilnError):
    """The budgeted search found nothing and no known config works either."""


def has_budget(budget: Budget) -> bool:
    return budget.seconds is not None or budget.max_configs is not None


def describe_budget(budget: Budget) -> str:
    parts = [f"seconds={budget.seconds}"] if budget.seconds is not None else []
    if budget.max_configs is not None:
        parts.append(f"max_configs={budget.max_configs}")
    return " and ".join(parts)


def is_nothing_found(error: BaseException) -> bool:
    """Helion's 'the search measured no working config' error."""
    from helion import exc

    return isinstance(error, exc.NoConfigFound)


def known_candidates(bound_kernel: Any, seeds: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The seeds, nearest first, then Helion's default config; each once, labelled by origin."""
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    default = dict(bound_kernel.config_spec.default_config())
    for label, config in [*((f"seed {i + 1}", dict(s)) for i, s in enumerate(seeds)), ("helion default", default)]:
        text = json.dumps(config, sort_keys=True, default=str)
        if text not in seen:
            seen.add(text)
            out.append((label, config))
    return out


def _clone(args: Sequence[object]) -> tuple[object, ...]:
    """Fresh copies of tensor arguments, so a kernel that writes its inputs can't corrupt the next run."""
    import torch
    from torch.utils._pytree import tree_map_only

    return tuple(tree_map_only(torch.Tensor, lambda t: t.clone(), a) for a in args)


def _run(bound_kernel: Any, config: dict[str, Any], args: Sequence[object]) -> object:
    """Compile ``config``, run it once on copies of ``args``; the result includes the args it mutated."""
    import helion

    bound_kernel.set_config(helion.Config(**config))
    copies = _clone(args)
    out = bound_kernel(*copies)
    return (out, copies)


@dataclass
class Reference:
    """What a correct config must produce, by Helion's own rule for its search."""

    output: object | None
    note: str | None = None  # why nothing is checked, if nothing is

    def check(self, settings: Any, result: object) -> None:
        """Raise AssertionError if ``result`` differs from the reference."""
        if self.output is None:
            return
        if settings.autotune_baseline_accuracy_check_fn is not None:
            settings.autotune_baseline_accuracy_check_fn(result[0], self.output[0])  # type: ignore[index]
            return
        from helion.autotuner.accuracy import assert_close

        atol, rtol = settings.autotune_baseline_atol, settings.autotune_baseline_rtol
        assert_close(result, self.output, atol=DEFAULT_TOL if atol is None else atol,
                     rtol=DEFAULT_TOL if rtol is None else rtol, scale_atol_by_expected_rms=atol is None)


def reference(bound_kernel: Any, args: Sequence[object]) -> Reference:
    """The kernel's ``autotune_baseline_fn`` output if it has one, else Helion's conservative reference config's.

    Helion's search validates every candidate against the same reference;
    with the accuracy check switched off, or no reference that runs, the
    fallback accepts any config that runs and says so.
    """
    settings = bound_kernel.settings
    if not settings.autotune_accuracy_check:
        return Reference(None, "accuracy check off (autotune_accuracy_check=False)")
    try:
        if settings.autotune_baseline_fn is not None:
            copies = _clone(args)
            return Reference((settings.autotune_baseline_fn(*copies), copies))
        return Reference(_run(bound_kernel, dict(bound_kernel.config_spec.autotune_reference_config()), args))
    except Exception as e:
        return Reference(None, f"accuracy unchecked: the reference failed ({type(e).__name__})")


def best_known(bound_kernel: Any, args: Sequence[object], context: TuneContext, device: str,
               timer: Callable[[Callable[[], Any], Any], tuple[float, str]] | None = None
               ) -> tuple[dict[str, Any], float, list[str], str | None, int]:
    """The fastest known config that compiles, runs and matches the reference.

    Returns (config, ms, failures, accuracy note, configs tried); raises ``BudgetFallbackError``
    naming each failure when no candidate works.  ``timer`` is
    ``measure.time_ms`` unless a test fakes it.
    """
    from .measure import time_ms

    timer = timer or time_ms
    ref = reference(bound_kernel, args)
    best: tuple[float, dict[str, Any]] | None = None
    failures: list[str] = []
    candidates = known_candidates(bound_kernel, context.seeds)
    for label, config in candidates:
        try:
            ref.check(bound_kernel.settings, _run(bound_kernel, config, args))
            ms, _ = timer(lambda: bound_kernel(*args), device)
        except Exception as e:  # a known config that no longer works is skipped, not fatal
            msg = first_line(e)[:200]
            failures.append(f"{label}: {type(e).__name__}" + (f": {msg}" if msg else ""))
            continue
        if best is None or ms < best[0]:
            best = (ms, config)
    if best is None:
        raise BudgetFallbackError("; ".join(failures))
    return best[1], best[0], failures, ref.note, len(candidates)


def search_or_known(search: Callable[[], TuneOutcome], bound_kernel: Any, args: Sequence[object], budget: Budget,
                    context: TuneContext, device: str,
                    timer: Callable[[Callable[[], Any], Any], tuple[float, str]] | None = None) -> TuneOutcome:
    """Run ``search``; if a budgeted search finds nothing, the best known config instead.

    Every strategy goes through here (tune_case calls it), so none needs its own copy.
    """
    start = time.perf_counter()
    try:
        return search()
    except Exception as e:
        if not (has_budget(budget) and is_nothing_found(e)):
            raise
        why = f"search found nothing within {describe_budget(budget)} ({type(e).__name__})"
    where = f"{context.kernel_id} [{context.shape_name}]" if context.kernel_id else "this case"
    try:
        config, _ms, failures, note, n = best_known(bound_kernel, args, context, device, timer)
    except BudgetFallbackError as e:
        raise BudgetFallbackError(
            f"{where}: {why}, and none of the known configs (seeds, Helion's default) compiled and ran "
            f"correctly: {e}. Give the case more time: raise seconds (or max_configs / total_seconds) "
            f"in [tool.kiln], or check the kernel with no budget set."
        ) from None
    text = f"{why}; best of {n - len(failures)} working known configs ({n} tried: seeds, then Helion's default)"
    if note:
        text += f"; {note}"
    extra: dict[str, Any] = {"budget_fallback": text}
    if failures:
        extra["budget_fallback_failures"] = failures
    return TuneOutcome(config=config, configs_tested=n, seconds=time.perf_counter() - start,
                       search_best_ms=None, extra=extra)
