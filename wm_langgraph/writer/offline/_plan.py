"""Decide the per-section ops of the offline heuristic summariser, as a careful model would.

Private to ``wm_langgraph.writer.offline``. Input: the old sections and the findings of the new
messages; output: ``{section: {"op": "KEEP" | "UPDATE" | "APPEND", ...}}`` for all seven
sections, following the update prompt's rules: the title is kept, the current state updated,
goals kept unless new ones appear (then old + new), facts / files / errors appended, open
issues updated with ``[resolved]`` / ``[new]`` markers, Key Facts consolidated (every anchor
kept) when the size warnings name it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from wm_langgraph.document.guards import OVERSIZE_TOKENS, SectionLimits, SectionOp, guard_section
from wm_langgraph.document.guards.key_facts import held_by
from wm_langgraph.document.sections import SECTIONS, section_items
from wm_langgraph.document.text import extract_anchors, extract_paths, missing_anchors, strip_urls
from wm_langgraph.document.text.shorten import shorten
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.writer.offline._chat import (
    chat_goal,
    chat_items,
    chat_state,
    chat_title,
    consolidate_chat,
)
from wm_langgraph.writer.offline._consolidate import (
    ITEM_TOKENS,
    consolidate_facts,
    consolidate_files,
    consolidate_goals,
    consolidate_issues,
)
from wm_langgraph.writer.offline._extract import Findings, relates, resolves
from wm_langgraph.writer.offline._lang import keywords, repeats, similar

__all__ = [
    "apply_ops",
    "chat_room",
    "plan_ops",
    "warned_limits",
    "warned_section_limits",
    "warned_sections",
]

Op = dict[str, Any]
_KEEP: Op = {"op": "KEEP"}
_RESOLVED_PREFIX = "[resolved]"
_NEW_PREFIX = "[new]"
# "not 5433", "instead of per IP", "不是 5433": the value a correction retires.
_NEGATED_RE = re.compile(
    r"\b(?:not|instead of|rather than)\s+(?:the\s+|a\s+|an\s+)?([\w.:/-]+(?:\s+[A-Z]{2,}\b)?)"
    r"|不是\s*([^\s，。,.；;]+)",
    re.IGNORECASE,
)


def warned_sections(warnings: str) -> set[str]:
    """Names of the sections a ``<section_size_warnings>`` block asks to consolidate."""
    low = warnings.casefold()
    named = {name for name in SECTIONS if name.casefold() in low}
    if "key facts" in low:
        named.add("Key Facts & Decisions")
    return named


_LIMIT_RE = re.compile(
    r"^- (?P<name>[^:\n]+): .*?target at most (?P<bullets>\d+) bullets and "
    r"(?P<tokens>[\d,]+) tokens",
    re.MULTILINE,
)
_SECTION_LIMITS_RE = re.compile(r"\(limits: (?P<bullets>\d+) bullets, (?P<tokens>[\d,]+) tokens\)")
# Consolidate below the warned goal, so that the next rounds do not warn again at once.
_GOAL_SHARE = 0.7
_KEEP_RESOLVED = 3
_UNBOUNDED = SectionLimits(bullets=10**9, tokens=10**9, max_append=10**9)
"""What the writer assumes of the limits when no warning states them: no section is over one
(the prompt would warn), so none binds this round."""
# A chat's Key Facts consolidates below the warned limits (the seed's 20 of 25 bullets, 1,350
# of 1,500 tokens).
_CHAT_TOKEN_SHARE = 0.9
_CHAT_BULLET_SHARE = 0.8
# A chat round's room for new Key Facts: this share of what the round folds (its spoken tokens),
# never less than _CHAT_MIN_ROOM; 260 tokens for a round of about 4,000 (an 8k budget).
_CHAT_ROOM_SHARE = 0.065
_CHAT_MIN_ROOM = 130
# Our own error phrasing, said shorter: "run_tests failed: E KeyError…" -> "run_tests: KeyError…".
_ERROR_TRIMS = (
    (re.compile(r"^[\w.-]+ failed: (?:E\s+)?"), ""),
    (re.compile(r" — fix: edited "), " — fixed in "),
    (re.compile(r"; re-run passed$"), " (passed)"),
)


def warned_section_limits(warnings: str) -> SectionLimits | None:
    """The section thresholds a size warning states (``(limits: N bullets, M tokens)``), as a
    model learns them from the prompt; ``None`` when no warning states them."""
    match = _SECTION_LIMITS_RE.search(warnings)
    if match is None:
        return None
    bullets, tokens = int(match.group("bullets")), int(match.group("tokens").replace(",", ""))
    return SectionLimits(bullets=max(1, bullets), tokens=max(1, tokens))


def chat_room(found: Findings) -> int:
    """The tokens of new Key Facts a chat round writes: a share of what it folds."""
    return max(_CHAT_MIN_ROOM, round(_CHAT_ROOM_SHARE * found.tokens))


def warned_limits(warnings: str) -> dict[str, int]:
    """Section name -> the token goal its size warning sets (``target at most … tokens``)."""
    out: dict[str, int] = {}
    for match in _LIMIT_RE.finditer(warnings):
        name = match.group("name").strip()
        if name in SECTIONS:
            out[name] = int(match.group("tokens").replace(",", ""))
    return out


def _goal(limits: Mapping[str, int], name: str, default: int = OVERSIZE_TOKENS) -> int:
    return int(_GOAL_SHARE * limits.get(name, default))


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
        request = shorten(found.latest_request, max_words=25, max_cjk=50)
        parts.append(("最新请求：" if zh else "Latest request: ") + request)
    if found.latest_reply:
        reply = shorten(found.latest_reply, max_words=25, max_cjk=50)
        parts.append(("助手最近答复：" if zh else "Assistant's latest reply: ") + reply)
    if found.last_action:
        status = f" ({found.last_status})" if found.last_status else ""
        parts.append(("最近操作：" if zh else "Last tool action: ") + found.last_action + status)
    if found.unresolved_errors:
        error = shorten(found.unresolved_errors[-1], max_words=20, max_cjk=40)
        parts.append(("未解决错误：" if zh else "Unresolved error: ") + error)
    if open_count:
        first_open = shorten(first_open, max_words=15, max_cjk=30)
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


def _goals_op(
    old: str,
    found: Findings,
    warned: bool,
    goal: int = OVERSIZE_TOKENS,
    elsewhere: str = "",
    *,
    item_tokens: int = ITEM_TOKENS,
) -> Op:
    old_items = section_items(old)
    goals = list(found.goals)
    if (
        not old_items
        and found.opening_goal
        and not any(similar(found.opening_goal, g) for g in goals)
    ):
        goals.insert(0, found.opening_goal)
    new = _fresh(goals, old_items, threshold=0.6)
    if warned and len(old_items) > 3:
        covered = extract_anchors(elsewhere, include_markers=False) if elsewhere else set()
        folded = consolidate_goals(
            [*old_items, *new],
            max_tokens=goal,
            carried=lambda g: _carried(g, covered),
            max_item_tokens=item_tokens,
        )
        return {"op": "UPDATE", "content": _bullets(folded)}
    if not new:
        return _KEEP
    content = "\n".join(part for part in (old.strip(), _bullets(new)) if part)
    return {"op": "UPDATE", "content": content}


def _superseded(old_items: list[str], corrections: list[str]) -> dict[int, str]:
    """Old facts a user correction retires: index -> the correcting sentence.

    A fact is retired when the correction negates a value it holds ("port 5432, not 5433")
    and the two talk about the same thing (a shared keyword besides the value).
    """
    retired: dict[int, str] = {}
    for correction in corrections:
        for match in _NEGATED_RE.finditer(correction):
            value = (match.group(1) or match.group(2) or "").strip(" .,")
            if not value:
                continue
            pattern = re.compile(r"(?<![\w.])" + re.escape(value) + r"(?![\w])", re.IGNORECASE)
            context = set(keywords(correction)) - set(keywords(value))
            for index, item in enumerate(old_items):
                if index in retired or correction in item:
                    continue  # the correction's own fact stays
                if pattern.search(item) and context & set(keywords(item)):
                    retired[index] = correction
    return retired


def _facts_ops(
    old: str,
    found: Findings,
    warned: bool,
    goal: int = OVERSIZE_TOKENS,
    elsewhere: str = "",
    *,
    errors: str = "",
    max_bullets: int | None = None,
    item_tokens: int = ITEM_TOKENS,
) -> tuple[Op, list[str]]:
    """The Key Facts op, and the superseded-fact lines for Errors & Corrections.

    A new fact that only restates an error ``errors`` records is not filed (see
    :func:`_restates_error`). When warned, a fact that another durable section already states
    by the Key Facts guard's own test (``held_by``: a fix recorded in Errors & Corrections) is
    not kept twice."""
    old_items = section_items(old)
    new = [f for f in _fresh(found.facts, old_items) if not _restates_error(f, errors)]
    retired = _superseded(old_items, found.corrections)
    retired_new = _superseded(new, found.corrections)  # said and corrected in this chunk
    label = "已被更正：" if found.language == "zh" else "Superseded: "
    notes = [f"{label}{old_items[i]} → {fix}" for i, fix in retired.items()]
    notes += [f"{label}{new[i]} → {fix}" for i, fix in retired_new.items()]
    new = [item for i, item in enumerate(new) if i not in retired_new]
    if warned and old_items:
        # "Carried elsewhere" by the guard's own test, or the guard would restore it.
        kept = [
            item
            for i, item in enumerate(old_items)
            if i not in retired and not held_by(item, elsewhere)
        ]
        fresh = [item for item in new if not held_by(item, elsewhere)]
        content = consolidate_facts(
            [*kept, *fresh],
            len(old_items),
            max_tokens=goal,
            max_bullets=max_bullets,
            max_item_tokens=item_tokens,
        )
        return {"op": "UPDATE", "content": content}, notes
    if retired:
        kept = [item for i, item in enumerate(old_items) if i not in retired]
        return {"op": "UPDATE", "content": _bullets([*kept, *new])}, notes
    return ({"op": "APPEND", "items": new} if new else _KEEP), notes


_CODE_SPAN_RE = re.compile(r"`([^`\n]{12,})`")
_ERROR_SPAN_RE = re.compile(r"\w(?:Error|Exception)\b|\bFAILED\b|\bfailed\b")


def _restates_error(fact: str, errors: str) -> bool:
    """A fact that quotes an error the errors text already records and says nothing else
    that text lacks ("Fixed: the failure was `KeyError: 'tenant_3'`"): a careful writer files
    it once, as the error. A fact with an anchor of its own stays."""
    folded = errors.casefold()
    quoted = any(
        _ERROR_SPAN_RE.search(span) and span.casefold() in folded
        for span in _CODE_SPAN_RE.findall(fact)
    )
    anchors = extract_anchors(_CODE_SPAN_RE.sub(" ", fact), include_markers=False)
    return quoted and not missing_anchors(anchors, errors)


def _carried(item: str, covered: set[str]) -> bool:
    anchors = extract_anchors(item, include_markers=False, include_phrases=False)
    return bool(anchors) and anchors <= covered and not extract_anchors(item) - anchors - covered


def _files_op(
    old: str,
    found: Findings,
    warned: bool,
    goal: int = OVERSIZE_TOKENS,
    item_tokens: int = ITEM_TOKENS,
) -> Op:
    known = {p.casefold() for p in extract_paths(old)}
    items: list[str] = []
    for note in found.files:
        if note.path.casefold() not in known:
            known.add(note.path.casefold())
            items.append(note.describe(found.language))
    label = "命令" if found.language == "zh" else "command"
    for command in found.commands:
        # what the session ran, but a URL is never a Files & Context entry (SPEC §10)
        shown = strip_urls(command, "<url>")
        if shown not in old and not any(shown in item for item in items):
            items.append(f"{label} `{shorten(shown, max_words=20)}`")
    if warned and section_items(old):
        content = consolidate_files(old, items, max_tokens=goal, max_item_tokens=item_tokens)
        return {"op": "UPDATE", "content": content}
    return {"op": "APPEND", "items": items} if items else _KEEP


def _trim_error(item: str) -> str:
    for pattern, replacement in _ERROR_TRIMS:
        item = pattern.sub(replacement, item, count=1)
    return item


def _errors_op(old: str, found: Findings, superseded: list[str]) -> Op:
    errors = [_trim_error(e) for e in found.errors]
    new = _fresh([*superseded, *errors], section_items(old))
    return {"op": "APPEND", "items": new} if new else _KEEP


def _open_op(
    old: str, found: Findings, warned: bool, item_tokens: int = ITEM_TOKENS
) -> tuple[Op, list[str]]:
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
        answered = re.search(r"[?？]\s*$", core) is not None and any(
            relates(core, sentence) for sentence in found.opening_reply
        )
        if answered or any(resolves(core, sentence) for sentence in found.resolution_texts):
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
    if warned:
        folded = consolidate_issues(out_lines, max_item_tokens=item_tokens)
        # Older resolved items may leave (behaviour §4.6) — where the Open Issues guard lets them.
        lean = consolidate_issues(
            out_lines, keep_resolved=_KEEP_RESOLVED, max_item_tokens=item_tokens
        )
        lean_op = SectionOp("UPDATE", content="\n".join(lean))
        if lean != folded and not guard_section("Open Issues", old, lean_op).reason:
            folded = lean
        changed = changed or folded != out_lines
        out_lines = folded
    if not changed:
        return _KEEP, still_open
    return {"op": "UPDATE", "content": "\n".join(out_lines)}, still_open


def plan_ops(
    old: Mapping[str, str], found: Findings, warnings: str = "", *, self_check: bool = True
) -> dict[str, Op]:
    """The seven section ops for folding ``found`` into the document ``old``.

    Args:
        old: Section name -> body of the current Working Memory (missing names = empty).
        found: What the new messages contain.
        warnings: The text of the ``<section_size_warnings>`` block (may be empty).
        self_check: Run the guards over the ops first and adopt what they would let through
            (the update prompt's self-check). Off only to test the heuristics on their own.
    """
    body = {name: old.get(name, "") for name in SECTIONS}
    warned = warned_sections(warnings)
    limits = warned_limits(warnings)
    known = warned_section_limits(warnings)
    if found.chat:
        chat = _chat_ops(body, found, warned, limits, warnings, known=known)
        return _self_check(body, chat, known or _UNBOUNDED) if self_check else chat
    default = known.tokens if known else OVERSIZE_TOKENS
    bound = known.item_tokens if known else ITEM_TOKENS
    open_op, still_open = _open_op(body["Open Issues"], found, "Open Issues" in warned, bound)
    facts = "Key Facts & Decisions"
    elsewhere = "\n".join([body["Errors & Corrections"], body["Files & Context"], *found.errors])
    errors = "\n".join([body["Errors & Corrections"], *found.errors])
    facts_op, superseded = _facts_ops(
        body[facts],
        found,
        facts in warned,
        _goal(limits, facts, default),
        elsewhere,
        errors=errors,
        max_bullets=known.bullets if known else None,
        item_tokens=bound,
    )
    goals, files = "Task & Goals", "Files & Context"
    ops: dict[str, Op] = {
        "Session Title": _title_op(body["Session Title"], found),
        "Current State": _KEEP,
        goals: _goals_op(
            body[goals],
            found,
            goals in warned,
            _goal(limits, goals, default),
            f"{elsewhere}\n{body[facts]}",
            item_tokens=bound,
        ),
        facts: facts_op,
        files: _files_op(body[files], found, files in warned, _goal(limits, files, default), bound),
        "Errors & Corrections": _errors_op(body["Errors & Corrections"], found, superseded),
        "Open Issues": open_op,
    }
    state = _state(found, len(still_open), still_open[0] if still_open else "")
    if state:
        ops["Current State"] = {"op": "UPDATE", "content": state}
    return _self_check(body, ops, known or _UNBOUNDED) if self_check else ops


def _chat_ops(
    body: Mapping[str, str],
    found: Findings,
    warned: set[str],
    limits: Mapping[str, int],
    warnings: str = "",
    *,
    known: SectionLimits | None = None,
) -> dict[str, Op]:
    """The ops of a chat round (see ``_chat``): dated per-speaker facts in Key Facts, the
    speakers' plans in Task & Goals, no questions as open issues, the speakers and the session
    date in Current State. New facts take the round's room (:func:`chat_room`); a warned
    section is consolidated below the limits the warning states (``known``)."""
    bounds = known or SectionLimits()
    item_tokens = known.item_tokens if known else ITEM_TOKENS
    max_tokens = int(_CHAT_TOKEN_SHARE * bounds.tokens)
    max_bullets = max(1, int(_CHAT_BULLET_SHARE * bounds.bullets))
    round_room = chat_room(found)
    state = chat_state(found.context, found.units, found.language)
    ops: dict[str, Op] = dict.fromkeys(SECTIONS, _KEEP)
    if not body["Session Title"].strip():
        ops["Session Title"] = {"op": "UPDATE", "content": chat_title(found.context, found.units)}
    ops["Current State"] = {"op": "UPDATE", "content": state}
    plans = [u for u in found.units if u.kind == "plan"]
    todos = [u for u in found.units if u.kind == "todo" and not u.pasted]
    rest = [u for u in found.units if u.kind not in {"plan", "todo"}]
    # a follow-up is an open issue, and a later statement that settles one closes it
    follow_ups = replace(found, open_items=[u.text for u in todos], open_failures=[])
    ops["Open Issues"] = _open_op(body["Open Issues"], follow_ups, "Open Issues" in warned)[0]
    for name, units, room in (
        ("Key Facts & Decisions", rest, round_room),
        ("Task & Goals", plans, round_room // 2),
    ):
        old_items = section_items(body[name])
        share = room // 2 if name in warned else room
        new = _fresh(chat_items(units, found.context, share, item_tokens), old_items)
        ops[name] = {"op": "APPEND", "items": new} if new else _KEEP
        if name in warned and old_items:
            others = count_tokens("\n".join([state, *(body[n] for n in SECTIONS if n != name)]))
            section_goal = _goal(limits, name, bounds.tokens)
            goal = min(max_tokens, chat_goal(warnings, others, section_goal, max_tokens))
            folded = consolidate_chat([*old_items, *new], goal, max_bullets, item_tokens)
            ops[name] = {"op": "UPDATE", "content": _bullets(folded)}
    return ops


def _as_op(op: Op) -> SectionOp:
    if op["op"] == "UPDATE":
        return SectionOp("UPDATE", content=str(op["content"]))
    if op["op"] == "APPEND":
        return SectionOp("APPEND", items=tuple(str(i) for i in op["items"]))
    return SectionOp("KEEP")


def _self_check(
    old: Mapping[str, str], ops: dict[str, Op], limits: SectionLimits = _UNBOUNDED
) -> dict[str, Op]:
    """The update prompt's silent self-check: an op the section's guard would change is
    replaced by what the guard would let through (so the guards have nothing to undo), under
    the ``limits`` the prompt's warnings state."""
    new_doc = apply_ops(old, ops)
    checked: dict[str, Op] = {}
    for name in SECTIONS:
        op = ops[name]
        elsewhere = "\n".join(new_doc[other] for other in SECTIONS if other != name)
        outcome = guard_section(
            name, old.get(name, ""), _as_op(op), elsewhere=elsewhere, limits=limits
        )
        if not outcome.reason:
            checked[name] = op
        elif outcome.op.kind == "UPDATE":
            checked[name] = {"op": "UPDATE", "content": outcome.op.content}
        elif outcome.op.kind == "APPEND":
            checked[name] = {"op": "APPEND", "items": list(outcome.op.items)}
        else:
            checked[name] = _KEEP
    return checked


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
