"""The Open Issues guard (behaviour §4.6, owner decision: an open item leaves only by resolution).

On UPDATE, an old item the new content no
longer holds (whole-item match, ``document.text.match``) is restored as
``- [silently dropped, restored] <item>`` — every time it is dropped, with the marker written
once (a restored item that is dropped again comes back with the same single marker). An item
leaves only by resolution:

* it is marked resolved (a ``[resolved]`` tag, or ``[done]`` / ``[fixed]`` / ``[closed]`` /
  ``[已解决]`` …) in the old body, so a later UPDATE may remove it;
* or the new Errors & Corrections holds it (moved there as a fix; that section is append-only,
  so the item is never lost).

A resolution tag is the writer's word, so when the merge is given the folded conversation, a tag
written this round on an item that was open is accepted only when the conversation speaks of
the item (:func:`speaks_of`: an anchor of the item, or enough of its meaningful words); otherwise
the tag is removed and the item stays open (the decision's reason says so).

The marker itself gives nothing: only this guard writes it, and a marker the model wrote on an
item the guard did not restore is removed (it would claim a restore that never happened). A
marker is genuine when the old body held the same text behind the marker anywhere — also inside
a line where a writer folded several items (``still open: a; [silently dropped, restored] b``),
which it may unfold again later.
"""

from __future__ import annotations

import re

from wm_langgraph.document.ops import GuardOutcome, SectionOp
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.document.text import extract_anchors, meaningful_words, missing_anchors
from wm_langgraph.document.text.match import item_core, item_present, strip_tags

__all__ = [
    "DROPPED_MARKER",
    "guard_open_issues",
    "is_resolved",
    "restore_marked",
    "restore_open_issues",
    "speaks_of",
]

DROPPED_MARKER = "[silently dropped, restored]"
"""Prefix of an Open Issues item brought back because an UPDATE dropped it."""

_RESOLVED_TAGS = frozenset(
    {
        "resolved",
        "done",
        "fixed",
        "closed",
        "solved",
        "已解决",
        "已完成",
        "已修复",
        "已关闭",
        "解决",
    }
)
_TAG_RE = re.compile(r"\[([^\]\n]{1,40})\]")


def is_resolved(item: str) -> bool:
    """True when ``item`` carries a resolution tag (``[resolved]``, ``[done]``, ``[已解决]`` …)."""
    return any(tag.strip().casefold() in _RESOLVED_TAGS for tag in _TAG_RE.findall(item))


def _unmarked(item: str) -> str:
    text = item.strip()
    while True:
        stripped = re.sub(r"^" + re.escape(DROPPED_MARKER) + r"[ \t]*", "", text, count=1)
        if stripped == text:
            return text
        text = stripped


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_MARKED_RE = re.compile(re.escape(DROPPED_MARKER) + r"[ \t]*(?P<text>[^;；\n]+)")


def _marked_key(text: str) -> str:
    """Comparison form of the text behind a restore marker (a fold may drop its final stop)."""
    return item_core(text).rstrip(" .。")


def _strip_forged_markers(old_body: str, content: str) -> tuple[str, int]:
    """Remove the restore marker from items whose text the old body did not carry behind it."""
    genuine = {_marked_key(m.group("text")) for m in _MARKED_RE.finditer(old_body)}
    # and the whole text of an old marked item: the finder above stops at a ";", which also
    # ends an item's own clause ("a; b" restored whole), not only a fold of several items
    genuine |= {
        _marked_key(_unmarked(item))
        for item in section_items(old_body)
        if item.startswith(DROPPED_MARKER)
    }
    out: list[str] = []
    forged = 0
    for line in content.splitlines():
        items = section_items(line) if DROPPED_MARKER in line else []
        if (
            items
            and items[0].startswith(DROPPED_MARKER)
            and _marked_key(_unmarked(items[0])) not in genuine
        ):
            line = re.sub(re.escape(DROPPED_MARKER) + r"[ \t]*", "", line, count=1)  # noqa: PLW2901
            forged += 1
        out.append(line)
    return ("\n".join(out), forged) if forged else (content, 0)


