"""Decide the per-section ops of the offline heuristic summariser, as a careful model would.

Private to ``wm_langgraph.models``. Input: the old sections and the findings of the new
messages; output: ``{section: {"op": "KEEP" | "UPDATE" | "APPEND", ...}}`` for all seven
sections, following the update prompt's rules: the title is kept, the current state updated,
goals kept unless new ones appear (then old + new), facts / files / errors appended, open
issues updated with ``[resolved]`` / ``[new]`` markers, Key Facts consolidated (every anchor
kept) when the size warnings name it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from wm_langgraph.core.sections import SECTIONS, section_items
from wm_langgraph.core.text import extract_anchors, extract_paths, missing_anchors
from wm_langgraph.core.tokens import count_tokens
from wm_langgraph.models._extract import Findings, resolves
from wm_langgraph.models._lang import keywords, repeats, shorten, similar

__all__ = ["apply_ops", "plan_ops", "warned_sections"]

Op = dict[str, Any]
_KEEP: Op = {"op": "KEEP"}
_MAX_BULLETS = 25
_MAX_TOKENS = 1_500
_RESOLVED_PREFIX = "[resolved]"
_NEW_PREFIX = "[new]"
_UNTOPICAL = frozenset(
    (
        *("because", "decided", "decision", "chose", "agreed", "user", "never", "always"),
        *("prefer", "since", "keeps", "runs", "uses", "use", "used", "using", "need", "want"),
    )
)


def warned_sections(warnings: str) -> set[str]:
    """Names of the sections a ``<section_size_warnings>`` block asks to consolidate."""
    low = warnings.casefold()
    named = {name for name in SECTIONS if name.casefold() in low}
    if "key facts" in low:
        named.add("Key Facts & Decisions")
    return named


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _fresh(candidates: list[str], old_items: list[str], threshold: float = 0.8) -> list[str]:
    """Candidates that say something the old items do not (near-duplicates dropped)."""
    out: list[str] = []
    for item in candidates:
        if not any(repeats(item, old, threshold=threshold) for old in [*old_items, *out]):
            out.append(item)
    return out


def _state(found: Findings, open_count: int, first_open: str) -> str:
    """Two to five sentences: the latest request, the last step, what is unresolved, next."""
    zh = found.language == "zh"
    parts: list[str] = []
    if found.latest_request:
        parts.append(("最新请求：" if zh else "Latest request: ") + found.latest_request)
    if found.latest_reply:
        parts.append(
            ("助手最近答复：" if zh else "Assistant's latest reply: ") + found.latest_reply
        )
    if found.last_action:
        status = f" ({found.last_status})" if found.last_status else ""
        parts.append(("最近操作：" if zh else "Last tool action: ") + found.last_action + status)
    if found.unresolved_errors:
        parts.append(("未解决错误：" if zh else "Unresolved error: ") + found.unresolved_errors[-1])
    if open_count:
        if zh:
            parts.append(f"仍有 {open_count} 个未决事项，例如：{first_open}")
        else:
            parts.append(f"{open_count} open item(s) remain, e.g. {first_open}")
    end = "。" if zh else "."
    return " ".join(
        p if p.endswith(("?", "？", "!", "！")) else p.rstrip(" .。") + end for p in parts[:5]
    )


def _title_op(old: str, found: Findings) -> Op:
    if old.strip():
        return _KEEP
    title = found.title or shorten(found.first_request, max_words=9, max_cjk=24)
    return {"op": "UPDATE", "content": title} if title else _KEEP


def _goals_op(old: str, found: Findings) -> Op:
    old_items = section_items(old)
    goals = list(found.goals)
    if (
        not old_items
        and found.first_request
        and not any(similar(found.first_request, g) for g in goals)
    ):
        goals.insert(0, found.first_request)
    new = _fresh(goals, old_items, threshold=0.6)
    if not new:
        return _KEEP
    content = "\n".join(part for part in (old.strip(), _bullets(new)) if part)
    return {"op": "UPDATE", "content": content}


def _facts_op(old: str, found: Findings, warned: bool) -> Op:
    old_items = section_items(old)
    new = _fresh(found.facts, old_items)
    if warned and old_items:
        return {"op": "UPDATE", "content": consolidate([*old_items, *new], len(old_items))}
    return {"op": "APPEND", "items": new} if new else _KEEP


def _files_op(old: str, found: Findings) -> Op:
    known = {p.casefold() for p in extract_paths(old)}
    items: list[str] = []
    for note in found.files:
        if note.path.casefold() not in known:
            known.add(note.path.casefold())
            items.append(note.describe(found.language))
    label = "命令" if found.language == "zh" else "command"
    for command in found.commands:
        if command not in old and not any(command in item for item in items):
            items.append(f"{label} `{shorten(command, max_words=20)}`")
    return {"op": "APPEND", "items": items} if items else _KEEP


def _errors_op(old: str, found: Findings) -> Op:
    new = _fresh(found.errors, section_items(old))
    return {"op": "APPEND", "items": new} if new else _KEEP


def _open_op(old: str, found: Findings) -> tuple[Op, list[str]]:
    """The Open Issues op and the items still open after it."""
    old_lines = [line for line in old.splitlines() if line.strip()]
    changed = False
    still_open: list[str] = []
    out_lines: list[str] = []
    for line in old_lines:
        parsed = section_items(line)
        text = parsed[0] if parsed else ""
        if not text or text.casefold().startswith(_RESOLVED_PREFIX):
            out_lines.append(line)
            continue
        core = re.sub(r"^(?:\[[^\]\n]{0,40}\]\s*)+", "", text)
        if any(resolves(core, sentence) for sentence in found.resolution_texts):
            out_lines.append(f"- {_RESOLVED_PREFIX} {core}")
            changed = True
        else:
            # an item added as [new] last round is no longer new
            out_lines.append(f"- {core}" if text.casefold().startswith(_NEW_PREFIX) else line)
            still_open.append(core)
    candidates = [*found.open_items, *found.open_failures]
    for item in _fresh(candidates, [*section_items(old)], threshold=0.7):
        out_lines.append(f"- {_NEW_PREFIX} {item}")
        still_open.append(item)
        changed = True
    if not changed:
        return _KEEP, still_open
    return {"op": "UPDATE", "content": "\n".join(out_lines)}, still_open


def plan_ops(old: Mapping[str, str], found: Findings, warnings: str = "") -> dict[str, Op]:
    """The seven section ops for folding ``found`` into the document ``old``.

    Args:
        old: Section name -> body of the current Working Memory (missing names = empty).
        found: What the new messages contain.
        warnings: The text of the ``<section_size_warnings>`` block (may be empty).
    """
    body = {name: old.get(name, "") for name in SECTIONS}
    warned = warned_sections(warnings)
    open_op, still_open = _open_op(body["Open Issues"], found)
    ops: dict[str, Op] = {
        "Session Title": _title_op(body["Session Title"], found),
        "Current State": _KEEP,
        "Task & Goals": _goals_op(body["Task & Goals"], found),
        "Key Facts & Decisions": _facts_op(
            body["Key Facts & Decisions"], found, "Key Facts & Decisions" in warned
        ),
        "Files & Context": _files_op(body["Files & Context"], found),
        "Errors & Corrections": _errors_op(body["Errors & Corrections"], found),
        "Open Issues": open_op,
    }
    state = _state(found, len(still_open), still_open[0] if still_open else "")
    if state:
        ops["Current State"] = {"op": "UPDATE", "content": state}
    return ops


def apply_ops(old: Mapping[str, str], ops: Mapping[str, Op]) -> dict[str, str]:
    """Apply ops literally (no guards): the create path's own bookkeeping."""
    out: dict[str, str] = {}
    for name in SECTIONS:
        body = old.get(name, "").strip()
        op = ops.get(name, _KEEP)
        if op["op"] == "UPDATE":
            body = str(op["content"]).strip()
        elif op["op"] == "APPEND":
            body = "\n".join(part for part in (body, _bullets(list(op["items"]))) if part)
        out[name] = body
    return out


# --------------------------------------------------------------------------------------------
# Consolidation of Key Facts (only when the size warnings name the section)
# --------------------------------------------------------------------------------------------


def _compact(item: str) -> str:
    """Shorten an item, re-attaching any anchor the shortening would lose."""
    short = shorten(item, max_words=28, max_cjk=70)
    if short == item:
        return item
    lost = sorted(missing_anchors(extract_anchors(item, include_markers=False), short))
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


def consolidate(items: list[str], old_count: int) -> str:
    """Group the items by topic into at most 25 bullets within ~1,500 tokens, every anchor kept.

    Near-duplicates whose anchors another item already carries are merged away; items that
    share keywords are grouped into one bullet; groups are joined smallest-first until the
    bullet target is met. The target never drops below 15% of the old bullet count plus one
    (a stronger shrink would look like data loss to the Key Facts guard).
    """
    target = max(min(_MAX_BULLETS, old_count), math.ceil(0.15 * old_count) + 1)
    kept: list[str] = []
    for item in items:
        twin = next((k for k in kept if similar(item, k, threshold=0.85)), None)
        if twin is not None and not missing_anchors(extract_anchors(item), twin):
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
