"""The offline summariser on conversations: what a chat establishes, per person, with dates.

Private to ``wm_langgraph.writer.offline``. A transcript without tool messages whose salient units
(:mod:`wm_langgraph.document.text.units`) are mostly chat kinds — events, plans, preferences,
possessions, relationships, people, places — is folded as a chat: Key Facts gets one bullet per
speaker and session date holding that speaker's most salient statements (relative dates
resolved: "yesterday (3 March 2021)"), Open Issues gets no rhetorical questions, the title is
never a session's date line, and Current State names the speakers and the latest session date so
that the next round resolves dates and labels facts the same way.

When the round has more units than its share of the Key Facts room, the least salient units are
left to the archive (the newest are not preferred over the more salient): a chat of 20,000
tokens cannot be kept whole in a memory of 1,000.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from wm_langgraph.document.guards.sizes import pack_clauses
from wm_langgraph.document.text import extract_anchors
from wm_langgraph.document.text.units import (
    Unit,
    addressed_name,
    date_line,
    format_date,
    parse_session_date,
)
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.writer.offline._consolidate import ITEM_TOKENS

__all__ = [
    "ChatContext",
    "chat_goal",
    "chat_items",
    "chat_state",
    "chat_title",
    "consolidate_chat",
    "read_context",
    "speakers_of",
]

_STATE_RE = re.compile(
    r"Chat between (?P<user>[^()\n]{1,40}) \(user\) and (?P<assistant>[^()\n]{1,40}) \(assistant\)"
)
_LEAD_RE = re.compile(
    r"^(?:(?:oh|yeah|yes|well|so|actually|honestly|haha|lol|hey|wow|and|but|also|um|hmm)\b[,!.]?\s*)+",
    re.IGNORECASE,
)
# A round's share of the Key Facts room when no size warning says more: about this many tokens
# of new facts per round, never fewer than _MIN_UNITS units.
_ROUND_TOKENS = 260
_WORK_KINDS = frozenset({"constraint", "decision", "todo", "correction"})
_MIN_UNITS = 5


@dataclass(frozen=True, slots=True)
class ChatContext:
    """What the previous round left for this one: the speakers' names and the session date."""

    user: str = ""
    assistant: str = ""
    when: date | None = None
    chat: bool = False


def read_context(state: str) -> ChatContext:
    """The context a chat round wrote into Current State (empty when there is none)."""
    match = _STATE_RE.search(state)
    user = match.group("user").strip() if match else ""
    assistant = match.group("assistant").strip() if match else ""
    return ChatContext(
        "" if user == "User" else user,
        "" if assistant == "Assistant" else assistant,
        parse_session_date(state) if match else None,
        chat=match is not None,
    )


def speakers_of(messages: list[tuple[str, str]], known: ChatContext) -> ChatContext:
    """The speakers' names, from greetings ("Hey Tomas!" by the user names the assistant),
    and the latest session date of ``messages``; what is not found stays as ``known`` had it."""
    user, assistant, when = known.user, known.assistant, known.when
    for role, text in messages:
        dated, _ = date_line(text)
        when = dated or when
        name = addressed_name(text)
        if not name:
            continue
        if role == "user" and not assistant and name != user:
            assistant = name
        elif role == "assistant" and not user and name != assistant:
            user = name
    return ChatContext(user, assistant, when, known.chat)


def _label(unit: Unit, context: ChatContext) -> str:
    if unit.role == "user":
        return context.user or "User"
    return context.assistant or "Assistant"


def _clause(unit: Unit) -> str:
    text = _LEAD_RE.sub("", unit.text).strip()
    text = text[:1].upper() + text[1:] if text else unit.text
    return text.rstrip(" .。!！")


def _picked(units: list[Unit], max_tokens: int) -> list[Unit]:
    """The most salient units whose clauses fit ``max_tokens`` (at least a few, and every one
    the speaker asked to be remembered), in order."""
    ranked = sorted(range(len(units)), key=lambda i: (-units[i].salience, i))
    floor = min(len(units), max(_MIN_UNITS, math.ceil(len(units) / 4)))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        cost = count_tokens(units[i].text) + 2
        if len(chosen) >= floor and used + cost > max_tokens and not units[i].explicit:
            continue  # "please remember" is always kept
        chosen.append(i)
        used += cost
    return [units[i] for i in sorted(chosen)]


