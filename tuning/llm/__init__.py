"""The LLM half of the tuning engine: litellm transport, answer sanitizing, redacted log.

Nothing here imports litellm (or helion) at module import: the transport
imports litellm on the first call, after pinning its cost map to the local
copy so that importing it makes no network call.
"""

from __future__ import annotations

from .transport import LlmReply, LlmUnavailable, complete

__all__ = ["LlmReply", "LlmUnavailable", "complete"]
