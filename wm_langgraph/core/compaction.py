"""The hard size contract of the stored Working Memory (issue 11). Pure, no I/O.

Whatever the writer returns, the document that is stored never exceeds a **ceiling**, and the
consolidation reminders aim at a lower **target** (see :func:`size_contract`). Above the
ceiling the merge result is compacted in code, in this order, each step only while still over:

1. ``dedupe``: a clause (split at ``;`` and sentence ends) that repeats an earlier clause of the
   same section is dropped (restore/salvage markers ignored when comparing); an item left empty
   goes. Every anchor stays: the earlier copy carries it.
2. ``merge``: an item whose anchors are all carried by an earlier item of the same section is
   merged into that item (its remaining clauses appended), one bullet instead of two.
3. ``files``: a Files & Context entry is shortened to its path(s) and what was done (the first
   clause, at most 10 words), any anchor it would lose put back in parentheses.
4. ``move`` (last resort): the oldest items go out of the document into a record the caller
   stores (``archive_search`` finds it) — first only from the sections over their share of
   the ceiling (``TARGET_SHARES``), so a small section (the session's one goal, a few open
   issues) keeps its items while a large one can give; among those, unanchored items before
   anchored ones, a section's newest item last, always from the section furthest over its
   share, so a flood in one section never pushes the others out; items the plan took before
   the one that made the document fit go back when they fit (a 200 KB flood moves alone); the
   Session Title stays (a title
   alone over the ceiling is shortened, its full text moved out). A marker bullet
   at the top of Key Facts & Decisions counts everything moved out so far
   (``[moved out: N older items …]``); the count is read back from the previous document, so a
   writer that drops the marker cannot reset it.

Nothing is lost silently: steps 1-3 keep every anchor, step 4 returns what it moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from wm_langgraph.core._compact_steps import (
    MERGE_MAX_OVER,
    MOVED_MARKER_RE,
    Bodies,
    MovedItem,
    cut_title,
    dedupe,
    merge,
    move,
    render,
    shorten_files,
)
from wm_langgraph.core.sections import SECTIONS, parse_working_memory
from wm_langgraph.core.tokens import TokenCounter, count_tokens

__all__ = [
    "CEILING_FACTOR",
    "LAYER_FACTOR",
    "MIN_TARGET_TOKENS",
    "MOVED_MARKER_RE",
    "TARGET_SHARE",
    "Compaction",
    "MovedItem",
    "SizeContract",
    "enforce_size_contract",
    "moved_count",
    "size_contract",
]

TARGET_SHARE = 0.30
"""The target is at most this share of the assemble budget's ``usable`` tokens."""
LAYER_FACTOR = 1.5
"""The target is at most this times ``archive_memory_tokens`` (8,000 by default: 12,000, the
whole-document size the create and update prompts ask for)."""
CEILING_FACTOR = 1.5
"""The ceiling is the target times this."""
MIN_TARGET_TOKENS = 1_000
"""The target never drops below this (tiny budgets would otherwise leave no room for facts)."""


@dataclass(frozen=True, slots=True)
class SizeContract:
    """Token limits of the stored document.

    Attributes:
        target: What the consolidation reminders aim at; a document above it gets warnings.
        ceiling: The stored document never counts more; above it the merge compacts in code.
    """

    target: int
    ceiling: int

    def __post_init__(self) -> None:
        if self.target < 1 or self.ceiling < self.target:
            raise ValueError(
                f"a size contract needs 1 <= target <= ceiling, got {self.target}, {self.ceiling}"
            )


def size_contract(usable: int, archive_memory_tokens: int) -> SizeContract:
    """The contract for an assemble budget: ``target = max(1,000, min(1.5 ×
    archive_memory_tokens, 30% of usable))`` and ``ceiling = 1.5 × target``.

    With the defaults that is 12,000 / 18,000 tokens for large windows (the prompts' "about
    12,000 tokens overall") and 30% / 45% of ``usable`` for small ones (8k: 2,040 / 3,060), so
    the WM is shown whole beside the live messages in normal operation; the ceiling leaves
    room for the model's next consolidation.

    Args:
        usable: The assemble budget's usable tokens (``token_budget`` minus the reply reserve).
        archive_memory_tokens: The configured cap of the WM layer.
    """
    layer = int(archive_memory_tokens * LAYER_FACTOR)
    target = max(MIN_TARGET_TOKENS, min(layer, int(usable * TARGET_SHARE)))
    return SizeContract(target=target, ceiling=int(target * CEILING_FACTOR))


@dataclass(frozen=True, slots=True)
class Compaction:
    """What :func:`enforce_size_contract` did.

    Attributes:
        text: The document to store (at most the ceiling, by the counter).
        moved: The items moved out in this call, oldest first (store them; empty when none).
        moved_total: Items moved out so far, this call included (the marker's count).
        steps: The steps that changed the document (``dedupe``, ``merge``, ``files``, ``move``,
            ``marker`` when only the count marker was restored).
        tokens_before: The input document's tokens.
        tokens: The result's tokens.
    """

    text: str
    moved: tuple[MovedItem, ...]
    moved_total: int
    steps: tuple[str, ...]
    tokens_before: int
    tokens: int


def moved_count(document: str) -> int:
    """The count of the ``[moved out: N older items …]`` marker in ``document`` (0 without)."""
    counts = [int(m.group(1).replace(",", "")) for m in MOVED_MARKER_RE.finditer(document)]
    return max(counts, default=0)


# ------------------------------------------------------------------------------------ entry


def enforce_size_contract(
    document: str, *, ceiling: int, prior: str = "", counter: TokenCounter = count_tokens
) -> Compaction:
    """Compact ``document`` (a merge result) so that it counts at most ``ceiling`` tokens.

    Args:
        document: The seven-section document the merge produced.
        ceiling: The hard limit (:attr:`SizeContract.ceiling`).
        prior: The document the merge started from; its moved-out count carries forward.
        counter: Text -> tokens.

    Returns:
        The compaction; ``text`` is ``document`` unchanged when it fits and no items were ever
        moved out.
    """
    before = counter(document)
    earlier = max(moved_count(prior), moved_count(document))
    has_marker = MOVED_MARKER_RE.search(document) is not None
    if before <= ceiling and not earlier and not has_marker:
        return Compaction(document, (), 0, (), before, before)
    parsed = parse_working_memory(document)
    bodies: Bodies = {
        name: [
            line
            for line in parsed[name].splitlines()
            if line.strip() and not MOVED_MARKER_RE.search(line)
        ]
        for name in SECTIONS
    }
    steps: list[str] = []
    text = render(bodies, earlier)
    if counter(text) <= ceiling:
        steps = ["marker"] if text != document else []
        return Compaction(text, (), earlier, tuple(steps), before, counter(text))
    moved: list[MovedItem] = []
    for name, step in (("dedupe", dedupe), ("merge", merge), ("files", shorten_files)):
        if name == "merge" and counter(text) > MERGE_MAX_OVER * ceiling:
            continue
        if step(bodies):
            steps.append(name)
            text = render(bodies, earlier)
            if counter(text) <= ceiling:
                return Compaction(text, (), earlier, tuple(steps), before, counter(text))
    bodies, moved = move(bodies, ceiling, earlier, counter)
    if moved:
        steps.append("move")
    total = earlier + len(moved)
    text = render(bodies, total)
    if counter(text) > ceiling:
        moved.append(cut_title(bodies, ceiling, total + 1, counter))
        total += 1
        text = render(bodies, total)
        steps.append("title")
    return Compaction(text, tuple(moved), total, tuple(steps), before, counter(text))
