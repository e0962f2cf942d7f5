"""When a section is oversized (behaviour §2.6 thresholds), as the Key Facts guard, the size
warnings of the update prompt, the offline writer and the capture check measure it.

The thresholds are the seed's 25 bullets / 1,500 tokens at the seed's default memory of about
12,000 tokens (:data:`SEED_MEMORY_TOKENS`), the points where it *reminds* the writer to
consolidate; they are not a cap. Ours follow the Working Memory's room by one rule
(:func:`section_limits`): every threshold is the seed's times ``scale = target / 12,000``, where
``target`` is the document's size target (``document.compaction.size_contract``: 12,000 at the
default configuration, so the default reproduces the seed exactly), rounded, never below its
floor (:data:`MIN_BULLETS`, :data:`MIN_TOKENS`, :data:`MIN_APPEND`, :data:`MIN_CODE_UNITS`) so
that a tiny memory still holds a handful of facts per section. One :class:`SectionLimits` is
computed per configuration and passed to every rule that reads it; nothing reads a global
threshold.

No item grows without bound (SPEC §11): one item of a section holds at most
:attr:`SectionLimits.item_tokens` tokens, :data:`ITEM_SHARE` of the section's token threshold.
Every rule of ours that joins clauses onto an item — the Key Facts guard's restore and salvage,
the size contract's merge step, the offline writer's consolidations — packs them with
:func:`pack_clauses`, which starts a new item rather than overfill one; a single clause longer
than the bound stays whole (it is never cut).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from wm_langgraph.document.sections import section_items
from wm_langgraph.document.tokens import TokenCounter, count_tokens

__all__ = [
    "CAPTURE_ROUND_SHARE",
    "EMERGENCY_FACTOR",
    "ITEM_SHARE",
    "MIN_APPEND",
    "MIN_ASKED",
    "MIN_BULLETS",
    "MIN_CODE_UNITS",
    "MIN_TOKENS",
    "OVERSIZE_BULLETS",
    "OVERSIZE_MAX_APPEND",
    "OVERSIZE_TOKENS",
    "SEED_ASKED",
    "SEED_CODE_UNITS",
    "SEED_LIMITS",
    "SEED_MEMORY_TOKENS",
    "SectionLimits",
    "SectionSize",
    "is_emergency",
    "is_oversized",
    "join_clauses",
    "pack_clauses",
    "section_limits",
    "section_size",
]


OVERSIZE_BULLETS = 25
"""The seed's bullet threshold (at :data:`SEED_MEMORY_TOKENS`): more items is oversized."""


OVERSIZE_TOKENS = 1500
"""The seed's token threshold (at :data:`SEED_MEMORY_TOKENS`): more tokens is oversized."""


EMERGENCY_FACTOR = 2
"""Key Facts over EMERGENCY_FACTOR times a threshold refuses ordinary APPENDs (behaviour §4.3)."""


OVERSIZE_MAX_APPEND = 5
"""The seed's throttle: at most this many new Key Facts items per round while oversized."""


SEED_CODE_UNITS = 6
"""The capture check's bound at the seed's size: units code adds per round (at least; a dense
round raises it, see :meth:`SectionLimits.capture_bound`)."""


SEED_ASKED = 12
"""The capture check's bound at the seed's size: statements one follow-up call lists (at
least; a dense round raises it)."""


CAPTURE_ROUND_SHARE = 0.5
"""A round's capture bounds are at least this share of the units it establishes: a writer that
leaves out up to half of a dense round's facts loses none of them to a fixed count."""


ITEM_SHARE = 0.15
"""One item of a section holds at most this share of the section's token threshold
(:attr:`SectionLimits.item_tokens`: 225 tokens at the seed's 1,500, 150 at the floor of 1,000,
about two and a half times the average item of a full section of 25 items). Consolidation and
restores split rather than join past it: in LoCoMo's conv-47 at 8k, consolidation and clause
restores once piled 113 clauses onto one Key Facts bullet of 1,652 tokens."""


SEED_MEMORY_TOKENS = 12_000
"""The seed's default memory size, at which its thresholds are 25 bullets / 1,500 tokens."""


MIN_BULLETS = 16
"""The bullet threshold never drops below this: a careful writer consolidates a section to
below its thresholds, and under about 16 bullets / 1,000 tokens that cuts the details of a
working session (the recorded demo, a 6k window: a decision's reason shortened away, an anchor
the guards had to restore). About Key Facts' share of an 8k window's target."""
MIN_TOKENS = 1_000
"""The token threshold never drops below this (see :data:`MIN_BULLETS`)."""
MIN_APPEND = 2
"""The oversized throttle never drops below this many new items per round."""
MIN_CODE_UNITS = 4
"""The capture check's code bound never drops below this many units per round."""
MIN_ASKED = 6
"""The capture check's follow-up never lists fewer than this many statements (when missing)."""


class SectionSize(NamedTuple):
    """How big a section body is: item count (template lines ignored) and tokens."""

    bullets: int
    tokens: int

    @property
    def oversized(self) -> bool:
        """Over the seed's thresholds (``SEED_LIMITS.oversized`` of this size)."""
        return SEED_LIMITS.oversized(self)


