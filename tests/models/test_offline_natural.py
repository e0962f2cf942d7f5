"""The offline writer on natural sessions (issue 46): a coding session, a debugging session, a
travel chat, a support chat and a Chinese session (``data/natural_sessions.json``, each with
what a careful person would note), driven as the engine drives a writer: the real create and
update prompts, rounds of a few messages, the guarded merge. One test per property of its own
output: no duplicate item, every stated error or correction in Errors & Corrections, every open
item in Open Issues exactly once, every stated fact in a section that keeps it, no identifier
cut."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from wm_langgraph import OfflineWorkingMemoryModel
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.sections import DURABLE_SECTIONS, parse_working_memory, section_items
from wm_langgraph.document.text.units import statement_key
from wm_langgraph.messages import render_messages
from wm_langgraph.writer.generate import generate_create, generate_update

DATA = json.loads((Path(__file__).parent / "data" / "natural_sessions.json").read_text("utf-8"))
SESSIONS: dict[str, dict[str, Any]] = {s["name"]: s for s in DATA["sessions"]}
ROUND = 4
"""Messages a round folds (the engine folds what is pending; a few messages each time)."""
NAMES = pytest.mark.parametrize("name", sorted(SESSIONS))
_RECORD_RE = r"(?:User correction|Superseded|用户纠正|已被更正)[:：]"


def _messages(session: dict[str, Any]) -> list[BaseMessage]:
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


@cache
def _document(name: str) -> str:
    """The Working Memory the offline writer keeps over the session, round by round."""
    model = OfflineWorkingMemoryModel()
    messages = _messages(SESSIONS[name])
    rounds = [messages[i : i + ROUND] for i in range(0, len(messages), ROUND)]
    text = generate_create(model, prior="", messages_text=render_messages(rounds[0]))
    for chunk in rounds[1:]:
        ops = generate_update(model, working_memory=text, messages_text=render_messages(chunk))
        assert ops is not None
        text = merge_working_memory(text, ops).text
    return text


def _items(name: str) -> dict[str, list[str]]:
    sections = parse_working_memory(_document(name))
    return {section: section_items(sections[section]) for section in DURABLE_SECTIONS}


@NAMES
def test_no_item_is_written_twice(name: str) -> None:
    keys = [statement_key(i) for items in _items(name).values() for i in items]
    assert sorted({k for k in keys if keys.count(k) > 1}) == []
    # nor one statement inside another item of another section
    items = [(s, i) for s, got in _items(name).items() for i in got]
    # (a correction is recorded in Errors & Corrections and the corrected fact stands as the
    # current value in its own section: one statement, two roles)
    items = [(s, i) for s, i in items if not re.match(_RECORD_RE, i)]
    for section, item in items:
        key = statement_key(item)
        inside = [o for s, o in items if s != section and len(key) > 20 and key in o.casefold()]
        assert inside == [], (section, item)


@NAMES
def test_every_stated_error_or_correction_is_in_errors_and_corrections(name: str) -> None:
    errors = "\n".join(_items(name)["Errors & Corrections"])
    for said in SESSIONS[name]["errors"]:
        assert said in errors


@NAMES
def test_every_open_item_is_in_open_issues_exactly_once(name: str) -> None:
    issues = _items(name)["Open Issues"]
    for said in SESSIONS[name]["open"]:
        holding = [i for i in issues if said in i]
        assert len(holding) == 1, (said, issues)
        assert not holding[0].startswith("[resolved]")
    for said in SESSIONS[name]["resolved"]:
        assert all(i.startswith("[resolved]") for i in issues if said in i), issues
    # an acknowledgement or a greeting is no open issue, nor anything else
    everything = "\n".join(i for got in _items(name).values() for i in got)
    assert not re.search(r"^(?:ok|thanks|cool|great|bye|好的|收到)\b", everything, re.I | re.M)


@NAMES
def test_every_stated_fact_is_in_a_section_that_keeps_it(name: str) -> None:
    durable = "\n".join(i for got in _items(name).values() for i in got)
    for said in SESSIONS[name]["facts"]:
        assert said in durable


@NAMES
def test_no_identifier_is_cut(name: str) -> None:
    document = _document(name)
    for token in SESSIONS[name]["identifiers"]:
        assert token in document
    said = " ".join(
        e.get("user", "") + " " + e.get("assistant", "") for e in SESSIONS[name]["messages"]
    )
    for cut in re.findall(r"(\S+)…", document):
        whole = [w for w in said.split() if w.startswith(cut) and w != cut]
        assert whole == [], f"{cut}… cuts {whole[0]}"
