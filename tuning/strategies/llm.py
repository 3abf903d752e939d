"""``llm`` and ``hybrid``: Helion's LLM searches, with every request through litellm.

- ``llm`` is Helion's ``LLMGuidedSearch``.
- ``hybrid`` is Helion's ``LLMSeededLFBOTreeSearch``: LLM rounds seed an LFBO
  stage that refines within a bounded budget (the ``seeded`` strategy's
  reduced limits, since the seeds replace exploration).  Configs already known
  for this kernel (``context.seeds``) join the LLM's best as seeds.

Both replace Helion's hand-written HTTP transport at its seam,
``LLMGuidedSearch._call_llm(messages) -> str``: the messages are filtered
(kernel source withheld when ``send_source`` is off), logged with secrets
redacted, sent through :func:`tuning.llm.transport.complete`, and the answer
is sanitized (:mod:`tuning.llm.answers`) before Helion parses it.

The build never dies because of the LLM: an outage, timeout, 401/429/5xx, or
a first round with no usable config makes the case fall back to ``seeded``,
with one warning saying why.  A later round that fails only ends the LLM
rounds; the configs measured so far stand.
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..llm.answers import sanitize
from ..llm.log import LlmLog
from ..llm.prompting import withhold_source
from ..llm.transport import LlmUnavailable, complete
from ..runtime.keys import shape_key
from .base import NO_LLM, Budget, LlmSettings, TuneContext, TuneOutcome
from .lfbo import apply_budget_settings, cap_configs, run_search, search_kwargs
from .seed_variants import tile_directions


class KilnLlmFallbackWarning(UserWarning):
    """A case was tuned with ``seeded`` because the LLM gave nothing usable."""


class LlmSession:
    """One case's conversation: the settings, the log, and what the LLM cost and gave."""

    def __init__(self, settings: LlmSettings, context: TuneContext) -> None:
        self.settings = settings
        self.context = context
        self.log = LlmLog(settings.log_path)
        self.rounds = 0  # answered requests
        self.attempted = 0  # requests sent, answered or not
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd: float | None = 0.0
        self.proposed = 0
        self.accepted = 0
        self.dropped: Counter[str] = Counter()
        self.seen: set[str] = set()
        self.stopped: str | None = None
        self._lock = threading.Lock()

    @property
    def wait_s(self) -> float:
        """The longest one request may take, retries and backoff included."""
        from ..llm import transport

        tries = max(0, self.settings.retries) + 1
        backoff = sum(min(transport.BACKOFF_CAP_S, transport.BACKOFF_S * 2**i) for i in range(tries - 1))
        return tries * self.settings.timeout_s + backoff + 10.0

    def ask(self, search: Any, messages: list[dict[str, str]]) -> str:
        """The seam: one request for ``search``, answered with sanitized ``{"configs":[...]}`` text."""
        s = self.settings
        with self._lock:
            self.attempted += 1
            round_no = self.attempted
        where = {"kernel": self.context.kernel_id, "shape": self.context.shape_name, "round": round_no}
        if not s.send_source:
            try:
                messages = withhold_source(messages, search.kernel)
            except LlmUnavailable as e:
                self.log.write("error", **where, reason=e.reason)
                raise
        self.log.write("request", **where, model=s.model, api_base=s.api_base, send_source=s.send_source,
                       messages=messages)
        try:
            reply = complete(s.model, messages, api_base=s.api_base, timeout_s=s.timeout_s, retries=s.retries,
                             max_tokens=search._max_output_tokens_for_request())
        except LlmUnavailable as e:
            self.log.write("error", **where, reason=e.reason)
            raise
        result = sanitize(reply.text, config_spec=search.config_spec, default=search._default_config_dict,
                          seen=self.seen, limit=max(1, s.configs_per_round), truncated=reply.finish_reason == "length")
        with self._lock:
            self.rounds += 1
            self.prompt_tokens += reply.prompt_tokens
            self.completion_tokens += reply.completion_tokens
            self.cost_usd = None if self.cost_usd is None or reply.cost_usd is None else self.cost_usd + reply.cost_usd
            self.proposed += result.proposed
            self.accepted += result.usable
            self.dropped.update(result.dropped)
        self.log.write("response", **where, text=reply.text, finish_reason=reply.finish_reason,
                       prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
                       cost_usd=reply.cost_usd, seconds=round(reply.seconds, 3), attempts=reply.attempts,
                       proposed=result.proposed, accepted=result.configs, dropped=dict(result.dropped))
        if round_no == 1 and not result.usable:
            why = ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())) or "no configs"
            raise LlmUnavailable(f"unparseable round 1: no usable config ({why})")
        return result.text

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.settings.model,
            "rounds": self.rounds,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 8),
            "proposed": self.proposed,
            "accepted": self.accepted,
            "dropped": dict(sorted(self.dropped.items())),
            "send_source": self.settings.send_source,
        }
        if self.stopped:
            out["stopped"] = self.stopped
        return out


