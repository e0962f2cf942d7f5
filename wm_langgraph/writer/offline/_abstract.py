"""The offline writer's archive abstracts: who, when and the most salient statements of each
archive, in the archive's own words (extractive).

Private to ``wm_langgraph.writer.offline``. The folded messages carry a marker line where each
archive starts (``document.abstracts.archive_marker``; :func:`parse_transcript` records it on
each turn). Per archive: the speakers (their names when a greeting gave them, as the chat
rounds find them), the first and last session date, then the statements the chat rules rank
most salient (``document.text.units``), each shortened, in the order they were said and grouped
by speaker; a working session without such statements gets its first request and the files its
tools touched. The result goes through ``clean_abstract`` like any writer's abstract.
"""

from __future__ import annotations

from wm_langgraph.document.abstracts import MAX_ABSTRACT_CHARS, clean_abstract
from wm_langgraph.document.text import extract_paths
from wm_langgraph.document.text.shorten import shorten
from wm_langgraph.document.text.units import date_line, extract_units, format_date
from wm_langgraph.writer.offline._chat import ChatContext, speakers_of
from wm_langgraph.writer.offline._transcript import Turn

__all__ = ["archive_abstracts"]

_CLAUSE_WORDS = 14
_MAX_PATHS = 6


def archive_abstracts(turns: list[Turn], context: ChatContext | None = None) -> dict[str, str]:
    """Archive id -> its extractive abstract, for every archive marked in ``turns``."""
    groups: dict[str, list[Turn]] = {}
    for turn in turns:
        if turn.archive:
            groups.setdefault(turn.archive, []).append(turn)
    out: dict[str, str] = {}
    known = context or ChatContext()
    for archive_id, part in groups.items():
        text = clean_abstract(_abstract(part, known))
        if text is not None:
            out[archive_id] = text
    return out


def _when(turns: list[Turn], context: ChatContext) -> str:
    dates = [d for t in turns if (d := date_line(t.text)[0]) is not None]
    if not dates:
        return format_date(context.when) if context.when else ""
    first, last = format_date(dates[0]), format_date(dates[-1])
    return first if first == last else f"{first} to {last}"


def _abstract(turns: list[Turn], known: ChatContext) -> str:
    messages = [(t.role, t.text) for t in turns]
    context = speakers_of(messages, known)
    names = {"user": context.user or "the user", "assistant": context.assistant or "the assistant"}
    units = extract_units(messages, session_date=known.when, speakers=tuple(names.values()))
    when = _when(turns, known)
    head = f"{names['user']} and {names['assistant']}" + (f", {when}" if when else "")
    ranked = sorted(range(len(units)), key=lambda i: (-units[i].salience, i))
    chosen: list[int] = []
    room = MAX_ABSTRACT_CHARS - len(head) - 2
    for i in ranked:
        cost = len(shorten(units[i].text, max_words=_CLAUSE_WORDS)) + 4
        if cost <= room:
            chosen.append(i)
            room -= cost
    by_speaker: dict[str, list[str]] = {}
    for i in sorted(chosen):
        clause = shorten(units[i].text, max_words=_CLAUSE_WORDS).rstrip(" .。!！")
        by_speaker.setdefault(names.get(units[i].role, units[i].role), []).append(clause)
    parts = [f"{who}: " + "; ".join(clauses) for who, clauses in by_speaker.items()]
    if not parts:
        parts = _working_session(turns)
    return f"{head}. " + ". ".join(parts) if parts else head


def _working_session(turns: list[Turn]) -> list[str]:
    """A session without chat statements: its first request and the files its tools touched."""
    parts: list[str] = []
    asks = [date_line(t.text)[1] for t in turns if t.role == "user" and t.text.strip()]
    if asks:
        parts.append("asked: " + shorten(asks[0], max_words=24))
    paths: list[str] = []
    for turn in turns:
        for call in turn.tool_calls:
            paths += extract_paths(call.args_text)
    if paths:
        parts.append("files: " + ", ".join(list(dict.fromkeys(paths))[:_MAX_PATHS]))
    return parts
