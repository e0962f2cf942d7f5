"""Consolidation of oversized sections, done the way the update prompt asks when warned.

Private to ``wm_langgraph.models``. Each function returns a new section body that keeps every
item's substance — names, dates, numbers, paths (the anchors the guards check) — in fewer
bullets: Key Facts grouped by topic, Files & Context grouped by directory, resolved Open Issues
folded into one line, older goals folded into one line.
"""

from __future__ import annotations

import math
import re

from wm_langgraph.core.sections import section_items
from wm_langgraph.core.tokens import count_tokens
from wm_langgraph.models._lang import item_anchors, keywords, lost_anchors, shorten, similar

__all__ = ["consolidate_facts", "consolidate_files", "consolidate_goals", "consolidate_issues"]

MAX_BULLETS = 25
_MAX_TOKENS = 1_500
_UNTOPICAL = frozenset(
    (
        *("because", "decided", "decision", "chose", "agreed", "user", "never", "always"),
        *("prefer", "since", "keeps", "runs", "uses", "use", "used", "using", "need", "want"),
    )
)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _compact(item: str) -> str:
    """Shorten an item, re-attaching any anchor the shortening would lose."""
    short = shorten(item, max_words=28, max_cjk=70)
    if short == item:
        return item
    lost = sorted(lost_anchors(item_anchors(item), short))
    return f"{short} ({', '.join(lost)})" if lost else short


def _topic(items: list[str]) -> str:
    """The keyword most of a group's items share (the group's label)."""
    counts: dict[str, int] = {}
    for item in items:
        for word in keywords(item.removeprefix("User: ").removeprefix("用户：")):
            if word not in _UNTOPICAL and not word.isdigit():
                counts[word] = counts.get(word, 0) + 1
    if not counts:
        return ""
    best = max(counts.items(), key=lambda kv: (kv[1], len(kv[0])))
    return best[0] if best[1] > 1 else ""


def consolidate_facts(items: list[str], old_count: int) -> str:
    """Group the items by topic into at most 25 bullets within ~1,500 tokens, every anchor kept.

    Near-duplicates whose anchors another item already carries are merged away; items that
    share keywords are grouped into one bullet; groups are joined smallest-first until the
    bullet target is met. The target never drops below 15% of the old bullet count plus one
    (a stronger shrink would look like data loss to the Key Facts guard).
    """
    target = max(min(MAX_BULLETS, old_count), math.ceil(0.15 * old_count) + 1)
    kept: list[str] = []
    for item in items:
        twin = next((k for k in kept if similar(item, k, threshold=0.85)), None)
        if twin is not None and not lost_anchors(item_anchors(item), twin):
            continue
        kept.append(item)
    groups = [[item] for item in kept]
    words = [set(keywords(item)) for item in kept]
    while len(groups) > target:
        # merge the two most related nearby groups (related facts tend to sit close together)
        best: tuple[int, int, int, int] | None = None
        for i in range(len(groups)):
            for j in range(i + 1, min(len(groups), i + 8)):
                score = (len(words[i] & words[j]), -(len(groups[i]) + len(groups[j])), -i, j)
                if best is None or score > best:
                    best = score
        assert best is not None
        i, j = -best[2], best[3]
        groups[i] += groups.pop(j)
        words[i] |= words.pop(j)
    compact = count_tokens("\n".join(kept)) > _MAX_TOKENS
    lines: list[str] = []
    for group in groups:
        parts = [_compact(i) if compact else i for i in group]
        label = _topic(group)
        text = "; ".join(p.rstrip(".。") for p in parts)
        labelled = label and len(group) > 1 and not text.casefold().startswith(label)
        lines.append(f"{label.capitalize()}: {text}" if labelled else text)
    return _bullets(lines)


def consolidate_files(body: str, new_items: list[str]) -> str:
    """One bullet per directory, each path kept whole with what was done to it."""
    groups: dict[str, list[str]] = {}
    for item in [*section_items(body), *new_items]:
        match = re.search(r"`([^`]+)`|(\S+/\S+|\S+\.\w+)", item)
        path = (match.group(1) or match.group(2)) if match else ""
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path.strip("/") else "(other)"
        groups.setdefault(folder, []).append(item)
    lines = [
        items[0] if len(items) == 1 else f"{folder}: " + "; ".join(i.rstrip(".") for i in items)
        for folder, items in groups.items()
    ]
    return _bullets(lines)


def consolidate_issues(lines: list[str], keep_open: int = 12) -> list[str]:
    """Fold every ``[resolved]`` item into one line, and the older open items (all but the
    newest ``keep_open``) into one "still open" line; each item's text is kept whole."""
    items = [line.lstrip("-* ").strip() for line in lines if line.strip()]
    resolved = [item for item in items if item.casefold().startswith("[resolved]")]
    still = [item for item in items if item not in resolved]
    out: list[str] = []
    if len(resolved) >= 2:
        out.append("; ".join(item.rstrip(".") for item in resolved))
    else:
        out.extend(resolved)
    if len(still) > keep_open + 1:
        older, still = still[:-keep_open], still[-keep_open:]
        out.append("Still open (older): " + "; ".join(item.rstrip(".") for item in older))
    out.extend(still)
    return [f"- {item}" for item in out]


def consolidate_goals(items: list[str], keep_recent: int = 8) -> list[str]:
    """The first goal, one line folding the older requests, and the most recent goals."""
    if len(items) <= keep_recent + 2:
        return items
    older = items[1 : len(items) - keep_recent]
    folded = "Earlier requests: " + "; ".join(i.rstrip(".") for i in older)
    return [items[0], folded, *items[len(items) - keep_recent :]]
