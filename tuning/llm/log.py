"""The build's LLM log: prompts and responses as JSON lines, with secrets redacted.

The log lives outside the wheel (``llm_log``, default ``kiln-llm.log`` in the
project directory).  Before anything is written it is scrubbed of:

- the value of every environment variable whose name ends in ``_API_KEY``,
  ``_TOKEN``, ``_SECRET`` (and the like: ``_SECRET_KEY``, ``_ACCESS_KEY``,
  ``_PASSWORD``);
- anything shaped like a provider key (``sk-...``), a ``Bearer ...`` token,
  or the value of an ``x-api-key`` / ``api_key`` / ``authorization`` field;
- user:password in URLs.

A log that cannot be written never stops the build.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"
_SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_ACCESS_KEY", "_PASSWORD", "_AUTH")
_SECRET_ENV_NAMES = ("API_KEY", "TOKEN", "SECRET")
_PATTERNS = [
    # provider keys: sk-..., sk-proj-..., sk-ant-api03-...
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{4,}"), REDACTED),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]+"), "Bearer " + REDACTED),
    # header or field names followed by a value: x-api-key: ..., "api_key": "...", authorization=...
    (re.compile(r"(?i)(\b(?:x-api-key|api[_-]?key|authorization|access[_-]?token|secret)\b[\"']?\s*[:=]\s*[\"']?)"
                r"(?!\[REDACTED\]|Bearer \[REDACTED\])[^\s\"',}]+"), r"\1" + REDACTED),
    # credentials in URLs
    (re.compile(r"(://)[^/@\s:]+:[^/@\s]+@"), r"\1" + REDACTED + "@"),
]


def _secret_values() -> list[str]:
    values = []
    for name, value in os.environ.items():
        upper = name.upper()
        if (upper.endswith(_SECRET_ENV_SUFFIXES) or upper in _SECRET_ENV_NAMES) and len(value) >= 6:
            values.append(value)
    return sorted(set(values), key=len, reverse=True)  # longest first: a key that contains another


def redact(text: str) -> str:
    """``text`` with every secret we can recognise replaced by ``[REDACTED]``."""
    for value in _secret_values():
        text = text.replace(value, REDACTED)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_obj(obj: Any) -> Any:
    """Redact every string in a JSON-like structure (keys included)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(str(k)): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


class LlmLog:
    """Append-only JSON-lines log; a ``None`` path logs nothing."""

    _lock = threading.Lock()  # round 0's request runs on a helper thread

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self._failed = False

    def write(self, event: str, **fields: Any) -> None:
        if self.path is None or self._failed:
            return
        record = {"time": round(time.time(), 3), "event": event, **fields}
        line = redact(json.dumps(redact_obj(record), sort_keys=True, default=str))
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        except OSError as e:
            self._failed = True
            import warnings

            warnings.warn(f"kiln: cannot write the LLM log {self.path}: {e}", stacklevel=2)
