"""The hard size contract of the stored Working Memory. Pure, no I/O.

Whatever the writer returns, the document that is stored never exceeds a **ceiling**, and the
consolidation reminders aim at a lower **target** (see :func:`size_contract`). Above the
ceiling the merge result is compacted in code, in this order, each step only while still over:

1. ``dedupe``: a clause (split at ``;`` and sentence ends) that repeats an earlier clause of the
   same section is dropped (restore/salvage markers ignored when comparing); an item left empty
   goes. Every anchor stays: the earlier copy carries it.
2. ``merge``: an item whose anchors are all carried by an earlier item of the same section is
   merged into that item (its remaining clauses appended), one bullet instead of two — only
   while the merged item stays within the item bound (``SectionLimits.item_tokens``): no item
   grows without bound, so a merge that would overfill the earlier item leaves both.
3. ``move`` (last resort): the oldest items go out of the document into a record the caller
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

Nothing is lost silently: steps 1-2 keep every clause's text (a repeated clause stays where it
first stood), step 3 returns what it moved. No item is shortened in place (SPEC §11: never cut
with "…" so that a name, number or identifier is lost): what does not fit moves out whole,
searchable, and the marker says so. (A Files & Context step that cut entries to their paths and
ten words once did: "the boat is the blue one at pier …".)

Inside, bodies are lists of non-blank lines per section; every step changes them in place and
says whether it changed anything.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from wm_langgraph.document.guards.sizes import SectionLimits, section_limits
from wm_langgraph.document.protocol import TARGET_SHARES
from wm_langgraph.document.sections import (
    SECTIONS,
    parse_working_memory,
    render_working_memory,
    section_items,
)
from wm_langgraph.document.text import (
    extract_anchors,
)
from wm_langgraph.document.tokens import TokenCounter, count_tokens

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


MOVED_MARKER_RE = re.compile(r"\[moved out: ([\d,]+) older items?\b[^\]\n]*\]")
"""Matches the marker bullet that counts the items moved out of the document."""

_TITLE = "Session Title"
_FACTS = "Key Facts & Decisions"
_FILES = "Files & Context"
_MARKER_HOME = _FACTS

_MOVE_ORDER = (  # tie-break: the least critical section first
    "Current State",
    _FILES,
    "Errors & Corrections",
    _FACTS,
    "Task & Goals",
    "Open Issues",
)
_CLAUSE_SPLIT_RE = re.compile(r"(?<=[;；])\s*|(?<=[.!?。！？])\s+(?=[A-Z0-9\[`\"'(\u4e00-\u9fff])")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_NOISE_PREFIX_RE = re.compile(
    r"^(?:\[(?:restored|silently dropped, restored|new)\]\s*)+", re.IGNORECASE
)
_WORD_RE = re.compile(r"\S+")
# Above this many lines the move plan tells anchored items by a cheap pattern (digits, a
# capitalised word, a path-like token) instead of the full anchor extractor: a writer that
# returns 10,000 items must not make every commit take seconds. Only the order changes.
_CHEAP_PLAN_LINES = 2_000
_CHEAP_ANCHOR_RE = re.compile(r"\d|\b[A-Z][A-Za-z]{2,}|\w[/\\]\w|\.\w{1,5}\b|[\u4e00-\u9fff]")
# The merge step only saves bullet markers; it runs when that can matter.
MERGE_MAX_OVER = 2.0


@lru_cache(maxsize=65_536)
def _anchors(text: str, phrases: bool = True) -> frozenset[str]:
    return frozenset(extract_anchors(text, include_phrases=phrases))


@dataclass(frozen=True, slots=True)
class MovedItem:
    """One item moved out of the document: its section and its text (without bullet marker)."""

    section: str
    text: str


def _marker(total: int) -> str:
    noun = "item is" if total == 1 else "items are"
    return (
        f"- [moved out: {total:,} older {noun} kept outside this document to hold it under its "
        "size limit; archive_search finds them]"
    )


# ------------------------------------------------------------------------------ line helpers


def _without_marker(line: str) -> str:
    """``line`` without the moved-out marker (it is rendered anew, once, at the top of Key
    Facts); a line that held nothing else is empty. A writer that merged the marker into a
    bullet with facts keeps those facts."""
    if not MOVED_MARKER_RE.search(line):
        return line
    rest = MOVED_MARKER_RE.sub("", line)
    rest = re.sub(r"^(\s*(?:[-*+]|\d+[.)])?\s*)\s*[;,.:][\s;,.:]*", r"\1", rest)
    rest = re.sub(r"\s*;\s*(?=;|$)", "", rest).rstrip()
    return rest if re.sub(r"^\s*(?:[-*+]|\d+[.)])?", "", rest).strip(" ;,.:") else ""


def _text_of(line: str) -> str:
    items = section_items(line)
    return items[0] if items else line.strip()


def _as_line(original: str, text: str) -> str:
    match = _BULLET_RE.match(original)
    return f"{match.group(0) if match else '- '}{text}"


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_SPLIT_RE.split(text) if c and c.strip()]


def _clause_key(clause: str) -> str:
    text = _NOISE_PREFIX_RE.sub("", clause.strip())
    return re.sub(r"\s+", " ", text).casefold().strip(" \t.;,:!?*_`'\"。；")


def _join(clauses: Iterable[str]) -> str:
    return "; ".join(c.rstrip(" ;；") for c in clauses)


Bodies = dict[str, list[str]]


def render(bodies: Mapping[str, list[str]], total: int) -> str:
    out = {name: "\n".join(bodies[name]) for name in SECTIONS}
    if total:
        out[_MARKER_HOME] = "\n".join([_marker(total), *bodies[_MARKER_HOME]])
    return render_working_memory(out)


# ------------------------------------------------------------------------------------ steps


def dedupe(bodies: Bodies) -> bool:
    changed = False
    for name in SECTIONS:
        if name == _TITLE:
            continue
        seen: set[str] = set()
        out: list[str] = []
        for line in bodies[name]:
            text = _text_of(line)
            clauses = _clauses(text)
            kept = []
            for clause in clauses:
                key = _clause_key(clause)
                if key and key in seen:
                    continue
                seen.add(key)
                kept.append(clause)
            if len(kept) == len(clauses):
                out.append(line)
            elif kept:
                out.append(_as_line(line, _join(kept)))
                changed = True
            else:
                changed = True
        bodies[name] = out
    return changed


def merge(
    bodies: Bodies, item_tokens: int | None = None, counter: TokenCounter = count_tokens
) -> bool:
    changed = False
    for name in SECTIONS:
        if name in (_TITLE, "Current State"):
            continue
        lines = bodies[name]
        anchors = [_anchors(_text_of(line)) for line in lines]
        owner: dict[str, list[int]] = {}
        alive = [True] * len(lines)
        for j in range(len(lines)):
            mine = anchors[j]
            if mine:
                rarest = min(mine, key=lambda a: len(owner.get(a, ())))
                host = next(
                    (i for i in owner.get(rarest, []) if alive[i] and mine <= anchors[i]), None
                )
                if host is not None:
                    have = {_clause_key(c) for c in _clauses(_text_of(lines[host]))}
                    extra = [c for c in _clauses(_text_of(lines[j])) if _clause_key(c) not in have]
                    merged = _join([*_clauses(_text_of(lines[host])), *extra]) if extra else ""
                    if not extra or item_tokens is None or counter(merged) <= item_tokens:
                        if extra:
                            lines[host] = _as_line(lines[host], merged)
                        alive[j] = False
                        changed = True
                        continue
            for anchor in mine:
                owner.setdefault(anchor, []).append(j)
        bodies[name] = [line for line, keep in zip(lines, alive, strict=True) if keep]
    return changed


def _move_plan(bodies: Mapping[str, list[str]], ceiling: int) -> list[tuple[str, int]]:
    """The move order, every item once.

    First only the sections holding more than their share of the ceiling
    (:data:`~wm_langgraph.document.protocol.TARGET_SHARES`), so a small section (the session's one
    goal, a few open issues) keeps its items while a large one can give; among them unanchored
    items before anchored ones, a section's newest item last, and within a tier always the
    oldest candidate of the section furthest over its share (water-filling), so a flood in one
    section never pushes the others out. Then whatever is left, in the same order by size."""
    cheap = sum(len(bodies[name]) for name in _MOVE_ORDER) > _CHEAP_PLAN_LINES
    share = {name: TARGET_SHARES[name] * ceiling for name in _MOVE_ORDER}
    size = dict.fromkeys(_MOVE_ORDER, 0)
    weight: dict[tuple[str, int], int] = {}
    tiers: list[dict[str, list[int]]] = [{} for _ in range(4)]
    for name in _MOVE_ORDER:
        lines = bodies[name]
        for i, line in enumerate(lines):
            weight[name, i] = _weight(line)
            size[name] += weight[name, i]
            text = _text_of(line)
            anchored = bool(_CHEAP_ANCHOR_RE.search(text) if cheap else _anchors(text, False))
            tiers[2 * int(i == len(lines) - 1) + int(anchored)].setdefault(name, []).append(i)
    order = {name: n for n, name in enumerate(_MOVE_ORDER)}
    plan: list[tuple[str, int]] = []
    for floor in (share, None):
        for candidates in tiers:
            queues = {name: deque(ids) for name, ids in candidates.items()}

            def excess(name: str, floor: dict[str, float] | None = floor) -> float:
                return size[name] - (floor[name] if floor else 0.0)

            heap = [
                (-excess(name), order[name], name)
                for name, queue in queues.items()
                if queue and excess(name) > 0
            ]
            heapq.heapify(heap)
            while heap:
                _, rank, name = heapq.heappop(heap)
                index = queues[name].popleft()
                plan.append((name, index))
                size[name] -= weight[name, index]
                if queues[name] and excess(name) > 0:
                    heapq.heappush(heap, (-excess(name), rank, name))
            for name, queue in queues.items():  # what the floor kept waits for the second pass
                candidates[name] = list(queue)
    return plan


def _weight(line: str) -> int:
    return len(line) // 4 + 1  # a token estimate: enough to order by and to plan with


def _without(bodies: Mapping[str, list[str]], removed: Iterable[tuple[str, int]]) -> Bodies:
    gone: dict[str, set[int]] = {}
    for name, i in removed:
        gone.setdefault(name, set()).add(i)
    return {
        name: [line for i, line in enumerate(lines) if i not in gone.get(name, set())]
        for name, lines in bodies.items()
    }


def move(
    bodies: Bodies, ceiling: int, total: int, counter: TokenCounter
) -> tuple[Bodies, list[MovedItem]]:
    """Move the fewest items of the plan out so that the document fits ``ceiling``.

    The shortest prefix of the plan that fits is found with a few exact counts of the rendered
    document (an estimate from the lines' lengths, galloping, then bisecting), not one count
    per item. Then the prefix's items that are not needed go back, latest in the plan first:
    when one large item (a flood) frees the room, the smaller items the plan ranked before it
    stay in the document."""
    plan = _move_plan(bodies, ceiling)
    sizes: dict[int, int] = {}

    def size(k: int) -> int:
        if k not in sizes:
            sizes[k] = counter(render(_without(bodies, plan[:k]), total + k))
        return sizes[k]

    def fits(k: int) -> bool:
        return size(k) <= ceiling

    whole = size(0)
    if whole <= ceiling or not plan:
        return bodies, []
    chars = [0]
    for name, i in plan:
        chars.append(chars[-1] + len(bodies[name][i]) + 1)
    per_token = max(1.0, sum(len(x) for lines in bodies.values() for x in lines) / whole)
    guess = min(len(plan), max(1, bisect.bisect_left(chars, (whole - ceiling) * per_token)))
    lo, hi = 0, len(plan)  # invariant once settled: not fits(lo) (or lo == 0), fits(hi)
    step = 1
    if fits(guess):
        hi = guess
        while hi - step > 0 and fits(hi - step):
            hi, step = hi - step, step * 2
        lo = max(0, hi - step)
    else:
        lo = guess
        while lo + step < len(plan) and not fits(lo + step):
            lo, step = lo + step, step * 2
        hi = min(len(plan), lo + step)
    lo, hi = _narrow(lo, hi, lambda k: not fits(k))
    k = lo if lo and fits(lo) else hi
    while k < len(plan) and not fits(k):  # marker digits can make the size non-monotone
        k += 1
    gone = _put_back(
        bodies, plan[:k], room=ceiling - size(k), total=total, ceiling=ceiling, counter=counter
    )
    moved = [MovedItem(name, _text_of(bodies[name][i])) for name, i in gone]
    return _without(bodies, gone), moved


def _put_back(
    bodies: Bodies,
    removed: list[tuple[str, int]],
    *,
    room: int,
    total: int,
    ceiling: int,
    counter: TokenCounter,
) -> list[tuple[str, int]]:
    """What must stay out of ``removed`` (plan order): the items that fit the ``room`` left
    under the ceiling go back, latest in the plan first, as long as the estimate allows; the
    exact count then settles how many of them can (bisecting, a few counts)."""
    back: list[tuple[str, int]] = []
    for item in reversed(removed[:-1]):  # the last item of the prefix is the one that fits it
        weight = _weight(bodies[item[0]][item[1]])
        if weight <= room:
            back.append(item)
            room -= weight
    if not back:
        return removed

    def rest(n: int) -> list[tuple[str, int]]:
        kept = set(back[:n])
        return [item for item in removed if item not in kept]

    def fits(n: int) -> bool:
        out = rest(n)
        return counter(render(_without(bodies, out), total + len(out))) <= ceiling

    if fits(len(back)):
        return rest(len(back))
    lo, _ = _narrow(0, len(back), fits)  # fits(0) holds: the prefix fits
    return rest(lo)


def _narrow(lo: int, hi: int, low_side: Callable[[int], bool]) -> tuple[int, int]:
    """Bisect ``lo < hi`` down to ``hi == lo + 1``, keeping ``low_side(lo)`` true and
    ``low_side(hi)`` false (``low_side`` is true up to some point, false after it)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if low_side(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def cut_title(bodies: Bodies, ceiling: int, total: int, counter: TokenCounter) -> MovedItem:
    title = " ".join(_text_of(line) or line.strip() for line in bodies[_TITLE])
    words = _WORD_RE.findall(title)
    keep = len(words)
    while keep > 0:
        keep = keep // 2 if keep > 16 else keep - 1
        bodies[_TITLE] = [" ".join(words[:keep]) + " …"] if keep else []
        if counter(render(bodies, total)) <= ceiling:
            break
    return MovedItem(_TITLE, title)


TARGET_SHARE = 0.40
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

    @property
    def limits(self) -> SectionLimits:
        """The per-section thresholds that follow this target (``section_limits``): the
        seed's 25 bullets / 1,500 tokens at the default target of 12,000."""
        return section_limits(self.target)


def size_contract(usable: int, archive_memory_tokens: int) -> SizeContract:
    """The contract for an assemble budget: ``target = max(1,000, min(1.5 ×
    archive_memory_tokens, 40% of usable))`` and ``ceiling = 1.5 × target``.

    With the defaults that is 12,000 / 18,000 tokens for large windows (the prompts' "about
    12,000 tokens overall") and 40% / 60% of ``usable`` for small ones (8k: 2,720 / 4,080), so
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
        steps: The steps that changed the document (``dedupe``, ``merge``, ``move``, ``title``,
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
    document: str,
    *,
    ceiling: int,
    prior: str = "",
    counter: TokenCounter = count_tokens,
    item_tokens: int | None = None,
) -> Compaction:
    """Compact ``document`` (a merge result) so that it counts at most ``ceiling`` tokens.

    Args:
        document: The seven-section document the merge produced.
        ceiling: The hard limit (:attr:`SizeContract.ceiling`).
        prior: The document the merge started from; its moved-out count carries forward.
        counter: Text -> tokens.
        item_tokens: The item bound (``SizeContract.limits.item_tokens``): the merge step
            never makes an item longer than it. ``None``: no bound.

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
            kept for line in parsed[name].splitlines() if (kept := _without_marker(line)).strip()
        ]
        for name in SECTIONS
    }
    steps: list[str] = []
    text = render(bodies, earlier)
    if counter(text) <= ceiling:
        steps = ["marker"] if text != document else []
        return Compaction(text, (), earlier, tuple(steps), before, counter(text))
    moved: list[MovedItem] = []
    steps_in_order: tuple[tuple[str, Callable[[Bodies], bool]], ...] = (
        ("dedupe", dedupe),
        ("merge", lambda b: merge(b, item_tokens, counter)),
    )
    for name, step in steps_in_order:
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
