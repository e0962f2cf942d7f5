"""When a section is oversized (behaviour §2.6 thresholds), as the Key Facts guard and the size
warnings of the update prompt measure it."""

from __future__ import annotations

from typing import NamedTuple

from wm_langgraph.document.sections import section_items
from wm_langgraph.document.tokens import TokenCounter, count_tokens

__all__ = [
    "EMERGENCY_FACTOR",
    "OVERSIZE_BULLETS",
    "OVERSIZE_MAX_APPEND",
    "OVERSIZE_TOKENS",
    "SectionSize",
    "is_emergency",
    "is_oversized",
    "section_size",
]


OVERSIZE_BULLETS = 25
"""A section with more bullets than this is oversized (behaviour §2.6)."""


OVERSIZE_TOKENS = 1500
"""A section with more tokens than this is oversized (behaviour §2.6)."""


EMERGENCY_FACTOR = 2
"""Key Facts over EMERGENCY_FACTOR times a threshold refuses ordinary APPENDs (behaviour §4.3)."""


OVERSIZE_MAX_APPEND = 5
"""At most this many new Key Facts items per round while the section is oversized."""


class SectionSize(NamedTuple):
    """How big a section body is: item count (template lines ignored) and tokens."""

    bullets: int
    tokens: int

    @property
    def oversized(self) -> bool:
        """More than ``OVERSIZE_BULLETS`` items or more than ``OVERSIZE_TOKENS`` tokens."""
        return self.bullets > OVERSIZE_BULLETS or self.tokens > OVERSIZE_TOKENS


def section_size(body: str, counter: TokenCounter = count_tokens) -> SectionSize:
    """``(bullets, tokens)`` of a section body; template lines do not count as bullets."""
    return SectionSize(len(section_items(body)), counter(body))


def is_oversized(body: str, counter: TokenCounter = count_tokens) -> bool:
    """More than 25 bullets or more than 1,500 tokens (behaviour §2.6)."""
    return section_size(body, counter).oversized


def is_emergency(body: str, counter: TokenCounter = count_tokens) -> bool:
    """More than twice a threshold: ordinary Key Facts APPENDs are refused (behaviour §4.3)."""
    bullets, tokens = section_size(body, counter)
    return (
        bullets > EMERGENCY_FACTOR * OVERSIZE_BULLETS or tokens > EMERGENCY_FACTOR * OVERSIZE_TOKENS
    )
