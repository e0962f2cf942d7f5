"""The offline model consolidates like a careful model: over 1,000 turns of a coding
session its Working Memory stays within the size target by its own consolidations; the code's
compaction at the ceiling never has to step in."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.store.memory import InMemoryStore

from bench.data import Session, generate_session
from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemory, WorkingMemoryConfig
from wm_langgraph.document import parse_working_memory
from wm_langgraph.document.protocol import TOKEN_THRESHOLD
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.phase2.size import contract_for


def _messages(session: Session, start: int, end: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for turn in session.turns[start:end]:
        out.append(HumanMessage(turn.user, id=f"u{turn.index}"))
        for s, step in enumerate(turn.steps):
            calls = [{"name": c.name, "args": dict(c.args), "id": c.call_id} for c in step]
            out.append(AIMessage("", tool_calls=calls, id=f"a{turn.index}-{s}"))
            out.extend(
                ToolMessage(c.result, tool_call_id=c.call_id, name=c.name, id=f"t{c.call_id}")
                for c in step
            )
        out.append(AIMessage(turn.answer, id=f"f{turn.index}"))
    return out


REWRITABLE = ("Session Title", "Current State", "Task & Goals", "Key Facts & Decisions")
"""Sections the model may consolidate freely (Files & Context must keep every path, Errors &
Corrections is append-only, Open Issues keeps every open item)."""


def _play(kind: str, turns: int, every: int = 8) -> tuple[WorkingMemory, Any, list[str]]:
    session = generate_session(kind, 7, turns)
    memory = WorkingMemory(
        OfflineWorkingMemoryModel(),
        config=WorkingMemoryConfig(background=False),
        store=InMemoryStore(),
    )
    config: Any = {"configurable": {"thread_id": f"offline-{kind}"}}
    documents: list[str] = []
    for start in range(0, turns, every):
        memory.compact({"messages": _messages(session, start, start + every)}, config)
        documents.append(memory.get_working_memory(config))
    return memory, config, documents


def _compacted(memory: WorkingMemory, config: Any) -> list[str]:
    return [
        a.id
        for a in memory.list_archives(config)
        if any(d.get("applied") == "COMPACT" for d in a.metadata.get("decisions", []))
    ]


@pytest.mark.slow
def test_offline_wm_of_a_1000_turn_chat_stays_within_the_target(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="wm_langgraph")
    memory, config, documents = _play("chat", 1_000)
    target = contract_for(memory.config).target
    sizes = [count_tokens(d) for d in documents]
    assert max(sizes) <= target, f"max {max(sizes)} > target {target}: {sizes[::10]}"
    assert _compacted(memory, config) == []


@pytest.mark.slow
def test_offline_wm_of_a_1000_turn_coding_session_grows_only_where_the_guards_keep(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="wm_langgraph")
    memory, config, documents = _play("coding", 1_000)
    contract = contract_for(memory.config)
    for document in documents:
        bodies = parse_working_memory(document)
        for name in REWRITABLE:
            # Consolidated whenever warned: what the writer itself keeps stays under the
            # section limit; only the guards' restores of facts it dropped may go past it.
            own = "\n".join(x for x in bodies[name].splitlines() if "[restored]" not in x)
            assert count_tokens(own) <= TOKEN_THRESHOLD, (name, count_tokens(own))
        assert "Earlier requests: Earlier requests:" not in document  # no stacked folds
        assert count_tokens(document) <= contract.ceiling
    # the model's own consolidation holds it: the code's compaction never had to step in
    assert _compacted(memory, config) == []
