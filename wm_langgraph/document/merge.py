"""Merge a model's per-section ops into the old document, through the guards (behaviour §3.5, §4).

:func:`merge_working_memory` walks the seven sections in order. KEEP copies the old body;
UPDATE replaces it after the section's guard; APPEND adds ``- item`` lines under it. Whatever
``ops`` holds, the merge never raises and the result always parses to exactly seven sections
(bodies are neutralised so that no line can inject a header).

Every section gets a :class:`GuardDecision`. ``requested`` is the op name asked for
(``KEEP``/``UPDATE``/``APPEND``, lower case accepted); for bad input it says what was wrong:

* ``MISSING`` - no op for the section (or ``ops`` is None / empty);
* ``INVALID`` - the op is not an object, ``ops`` itself is not a mapping, or the object has no
  string ``op`` field;
* any other op string, upper-cased (for example ``DELETE``) - an unknown op.

All of these apply KEEP. ``reason`` is ``""`` exactly when the requested op was applied as
asked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from wm_langgraph.document.guards import (
    DURABLE_SECTIONS,
    SEED_LIMITS,
    GuardOutcome,
    SectionLimits,
    SectionOp,
    guard_section,
    new_items,
    settle_key_facts,
)
from wm_langgraph.document.items import clean_item, clean_update_body
from wm_langgraph.document.sections import (
    SECTIONS,
    item_key,
    normalise_working_memory,
    parse_working_memory,
    render_working_memory,
    section_items,
)
from wm_langgraph.document.text import extract_anchors, item_present, missing_anchors

__all__ = ["GuardDecision", "MergeResult", "OpName", "merge_working_memory"]

logger = logging.getLogger("wm_langgraph")

OpName = Literal["KEEP", "UPDATE", "APPEND"]

_KEY_FACTS = "Key Facts & Decisions"
_ERRORS = "Errors & Corrections"
_OPEN = "Open Issues"
_TITLE = "Session Title"
_RELEASING: tuple[str, ...] = (_OPEN,)
"""Sections besides Files & Context and Errors & Corrections whose code items an UPDATE may
drop. Key Facts & Decisions keeps them like the writer's own (its guards restore a vanished
anchor): a capture item there is a fact the conversation established."""
_BULLET_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])[ \t]+")


@dataclass(frozen=True, slots=True)
class GuardDecision:
    """What happened to one section's op: asked for ``requested``, applied ``applied``."""

    section: str
    requested: str
    applied: str
    reason: str = ""

    def as_dict(self) -> dict[str, str]:
        """JSON-plain form for logs, store metadata and tracing."""
        return {
            "section": self.section,
            "requested": self.requested,
            "applied": self.applied,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged canonical document and one decision per section, in section order."""

    text: str
    decisions: list[GuardDecision] = field(default_factory=list)


def _section_key(name: str) -> str:
    return re.sub(r"\s+", " ", name.replace(" and ", " & ")).strip().casefold()


_SECTION_KEYS = {_section_key(name): name for name in SECTIONS}


def _index_ops(ops: Mapping[Any, Any]) -> dict[str, Any]:
    """Section name -> raw op; tolerant of case, spacing, 'and' for '&', a ``sections`` wrapper."""
    if not any(isinstance(key, str) and _section_key(key) in _SECTION_KEYS for key in ops):
        inner = ops.get("sections")
        if isinstance(inner, Mapping):
            ops = inner
    indexed: dict[str, Any] = {}
    for key, value in ops.items():
        if isinstance(key, str):
            name = _SECTION_KEYS.get(_section_key(key))
            if name is not None and name not in indexed:
                indexed[name] = value
    return indexed


def _clean_items(raw: list[Any] | tuple[Any, ...]) -> tuple[list[str], int]:
    """APPEND items as single lines: non-strings dropped (counted), blanks and placeholders
    ignored, each line of a multi-line item its own bullet, a leading bullet or header marker
    removed (``document.items``)."""
    items: list[str] = []
    dropped = 0
    for item in raw:
        if not isinstance(item, str):
            dropped += 1
            continue
        for line in item.splitlines():
            text = clean_item(_BULLET_RE.sub("", line.strip(), count=1).strip())
            if text:
                items.append(text)
    return items, dropped


def _read_op(raw: Any) -> tuple[str, SectionOp | None, str]:
    """Turn one raw op into (requested name, op or None for KEEP, problem text)."""
    if isinstance(raw, str):
        raw = {"op": raw}
    if not isinstance(raw, Mapping):
        return "INVALID", None, f"op is not an object ({type(raw).__name__})"
    kind = raw.get("op")
    if not isinstance(kind, str):
        return "INVALID", None, "op object has no string 'op' field"
    name = kind.strip().upper()
    if name == "KEEP":
        return name, SectionOp("KEEP"), ""
    if name == "UPDATE":
        content = raw.get("content")
        if not isinstance(content, str):
            return name, None, "UPDATE without string content"
        return name, SectionOp("UPDATE", content=clean_update_body(content)), ""
    if name == "APPEND":
        items = raw.get("items")
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, list | tuple):
            return name, None, "APPEND without an items list"
        cleaned, dropped = _clean_items(items)
        problem = ""
        if dropped:
            logger.warning("APPEND: dropped %d non-string item(s)", dropped)
            problem = f"dropped {dropped} non-string item(s)"
        return name, SectionOp("APPEND", items=tuple(cleaned)), problem
    return (name[:40] or "INVALID"), None, f"unknown op {kind[:40]!r}"


@dataclass(frozen=True, slots=True)
class _Context:
    """What a guard may look at besides its own section (see ``guard_section``)."""

    elsewhere: str = ""
    errors: str = ""
    conversation: str | None = None
    old_document: str = ""
    removable: frozenset[str] = frozenset()
    limits: SectionLimits = SEED_LIMITS


def _durable(sections: Mapping[str, str], *, without: str = "") -> str:
    """The bodies of the durable sections (behaviour §4.6), ``without`` one of them."""
    return "\n".join(sections.get(n, "") for n in DURABLE_SECTIONS if n != without)


def _join(*parts: str) -> str:
    return "\n".join(part for part in (p.strip("\n") for p in parts) if part.strip())


def _apply(
    name: str,
    old_body: str,
    requested: str,
    op: SectionOp,
    problem: str,
    *,
    guards: bool,
    context: _Context,
) -> tuple[str, GuardDecision]:
    outcome = (
        guard_section(
            name,
            old_body,
            op,
            elsewhere=context.elsewhere,
            errors=context.errors,
            conversation=context.conversation,
            old_document=context.old_document,
            removable=context.removable,
            limits=context.limits,
        )
        if guards
        else GuardOutcome(op)
    )
    applied = outcome.op
    reasons = [r for r in (problem, outcome.reason) if r]
    if applied.kind == "UPDATE":
        return applied.content.strip(), GuardDecision(name, requested, "UPDATE", "; ".join(reasons))
    if applied.kind == "APPEND":
        fresh = new_items(old_body, applied.items)
        skipped = len(applied.items) - len(fresh)
        if skipped:
            reasons.append(f"skipped {skipped} item(s) already present")
        if not fresh:
            if not applied.items and not reasons:
                reasons.append("no items to append")
            return old_body, GuardDecision(name, requested, "KEEP", "; ".join(reasons))
        body = _join(old_body, "\n".join(f"- {item}" for item in fresh))
        return body, GuardDecision(name, requested, "APPEND", "; ".join(reasons))
    return old_body, GuardDecision(name, requested, "KEEP", "; ".join(reasons))


def merge_working_memory(
    old: str,
    ops: Mapping[str, Any] | None,
    *,
    guards: bool = True,
    conversation: str | None = None,
    code_items: Mapping[str, Sequence[str]] | None = None,
    limits: SectionLimits = SEED_LIMITS,
) -> MergeResult:
    """Apply per-section ops to ``old`` through the guards and return the new document.

    Args:
        old: The previous Working Memory document (normalised first, so nothing in it is
            dropped; ``None`` counts as an empty document).
        ops: Section name -> op object (``{"op": "KEEP"}``, ``{"op": "UPDATE", "content": …}``,
            ``{"op": "APPEND", "items": […]}``), or a ``{"sections": …}`` wrapper. Anything else
            (None, a list, junk values) is tolerated: what cannot be read is KEEP.
        guards: False applies the ops as asked, without the section guards of behaviour §4 (for
            ablation benchmarks). Structural safety (seven sections, no header injection,
            whole-item APPEND dedup, header markers and placeholder items removed) stays on.
        conversation: The text of the conversation being folded in (the rendered messages).
            When given, a new Session Title must share a meaningful word with it or with the
            old document (an invented title, or one copied from a prompt's example as a small
            real writer did, is refused); a rejected Key Facts UPDATE salvages no value that
            neither it nor the old document holds, and no such value retires an old one; an
            open issue marked resolved this round stays open unless it speaks of the item.
            The merge stays a pure function: the caller passes the text, nothing is read.
        code_items: Section name -> the items our code added to it (the artifact and error
            trails and the capture check). They are not protected like the writer's: an UPDATE
            of Files & Context, Errors & Corrections or Open Issues may drop them, and the
            section's decision says which.
        limits: The memory's section thresholds (``document.guards.section_limits`` of its size
            target), which the Key Facts guard's throttle and sentinel read; the seed's 25
            bullets / 1,500 tokens / 5 per round by default.

    Returns:
        The canonical document and one :class:`GuardDecision` per section, in section order.

    Raises:
        TypeError: ``old`` is neither a string nor None.
    """
    raw_old: object = old
    if raw_old is None:
        old = ""
    elif not isinstance(raw_old, str):
        raise TypeError(f"merge_working_memory expects old as a str, got {type(raw_old).__name__}")
    old_sections = parse_working_memory(normalise_working_memory(old))
    indexed: dict[str, Any] = {}
    global_problem = ""
    raw_ops: object = ops
    if isinstance(raw_ops, Mapping):
        try:
            indexed = _index_ops(raw_ops)
        except Exception as exc:
            global_problem = f"ops could not be read ({type(exc).__name__})"
    elif raw_ops is not None:
        global_problem = f"ops is not a mapping ({type(raw_ops).__name__})"

    requests: dict[str, tuple[str, SectionOp | None, str]] = {}
    for name in SECTIONS:
        if global_problem:
            requests[name] = ("INVALID", None, global_problem)
        elif name not in indexed:
            requests[name] = ("MISSING", None, "no op for this section")
        else:
            try:
                requests[name] = _read_op(indexed[name])
            except Exception as exc:  # hostile op objects must not break the merge
                requests[name] = ("INVALID", None, f"op unreadable ({type(exc).__name__})")

    # Key Facts goes last: its anchors count as kept anywhere in the durable sections of the new
    # document (behaviour §4.3, §4.6). Open Issues comes after Errors & Corrections, which it reads.
    new_sections: dict[str, str] = {}
    old_document = render_working_memory(old_sections) if conversation is not None else ""
    by_section: dict[str, GuardDecision] = {}
    for name in (*(n for n in SECTIONS if n != _KEY_FACTS), _KEY_FACTS):
        old_body = old_sections[name]
        requested, op, problem = requests[name]
        if op is None:
            new_sections[name] = old_body
            by_section[name] = GuardDecision(name, requested, "KEEP", problem)
            continue
        if name in _RELEASING and op.kind == "UPDATE" and code_items:
            # Items the capture check added are not the writer's to keep: an UPDATE that no
            # longer holds one drops it, recorded (the guards would restore it otherwise).
            old_body, released = _release_code_items(old_body, op.content, code_items.get(name))
            if released:
                old_sections = {**old_sections, name: old_body}
                note = f"dropped {len(released)} item(s) code had added ({'; '.join(released)})"
                problem = f"{problem}; {note[:300]}" if problem else note[:300]
        context = _Context(
            elsewhere=_durable(new_sections, without=_KEY_FACTS) if name == _KEY_FACTS else "",
            errors=new_sections.get(_ERRORS, "") if name == _OPEN else "",
            conversation=conversation if name in (_TITLE, _KEY_FACTS, _OPEN) else None,
            old_document=old_document if name in (_TITLE, _KEY_FACTS) else "",
            removable=frozenset(item_key(i) for i in (code_items or {}).get(name, ())),
            limits=limits,
        )
        new_sections[name], by_section[name] = _apply(
            name, old_body, requested, op, problem, guards=guards, context=context
        )
    decisions = [by_section[name] for name in SECTIONS]
    ordered = {name: new_sections[name] for name in SECTIONS}
    if guards:
        _restore_key_facts(old_sections, ordered, decisions, conversation, limits)
    return MergeResult(render_working_memory(ordered), decisions)


def _release_code_items(
    old_body: str, content: str, code_items: Sequence[str] | None
) -> tuple[str, list[str]]:
    """``old_body`` without the code-added items (``code_items``) that ``content`` no longer
    holds (whole item, or every anchor of it), and those items."""
    if not code_items:
        return old_body, []
    keys = {item_key(i) for i in code_items}
    wanted = section_items(content)
    kept: list[str] = []
    released: list[str] = []
    for item in section_items(old_body):
        held = item_present(item, wanted) or not missing_anchors(
            extract_anchors(item, include_markers=False, include_phrases=False), content
        )
        (released if item_key(item) in keys and not held else kept).append(item)
    if not released:
        return old_body, []
    return "\n".join(f"- {item}" for item in kept), released


def _restore_key_facts(
    old_sections: Mapping[str, str],
    new_sections: dict[str, str],
    decisions: list[GuardDecision],
    conversation: str | None = None,
    limits: SectionLimits = SEED_LIMITS,
) -> None:
    """After an accepted Key Facts UPDATE, settle the old bullets whose anchors vanished.

    Only the durable sections count as the new document (never Current State). A vanished
    bullet's clauses are restored in Key Facts, or — when the new Key Facts holds the same fact
    with a changed value — recorded in Errors & Corrections as ``superseded: <old bullet>``
    (both decisions say so in their reason).
    """
    index = SECTIONS.index(_KEY_FACTS)
    decision = decisions[index]
    if decision.applied != "UPDATE":
        return
    document = _durable(new_sections)
    settled = settle_key_facts(
        old_sections[_KEY_FACTS],
        new_sections[_KEY_FACTS],
        document,
        old_document=_durable(old_sections),
        conversation=conversation,
        limits=limits,
    )
    notes: list[str] = []
    if settled.restored:
        new_sections[_KEY_FACTS] = settled.body
        notes.append(
            f"restored {len(settled.restored)} bullet(s) whose anchors vanished from the document"
        )
    recorded = new_items(new_sections[_ERRORS], settled.superseded)
    if recorded:
        lines = "\n".join(f"- {item}" for item in recorded)
        new_sections[_ERRORS] = _join(new_sections[_ERRORS], lines)
        notes.append(
            f"moved {len(recorded)} bullet(s) whose value changed to Errors & Corrections "
            "as superseded"
        )
        errors_index = SECTIONS.index(_ERRORS)
        errors = decisions[errors_index]
        note = f"recorded {len(recorded)} superseded Key Facts bullet(s)"
        decisions[errors_index] = GuardDecision(
            errors.section,
            errors.requested,
            "UPDATE" if errors.applied == "UPDATE" else "APPEND",
            f"{errors.reason}; {note}" if errors.reason else note,
        )
    if not notes:
        return
    note = "; ".join(notes)
    reason = f"{decision.reason}; {note}" if decision.reason else note
    decisions[index] = GuardDecision(decision.section, decision.requested, "UPDATE", reason)
