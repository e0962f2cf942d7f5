"""Behaviour §7.1: after_turn commits when pending_tokens >= token_budget * ratio (equality
commits)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from tests.engine._support import WMWriter
from wm_langgraph import WorkingMemory, WorkingMemoryConfig


def _memory(ratio: float) -> WorkingMemory:
    # A counter of 0 leaves only the fixed per-message overhead, so every message weighs the
    # same and the threshold can be hit exactly.
    config = WorkingMemoryConfig(
        token_budget=1_000,
        commit_token_threshold_ratio=ratio,
        commit_keep_recent_count=2,
        background=False,
    )
    return WorkingMemory(
        WMWriter().model, config=config, token_counter=lambda _text: 0, store=InMemoryStore()
    )


def _messages() -> list:
    return [
        HumanMessage("FACT-001", id="h1"),
        AIMessage("ok", id="a1"),
        HumanMessage("FACT-002", id="h2"),
        AIMessage("ok", id="a2"),
    ]


def test_pending_equal_to_the_threshold_commits():
    probe = _memory(0.5)
    per_message = probe.count_tokens([HumanMessage("x", id="x")])
    assert per_message > 0
    # two messages lie outside the recent window of 2: pending = 2 * per_message
    ratio = 2 * per_message / 1_000
    memory = _memory(ratio)
    cfg = {"configurable": {"thread_id": "eq"}}
    update = memory.after_turn({"messages": _messages()}, cfg)
    assert len(memory.list_archives(cfg)) == 1
    assert update["working_memory"]["pending_tokens"] == 0


def test_pending_just_below_the_threshold_does_not_commit():
    per_message = _memory(0.5).count_tokens([HumanMessage("x", id="x")])
    memory = _memory((2 * per_message + 1) / 1_000)
    cfg = {"configurable": {"thread_id": "below"}}
    update = memory.after_turn({"messages": _messages()}, cfg)
    assert memory.list_archives(cfg) == []
    assert update["working_memory"]["pending_tokens"] == 2 * per_message
