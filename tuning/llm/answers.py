"""Bad answers are expected: parse the model's text, keep the usable configs, count the rest.

:func:`sanitize` turns one raw answer into the text Helion's parser expects
(``{"configs":[...]}``, minified) holding only configs that

- are JSON objects whose keys all belong to the kernel's config space;
- have values of the right type and shape, within the fragment's bounds
  (power-of-two block sizes inside their min/max, enum choices, permutations,
  list lengths), and are not absurd (negative, num_warps > 32, huge);
- pass Helion's own ``config_spec.normalize`` without repairs;
- are new: not a duplicate within the answer nor of an earlier answer.

Whole answers are dropped when they are oversized, not JSON, truncated, or
try to steer the tool (instructions to ignore the prompt, to run commands,
URLs).  Each drop is counted under its reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_ANSWER_CHARS = 64 * 1024
MAX_NUM_WARPS = 32
MAX_INT = 1 << 20  # no tile, stage count or factor of a sane config comes near

# Reasons, as they appear in the lock's provenance.
OVERSIZED = "oversized"
NOT_JSON = "non_json"
TRUNCATED = "truncated"
STEERING = "steering"
EMPTY = "empty"
NO_CONFIG_LIST = "no_config_list"
NOT_OBJECT = "not_object"
UNKNOWN_FIELD = "unknown_field"
ABSURD = "absurd"
OUTSIDE_SPACE = "outside_space"
DUPLICATE = "duplicate"
EXCESS = "excess"

_STEERING = re.compile(
    r"(?i)"
    r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|system|your)\b[^.\n]{0,20}"
    r"\b(instructions?|prompts?|messages?|rules?|directions?)\b"
    r"|\bsystem\s+prompt\b"
    r"|\byou\s+are\s+now\b"
    r"|\b(run|execute|exec)\b[^.\n]{0,30}\b(command|shell|script|code)\b"
    r"|\b(rm\s+-rf|curl\s|wget\s|sudo\s|pip\s+install|bash\s+-c|powershell|subprocess|os\.system|__import__|eval\(|exec\()"
    r"|```\s*(bash|sh|shell|console)\b"
    r"|\b[a-z][a-z0-9+.\-]*://"
    r"|\bwww\.[a-z0-9\-]+\."
    r"|\b(api[_\s-]?key|password|credentials?)\b"
)


@dataclass
class Sanitized:
    text: str  # what Helion's parser gets: {"configs":[...]}
    configs: list[dict[str, Any]]
    proposed: int
    dropped: Counter[str] = field(default_factory=Counter)

    @property
    def usable(self) -> int:
        return len(self.configs)


def _is_pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class _Reject(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _check_int(key: str, v: Any) -> int:
    if type(v) is not int:
        raise _Reject(ABSURD, f"{key}: expected an integer, got {v!r}")
    if v < 0 or v > MAX_INT:
        raise _Reject(ABSURD, f"{key}: {v} is out of any sane range")
    return v


def _check_fragment(key: str, frag: Any, v: Any, config_spec: Any) -> None:
    """Strict check of one value against one of Helion's config fragments."""
    from helion.autotuner import config_fragment as cf

    if v is None and not isinstance(frag, cf.EnumFragment):
        return  # null: Helion's normalize decides whether the field allows it

    if isinstance(frag, cf.ListOf):
        if not isinstance(v, list) or len(v) != frag.length:
            raise _Reject(OUTSIDE_SPACE, f"{key}: expected a list of {frag.length}, got {v!r}")
        for i, item in enumerate(v):
            _check_fragment(f"{key}[{i}]", frag.inner, item, config_spec)
        return
    if isinstance(frag, cf.PermutationFragment):
        if not isinstance(v, list) or sorted(x for x in v if type(x) is int) != list(range(frag.length)) or len(v) != frag.length:
            raise _Reject(OUTSIDE_SPACE, f"{key}: not a permutation of range({frag.length}): {v!r}")
        return
    if isinstance(frag, cf.BooleanFragment):
        if type(v) is not bool:
            raise _Reject(ABSURD, f"{key}: expected true/false, got {v!r}")
        return
    if isinstance(frag, cf.EnumFragment):
        if isinstance(v, (list, dict)) or v not in frag.choices:
            raise _Reject(OUTSIDE_SPACE, f"{key}: {v!r} is not one of {list(frag.choices)}")
        return
    if isinstance(frag, cf.NumThreadsFragment):
        _check_int(key, v)
        if v != 0 and (not _is_pow2(v) or v > frag.high):
            raise _Reject(OUTSIDE_SPACE, f"{key}: {v} is neither 0 nor a power of two <= {frag.high}")
        return
    if isinstance(frag, cf.PowerOfTwoFragment):
        _check_int(key, v)
        if not _is_pow2(v):
            raise _Reject(ABSURD, f"{key}: {v} is not a power of two")
        if not frag.low <= v <= frag.high:
            raise _Reject(OUTSIDE_SPACE, f"{key}: {v} is outside [{frag.low}, {frag.high}]")
        return
    if isinstance(frag, cf.BaseIntegerFragment):
        _check_int(key, v)
        if not frag.low <= v <= frag.high:
            raise _Reject(OUTSIDE_SPACE, f"{key}: {v} is outside [{frag.low}, {frag.high}]")
        return
    # A fragment kind we do not know: Helion's normalize below is the judge.


