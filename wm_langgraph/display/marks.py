"""The marks a display puts on an item come from the memory's records, never from its text.

The document carries the memory's marks as text (``[restored]``, ``[silently dropped,
restored]``, ``superseded: …``, ``[moved out: N older items …]``, the consolidation sentinel),
and text can be typed by anyone: a user, a tool's output, a pasted page, a writer that copies
or invents them. Entry quotes such marks (:mod:`wm_langgraph.document.text.entry`), and the
displays go further: a badge says what a record vouches for, item by item.

- **What a version wrote.** Every Working Memory version stores its guard decisions; each
  lists in ``items`` what the merge or the size contract wrote into the document itself, as
  written (:class:`~wm_langgraph.document.merge.GuardDecision`: a restored item, a
  ``superseded: …`` record, the consolidation sentinel; the size contract's decision: the
  moved-out marker). An item of the version's document with the same text (``item_key``) in
  that section — anywhere, for the size contract's decision, which concerns the whole
  document — was written by the memory in that version. Nothing else is: the same words
  written by the writer or typed by a user are in no record.
- **Carried forward.** An item keeps the version that first wrote it while it stands, as it
  was, in the same section of every later version; once it is gone (or reworded), a copy
  that comes back later is nobody's record unless a guard writes it again.
- **Moved out**: the marker is vouched for only when its count is the number of moved items
  the store holds up to that version (the ``moved`` namespace, one record per version that
  moved items out).
- **Stored before the records.** A version whose decisions carry no ``items`` (written before
  the records existed) vouches for nothing: an item with a mark's text that first appears
  there has an origin nobody recorded, and the display says so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wm_langgraph.document.compaction import MOVED_MARKER_RE
from wm_langgraph.document.guards import (
    CONSOLIDATION_SENTINEL,
    DROPPED_MARKER,
    RESTORED_MARKER,
    SUPERSEDED_PREFIX,
)
from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    item_key,
    parse_working_memory,
    section_items,
)

__all__ = [
    "NO_MARKS",
    "Marks",
    "VersionRecord",
    "has_mark_text",
    "marks_by_version",
    "recorded_items",
]

Place = tuple[str, str]
"""``(section, item_key)``: an item where it stands."""


@dataclass(frozen=True, slots=True)
class Marks:
    """What the records vouch for in one version of the document.

    Attributes:
        written: ``(section, item_key)`` -> the number (1 = the first) of the version whose
            records say the memory wrote that item, for the items that stand as written.
        moved: Items the size contract moved out of the document up to this version, as
            recorded in the store (0: none, so a moved-out marker is not the memory's).
        unrecorded: Items carrying a mark's text that first appear in a version stored before
            the records existed: their origin is not known.
    """

    written: Mapping[Place, int] = field(default_factory=dict)
    moved: int = 0
    unrecorded: frozenset[Place] = frozenset()

    def origin(self, section: str, item: str) -> int | None:
        """The version that wrote ``item`` of ``section`` (None: no record says the memory
        did)."""
        return self.written.get((section, item_key(item)))

    def unknown(self, section: str, item: str) -> bool:
        """True when ``item`` carries a mark whose origin no record gives."""
        return (section, item_key(item)) in self.unrecorded


NO_MARKS = Marks()
"""Nothing vouched for: a document shown without its records gets no guard badge."""


@dataclass(frozen=True, slots=True)
class VersionRecord:
    """What one stored version says: its document, its guard decisions, what it moved out."""

    text: str
    decisions: Sequence[Mapping[str, Any]]
    moved: int = 0


def has_mark_text(section: str, item: str) -> bool:
    """True when ``item`` carries the text of one of the memory's marks (in ``section``)."""
    return (
        RESTORED_MARKER in item
        or DROPPED_MARKER in item
        or item.strip() == CONSOLIDATION_SENTINEL
        or MOVED_MARKER_RE.search(item) is not None
        or (
            section == "Errors & Corrections"
            and item.strip().casefold().startswith(SUPERSEDED_PREFIX)
        )
    )


def recorded_items(decisions: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]] | None:
    """``(section, text)`` of every item the decisions say the memory wrote (``section`` is
    the decision's: a section name, or the size contract's whole-document name); None when a
    decision predates the record (it has no ``items`` list)."""
    out: list[tuple[str, str]] = []
    for decision in decisions:
        items = decision.get("items")
        if not isinstance(items, list):
            return None
        section = str(decision.get("section", ""))
        out.extend((section, str(item)) for item in items if isinstance(item, str))
    return out


def _items(document: str) -> dict[str, list[str]]:
    if not is_working_memory(document):
        return {name: [] for name in SECTIONS}
    bodies = parse_working_memory(document)
    return {name: section_items(bodies[name]) for name in SECTIONS}


def _places(section: str, text: str) -> list[Place]:
    key = item_key(text)
    return [(section, key)] if section in SECTIONS else [(name, key) for name in SECTIONS]


def marks_by_version(versions: Sequence[VersionRecord]) -> list[Marks]:
    """The marks of each version of one timeline (oldest first), from its records."""
    out: list[Marks] = []
    written: dict[Place, int] = {}
    unrecorded: set[Place] = set()
    before: set[Place] = set()
    moved = 0
    for number, version in enumerate(versions, start=1):
        items = _items(version.text)
        present = {(name, item_key(i)) for name in SECTIONS for i in items[name]}
        written = {place: n for place, n in written.items() if place in present}
        unrecorded &= present
        recorded = recorded_items(version.decisions)
        if recorded is None:
            unrecorded |= {
                (name, item_key(i))
                for name in SECTIONS
                for i in items[name]
                if (name, item_key(i)) not in before and has_mark_text(name, i)
            }
        else:
            for section, text in recorded:
                for place in _places(section, text):
                    if place in present:
                        written.setdefault(place, number)
                        unrecorded.discard(place)
        moved += version.moved
        out.append(Marks(dict(written), moved, frozenset(unrecorded)))
        before = present
    return out
