"""The marks a display puts on an item come from the memory's records, never from its text.

The document carries the guards' marks as text (``[restored]``, ``[silently dropped,
restored]``, ``superseded: …``, ``[moved out: N older items …]``), and text can be typed by
anyone: a user, a tool's output, a pasted page, a writer that copies or invents them. Entry
quotes such marks (:mod:`wm_langgraph.document.text.entry`), and the displays go further: a
badge says what a record vouches for.

- **Restored** (Key Facts, Open Issues): every Working Memory version stores its guard
  decisions; a guard that restores items says how many in its reason (``restored 2
  bullet(s) …``, ``restored 1 silently dropped item``). The items a version added to that
  section carrying the restore mark, the last ones up to that number (a guard appends what
  it restores), are the restored ones; an item keeps its badge in later versions while it
  stands as it was.
- **Superseded** (Errors & Corrections): the merge records how many retired Key Facts bullets
  it wrote there (``recorded 1 superseded Key Facts bullet(s)``); the same rule.
- **Moved out**: the size contract stores the items it moves out under the version that moved
  them (the ``moved`` namespace); the marker gets its badge only when the records hold moved
  items up to that version, and the badge gives their recorded count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wm_langgraph.document.guards import DROPPED_MARKER, RESTORED_MARKER, SUPERSEDED_PREFIX
from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    item_key,
    parse_working_memory,
    section_items,
)

__all__ = ["NO_MARKS", "Marks", "VersionRecord", "marks_by_version"]

_RESTORED_RE = re.compile(r"\brestored (\d+)\b")
_SUPERSEDED_RE = re.compile(r"\brecorded (\d+) superseded\b")
_ERRORS = "Errors & Corrections"


@dataclass(frozen=True, slots=True)
class Marks:
    """What the records vouch for in one version of the document.

    Attributes:
        restored: Keys (``item_key``) of the items a guard restored.
        superseded: Keys of the Errors & Corrections items that retire a Key Facts bullet.
        moved: Items the size contract moved out of the document up to this version, as
            recorded in the store (0: none, so a moved-out marker is not the memory's).
    """

    restored: frozenset[str] = frozenset()
    superseded: frozenset[str] = frozenset()
    moved: int = 0


NO_MARKS = Marks()
"""Nothing vouched for: a document shown without its records gets no guard badge."""


@dataclass(frozen=True, slots=True)
class VersionRecord:
    """What one stored version says: its document, its guard decisions, what it moved out."""

    text: str
    decisions: Sequence[Mapping[str, Any]]
    moved: int = 0


def _items(document: str) -> dict[str, list[str]]:
    if not is_working_memory(document):
        return {name: [] for name in SECTIONS}
    bodies = parse_working_memory(document)
    return {name: section_items(bodies[name]) for name in SECTIONS}


def _count(decisions: Sequence[Mapping[str, Any]], section: str, pattern: re.Pattern[str]) -> int:
    total = 0
    for decision in decisions:
        if decision.get("section") == section:
            total += sum(int(m.group(1)) for m in pattern.finditer(str(decision.get("reason", ""))))
    return total


def _last_marked(added: list[str], count: int, marked: Any) -> set[str]:
    found = [item_key(i) for i in added if marked(i)]
    return set(found[max(0, len(found) - count) :]) if count > 0 else set()


def _restore_marked(item: str) -> bool:
    return RESTORED_MARKER in item or DROPPED_MARKER in item


def _supersede_marked(item: str) -> bool:
    return item.strip().casefold().startswith(SUPERSEDED_PREFIX)


def marks_by_version(versions: Sequence[VersionRecord]) -> list[Marks]:
    """The marks of each version of one timeline (oldest first), from its records."""
    out: list[Marks] = []
    before: dict[str, list[str]] = {name: [] for name in SECTIONS}
    restored: set[str] = set()
    superseded: set[str] = set()
    moved = 0
    for version in versions:
        now = _items(version.text)
        present = {item_key(i) for items in now.values() for i in items}
        for name in SECTIONS:
            old = {item_key(i) for i in before[name]}
            added = [i for i in now[name] if item_key(i) not in old]
            count = _count(version.decisions, name, _RESTORED_RE)
            restored |= _last_marked(added, count, _restore_marked)
            if name == _ERRORS:
                count = _count(version.decisions, name, _SUPERSEDED_RE)
                superseded |= _last_marked(added, count, _supersede_marked)
        restored &= present
        superseded &= present
        moved += version.moved
        out.append(Marks(frozenset(restored), frozenset(superseded), moved))
        before = now
    return out
