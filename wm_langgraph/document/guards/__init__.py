"""Guards: one pure function per section that decides which op is really applied (behaviour §4).

A guard receives the old section body and the op the model asked for (a :class:`SectionOp`)
and returns a :class:`GuardOutcome`: the op to apply and a short reason ("" when the op passes
unchanged). :func:`guard_section` is the entry point; it runs the rules shared by all sections
(guards only run when the old section has content; an empty UPDATE of a non-empty section is a
KEEP) and then the section's own guard, which lives in a module named for its section
(:mod:`.title`, :mod:`.key_facts`, :mod:`.files_context`, :mod:`.errors_corrections`,
:mod:`.open_issues`; the size thresholds in :mod:`.sizes`). Italic template lines (``_…_``)
are never content.

"Is it still there" is always answered by :mod:`wm_langgraph.document.text.match`: whole items,
path boundaries and bounded terms, never a raw substring test. "Kept elsewhere" only counts the
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

from collections.abc import Callable, Collection, Mapping

from wm_langgraph.document.guards.errors_corrections import guard_errors_corrections
from wm_langgraph.document.guards.files_context import guard_files_context
from wm_langgraph.document.guards.key_facts import (
    ANCHOR_MIN_COVERAGE,
    CONSOLIDATION_SENTINEL,
    LAYER1_MIN_RATIO,
    RESTORED_MARKER,
    SUPERSEDED_PREFIX,
    VanishedFacts,
    guard_key_facts,
    restore_vanished_facts,
    settle_key_facts,
)
from wm_langgraph.document.guards.open_issues import (
    DROPPED_MARKER,
    guard_open_issues,
    is_resolved,
)
from wm_langgraph.document.guards.sizes import (
    EMERGENCY_FACTOR,
    OVERSIZE_BULLETS,
    OVERSIZE_MAX_APPEND,
    OVERSIZE_TOKENS,
    SEED_LIMITS,
    SectionLimits,
    SectionSize,
    is_emergency,
    is_oversized,
    section_limits,
    section_size,
)
from wm_langgraph.document.guards.title import (
    MAX_TITLE_CHARS,
    guard_session_title,
    has_invisible_characters,
    title_text,
)
from wm_langgraph.document.ops import KEEP as _KEEP
from wm_langgraph.document.ops import GuardOutcome, OpKind, SectionOp, new_items
from wm_langgraph.document.sections import DURABLE_SECTIONS, has_content

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
    "SEED_LIMITS",
    "SUPERSEDED_PREFIX",
    "GuardOutcome",
    "OpKind",
    "SectionLimits",
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
    "section_limits",
    "section_size",
    "settle_key_facts",
]


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
    removable: Collection[str] = (),
    limits: SectionLimits = SEED_LIMITS,
) -> GuardOutcome:
    """Run the guard of ``section`` on ``op`` (behaviour §4).

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
        conversation: The conversation being folded in; None skips the checks that need it.
            The Session Title must share a word with it (:func:`guard_session_title`); a
            rejected Key Facts UPDATE salvages no value it lacks (:func:`guard_key_facts`); an
            Open Issues item marked resolved this round must be spoken of in it
            (:func:`guard_open_issues`).
        old_document: For the Session Title and Key Facts, the old document (grounds a stable
            title; its values are not new).
        removable: For Files & Context and Errors & Corrections, the item keys of the items
            code added (the trails): an UPDATE may drop them.
        limits: For Key Facts, the memory's section thresholds (:func:`section_limits`; the
            seed's 25 bullets / 1,500 tokens / 5 per round by default).

    Raises:
        KeyError: ``section`` is not one of the seven section names.
    """
    guard = _GUARDS[section]
    if guard is guard_session_title:
        plain = not has_invisible_characters(op.content) and len(op.content) <= MAX_TITLE_CHARS
        if op.kind == "KEEP" or (
            plain and not title_text(old_body) and conversation is None and op.kind == "UPDATE"
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
        return guard_key_facts(
            old_body,
            op,
            elsewhere=elsewhere,
            conversation=conversation,
            old_document=old_document,
            limits=limits,
        )
    if guard is guard_errors_corrections:
        return guard_errors_corrections(old_body, op, removable=removable)
    if guard is guard_files_context:
        return guard_files_context(old_body, op, removable=removable)
    if guard is guard_open_issues:
        return guard_open_issues(old_body, op, errors=errors, conversation=conversation)
    return guard(old_body, op)