def _semicolons(parts: Sequence[str]) -> str:
    return "; ".join(parts)


def chat_items(
    units: list[Unit],
    context: ChatContext,
    max_tokens: int = _ROUND_TOKENS,
    max_item_tokens: int = ITEM_TOKENS,
) -> list[str]:
    """Key Facts bullets for a chat round: per speaker and session date, the speaker's most
    salient statements joined by ``; `` ("Tomas (4 March 2021): Signed up for …; …"), as many
    bullets per speaker and date as keep each within ``max_item_tokens``."""
    # In a chat, "always", "never", "because" say how someone feels, not a rule of the work:
    # such a unit is kept only when it carries an anchor of its own.
    units = [u for u in units if u.anchors or u.kind not in _WORK_KINDS]
    groups: dict[tuple[str, str], list[str]] = {}
    for unit in _picked(units, max_tokens):
        when = format_date(unit.when) if unit.when else ""
        key = (_label(unit, context), when)
        groups.setdefault(key, []).append(_clause(unit))
    items: list[str] = []
    for (who, when), clauses in groups.items():
        head = f"{who} ({when})" if when else who
        items += pack_clauses(clauses, max_item_tokens, prefix=f"{head}: ", join=_semicolons)
    return items


def chat_state(context: ChatContext, units: list[Unit], language: str) -> str:
    """Current State of a chat: who talks, the latest session date, the latest salient
    statement."""
    user = context.user or "User"
    assistant = context.assistant or "Assistant"
    parts = [f"Chat between {user} (user) and {assistant} (assistant)."]
    if context.when is not None:
        parts.append(f"Latest session: {format_date(context.when)}.")
    if units:
        last = units[-1]
        label = _label(last, context)
        said = "最近：" if language == "zh" else "Latest: "
        parts.append(f"{said}{label}: {_clause(last)}.")
    return " ".join(parts)


def chat_title(context: ChatContext, units: list[Unit]) -> str:
    """A title for a chat: its speakers, or its first salient statement; never a date line."""
    if context.user and context.assistant:
        return f"Chat between {context.user} and {context.assistant}"
    for unit in units:
        words = _clause(unit).split()
        if words:
            return " ".join(words[:8]).rstrip(",;:")
    return "Conversation"


_ENTRY_RE = re.compile(
    r"(?:^|;\s+)(?P<head>[A-Z\u4e00-\u9fff][^():;\n]{0,40} \(\d{1,2} [A-Z][a-z]+ \d{4}\)): "
)
_TARGET_RE = re.compile(r"target(?: of)? (?P<tokens>[\d,]+) tokens\)?")
_CHAT_SHARE = 0.75


def chat_goal(warnings: str, other_tokens: int, section_goal: int, untargeted: int) -> int:
    """The Key Facts goal of a chat: the document's target (from the size warning) less what
    the other sections hold — a chat keeps its facts there, not in goals, files or errors — but
    at least ``section_goal``. A warning that names no document target (the section is over a
    fixed limit, the document under its target) gets ``untargeted``: the bullets are regrouped
    and the clauses shortened only as far as the section's own limits need, not cut to the
    usual 0.7 of them."""
    targets = [int(m.group("tokens").replace(",", "")) for m in _TARGET_RE.finditer(warnings)]
    if not targets:
        return untargeted
    return max(section_goal, int(_CHAT_SHARE * min(targets)) - other_tokens)