@functools.cache
def _search_classes() -> tuple[type, type]:
    """Helion subclasses, built on first use so that importing this module imports no helion."""
    from helion.autotuner.llm_search import LLMGuidedSearch
    from helion.autotuner.llm_seeded_lfbo import LLMSeededLFBOTreeSearch

    class KilnLLMGuidedSearch(LLMGuidedSearch):
        """Helion's guided search, talking through kiln's session instead of its own HTTP code."""

        def __init__(self, kernel: Any, args: Any, *, kiln_session: LlmSession,
                     kiln_skip_final_verification: bool = False, **kwargs: Any) -> None:
            super().__init__(kernel, args, **kwargs)
            self.kiln_session = kiln_session
            self.kiln_skip_final_verification = kiln_skip_final_verification

        def _algorithm_cache_policy(self) -> dict[str, object] | None:
            return None  # never share results through Helion's disk cache

        def _call_llm(self, messages: list[dict[str, str]]) -> str:
            t0 = time.perf_counter()
            try:
                return self.kiln_session.ask(self, messages)
            finally:
                self._llm_call_times.append(time.perf_counter() - t0)

        def _run_refinement_round(self, round_num: int, state: Any) -> bool:
            try:
                return bool(super()._run_refinement_round(round_num, state))
            except LlmUnavailable as e:
                self.kiln_session.stopped = f"round {round_num + 1}: {e.reason}"
                self.log.warning(f"kiln: LLM round {round_num + 1} failed ({e.reason}); keeping earlier rounds")
                return True

        def final_rebenchmark_best(self, best: Any) -> Any:
            # As the hybrid's first stage, LFBO re-measures the seed anyway.
            if self.kiln_skip_final_verification:
                return best
            return super().final_rebenchmark_best(best)

    class KilnLLMSeededLFBOTreeSearch(LLMSeededLFBOTreeSearch):
        """Helion's hybrid with kiln's guided search as stage 1, known seeds and a config cap."""

        def __init__(self, kernel: Any, args: Any, *, kiln_session: LlmSession, kiln_seeds: Sequence[Any] = (),
                     kiln_seed_directions: Sequence[int] = (), kiln_max_configs: int | None = None,
                     **kwargs: Any) -> None:
            super().__init__(kernel, args, **kwargs)
            self.kiln_session = kiln_session
            self.kiln_seeds = list(kiln_seeds)
            self.kiln_seed_directions = list(kiln_seed_directions)  # per known seed: seed_variants.tile_directions
            self.kiln_max_configs = kiln_max_configs
            self.kiln_llm_search: Any = None
            self.kiln_fast_finish: dict[str, Any] = {}
            self.kiln_seed_variants = 0
            self.kiln_seed_transfer: dict[str, Any] = {}
            self.kiln_warm: list[dict[str, int]] = []  # per stage: worker starts that took the spare

        def _warm(self, search: Any) -> Any:
            """Each stage is its own Helion search with its own benchmark worker, so each would wait
            for a cold one; both adopt seeded's spare instead (warm_worker.py)."""
            from .seeded import WARM_WORKER
            from .warm_worker import warm_worker

            counts = warm_worker(search, WARM_WORKER["prestart"])
            if counts:
                self.kiln_warm.append(counts)
            return search

        def kiln_warm_counts(self) -> dict[str, int]:
            """Both stages' counts summed (empty when the warm worker was off or not applicable)."""
            keys = sorted({k for counts in self.kiln_warm for k in counts})
            return {k: sum(counts.get(k, 0) for counts in self.kiln_warm) for k in keys}

        def _make_llm_search(self) -> Any:
            search = KilnLLMGuidedSearch(
                self.kernel, self.args, kiln_session=self.kiln_session, kiln_skip_final_verification=True,
                finishing_rounds=0, model=self.llm_model, configs_per_round=self.llm_configs_per_round,
                max_rounds=self.llm_max_rounds, initial_random_configs=self.llm_initial_random_configs,
                compile_timeout_s=self.llm_compile_timeout_s, request_timeout_s=self.llm_request_timeout_s,
            )
            cap_configs(search, self.kiln_max_configs)
            self.kiln_llm_search = search
            return self._warm(search)

        def _make_second_stage_search(self, *, seeded: bool) -> Any:
            from .handoff import own_random_stream
            from .seeded import fast_finish

            search = super()._make_second_stage_search(seeded=seeded)
            # Stage 2 is seeded's search, so it finishes as seeded does.  Without this it kept
            # Helion's 60 s compile timeout and 30 s adaptive floor: on the H200 (session 13,
            # rms_norm@medium) it waited 60 s on a compile that stage 1 had already given up on
            # (a random config both stages drew from the same seed: own_random_stream).
            self.kiln_fast_finish = fast_finish(search)
            own_random_stream(search)
            if self.kiln_max_configs is not None:
                used = self.kiln_llm_search._autotune_metrics.num_configs_tested if self.kiln_llm_search else 0
                cap_configs(search, max(1, self.kiln_max_configs - used))
            return self._warm(search)

        def _inject_seed_into_second_stage(self, second_stage_search: Any, llm_seed_config: Any,
                                           llm_search: Any = None) -> None:
            from .seed_transfer import transfer_seeds
            from .seed_variants import with_seed_variants

            super()._inject_seed_into_second_stage(second_stage_search, llm_seed_config, llm_search)
            if not (self._second_stage_supports_best_available_handoff
                    and hasattr(second_stage_search, "set_best_available_seed_configs")):
                return
            # The LLM's best leads, then the known configs, then seeded's seed variants of them:
            # stage 2 starts as seeded would from those seeds (and records seeded's limits).
            known = [(c, d) for c, d in zip(self.kiln_seeds, self.kiln_seed_directions + [0] * len(self.kiln_seeds))
                     if c != llm_seed_config]
            given = [dict(llm_seed_config), *(dict(c) for c, _ in known)]
            # The LLM proposed its config for this shape: no tile to scale toward it (direction 0).
            seeds = with_seed_variants(given, second_stage_search.config_spec, [0, *(d for _, d in known)])
            self.kiln_seed_variants = len(seeds) - len(given)
            placed = transfer_seeds(seeds, second_stage_search.config_gen, second_stage_search.log)
            self.kiln_seed_transfer = placed.provenance()
            second_stage_search.set_best_available_seed_configs(placed.configs)

    return KilnLLMGuidedSearch, KilnLLMSeededLFBOTreeSearch


