"""Consolidation of oversized sections, done the way the update prompt asks when warned.

Private to ``wm_langgraph.writer.offline``. Each function returns a new section body that keeps
every item's substance — names, dates, numbers, paths (the anchors the guards check) — in fewer
bullets: Key Facts grouped by topic, Files & Context one entry per path grouped by directory,
resolved Open Issues folded into lines, older goals folded into lines.

A consolidation of an already consolidated body starts from its parts (group labels and
"Earlier requests:" prefixes are taken off first), so repeated rounds never stack labels. No
item grows without bound: a group, a fold or a directory's entries take a new bullet rather
than take one past the item bound (``SectionLimits.item_tokens``, :data:`ITEM_TOKENS` when no
warning states the limits). Nothing is shortened (SPEC §11: an item is never cut with "…" so
that a name, number or identifier is lost): a body still over its token goal (the size warning's
"target at most … tokens") stays so, and the size contract moves whole items out of the
document, searchable, with the moved-out marker saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from wm_langgraph.document.guards.key_facts import held_by
from wm_langgraph.document.guards.sizes import (
    MIN_TOKENS,
    OVERSIZE_BULLETS,
    OVERSIZE_TOKENS,
    SectionLimits,
    pack_clauses,
)
from wm_langgraph.document.sections import section_items
from wm_langgraph.document.text import extract_paths, normalise_path
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.writer.offline._lang import item_anchors, keywords, lost_anchors, similar

__all__ = [
    "ITEM_TOKENS",
    "MAX_BULLETS",
    "consolidate_facts",
    "consolidate_files",
    "consolidate_goals",
    "consolidate_issues",
]

MAX_BULLETS = OVERSIZE_BULLETS
"""The seed's bullet limit: what a consolidation aims at when no warning states another."""
_MAX_TOKENS = OVERSIZE_TOKENS
ITEM_TOKENS = SectionLimits(tokens=MIN_TOKENS).item_tokens
"""The item bound the writer keeps when no size warning states the memory's limits: the bound
of the smallest limits any memory has (their floor), so it is within every memory's."""
_EARLIER = "Earlier requests: "
_STILL_OPEN = "Still open (older): "
_LABEL_RE = re.compile(r"^([A-Z][\w-]{2,}): (?=\S)")
_OTHER = "(other)"  # the group of entries without a folder
_FOLDER_LABEL_RE = re.compile(r"^((?:[\w.-]+/)+|\(other\)): (?=\S)")
# Between the entries of a group: the next one starts with its path or its kind ("command `…`").
_ENTRY_SPLIT_RE = re.compile(r"; (?=`|[\w-]+ `)")
_PATH_RE = re.compile(r"`([^`]+)`|(\S+/\S+|\S+\.\w+)")
_VIA_RE = re.compile(r"\s*\(via [^)]*\)")
_RESTORED_RE = re.compile(r"(?:^|(?<=[:;]\s))\[restored\]\s*", re.IGNORECASE)


def _semi(parts: Sequence[str]) -> str:
    return "; ".join(parts)


def _commas(parts: Sequence[str]) -> str:
    return ", ".join(parts)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _unlabel(item: str) -> str:
    """Take off group labels a previous consolidation put in front ("Timeouterror: …"): a label
    is a capitalised word the rest of the item repeats."""
    while (match := _LABEL_RE.match(item)) and match.group(1).casefold() in (
        item[match.end() :].casefold()
    ):
        item = item[match.end() :]
    return item


def _parts(items: list[str], max_item_tokens: int | None = None) -> list[str]:
    """The single facts inside consolidated bullets (labels and restore markers off, split at
    "; "); a bullet longer than ``max_item_tokens`` is split at "; " too (it is regrouped within
    the bound)."""
    out: list[str] = []
    for item in items:
        plain = _unlabel(_unmark(item))
        long = max_item_tokens is not None and count_tokens(plain) > max_item_tokens
        pieces = (
            [_unlabel(_unmark(p.strip())) for p in plain.split("; ")]
            if plain != item or long
            else [plain]
        )
        out.extend(p for p in pieces if p)
    return out


def _unmark(item: str) -> str:
    """``item`` without the guards' ``[restored]`` marker (a consolidation restates the fact)."""
    return _RESTORED_RE.sub("", item).strip()


