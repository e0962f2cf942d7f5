"""A bounded per-instance cache of message token counts, so each message is tokenised once.

Assemble runs before every model call over every live and pending message; rendering and
tokenising them all each time made it O(history) in tokenisation. The cache maps a message's
id and a fingerprint of everything :func:`~wm_langgraph.engine.render.message_tokens` reads
(class, content, name, role, tool calls, tool result fields) to its count. An edited message
(same id, new content) therefore misses and is counted afresh; the same message handed back as
a new object (a checkpointer deserialises the state every invocation) hits.

Only the id and a 64-bit hash of the fingerprint are kept, not the content, so the cache holds
no conversation text and about 250 bytes per entry (a wrong hit would need the same id and a
colliding 64-bit hash). The oldest entries go first.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage

__all__ = ["DEFAULT_MAX_ENTRIES", "MessageTokenCache"]

DEFAULT_MAX_ENTRIES = 100_000
"""Entries kept by default (about 25 MB when full)."""

_PLAIN = frozenset({str, type(None)})  # numbers go through _frozen: True == 1, "True" != "1"
# Everything render.message_tokens looks at, besides the class.
_FIELDS = (
    "content",
    "name",
    "role",
    "type",
    "tool_call_id",
    "status",
    "tool_calls",
    "invalid_tool_calls",
)


def _tagged(value: object) -> str:
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        text = ""
    return f"<{type(value).__module__}.{type(value).__qualname__}>{text}"


def _frozen(value: object) -> object:
    """A hashable stand-in for a non-plain ``value``: equal stand-ins render equally."""
    if isinstance(value, list) and not value:
        return list
    return (type(value), json.dumps(value, ensure_ascii=False, default=_tagged))


_PLANS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, bool], ...]:
    """Which of ``_FIELDS`` a message class has: (name, is a pydantic field) pairs. Reading a
    missing attribute of a pydantic model is slow, and its absence is implied by the class."""
    plan = _PLANS.get(cls)
    if plan is None:
        model_fields = getattr(cls, "model_fields", {})
        plan = tuple(
            (name, name in model_fields)
            for name in _FIELDS
            if name in model_fields or hasattr(cls, name)
        )
        _PLANS[cls] = plan
    return plan


def _fingerprint(message: BaseMessage) -> int:
    cls = type(message)
    values = message.__dict__
    parts: list[object] = [cls]
    for name, is_field in _PLANS.get(cls) or _plan(cls):
        value = values.get(name) if is_field else getattr(message, name, None)
        parts.append(value if value.__class__ in _PLAIN else _frozen(value))
    extra = values.get("additional_kwargs")
    if extra and isinstance(extra, Mapping) and "function_call" in extra:
        parts.append(_frozen(extra["function_call"]))
    return hash(tuple(parts))


class MessageTokenCache:
    """``count(message)`` with memory: each distinct message is counted once per process.

    Thread-safe; bounded to ``max_entries``: when full, the oldest tenth is evicted (a message
    still live when its entry goes is counted once more). Messages whose fingerprint cannot be
    built (e.g. circular content) are counted every time, uncached.
    """

    def __init__(
        self, count: Callable[[BaseMessage], int], *, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        """Wrap ``count`` (message -> tokens, a pure function of the message)."""
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be an int >= 1, got {max_entries!r}")
        self._count = count
        self._max = max_entries
        self._entries: dict[tuple[Any, int], int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, message: BaseMessage) -> int:
        """The token count of ``message`` (from the cache when this message was counted)."""
        try:
            key = (message.id, _fingerprint(message))
        except Exception:  # unhashable or circular content: count it, keep nothing
            return self._count(message)
        cached = self._entries.get(key)  # a single dict read needs no lock
        if cached is not None:
            return cached
        tokens = self._count(message)
        with self._lock:
            entries = self._entries
            entries[key] = tokens
            if len(entries) > self._max:  # dicts keep insertion order: drop the oldest tenth
                drop = len(entries) - self._max + self._max // 10
                for old in list(itertools.islice(entries, drop)):
                    del entries[old]
        return tokens
