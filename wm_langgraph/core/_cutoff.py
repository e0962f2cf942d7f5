"""What survives of an update op that the end of the reply cut off (SPEC §5, owner decision).

Private helper of ``core._arguments``. A reply cut at the model's output limit ends inside one
string: an UPDATE body or an APPEND item. Its complete part is kept and then judged by the
guards like any op:

- an APPEND keeps its complete items (the cut item is dropped);
- an UPDATE of a list-like section keeps its complete lines (the cut line is dropped);
- an UPDATE of a single-line or paragraph section (Session Title, Current State) whose text has
  no complete line keeps its text;
- a degenerate tail — one short unit repeated to the limit (``1111…``, ``KEEP, KEEP, …``), as
  weak grammar-forced models produce when they loop — is not content and is removed first.
"""

from __future__ import annotations

__all__ = ["PARAGRAPH_SECTIONS", "complete_part", "strip_runaway"]

PARAGRAPH_SECTIONS: frozenset[str] = frozenset({"Session Title", "Current State"})
"""Sections written as one line or one paragraph: a cut-off body keeps its text."""

_MAX_UNIT = 40  # longest repeated unit looked for
_MIN_REPEATS = 5  # a unit repeated this many times at the very end is a loop
_MIN_RUN_CHARS = 16  # ... and the loop covers at least this many characters


def strip_runaway(text: str) -> str:
    """``text`` without a looping tail (a short unit repeated to the end of the text).

    The end may stop inside a unit (the reply was cut there); the loop is removed whole, with
    its first occurrence, since a model that loops has stopped writing content.
    """
    size = len(text)
    best = size
    for unit in range(1, min(_MAX_UNIT, size // _MIN_REPEATS) + 1):
        start = size
        while start - unit - 1 >= 0 and text[start - 1] == text[start - 1 - unit]:
            start -= 1
        # text[start - unit:] is periodic with period ``unit``
        run = size - (start - unit)
        if run >= unit * _MIN_REPEATS and run >= _MIN_RUN_CHARS:
            best = min(best, start - unit)
    return text[:best].rstrip() if best < size else text


def complete_part(section: str, text: str) -> str | None:
    """The part of a cut-off UPDATE body that was written completely, or None for nothing.

    Args:
        section: The section the body belongs to.
        text: The body as far as the reply got (without the cut marker).
    """
    kept = strip_runaway(text)
    if "\n" in kept:
        kept = kept[: kept.rfind("\n")]
    elif section not in PARAGRAPH_SECTIONS:
        return None  # a list section's only line is cut: nothing of it is complete
    kept = kept.rstrip()
    return kept if kept.strip() else None