def speaks_of(item: str, conversation: str) -> bool:
    """True when ``conversation`` speaks of ``item``: it holds one of the item's anchors (a
    number, a name, an id, a path), or at least two of its meaningful words (all of them when
    the item has fewer than two)."""
    text = strip_tags(item)
    anchors = extract_anchors(text, include_markers=False, include_phrases=False)
    if anchors and len(missing_anchors(anchors, conversation)) < len(anchors):
        return True
    words = meaningful_words(text)
    if not words:
        return False
    shared = words & meaningful_words(conversation)
    return len(shared) >= min(2, len(words))


def _unresolve_unspoken(old_body: str, content: str, conversation: str) -> tuple[str, int]:
    """Take the resolution tag off items that were open in ``old_body`` and that
    ``conversation`` does not speak of: they stay open, as they were."""
    open_items = {
        item_core(_unmarked(item)): item
        for item in section_items(old_body)
        if not is_resolved(_unmarked(item))
    }
    out: list[str] = []
    kept = 0
    for line in content.splitlines():
        items = section_items(line)
        if items and is_resolved(items[0]):
            core = item_core(_unmarked(items[0]))
            old = open_items.get(core)
            if old is not None and not speaks_of(core, conversation):
                out.append(f"- {old}")
                kept += 1
                continue
        out.append(line)
    return ("\n".join(out), kept) if kept else (content, 0)


def restore_open_issues(
    old_body: str, content: str, errors: str = "", conversation: str | None = None
) -> tuple[str, str]:
    """Apply the Open Issues rule to an UPDATE's ``content``: ``(content, reason)`` of
    :func:`restore_marked`."""
    content, reason, _ = restore_marked(old_body, content, errors, conversation)
    return content, reason


def restore_marked(
    old_body: str, content: str, errors: str = "", conversation: str | None = None
) -> tuple[str, str, list[str]]:
    """Apply the Open Issues rule to an UPDATE's ``content``.

    Args:
        old_body: The Open Issues body before this round.
        content: The UPDATE's new body.
        errors: The new Errors & Corrections body (an item it holds was moved there as a fix).
        conversation: The folded messages: an item marked resolved this round stays open
            unless they speak of it (None: the tag is taken as written).

    Returns:
        The content to apply (dropped unresolved items restored, marked once), the reason
        (``""`` when the UPDATE passes unchanged) and the restored items as written.
    """
    content, forged = _strip_forged_markers(old_body, content)
    unresolved = 0
    if conversation is not None:
        content, unresolved = _unresolve_unspoken(old_body, content, conversation)
    new_items = section_items(content)
    error_items = section_items(errors)
    restored: list[str] = []
    seen = {item_key(item) for item in new_items}
    for item in section_items(old_body):
        text = _unmarked(item)
        if is_resolved(text) or item_present(text, new_items):
            continue
        if item_present(text, error_items):
            continue  # moved to Errors & Corrections as a fix
        line = f"{DROPPED_MARKER} {text}"
        if item_key(line) not in seen and strip_tags(text):
            seen.add(item_key(line))
            restored.append(line)
    notes = [f"removed {_count(forged, 'forged restore marker')}"] if forged else []
    if unresolved:
        notes.append(
            f"kept open {_count(unresolved, 'item')} marked resolved that the conversation "
            "does not speak of"
        )
    if restored:
        lines = "\n".join(f"- {item}" for item in restored)
        content = f"{content.rstrip()}\n{lines}" if content.strip() else lines
        notes.insert(0, f"restored {_count(len(restored), 'silently dropped item')}")
    return content, "; ".join(notes), restored


def guard_open_issues(
    old_body: str, op: SectionOp, *, errors: str = "", conversation: str | None = None
) -> GuardOutcome:
    """Behaviour §4.6 (owner decision): an open item leaves only by resolution.

    An old item the UPDATE no longer holds (whole-item match) is restored as
    ``- [silently dropped, restored] <item>``, every time, with the marker written once. It may
    leave when it was marked ``[resolved]`` (or ``[done]``, ``[fixed]`` …) in the old body, or
    when the new Errors & Corrections (``errors``) holds it (moved there as a fix). A restore
    marker the model wrote itself is removed. With ``conversation`` (the folded messages), a
    resolution tag written this round stays only when they speak of the item. See
    ``document.guards.open_issues``.
    """
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    content, reason, restored = restore_marked(old_body, op.content, errors, conversation)
    if content == op.content:
        return GuardOutcome(op, reason)
    return GuardOutcome(SectionOp("UPDATE", content=content), reason, tuple(restored))