@dataclass(frozen=True, slots=True)
class SectionLimits:
    """The per-section thresholds of one memory (behaviour §2.6), one value for every rule.

    Attributes:
        bullets: A section with more items is oversized.
        tokens: A section with more tokens is oversized.
        max_append: At most this many new Key Facts items per round while oversized.
        code_units: The capture check's bound per round: units code adds (at least; see
            :meth:`capture_bound`).
        asked: The capture check's bound per round: statements the follow-up lists (at least).
        scale: ``target / 12,000``, what the seed's values were multiplied by (1.0 at the
            default size).
    """

    bullets: int = OVERSIZE_BULLETS
    tokens: int = OVERSIZE_TOKENS
    max_append: int = OVERSIZE_MAX_APPEND
    code_units: int = SEED_CODE_UNITS
    asked: int = SEED_ASKED
    scale: float = 1.0

    def __post_init__(self) -> None:
        if min(self.bullets, self.tokens, self.max_append, self.code_units, self.asked) < 1:
            raise ValueError(f"section limits must be positive, got {self!r}")

    @property
    def item_tokens(self) -> int:
        """The most tokens one item may hold when our code joins clauses onto it:
        :data:`ITEM_SHARE` of :attr:`tokens` (no item grows without bound)."""
        return max(1, round(ITEM_SHARE * self.tokens))

    def oversized(self, size: SectionSize) -> bool:
        """More than :attr:`bullets` items or more than :attr:`tokens` tokens."""
        return size.bullets > self.bullets or size.tokens > self.tokens

    def emergency(self, size: SectionSize) -> bool:
        """More than :data:`EMERGENCY_FACTOR` times a threshold (behaviour §4.3)."""
        return (
            size.bullets > EMERGENCY_FACTOR * self.bullets
            or size.tokens > EMERGENCY_FACTOR * self.tokens
        )

    def capture_bound(self, bound: int, units: int) -> int:
        """A capture bound (``code_units`` or ``asked``) for a round that establishes ``units``
        salient units: the scaled bound, or :data:`CAPTURE_ROUND_SHARE` of the units when that
        is more (a dense round), but never more than one section's worth (:attr:`bullets`): a
        round that "establishes" thousands of units is a paste (a log, a dump), not a thousand
        facts, and the size contract would only move them out again."""
        return max(bound, min(math.ceil(CAPTURE_ROUND_SHARE * units), self.bullets))


def section_limits(target_tokens: int) -> SectionLimits:
    """The thresholds of a memory whose size target is ``target_tokens`` (the one rule).

    Each threshold is the seed's value times ``scale = target_tokens / 12,000``, rounded, and at
    least its floor: at the default target of 12,000 that is the seed's 25 bullets, 1,500 tokens,
    5 items per round and 6 capture units exactly.

    Raises:
        ValueError: ``target_tokens`` is not positive.
    """
    if target_tokens < 1:
        raise ValueError(f"target_tokens must be positive, got {target_tokens}")
    scale = target_tokens / SEED_MEMORY_TOKENS
    return SectionLimits(
        bullets=max(MIN_BULLETS, round(OVERSIZE_BULLETS * scale)),
        tokens=max(MIN_TOKENS, round(OVERSIZE_TOKENS * scale)),
        max_append=max(MIN_APPEND, round(OVERSIZE_MAX_APPEND * scale)),
        code_units=max(MIN_CODE_UNITS, round(SEED_CODE_UNITS * scale)),
        asked=max(MIN_ASKED, round(SEED_ASKED * scale)),
        scale=scale,
    )


SEED_LIMITS = SectionLimits()
"""The seed's thresholds (25 bullets, 1,500 tokens, 5 per round): ``section_limits(12,000)``,
and what every rule uses when no memory's limits are given."""


def section_size(body: str, counter: TokenCounter = count_tokens) -> SectionSize:
    """``(bullets, tokens)`` of a section body; template lines do not count as bullets."""
    return SectionSize(len(section_items(body)), counter(body))


def is_oversized(
    body: str, counter: TokenCounter = count_tokens, limits: SectionLimits = SEED_LIMITS
) -> bool:
    """More than ``limits.bullets`` bullets or ``limits.tokens`` tokens (behaviour §2.6)."""
    return limits.oversized(section_size(body, counter))


def is_emergency(
    body: str, counter: TokenCounter = count_tokens, limits: SectionLimits = SEED_LIMITS
) -> bool:
    """More than twice a threshold: ordinary Key Facts APPENDs are refused (behaviour §4.3)."""
    return limits.emergency(section_size(body, counter))


def join_clauses(parts: Sequence[str]) -> str:
    """Clauses as one item: ``; `` between them, a space after one that ends a sentence."""
    out = ""
    for part in parts:
        if not out:
            out = part
        elif out.endswith((".", "!", "?", "。", "！", "？")):
            out = f"{out} {part}"
        else:
            out = f"{out}; {part}"
    return out


def pack_clauses(
    parts: Sequence[str],
    max_tokens: int,
    *,
    prefix: str = "",
    counter: TokenCounter = count_tokens,
    join: Callable[[Sequence[str]], str] = join_clauses,
) -> list[str]:
    """``parts`` joined into items of at most ``max_tokens`` tokens each (``prefix`` in front
    of each, counted), in order: a part that would take the current item over the bound starts
    the next one. A single part longer than the bound is an item of its own, whole: splitting
    never cuts a clause.

    Args:
        parts: The clauses, in the order they are to be read.
        max_tokens: The bound (:attr:`SectionLimits.item_tokens`).
        prefix: Put in front of every item (a speaker and date, a marker); ``""``: none.
        counter: Text -> tokens.
        join: How clauses become one item (:func:`join_clauses` by default).
    """
    items: list[str] = []
    current: list[str] = []
    for part in parts:
        if current and counter(prefix + join([*current, part])) > max_tokens:
            items.append(prefix + join(current))
            current = []
        current.append(part)
    if current:
        items.append(prefix + join(current))
    return items