def consolidate_facts(
    items: list[str],
    old_count: int,
    max_tokens: int = _MAX_TOKENS,
    max_bullets: int | None = None,
    max_item_tokens: int = ITEM_TOKENS,
) -> str:
    """Group the items by topic into at most ``max_bullets`` bullets (the warned limit; the
    seed's 25 by default) within ``max_tokens``, every anchor kept.

    Near-duplicates whose anchors another item already carries are merged away; items that
    share keywords are grouped into one bullet; groups are joined smallest-first until the
    bullet target is met — never past ``max_item_tokens`` for one bullet (no item grows
    without bound: when no two groups fit one bullet, more bullets stay). The target never
    drops below 15% of the old bullet count plus one (a stronger shrink would look like data
    loss to the Key Facts guard). Nothing is shortened (SPEC §11): a body still over
    ``max_tokens`` stays so, and the size contract moves whole items out of the document.
    """
    bullets = MAX_BULLETS if max_bullets is None else max(1, max_bullets)
    target = max(min(bullets, old_count), math.ceil(0.15 * old_count) + 1)
    items = _parts(items, max_item_tokens)
    kept: list[str] = []
    for item in items:
        # A near-duplicate goes only when its twin states all of it (the Key Facts guard's
        # test: every anchor and every word); when it states more, it replaces the twin.
        twins = [n for n, k in enumerate(kept) if similar(item, k, threshold=0.6)]
        if any(held_by(item, kept[n]) for n in twins):
            continue
        fuller = next((n for n in twins if held_by(kept[n], item)), None)
        if fuller is None:
            kept.append(item)
        else:
            kept[fuller] = item
    groups = [[item] for item in kept]
    words = [set(keywords(item)) for item in kept]
    sizes = [count_tokens(_joined(group)) for group in groups]
    uids = list(range(len(groups)))  # a merged group gets a new uid
    over: set[tuple[int, int]] = set()  # pairs whose joined bullet counted over the bound
    while len(groups) > target:
        # merge the two most related nearby groups (related facts tend to sit close together)
        # whose bullet stays within the bound (estimated from the groups' sizes, then counted)
        best: tuple[int, int, int, int] | None = None
        for i in range(len(groups)):
            for j in range(i + 1, min(len(groups), i + 8)):
                if sizes[i] + sizes[j] + 1 > max_item_tokens or (uids[i], uids[j]) in over:
                    continue
                score = (len(words[i] & words[j]), -(len(groups[i]) + len(groups[j])), -i, j)
                if best is None or score > best:
                    best = score
        if best is None:
            break  # every further merge would make a bullet longer than the bound
        i, j = -best[2], best[3]
        size = count_tokens(_joined(groups[i] + groups[j]))
        if size > max_item_tokens:
            over.add((uids[i], uids[j]))
            continue
        groups[i] += groups.pop(j)
        words[i] |= words.pop(j)
        sizes.pop(j)
        uids.pop(j)
        sizes[i], uids[i] = size, max(uids) + 1
    # No topic label: a capitalised label reads as a name to the guards, and the next round's
    # regrouping would "lose" it and bring the facts back as restored. Nothing is shortened:
    # what does not fit the goal stays whole, and the size contract moves whole items out.
    return _bullets([_joined(group) for group in groups])


def _joined(parts: list[str]) -> str:
    return "; ".join(p.rstrip(".。") for p in parts)


def _file_entries(items: list[str]) -> list[str]:
    """Single path entries: directory groups of an earlier consolidation split apart."""
    out: list[str] = []
    for item in items:
        text, folders = item, []
        while match := _FOLDER_LABEL_RE.match(text):
            folders.append(match.group(1))
            text = text[match.end() :]
        if text != item or "; `" in text:
            # A group's entries may be bare names under its folder (a branch "feature/x").
            bare = [re.escape(f) for f in folders if f != _OTHER]
            split = re.compile(_ENTRY_SPLIT_RE.pattern[:-1] + "".join(f"|{b}" for b in bare) + ")")
            out.extend(p.strip() for p in split.split(text) if p.strip())
        else:
            out.append(text)
    return out


def _merge_entry(old: str, new: str) -> str:
    """One entry for a path seen twice: the first entry plus the new actions of the second."""
    head, _, done = old.partition(" — ")
    _, _, more = new.partition(" — ")
    if not done or not more:
        return old if len(old) >= len(new) else new
    actions = [a.strip() for a in _VIA_RE.sub("", done).split(",") if a.strip()]
    for action in _VIA_RE.sub("", more).split(","):
        if action.strip() and action.strip() not in actions:
            actions.append(action.strip())
    via = _VIA_RE.search(done)
    return f"{head} — {', '.join(actions)}{via.group(0) if via else ''}"


