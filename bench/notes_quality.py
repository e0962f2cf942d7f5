"""How clean a Working Memory's notes are: duplicate items and misplaced items (issue 46).

``note_counts(document)`` reads one document, whoever wrote it (the real writer of
``bench/realmodel.py``, the offline writer, a scripted one), and counts, over the sections
that keep what they hold (Current State and the title aside):

- **duplicates**: items that say a thing another item already says — the same statement once
  markers (``[new]``, ``[restored]``), speaker prefixes (``User:``), acknowledgements
  (``Noted:``), case and punctuation are set aside (``units.statement_key``), or a statement
  standing whole inside an item of another section (a correction record in Errors &
  Corrections beside the corrected fact is one thing in two roles and is not counted);
- **misplaced**: items outside their section — an error, a fix or a correction outside Errors &
  Corrections, a follow-up (TODO) outside Open Issues and Errors & Corrections, an
  acknowledgement or small talk anywhere, a Files & Context item that names no file or URL.

The kinds are the capture check's own (``units.statement_kind``): rules, not a judge, so the
counts are a floor for what a reader would flag, the same on every run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from wm_langgraph.document.sections import DURABLE_SECTIONS, parse_working_memory, section_items
from wm_langgraph.document.text import extract_paths
from wm_langgraph.document.text.units import is_small_talk, statement_key, statement_kind

__all__ = ["NoteCounts", "note_counts"]

ERRORS = "Errors & Corrections"
OPEN = "Open Issues"
FILES = "Files & Context"
_ERROR_KINDS = frozenset({"error", "fix", "correction"})
_RECORD_RE = re.compile(
    r"^(?:\[[^\]\n]{0,40}\]\s*)*"
    r"(?:user correction|correction|superseded|fixed|fix|用户纠正|已被更正)\s*[:：]",
    re.IGNORECASE,
)
_MIN_INSIDE = 24
"""The shortest statement counted when it stands inside another item (shorter ones are
phrases, not statements)."""


@dataclass(frozen=True)
class NoteCounts:
    """The counts of one document.

    Attributes:
        items: Items in the sections that keep what they hold.
        duplicates: Items that repeat another item.
        misplaced: Items outside their section.
        examples: A few of the flagged items, ``(why, section, item)``.
    """

    items: int
    duplicates: int
    misplaced: int
    examples: list[tuple[str, str, str]] = field(default_factory=list)


def _misplaced(section: str, item: str) -> str:
    """Why ``item`` does not belong in ``section`` ("" when it does)."""
    if is_small_talk(item):
        return "small talk"
    if section == FILES:
        return "" if extract_paths(item) or "://" in item else "not a file"
    kind = statement_kind(item)
    if kind in _ERROR_KINDS and section != ERRORS:
        return f"{kind} outside {ERRORS}"
    if kind == "todo" and section not in {OPEN, ERRORS} and not item.startswith("[resolved]"):
        return f"follow-up outside {OPEN}"
    return ""


def note_counts(document: str | Mapping[str, str], *, examples: int = 5) -> NoteCounts:
    """The duplicate and misplaced items of ``document`` (module docstring).

    Args:
        document: A Working Memory (Markdown), or its parsed sections.
        examples: How many flagged items to keep for a report.
    """
    sections = parse_working_memory(document) if isinstance(document, str) else document
    items = [
        (name, item) for name in DURABLE_SECTIONS for item in section_items(sections.get(name, ""))
    ]
    flagged: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    duplicates = 0
    for n, (name, item) in enumerate(items):
        key = statement_key(item)
        inside = (
            len(key) >= _MIN_INSIDE
            and not _RECORD_RE.match(item)
            and any(
                other_name != name and key in statement_key(other) and not _RECORD_RE.match(other)
                for m, (other_name, other) in enumerate(items)
                if m < n
            )
        )
        if (key and key in seen) or inside:
            duplicates += 1
            flagged.append(("duplicate", name, item))
        seen.add(key)
    misplaced = 0
    for name, item in items:
        why = _misplaced(name, item)
        if why:
            misplaced += 1
            flagged.append((why, name, item))
    return NoteCounts(len(items), duplicates, misplaced, flagged[:examples])