def _entries(items: list[str]) -> list[tuple[str, list[str]]]:
    """``(head, clauses)`` of every speaker-dated entry in ``items`` (merged bullets split)."""
    out: list[tuple[str, list[str]]] = []
    for item in items:
        text = re.sub(r"^\[restored\]\s*", "", item.strip())
        starts = list(_ENTRY_RE.finditer(text))
        if not starts or starts[0].start() != 0:
            # the clauses before the first speaker's head (all of them without one)
            lead = text[: starts[0].start()] if starts else text
            out.append(("", [c.strip() for c in lead.split("; ") if c.strip()]))
        for n, match in enumerate(starts):
            end = starts[n + 1].start() if n + 1 < len(starts) else len(text)
            body = text[match.end() : end]
            clauses = [c.strip() for c in body.split("; ") if c.strip()]
            out.append((match.group("head"), clauses))
    return out


def _weight(clause: str) -> int:
    # Phrases count: the Key Facts guard restores a clause whose phrase ("never skip") is
    # gone, so such a clause is shortened, not dropped.
    anchors = extract_anchors(clause, include_markers=False)
    return 3 * len(anchors) + min(len(clause.split()), 20) // 5


def consolidate_chat(
    items: list[str], max_tokens: int, max_bullets: int, max_item_tokens: int = ITEM_TOKENS
) -> list[str]:
    """Chat facts regrouped within ``max_tokens`` and ``max_bullets``: one bullet per speaker
    and date (more when its clauses would take one past ``max_item_tokens``), merged (a
    speaker's month first, then the two shortest neighbours) only while there are more than
    ``max_bullets`` and only where the merged bullet stays within ``max_item_tokens`` (no item
    grows without bound); over ``max_tokens``, the least salient clauses without an anchor
    leave (the archive keeps them). Nothing is shortened (SPEC §11): what is still over the
    goal stays whole, and the size contract moves whole items out of the document."""
    entries = _entries(items)
    seen: set[str] = set()
    clauses: list[tuple[int, str, str]] = []  # (entry index, head, clause)
    for index, (head, parts) in enumerate(entries):
        for part in parts:
            key = part.casefold().rstrip(" .")
            if key not in seen:
                seen.add(key)
                clauses.append((index, head, part))

    def render(chosen: list[tuple[int, str, str]]) -> list[str]:
        groups: dict[str, dict[str, list[str]]] = {}
        for _, head, clause in chosen:
            month = re.sub(r"\(\d{1,2} ", "(", head)
            bucket = groups.setdefault(month, {})
            bucket.setdefault(head, []).append(clause.rstrip(" ."))
        # One bullet per speaker and date; only as many merged (a speaker's month first, then
        # the two shortest neighbours) as the bullet goal needs: merging more than that would
        # leave too few bullets for the guard's ratio rule and buys no tokens.
        lines: list[str] = []
        months: list[str] = []
        for month, bucket in groups.items():
            for h, cs in bucket.items():
                prefix = f"{h}: " if h else ""
                packed = pack_clauses(cs, max_item_tokens, prefix=prefix, join=_semicolons)
                lines += packed
                months += [month] * len(packed)
        sizes = [count_tokens(line) for line in lines]
        while len(lines) > max_bullets:
            fit = [i for i in range(len(lines) - 1) if sizes[i] + sizes[i + 1] < max_item_tokens]
            pairs = [i for i in fit if months[i] == months[i + 1]] or fit
            if not pairs:
                break  # any further merge would make a bullet longer than the bound
            n = min(pairs, key=lambda i: len(lines[i]) + len(lines[i + 1]))
            merged = f"{lines[n]}; {lines[n + 1]}"
            if count_tokens(merged) > max_item_tokens:
                sizes[n] = max_item_tokens  # (counted over: not merged with its next again)
                continue
            lines[n : n + 2] = [merged]
            months[n : n + 2] = [months[n]]
            sizes[n : n + 2] = [count_tokens(merged)]
        return lines

    ranked = sorted(range(len(clauses)), key=lambda i: (_weight(clauses[i][2]), i))
    dropped: set[int] = set()
    lines = render(clauses)
    for i in ranked:
        if count_tokens("\n".join(lines)) <= max_tokens:
            break
        if _weight(clauses[i][2]) >= 3:
            break  # an anchored clause stays (the guards keep every anchor); nothing is cut
        dropped.add(i)
        lines = render([c for n, c in enumerate(clauses) if n not in dropped])
    return lines
