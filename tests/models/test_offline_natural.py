"""The offline writer on natural sessions (issue 46): a coding session, a debugging session, a
travel chat, a support chat and a Chinese session (the development set), and twelve more
written before the code ran on them and kept as held-out checks (health, cooking, a move, a
booking, a bug triage with a test tool's trace, data analysis, a refund, hiring, bookkeeping,
a personal introduction, a Chinese and a Japanese chat), each with what a careful person would
note (``tests/natural.py``), driven as the engine drives a writer: the real create and update
prompts, rounds of a few messages, the merge. One test per property of its own output: no
duplicate item, every stated error or correction in Errors & Corrections, every open item in
Open Issues exactly once (a settled one closed), every stated fact in a section that keeps it,
no identifier cut, chit-chat nowhere."""

from __future__ import annotations

from functools import cache

import pytest

from tests.natural import (
    SESSIONS,
    cut_identifiers,
    duplicates,
    misfiled_open_items,
    missing_errors,
    missing_facts,
    session_messages,
    small_talk_kept,
)
from wm_langgraph import OfflineWorkingMemoryModel
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.messages import render_messages
from wm_langgraph.writer.generate import generate_create, generate_update

ROUND = 4
"""Messages a round folds (the engine folds what is pending; a few messages each time)."""
NAMES = pytest.mark.parametrize("name", sorted(SESSIONS))


@cache
def _document(name: str) -> str:
    """The Working Memory the offline writer keeps over the session, round by round."""
    model = OfflineWorkingMemoryModel()
    messages = session_messages(SESSIONS[name])
    rounds = [messages[i : i + ROUND] for i in range(0, len(messages), ROUND)]
    text = generate_create(model, prior="", messages_text=render_messages(rounds[0]))
    for chunk in rounds[1:]:
        ops = generate_update(model, working_memory=text, messages_text=render_messages(chunk))
        assert ops is not None
        text = merge_working_memory(text, ops).text
    return text


@NAMES
def test_no_item_is_written_twice(name: str) -> None:
    assert duplicates(_document(name)) == []


@NAMES
def test_every_stated_error_or_correction_is_in_errors_and_corrections(name: str) -> None:
    assert missing_errors(_document(name), SESSIONS[name]) == []


@NAMES
def test_every_open_item_is_in_open_issues_exactly_once(name: str) -> None:
    assert misfiled_open_items(_document(name), SESSIONS[name]) == []


@NAMES
def test_every_stated_fact_is_in_a_section_that_keeps_it(name: str) -> None:
    assert missing_facts(_document(name), SESSIONS[name]) == []


@NAMES
def test_no_identifier_is_cut(name: str) -> None:
    assert cut_identifiers(_document(name), SESSIONS[name]) == []


@NAMES
def test_chit_chat_and_acknowledgements_stand_nowhere(name: str) -> None:
    assert small_talk_kept(_document(name), SESSIONS[name]) == []