def _check_field(key: str, field_spec: Any, v: Any, config_spec: Any) -> None:
    from helion.autotuner.block_id_sequence import BlockIdSequence

    if key == "num_warps" and type(v) is int and v > MAX_NUM_WARPS:
        raise _Reject(ABSURD, f"num_warps {v} > {MAX_NUM_WARPS}")
    if isinstance(field_spec, BlockIdSequence):
        if not isinstance(v, list) or len(v) != len(field_spec):
            raise _Reject(OUTSIDE_SPACE, f"{key}: expected a list of {len(field_spec)}, got {v!r}")
        for i, (item, value) in enumerate(zip(field_spec, v)):
            if value is None:  # e.g. reduction_loops: null = persistent; Helion's normalize judges
                continue
            try:
                frag = item._fragment(config_spec)
            except NotImplementedError:
                continue
            _check_fragment(f"{key}[{i}]", frag, value, config_spec)
        return
    _check_fragment(key, field_spec, v, config_spec)


def check_config(raw: Any, config_spec: Any, default: dict[str, Any]) -> Any:
    """The normalized ``helion.Config`` for one proposed sparse config, or :class:`_Reject`."""
    import helion

    if not isinstance(raw, dict):
        raise _Reject(NOT_OBJECT, f"not a JSON object: {raw!r}"[:120])
    fields = config_spec._flat_fields()
    unknown = sorted(str(k) for k in raw if k not in fields)
    if unknown:
        raise _Reject(UNKNOWN_FIELD, f"not in the config space: {unknown}")
    for key, value in raw.items():
        _check_field(key, fields[key], value, config_spec)
    merged = json.loads(json.dumps(default))
    merged.update(json.loads(json.dumps(raw)))
    try:
        config_spec.normalize(merged)  # strict: Helion raises on what it would otherwise repair
        config = helion.Config(**merged)
    except Exception as e:
        raise _Reject(OUTSIDE_SPACE, f"{type(e).__name__}: {e}"[:160]) from None
    return config


def _unclosed(text: str) -> bool:
    """Whether a bracket or a string is still open at the end: the answer was cut off."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return depth > 0 or in_string


def _extract(text: str, truncated: bool) -> tuple[Any, str | None]:
    """(parsed JSON, None) or (None, reason)."""
    from helion.autotuner.llm.parsing import parse_jsonish

    if _unclosed(text):
        return None, TRUNCATED
    try:
        parsed = parse_jsonish(text)
    except (RecursionError, ValueError):
        parsed = None
    if parsed is None:
        return None, TRUNCATED if truncated else NOT_JSON
    return parsed, None


def sanitize(
    text: str,
    *,
    config_spec: Any,
    default: dict[str, Any],
    seen: set[str],
    limit: int,
    truncated: bool = False,
) -> Sanitized:
    """Keep the usable configs of one answer; ``seen`` (config reprs) is updated in place."""
    dropped: Counter[str] = Counter()

    def whole(reason: str) -> Sanitized:
        dropped[reason] += 1
        return Sanitized(text='{"configs":[]}', configs=[], proposed=0, dropped=dropped)

    if len(text) > MAX_ANSWER_CHARS:
        return whole(OVERSIZED)
    if not text.strip():
        return whole(EMPTY)
    if _STEERING.search(text):
        return whole(STEERING)
    parsed, why = _extract(text, truncated)
    if why is not None:
        return whole(why)
    raw_configs = parsed.get("configs") if isinstance(parsed, dict) else parsed
    if not isinstance(raw_configs, list):
        return whole(NO_CONFIG_LIST)

    keep: list[dict[str, Any]] = []
    for raw in raw_configs:
        try:
            config = check_config(raw, config_spec, default)
        except _Reject as r:
            dropped[r.reason] += 1
            continue
        key = repr(config)
        if key in seen:
            dropped[DUPLICATE] += 1
            continue
        if len(keep) >= limit:
            dropped[EXCESS] += 1
            continue
        seen.add(key)
        keep.append(raw)
    clean = json.dumps({"configs": keep}, separators=(",", ":"), sort_keys=True)
    return Sanitized(text=clean, configs=keep, proposed=len(raw_configs), dropped=dropped)
