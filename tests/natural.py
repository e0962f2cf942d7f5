"""Natural sessions and the properties of the notes kept over them (issue 46).

The sessions are in ``tests/models/data``: ``natural_sessions.json`` (the development set),
``natural_sessions_heldout.json`` (written before the code ran on them; the round that wrote
them fixed capture on them) and ``natural_sessions_fresh.json`` (written after that fix, before
the code ran on them: a check that it generalises). Each lists what a careful person would note:

- ``errors``: text that must stand in Errors & Corrections;
- ``open``: text of an item that must stand in Open Issues exactly once, unresolved;
- ``resolved``: text of an open item a later statement settled (absent from Open Issues, or
  marked ``[resolved]`` there);
- ``facts``: text that must stand in a section that keeps it (never only in Current State);
- ``identifiers``: tokens that must stand whole in the document;
- ``nowhere`` (optional): chit-chat or acknowledgements that must stand in no section.

Each property is a function that returns what breaks it (``[]``: it holds), so a test asserts
``== []`` and a count over sessions reads the same functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from wm_langgraph.document.sections import DURABLE_SECTIONS, parse_working_memory, section_items
from wm_langgraph.document.text.units import statement_key

__all__ = [
    "DEVELOPMENT",
    "FRESH",
    "HELD_OUT",
    "PROPERTIES",
    "SESSIONS",
    "cut_identifiers",
    "duplicates",
    "durable_items",
    "misfiled_open_items",
    "missing_errors",
    "missing_facts",
    "session_messages",
    "small_talk_kept",
]

_DATA = Path(__file__).parent / "models" / "data"


def _load(file: str) -> dict[str, dict[str, Any]]:
    sessions = json.loads((_DATA / file).read_text("utf-8"))["sessions"]
    return {s["name"]: s for s in sessions}


DEVELOPMENT = _load("natural_sessions.json")
HELD_OUT = _load("natural_sessions_heldout.json")
FRESH = _load("natural_sessions_fresh.json")
SESSIONS: dict[str, dict[str, Any]] = {**DEVELOPMENT, **HELD_OUT, **FRESH}

_RECORD_RE = re.compile(
    r"^(?:\[[^\]\n]{0,40}\]\s*)*(?:User correction|Superseded|用户纠正|已被更正)[:：]"
)
"""A correction record in Errors & Corrections: the corrected fact stands as the current value
in its own section (one statement, two roles), not a duplicate."""

_FILE_ENTRY_RE = re.compile(r"^`?[\w./-]+`?(?:\s|$)")
"""A Files & Context entry: a path first, then what it is."""


def session_messages(session: Mapping[str, Any]) -> list[BaseMessage]:
    """The session's messages as LangChain messages (ids ``m0``, ``m1``…)."""
    out: list[BaseMessage] = []
    for n, entry in enumerate(session["messages"]):
        if "user" in entry:
            out.append(HumanMessage(entry["user"], id=f"m{n}"))
        elif "assistant" in entry:
            out.append(AIMessage(entry["assistant"], id=f"m{n}"))
        elif "call" in entry:
            call = {"name": entry["call"], "args": entry["args"], "id": entry["id"]}
            out.append(AIMessage("", tool_calls=[call], id=f"m{n}"))
        else:
            out.append(ToolMessage(entry["result"], tool_call_id=entry["id"], id=f"m{n}"))
    return out


def durable_items(document: str) -> dict[str, list[str]]:
    """The items of the sections that keep what they hold."""
    sections = parse_working_memory(document)
    return {name: section_items(sections[name]) for name in DURABLE_SECTIONS}


def _all(document: str) -> list[tuple[str, str]]:
    return [(s, i) for s, got in durable_items(document).items() for i in got]


def duplicates(document: str, session: Mapping[str, Any] | None = None) -> list[str]:
    """Items written twice: the same statement (``statement_key``), or one statement standing
    inside an item of another section (a correction record aside)."""
    items = _all(document)
    keys = [statement_key(i) for _, i in items]
    out = sorted({k for k in keys if keys.count(k) > 1})
    # a record of a correction, and a file list's entry (a reference), are not statements
    plain = [
        (s, i)
        for s, i in items
        if not _RECORD_RE.match(i) and not (s == "Files & Context" and _FILE_ENTRY_RE.match(i))
    ]
    for section, item in plain:
        key = statement_key(item)
        if len(key) <= 20:
            continue
        out += [
            f"{section}: {item} (inside {o})"
            for s, o in plain
            if s != section and key in o.casefold()
        ]
    return out


def missing_errors(document: str, session: Mapping[str, Any]) -> list[str]:
    """Stated errors or corrections Errors & Corrections does not hold."""
    errors = "\n".join(durable_items(document)["Errors & Corrections"])
    return [said for said in session["errors"] if said not in errors]


def misfiled_open_items(document: str, session: Mapping[str, Any]) -> list[str]:
    """Open items not in Open Issues exactly once and open, settled ones still open."""
    issues = durable_items(document)["Open Issues"]
    out: list[str] = []
    for said in session["open"]:
        holding = [i for i in issues if said in i]
        if len(holding) != 1 or holding[0].startswith("[resolved]"):
            out.append(f"open {said!r}: {holding}")
    for said in session["resolved"]:
        still = [i for i in issues if said in i and not i.startswith("[resolved]")]
        out += [f"settled {said!r} still open: {i}" for i in still]
    return out


def missing_facts(document: str, session: Mapping[str, Any]) -> list[str]:
    """Stated facts no section that keeps what it holds has."""
    durable = "\n".join(i for _, i in _all(document))
    return [said for said in session["facts"] if said not in durable]


def cut_identifiers(document: str, session: Mapping[str, Any]) -> list[str]:
    """Identifiers not whole in the document, and words cut with "…"."""
    out = [token for token in session["identifiers"] if token not in document]
    said = " ".join(e.get("user", "") + " " + e.get("assistant", "") for e in session["messages"])
    for cut in re.findall(r"(\S+)…", document):
        whole = [w for w in said.split() if w.startswith(cut) and w != cut]
        out += [f"{cut}… cuts {whole[0]}"] if whole else []
    return out


def small_talk_kept(document: str, session: Mapping[str, Any]) -> list[str]:
    """Chit-chat or acknowledgements some section keeps."""
    durable = "\n".join(i for _, i in _all(document)).casefold()
    found = [said for said in session.get("nowhere", []) if said.casefold() in durable]
    acks = re.findall(r"^(?:ok|thanks|cool|great|bye|好的|收到)\b.*$", durable, re.I | re.M)
    return found + acks


Check = Callable[[str, Mapping[str, Any]], list[str]]
PROPERTIES: dict[str, Check] = {
    "no duplicate": duplicates,
    "errors in Errors & Corrections": missing_errors,
    "open items once, settled closed": misfiled_open_items,
    "facts kept": missing_facts,
    "identifiers whole": cut_identifiers,
    "chit-chat nowhere": small_talk_kept,
}
"""Each property of the notes and what breaks it."""


def held(documents: Mapping[str, str], names: Iterable[str] = ()) -> dict[str, int]:
    """Per property, on how many of ``documents`` (session name -> document) it holds."""
    chosen: Sequence[str] = list(names) or list(documents)
    return {
        prop: sum(1 for n in chosen if not check(documents[n], SESSIONS[n]))
        for prop, check in PROPERTIES.items()
    }