def _initial_random(budget: Budget) -> int:
    from helion.autotuner.effort_profile import DEFAULT_LLM_INITIAL_RANDOM_CONFIGS

    if budget.initial_population is not None:
        return max(0, min(budget.initial_population, DEFAULT_LLM_INITIAL_RANDOM_CONFIGS))
    return DEFAULT_LLM_INITIAL_RANDOM_CONFIGS


def _is_llm_failure(e: BaseException) -> bool:
    # TimeoutError: Helion's wait on the overlapped round-0 request ran out.
    return isinstance(e, (LlmUnavailable, TimeoutError))


def _why(e: BaseException) -> str:
    if isinstance(e, LlmUnavailable):
        return f"{type(e).__name__}: {e.reason}"
    return f"{type(e).__name__}: no answer in time"


def fall_back(bound_kernel: Any, args: Sequence[object], budget: Budget, context: TuneContext, why: str,
              session: LlmSession | None = None) -> TuneOutcome:
    """Tune the case with ``seeded``, after one warning that says why."""
    from .seeded import SeededStrategy

    where = f"{context.kernel_id} [{context.shape_name}]" if context.kernel_id else "this case"
    warnings.warn(f"kiln: {where}: LLM not usable ({why}); tuning it with the 'seeded' strategy instead.",
                  KilnLlmFallbackWarning, stacklevel=3)
    outcome = SeededStrategy().tune(bound_kernel, args, budget, context)
    outcome.extra["strategy"] = "seeded"
    outcome.extra["fallback"] = why
    if session is not None and session.attempted:
        outcome.extra["llm"] = session.provenance()  # tokens spent before it failed still cost money
    return outcome


def _run_or_fall_back(search: Any, max_configs: int | None, bound_kernel: Any, args: Sequence[object],
                      budget: Budget, context: TuneContext, session: LlmSession) -> TuneOutcome:
    """Run an LLM search; an LLM failure (not a kernel failure) hands the case to ``seeded``."""
    try:
        outcome = run_search(search, max_configs)
    except Exception as e:
        if not _is_llm_failure(e):
            raise
        return fall_back(bound_kernel, args, budget, context, _why(e), session)
    outcome.extra["llm"] = session.provenance()
    return outcome