def consolidate_files(
    body: str,
    new_items: list[str],
    max_tokens: int = _MAX_TOKENS,
    max_item_tokens: int = ITEM_TOKENS,
) -> str:
    """One entry per path, one bullet per directory (more when its entries would take one
    past ``max_item_tokens``), each path kept whole with what was done to it. Nothing is
    shortened (SPEC §11): over ``max_tokens`` the section stays so, and the size contract
    moves whole entries out of the document."""
    by_path: dict[str, str] = {}
    for item in _file_entries([*section_items(body), *new_items]):
        match = _PATH_RE.search(item)
        path = (match.group(1) or match.group(2)) if match else item
        by_path[path] = _merge_entry(by_path[path], item) if path in by_path else item
    groups: dict[str, list[str]] = {}
    for path, item in by_path.items():
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path.strip("/") else _OTHER
        groups.setdefault(folder, []).append(item)
    lines: list[str] = []
    for folder, items in groups.items():
        if len(items) == 1:
            lines.append(items[0])
            continue
        entries = [i.rstrip(".") for i in items]
        lines += pack_clauses(entries, max_item_tokens, prefix=f"{folder}: ", join=_semi)
    # A path the old body names only in a form the regrouping does not rebuild (a bare folder
    # label, a branch name) is listed as it was: Files & Context never loses a path.
    kept = {normalise_path(p).casefold() for p in extract_paths("\n".join(lines))}
    lost = [p for p in extract_paths(body) if normalise_path(p).casefold() not in kept]
    if lost:
        named = [f"`{p}`" for p in dict.fromkeys(lost)]
        lines += pack_clauses(named, max_item_tokens, prefix="also referenced: ", join=_commas)
    return _bullets(lines)


def consolidate_issues(
    lines: list[str],
    keep_open: int = 12,
    keep_resolved: int = 0,
    max_item_tokens: int = ITEM_TOKENS,
) -> list[str]:
    """Fold every ``[resolved]`` item into one line, and the older open items (all but the
    newest ``keep_open``) into one "still open" line — as many lines of each as keep every
    line within ``max_item_tokens``; each item's text is kept whole.

    With ``keep_resolved`` > 0 only the newest that many resolved items stay (a resolved item
    may leave the section); 0 keeps them all."""
    items = [line.lstrip("-* ").strip() for line in lines if line.strip()]
    unfolded: list[str] = []
    for item in items:
        if item.startswith(_STILL_OPEN):
            unfolded.extend(p.strip() for p in item[len(_STILL_OPEN) :].split("; ") if p.strip())
        elif item.casefold().startswith("[resolved]") and "; [resolved]" in item:
            unfolded.extend(p.strip() for p in item.split("; ") if p.strip())
        else:
            unfolded.append(item)
    items = unfolded
    resolved = [item for item in items if item.casefold().startswith("[resolved]")]
    still = [item for item in items if item not in resolved]
    if keep_resolved:
        resolved = resolved[-keep_resolved:]
    out: list[str] = []
    if len(resolved) >= 2:
        out += pack_clauses([i.rstrip(".") for i in resolved], max_item_tokens, join=_semi)
    else:
        out.extend(resolved)
    if len(still) > keep_open + 1:
        older, still = still[:-keep_open], still[-keep_open:]
        folded = [item.rstrip(".") for item in older]
        out += pack_clauses(folded, max_item_tokens, prefix=_STILL_OPEN, join=_semi)
    out.extend(still)
    return [f"- {item}" for item in out]


def consolidate_goals(
    items: list[str],
    keep_recent: int = 8,
    max_tokens: int = _MAX_TOKENS,
    carried: Callable[[str], bool] | None = None,
    max_item_tokens: int = ITEM_TOKENS,
) -> list[str]:
    """The first goal, the older requests folded into "Earlier requests: …" lines (each within
    ``max_item_tokens``; near-duplicates once, those whose every anchor a durable section
    carries left out — ``carried`` decides), and the most recent goals. Nothing is shortened
    (SPEC §11): over ``max_tokens`` the section stays so, and the size contract moves whole
    items out of the document."""
    flat: list[str] = []
    for item in items:
        text = item
        while text.startswith(_EARLIER):
            text = text[len(_EARLIER) :]
        parts = text.split("; ") if text != item else [text]
        flat.extend(p.strip() for p in parts if p.strip())
    if len(flat) <= keep_recent + 2:
        return flat
    older: list[str] = []
    for goal in flat[1 : len(flat) - keep_recent]:
        if carried is not None and carried(goal):
            continue  # every anchor of it stands in a durable section: said there already
        if not any(
            similar(goal, seen, threshold=0.85) and not lost_anchors(item_anchors(goal), seen)
            for seen in older
        ):
            older.append(goal)
    recent = flat[len(flat) - keep_recent :]

    def fold(parts: list[str]) -> list[str]:
        plain = [i.rstrip(".") for i in parts]
        return [flat[0], *pack_clauses(plain, max_item_tokens, prefix=_EARLIER, join=_semi)]

    return [*fold(older), *recent]
