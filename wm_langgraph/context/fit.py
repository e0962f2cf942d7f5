"""Cut a Working Memory document to a token budget for one model call (private to assemble).

The stored document is never changed; this builds the text the ``[Session History Summary]``
message shows. Whole items (non-blank lines) are removed, **evenly across sections**: every
section loses about the same share of its items, its oldest first, and keeps its newest item
(never a whole section); the Session Title is not cut. Only a budget too small for the newest
item of every section takes those as well (least critical section first, the title last).
Each cut section starts with a marker naming how many older items it omits, and the text starts
with a note telling the model how to recall them (``archive_search``). A document that is not in the
seven-section format loses its last lines first, as one block.
"""

from __future__ import annotations

from collections.abc import Callable

from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    parse_working_memory,
    render_working_memory,
)

__all__ = ["RECALL_TOOL", "fit_document"]

RECALL_TOOL = "archive_search"
"""The tool the cut-document note points the model to."""

TextSize = Callable[[str], int]
"""Tokens of the summary message built from a document text."""

_TITLE = "Session Title"
# Tie-break when two sections are at the same share: the least critical loses an item first.
_TIE_ORDER = (
    "Files & Context",
    "Errors & Corrections",
    "Key Facts & Decisions",
    "Task & Goals",
    "Open Issues",
    "Current State",
)


def _section_marker(omitted: int) -> str:
    noun = "item" if omitted == 1 else "items"
    return f"[… {omitted} older {noun} omitted; {RECALL_TOOL} finds them …]"


def _note(omitted: int) -> str:
    noun = "item" if omitted == 1 else "items"
    return (
        f"[{omitted} {noun} of this Working Memory omitted to fit the context window; call "
        f"{RECALL_TOOL} in plain words (a question or a few keywords, or an exact name, number "
        "or path) to recall them.]"
    )


def _legacy_marker(omitted: int) -> str:
    return f"[… truncated, {omitted} items omitted …]"


def _plan(bodies: dict[str, list[str]]) -> list[tuple[str, int]]:
    """Removal order: (section, line index), interleaved so every section keeps the same share.

    Line ``i`` of a section with ``n`` lines is removed at rank ``(i + 1) / n``: after any
    prefix of the plan, each section has lost about the same fraction of its lines, and each
    keeps its newest line until every older line of every section is gone. Only a budget too
    small for that takes the newest lines too (least critical section first, the title last).
    """
    ranked: list[tuple[float, int, str, int]] = []
    for order, name in enumerate(_TIE_ORDER):
        lines = bodies.get(name, [])
        n = len(lines)
        ranked.extend(((i + 1) / n, order, name, i) for i in range(n))
    ranked.extend((2.0, 0, _TITLE, i) for i in range(len(bodies.get(_TITLE, []))))
    ranked.sort()
    return [(name, index) for _, _, name, index in ranked]


def _render_cut(bodies: dict[str, list[str]], plan: list[tuple[str, int]], k: int) -> str:
    removed: dict[str, int] = {}
    for name, _ in plan[:k]:
        removed[name] = removed.get(name, 0) + 1
    out: dict[str, str] = {}
    for name in SECTIONS:
        lines = bodies[name]
        gone = removed.get(name, 0)  # the plan removes each section's lines oldest first
        kept = lines[gone:]
        # a section cut whole (only when the budget is tiny) shows no marker: the note counts it
        out[name] = "\n".join([_section_marker(gone), *kept] if gone and kept else kept)
    document = render_working_memory(out)
    return f"{_note(k)}\n\n{document}" if k else document


def _render_legacy(lines: list[str], k: int) -> str:
    kept = lines[: len(lines) - k]
    return "\n".join([*kept, _legacy_marker(k)] if k else kept)


def fit_document(
    document: str, budget: int, size: TextSize, whole_size: int | None = None
) -> tuple[str | None, int, int]:
    """The text to show for ``document`` within ``budget`` (see the module docstring).

    Args:
        document: The stored Working Memory (or a legacy summary).
        budget: The most the summary message may count.
        size: Tokens of the summary message built from a text.
        whole_size: ``size(document)`` when the caller knows it already.

    Returns:
        ``(text, omitted items, message size)``; ``(None, 0, 0)`` when there is no document
        or not even its most reduced form fits.
    """
    if not document.strip() or budget <= 0:
        return None, 0, 0
    whole = size(document) if whole_size is None else whole_size
    if whole <= budget:
        return document, 0, whole
    if is_working_memory(document):
        parsed = parse_working_memory(document)
        bodies = {name: [ln for ln in parsed[name].splitlines() if ln.strip()] for name in SECTIONS}
        plan = _plan(bodies)

        def render(k: int) -> str:
            return _render_cut(bodies, plan, k)

        steps = len(plan)
    else:
        lines = [ln for ln in document.splitlines() if ln.strip()]

        def render(k: int) -> str:
            return _render_legacy(lines, k)

        steps = max(0, len(lines) - 1)
    if size(render(steps)) > budget:
        return None, 0, 0
    lo, hi = 1, steps  # the size is monotone in k up to marker digits; verified below
    while lo < hi:
        mid = (lo + hi) // 2
        if size(render(mid)) <= budget:
            hi = mid
        else:
            lo = mid + 1
    while True:
        text = render(lo)
        measured = size(text)
        if measured <= budget:
            return text, lo, measured
        lo += 1