def _open_session(bound_kernel: Any, budget: Budget, context: TuneContext) -> LlmSession | None:
    """The LLM session a strategy asks through, with the budget applied; None when no LLM is configured.

    Both LLM strategies start the same way, so a build without ``llm_model`` falls back on the
    same words whichever of them it asked for.
    """
    if context.llm is None:
        return None
    session = LlmSession(context.llm, context)
    apply_budget_settings(bound_kernel, budget)
    return session


class LlmStrategy:
    name = "llm"

    def tune(self, bound_kernel: Any, args: Sequence[object], budget: Budget, context: TuneContext) -> TuneOutcome:
        if (session := _open_session(bound_kernel, budget, context)) is None:
            return fall_back(bound_kernel, args, budget, context, NO_LLM)
        from helion.autotuner.llm_search import LLMGuidedSearch

        guided, _ = _search_classes()
        settings = session.settings
        kwargs = search_kwargs(LLMGuidedSearch, bound_kernel, budget)
        kwargs.update(
            provider=None, model=settings.model, configs_per_round=settings.configs_per_round,
            max_rounds=max(1, settings.rounds), initial_random_configs=_initial_random(budget),
            api_base=None, api_key=None, request_timeout_s=session.wait_s,
        )
        search = guided(bound_kernel, args, kiln_session=session, **kwargs)
        return _run_or_fall_back(search, budget.max_configs, bound_kernel, args, budget, context, session)


def _hybrid_limits() -> dict[str, Any]:
    from .seeded import search_limits

    # Stage 2 is seeded's search (WITH_SEEDS and its seed variants); since session 13 with seeded's
    # fast finish and random configs of its own (the key marks hybrid records made before then as
    # another search).  Of seeded's optional candidates the hybrid applies only the seed variants
    # (stage 2) and the warm worker (both stages), so only those are claimed.
    return {**search_limits(options=("seed_variants", "warm_worker")),
            "stage2": {"fast_finish": True, "own_random_stream": True}}


class HybridStrategy:
    name = "hybrid"
    limits = staticmethod(_hybrid_limits)

    def tune(self, bound_kernel: Any, args: Sequence[object], budget: Budget, context: TuneContext) -> TuneOutcome:
        if (session := _open_session(bound_kernel, budget, context)) is None:
            return fall_back(bound_kernel, args, budget, context, NO_LLM)
        import helion
        from helion.autotuner import LFBOTreeSearch

        from .seeded import WITH_SEEDS, reduced_limits

        _, hybrid = _search_classes()
        settings = session.settings
        # Stage 2 is bounded: the LLM's best (and any known config) replaces exploration.
        second = search_kwargs(LFBOTreeSearch, bound_kernel, budget)
        second.update(reduced_limits(budget, WITH_SEEDS))
        seeds = [helion.Config(**s) for s in context.seeds]
        directions = tile_directions(context.seed_shapes, shape_key(args))
        search = hybrid(
            bound_kernel, args, kiln_session=session, kiln_seeds=seeds, kiln_seed_directions=directions,
            kiln_max_configs=budget.max_configs,
            second_stage_kwargs=second, best_available_pad_random=True,
            llm_model=settings.model, llm_configs_per_round=settings.configs_per_round,
            llm_max_rounds=max(1, settings.rounds), llm_initial_random_configs=_initial_random(budget),
            llm_request_timeout_s=session.wait_s,
        )
        outcome = _run_or_fall_back(search, None, bound_kernel, args, budget, context, session)
        if "fallback" in outcome.extra:
            return outcome
        outcome.extra["seeds"] = len(seeds)
        # As seeded records them: only the steps that acted leave a key.
        steps = {"seed_variants": search.kiln_seed_variants, "seed_transfer": search.kiln_seed_transfer,
                 "fast_finish": search.kiln_fast_finish,
                 "warm_worker": search.kiln_warm_counts()}  # how many worker starts (of both stages) took the spare
        outcome.extra.update({key: value for key, value in steps.items() if value})
        breakdown = getattr(search, "hybrid_stage_breakdown", None) or {}
        if "llm_seed_configs_tested" in breakdown:
            outcome.extra["llm"]["configs_tested"] = breakdown["llm_seed_configs_tested"]
        return outcome
