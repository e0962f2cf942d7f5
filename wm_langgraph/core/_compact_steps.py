"""The compaction steps behind ``core.compaction.enforce_size_contract`` (private).

Bodies are lists of non-blank lines per section; every step changes them in place and says
whether it changed anything. See ``core.compaction`` for the order and the guarantees.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from wm_langgraph.core.protocol import TARGET_SHARES
from wm_langgraph.core.sections import SECTIONS, render_working_memory, section_items
from wm_langgraph.core.text import extract_anchors, extract_paths, missing_anchors
from wm_langgraph.core.tokens import TokenCounter

__all__ = [
    "MERGE_MAX_OVER",
    "MOVED_MARKER_RE",
    "Bodies",
    "MovedItem",
    "cut_title",
    "dedupe",
    "merge",
    "move",
    "render",
    "shorten_files",
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
_FILES_WORDS = 10
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


def merge(bodies: Bodies) -> bool:
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
                    if extra:
                        merged = _join([*_clauses(_text_of(lines[host])), *extra])
                        lines[host] = _as_line(lines[host], merged)
                    alive[j] = False
                    changed = True
                    continue
            for anchor in mine:
                owner.setdefault(anchor, []).append(j)
        bodies[name] = [line for line, keep in zip(lines, alive, strict=True) if keep]
    return changed


def shorten_files(bodies: Bodies) -> bool:
    lines = bodies[_FILES]
    # Anchors of the other sections, read once and only if an entry would lose one.
    others: frozenset[str] | None = None
    in_files: Counter[str] = Counter()
    for line in lines:
        in_files.update(_anchors(_text_of(line)))
    changed = False
    for index, line in enumerate(lines):
        text = _text_of(line)
        paths = extract_paths(text)
        if not paths:
            continue
        rest = text
        for path in paths:
            rest = rest.replace(path, " ")
        rest = re.sub(r"^[\s`'\"(),:;—–-]+", "", re.sub(r"\s+", " ", rest)).strip()
        first = _clauses(rest)[0] if _clauses(rest) else ""
        words = _WORD_RE.findall(first)
        what = " ".join(words[:_FILES_WORDS]) + (" …" if len(words) > _FILES_WORDS else "")
        short = ", ".join(dict.fromkeys(paths)) + (f": {what.rstrip(' ;,.:')}" if what else "")
        if len(short) >= len(text):
            continue
        own = _anchors(text)
        lost = {a for a in missing_anchors(own, short) if in_files[a] <= 1}
        if lost and others is None:
            rest_of_document = "\n".join("\n".join(bodies[n]) for n in SECTIONS if n != _FILES)
            others = frozenset(extract_anchors(rest_of_document))
        lost -= others or frozenset()
        if lost:
            short += f" ({', '.join(_spans(text, sorted(lost)))})"
        if len(short) < len(text):
            lines[index] = _as_line(line, short)
            in_files.subtract(own)
            in_files.update(_anchors(short))
            changed = True
    return changed


def _spans(text: str, anchors: list[str]) -> list[str]:
    """The original wording of each anchor in ``text`` (the anchor itself when not found)."""
    out: list[str] = []
    for anchor in anchors:
        pattern = r"\s+".join(re.escape(part) for part in anchor.split())
        match = re.search(pattern, text, re.IGNORECASE)
        out.append(match.group(0) if match else anchor)
    return list(dict.fromkeys(out))


def _move_plan(bodies: Mapping[str, list[str]], ceiling: int) -> list[tuple[str, int]]:
    """The move order, every item once.

    First only the sections holding more than their share of the ceiling
    (:data:`~wm_langgraph.core.protocol.TARGET_SHARES`), so a small section (the session's one
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
