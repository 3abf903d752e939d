"""Every LLM request goes through ``litellm.completion``.

Any litellm model id works (``openai/gpt-5.5``, ``anthropic/claude-sonnet-4-6``,
``hosted_vllm/...``, ``ollama/...``), with ``api_base`` for on-prem or proxy
endpoints.  The API key is never passed here: litellm reads it from the
environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).

One request has ``timeout_s``; failures that may pass (timeouts, connection
errors, 429, 5xx) are retried ``retries`` times with exponential backoff;
the others (401, 403, 400, 404) are not.  Whatever goes wrong, the caller sees
one exception type, :class:`LlmUnavailable`, whose ``reason`` is short and
carries no secret.
"""

from __future__ import annotations

import os
import re
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import first_line

# Backoff before retry i (0-based) is BACKOFF_S * 2**i, capped at BACKOFF_CAP_S.
BACKOFF_S = 1.0
BACKOFF_CAP_S = 20.0
_REASON_CHARS = 160

_import_lock = threading.Lock()


class LlmUnavailable(Exception):
    """The LLM could not give a usable answer: outage, timeout, auth, rate limit, or a bad round."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class LlmReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: litellm has no price for this model
    finish_reason: str | None
    attempts: int
    seconds: float


def _litellm() -> Any:
    """Import litellm on first use, with its cost map read from the installed package (no network)."""
    with _import_lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        # litellm's own noise is not the build's business: pydantic serializer chatter on
        # every response, deprecations at import.
        warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
        warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout
        litellm.telemetry = False
        litellm.drop_params = True  # a provider that lacks a knob (max_tokens...) drops it instead of failing
        return litellm


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if code is None:
        code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


def _retryable(litellm: Any, exc: BaseException) -> bool:
    ex = litellm.exceptions
    if isinstance(exc, (ex.AuthenticationError, ex.PermissionDeniedError, ex.NotFoundError, ex.BadRequestError)):
        return False
    if isinstance(exc, (ex.Timeout, ex.APIConnectionError, ex.RateLimitError, ex.ServiceUnavailableError,
                        ex.InternalServerError, ex.BadGatewayError)):
        return True
    code = _status(exc)
    return code is None or code == 429 or code >= 500


def describe_error(exc: BaseException) -> str:
    """``ClassName (HTTP 401): first line`` -- short, and scrubbed of anything that looks like a key."""
    from .log import redact

    code = _status(exc)
    first = first_line(exc)
    # litellm repeats itself: "litellm.RateLimitError: RateLimitError: OpenAIException - slow down"
    first = re.sub(r"^(litellm\.\w+:\s*)?(" + re.escape(type(exc).__name__) + r":\s*)?", "", first)
    text = f"{type(exc).__name__}" + (f" (HTTP {code})" if code else "") + (f": {first}" if first else "")
    text = redact(text)
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def _text_of(response: Any) -> tuple[str, str | None]:
    try:
        choice = response.choices[0]
    except (AttributeError, IndexError, TypeError):
        return "", None
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    if isinstance(content, list):  # some providers return content parts
        content = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return (content if isinstance(content, str) else ""), getattr(choice, "finish_reason", None)


def _usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "completion_tokens", None) or 0
    return int(prompt), int(completion)


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # litellm raises for models missing from its price map
        return None
    return float(cost) if isinstance(cost, (int, float)) else None


def complete(
    model: str,
    messages: list[dict[str, str]],
    *,
    api_base: str | None = None,
    timeout_s: float = 60.0,
    retries: int = 2,
    max_tokens: int | None = None,
) -> LlmReply:
    """One chat completion, retried with exponential backoff; raises :class:`LlmUnavailable`."""
    try:
        litellm = _litellm()
    except Exception as e:  # litellm missing or broken: the LLM is unavailable, the build goes on
        raise LlmUnavailable(f"litellm could not be imported ({type(e).__name__}: {e}); pip install helion-kiln[llm]") from None

    kwargs: dict[str, Any] = {"model": model, "messages": messages, "timeout": timeout_s,
                              "num_retries": 0, "max_retries": 0}  # our loop retries; litellm and the SDK must not
    if api_base:
        kwargs["api_base"] = api_base
    if max_tokens:
        kwargs["max_tokens"] = max_tokens

    start = time.perf_counter()
    attempts = 0
    last = "no attempt"
    for attempt in range(max(0, retries) + 1):
        if attempt:
            time.sleep(min(BACKOFF_CAP_S, BACKOFF_S * 2 ** (attempt - 1)))
        attempts += 1
        try:
            response = litellm.completion(**kwargs)
        except Exception as e:
            last = describe_error(e)
            if not _retryable(litellm, e):
                break
            continue
        text, finish = _text_of(response)
        prompt_tokens, completion_tokens = _usage(response)
        return LlmReply(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                        cost_usd=_cost(litellm, response), finish_reason=finish, attempts=attempts,
                        seconds=time.perf_counter() - start)
    raise LlmUnavailable(f"{last} (after {attempts} attempt{'s' if attempts != 1 else ''})")
