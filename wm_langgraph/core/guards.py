"""Guards: one pure function per section that decides which op is really applied (SPEC §4).

A guard receives the old section body and the op the model asked for (a :class:`SectionOp`)
and returns a :class:`GuardOutcome`: the op to apply and a short reason ("" when the op passes
unchanged). :func:`guard_section` is the entry point; it runs the rules shared by all sections
(guards only run when the old section has content; an empty UPDATE of a non-empty section is a
KEEP) and then the section's own guard. Italic template lines (``_…_``) are never content.

"Is it still there" is always answered by ``core._match``: whole items, path boundaries and
bounded terms, never a raw substring test. "Kept elsewhere" only counts the
:data:`DURABLE_SECTIONS` (never Current State).

The "30% hole" of the reference is closed by :func:`settle_key_facts`, which the merge calls
after the whole new document is known: an accepted Key Facts consolidation may reword, but the
clauses of an old bullet that vanished from the durable sections of the new document (an
anchor appears nowhere, or no clause holds its anchors together as the same fact) come back,
marked ``[restored]`` — unless the new Key Facts holds the same fact with a
changed value, in which case the clause is recorded in Errors & Corrections as
``superseded: <clause>`` instead. A rejected UPDATE is salvaged clause by clause too: only what
brings an anchor or text the section lacks is appended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from wm_langgraph.core._facts import (
    RESTORED_MARKER,
    SUPERSEDED_PREFIX,
    VanishedFacts,
    salvage_clauses,
    settle_vanished_facts,
)
from wm_langgraph.core._open_issues import DROPPED_MARKER, is_resolved
from wm_langgraph.core._ops import KEEP as _KEEP
from wm_langgraph.core._ops import GuardOutcome, OpKind, SectionOp, new_items
from wm_langgraph.core._ops import count as _count
from wm_langgraph.core._section_guards import (
    guard_errors_corrections,
    guard_files_context,
    guard_open_issues,
    guard_session_title,
)
from wm_langgraph.core._title import title_text
from wm_langgraph.core.sections import section_items
from wm_langgraph.core.text import extract_anchors, missing_anchors
from wm_langgraph.core.tokens import TokenCounter, count_tokens

__all__ = [
    "ANCHOR_MIN_COVERAGE",
    "CONSOLIDATION_SENTINEL",
    "DROPPED_MARKER",
    "DURABLE_SECTIONS",
    "EMERGENCY_FACTOR",
    "LAYER1_MIN_RATIO",
    "OVERSIZE_BULLETS",
    "OVERSIZE_MAX_APPEND",
    "OVERSIZE_TOKENS",
    "RESTORED_MARKER",
    "SUPERSEDED_PREFIX",
    "GuardOutcome",
    "OpKind",
    "SectionOp",
    "SectionSize",
    "VanishedFacts",
    "guard_errors_corrections",
    "guard_files_context",
    "guard_key_facts",
    "guard_open_issues",
    "guard_section",
    "guard_session_title",
    "has_content",
    "is_emergency",
    "is_oversized",
    "is_resolved",
    "new_items",
    "restore_vanished_facts",
    "section_size",
    "settle_key_facts",
]

OVERSIZE_BULLETS = 25
"""A section with more bullets than this is oversized (SPEC §2)."""
OVERSIZE_TOKENS = 1500
"""A section with more tokens than this is oversized (SPEC §2)."""
EMERGENCY_FACTOR = 2
"""Key Facts over EMERGENCY_FACTOR times a threshold refuses ordinary APPENDs (SPEC §4.3)."""
OVERSIZE_MAX_APPEND = 5
"""At most this many new Key Facts items per round while the section is oversized."""
LAYER1_MIN_RATIO = 0.15
"""A Key Facts UPDATE keeping fewer than this share of the old bullets is rejected."""
ANCHOR_MIN_COVERAGE = 0.70
"""A Key Facts UPDATE keeping fewer than this share of the old anchors is rejected."""
CONSOLIDATION_SENTINEL = (
    "[⚠ CONSOLIDATION REQUIRED: Key Facts exceeds size limit. You MUST use UPDATE to merge "
    "and compress existing bullets before adding new facts.]"
)
"""The bullet appended (once) when Key Facts is in emergency and the model still APPENDs."""
DURABLE_SECTIONS: tuple[str, ...] = (
    "Task & Goals",
    "Key Facts & Decisions",
    "Files & Context",
    "Errors & Corrections",
    "Open Issues",
)
"""Sections that carry facts forward (owner decision, SPEC §4.6): only these count when a guard
asks whether an anchor or item is kept elsewhere — never Current State (rewritten every commit)
or the Session Title."""


def has_content(body: str) -> bool:
    """True when ``body`` has at least one item that is not an italic template line."""
    return bool(section_items(body))


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
    """More than 25 bullets or more than 1,500 tokens (SPEC §2)."""
    return section_size(body, counter).oversized


def is_emergency(body: str, counter: TokenCounter = count_tokens) -> bool:
    """More than twice a threshold: ordinary Key Facts APPENDs are refused (SPEC §4.3)."""
    bullets, tokens = section_size(body, counter)
    return (
        bullets > EMERGENCY_FACTOR * OVERSIZE_BULLETS or tokens > EMERGENCY_FACTOR * OVERSIZE_TOKENS
    )


# ----------------------------------------------------------------------------------------------
# Key Facts (the other sections' guards live in core._section_guards).
# ----------------------------------------------------------------------------------------------


def _salvage(old_body: str, op: SectionOp, why: str, *, emergency: bool) -> GuardOutcome:
    if emergency:
        return GuardOutcome(_KEEP, f"{why}; salvage suppressed (Key Facts in emergency size)")
    fresh = salvage_clauses(old_body, new_items(old_body, section_items(op.content)))
    if not fresh:
        return GuardOutcome(_KEEP, f"{why}; no new bullets or clauses to salvage")
    reason = f"{why}; salvaged {_count(len(fresh), 'new bullet')} as APPEND"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)


def _fact_lines(body: str) -> list[str]:
    return [item for item in section_items(body) if item != CONSOLIDATION_SENTINEL]


def guard_key_facts(
    old_body: str,
    op: SectionOp,
    counter: TokenCounter = count_tokens,
    *,
    elsewhere: str = "",
) -> GuardOutcome:
    """SPEC §4.3: layered UPDATE checks with salvage, and anti-bloat for APPEND.

    UPDATE is rejected when it keeps fewer than 15% of the old bullets (layer 1) or fewer than
    70% of the old lexical anchors (layer 2); from a rejected UPDATE, the bullets and clauses
    that bring an anchor or text the section lacks are APPENDed instead (not in emergency).
    APPEND to an oversized section accepts at most 5 new items; in emergency (over twice a
    threshold) only the consolidation sentinel is appended, once.

    Args:
        old_body: The Key Facts body before this round.
        op: The requested op.
        counter: Token counter for the size thresholds.
        elsewhere: The other durable sections of the new document (:data:`DURABLE_SECTIONS`;
            never Current State). An old anchor found there counts as kept (SPEC §4.3: a
            corrected value whose old value moved to Errors & Corrections as superseded is a
            clean update).
    """
    emergency = is_emergency(old_body, counter)
    if op.kind == "UPDATE":
        old_count = len(section_items(old_body))
        new_count = len(section_items(op.content))
        if old_count and new_count / old_count < LAYER1_MIN_RATIO:
            why = f"rejected UPDATE: {new_count} of {old_count} bullets left (< 15%)"
            return _salvage(old_body, op, why, emergency=emergency)
        anchors = extract_anchors("\n".join(_fact_lines(old_body)), include_phrases=False)
        if anchors:
            lost = missing_anchors(anchors, f"{op.content}\n{elsewhere}")
            coverage = 1 - len(lost) / len(anchors)
            if coverage < ANCHOR_MIN_COVERAGE:
                sample = ", ".join(sorted(lost)[:5])
                why = (
                    f"rejected UPDATE: keeps {coverage:.0%} of the old anchors (< 70%); "
                    f"lost e.g. {sample}"
                )
                return _salvage(old_body, op, why, emergency=emergency)
        return GuardOutcome(op)
    if op.kind != "APPEND" or not op.items:
        return GuardOutcome(op)
    if emergency:
        if CONSOLIDATION_SENTINEL in section_items(old_body):
            return GuardOutcome(_KEEP, "Key Facts in emergency size: APPEND refused")
        return GuardOutcome(
            SectionOp("APPEND", items=(CONSOLIDATION_SENTINEL,)),
            "Key Facts in emergency size: APPEND refused, consolidation sentinel appended",
        )
    if is_oversized(old_body, counter):
        fresh = new_items(old_body, op.items)
        if len(fresh) > OVERSIZE_MAX_APPEND:
            reason = (
                f"Key Facts oversized: accepted {OVERSIZE_MAX_APPEND} of "
                f"{_count(len(fresh), 'new item')}"
            )
            return GuardOutcome(
                SectionOp("APPEND", items=tuple(fresh[:OVERSIZE_MAX_APPEND])), reason
            )
    return GuardOutcome(op)


def restore_vanished_facts(
    old_body: str, new_body: str, new_document: str
) -> tuple[str, list[str]]:
    """Close the 30% hole: bring back old Key Facts bullets whose anchors vanished.

    Every old bullet with an anchor (decision markers aside) that appears nowhere in
    ``new_document`` is appended to ``new_body`` as ``- [restored] <bullet>``. An anchor kept
    anywhere in the new document counts as kept, so a value moved to Errors & Corrections as
    superseded is not restored. (The merge uses :func:`settle_key_facts`, which also
    retires a bullet whose value the new Key Facts changed, instead of restoring it.)

    Args:
        old_body: The Key Facts body before the update.
        new_body: The accepted Key Facts body.
        new_document: The whole new document (all seven sections, ``new_body`` included).

    Returns:
        The new body with restored bullets appended, and the restored items.
    """
    settled = settle_vanished_facts(_fact_lines(old_body), new_body, new_document, supersede=False)
    return settled.body, list(settled.restored)


def settle_key_facts(
    old_body: str, new_body: str, new_document: str, *, old_document: str = ""
) -> VanishedFacts:
    """After an accepted Key Facts UPDATE: restore vanished bullets, retire changed values.

    Like :func:`restore_vanished_facts`, except that an old bullet whose value the new Key
    Facts changed (the same fact, other words alike, a differing number/value) is not put back
    as if current: it is returned in ``superseded`` as ``superseded: <old bullet>``, for the
    merge to record in Errors & Corrections (SPEC §4.3: a fact retired on purpose is moved there
    as superseded, not deleted). See ``core._facts`` for the exact rule.

    Args:
        old_body: The Key Facts body before the update.
        new_body: The accepted Key Facts body.
        new_document: The durable sections of the new document (``new_body`` included).
        old_document: The durable sections of the old document (see ``core._facts``).
    """
    return settle_vanished_facts(
        _fact_lines(old_body), new_body, new_document, old_document=old_document
    )


def _no_guard(old_body: str, op: SectionOp) -> GuardOutcome:
    return GuardOutcome(op)


_GUARDS: Mapping[str, Callable[[str, SectionOp], GuardOutcome]] = {
    "Session Title": guard_session_title,
    "Current State": _no_guard,
    "Task & Goals": _no_guard,
    "Key Facts & Decisions": guard_key_facts,
    "Files & Context": guard_files_context,
    "Errors & Corrections": guard_errors_corrections,
    "Open Issues": guard_open_issues,
}


def guard_section(
    section: str,
    old_body: str,
    op: SectionOp,
    *,
    elsewhere: str = "",
    errors: str = "",
    conversation: str | None = None,
    old_document: str = "",
) -> GuardOutcome:
    """Run the guard of ``section`` on ``op`` (SPEC §4).

    Guards run only when ``old_body`` has content (template lines do not count; a heading-like
    title does). An UPDATE whose content has no items replaces nothing: KEEP. The Session Title
    guard also runs on an empty title when ``conversation`` is given, and on APPEND.

    Args:
        section: One of the seven section names.
        old_body: The section body before this round.
        op: The requested op.
        elsewhere: For Key Facts, the other durable sections of the new document
            (:data:`DURABLE_SECTIONS`; see :func:`guard_key_facts`).
        errors: For Open Issues, the new Errors & Corrections body (see
            :func:`guard_open_issues`).
        conversation: For the Session Title, the conversation being folded in (see
            :func:`guard_session_title`); None skips that check.
        old_document: For the Session Title, the old document (grounds a stable title).

    Raises:
        KeyError: ``section`` is not one of the seven section names.
    """
    guard = _GUARDS[section]
    if guard is guard_session_title:
        if op.kind == "KEEP" or (
            not title_text(old_body) and conversation is None and op.kind == "UPDATE"
        ):
            return GuardOutcome(op)
        return guard_session_title(
            old_body, op, conversation=conversation, old_document=old_document
        )
    if op.kind == "KEEP" or not has_content(old_body):
        return GuardOutcome(op)
    if op.kind == "UPDATE" and not has_content(op.content):
        return GuardOutcome(_KEEP, "empty UPDATE of a non-empty section")
    if guard is guard_key_facts:
        return guard_key_facts(old_body, op, elsewhere=elsewhere)
    if guard is guard_open_issues:
        return guard_open_issues(old_body, op, errors=errors)
    return guard(old_body, op)
