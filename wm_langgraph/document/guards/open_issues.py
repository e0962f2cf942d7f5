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

The marker itself gives nothing: only this guard writes it, and a marker the model wrote on an
item the guard did not restore is removed (it would claim a restore that never happened).
"""

from __future__ import annotations

import re

from wm_langgraph.document.ops import GuardOutcome, SectionOp
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.document.text.match import item_present, strip_tags

__all__ = ["DROPPED_MARKER", "guard_open_issues", "is_resolved", "restore_open_issues"]

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


def _strip_forged_markers(old_body: str, content: str) -> tuple[str, int]:
    """Remove the restore marker from items that did not carry it, as they are, in the old body."""
    genuine = {
        item_key(item) for item in section_items(old_body) if item.startswith(DROPPED_MARKER)
    }
    out: list[str] = []
    forged = 0
    for line in content.splitlines():
        items = section_items(line) if DROPPED_MARKER in line else []
        if items and items[0].startswith(DROPPED_MARKER) and item_key(items[0]) not in genuine:
            line = re.sub(re.escape(DROPPED_MARKER) + r"[ \t]*", "", line, count=1)  # noqa: PLW2901
            forged += 1
        out.append(line)
    return ("\n".join(out), forged) if forged else (content, 0)


def restore_open_issues(old_body: str, content: str, errors: str = "") -> tuple[str, str]:
    """Apply the Open Issues rule to an UPDATE's ``content``.

    Args:
        old_body: The Open Issues body before this round.
        content: The UPDATE's new body.
        errors: The new Errors & Corrections body (an item it holds was moved there as a fix).

    Returns:
        The content to apply (dropped unresolved items restored, marked once) and the reason
        (``""`` when the UPDATE passes unchanged).
    """
    content, forged = _strip_forged_markers(old_body, content)
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
    if restored:
        lines = "\n".join(f"- {item}" for item in restored)
        content = f"{content.rstrip()}\n{lines}" if content.strip() else lines
        notes.insert(0, f"restored {_count(len(restored), 'silently dropped item')}")
    return content, "; ".join(notes)


def guard_open_issues(old_body: str, op: SectionOp, *, errors: str = "") -> GuardOutcome:
    """Behaviour §4.6 (owner decision): an open item leaves only by resolution.

    An old item the UPDATE no longer holds (whole-item match) is restored as
    ``- [silently dropped, restored] <item>``, every time, with the marker written once. It may
    leave when it was marked ``[resolved]`` (or ``[done]``, ``[fixed]`` …) in the old body, or
    when the new Errors & Corrections (``errors``) holds it (moved there as a fix). A restore
    marker the model wrote itself is removed. See ``document.guards.open_issues``.
    """
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    content, reason = restore_open_issues(old_body, op.content, errors)
    if content == op.content:
        return GuardOutcome(op, reason)
    return GuardOutcome(SectionOp("UPDATE", content=content), reason)
