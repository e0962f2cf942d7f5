"""The stored document's hard size contract through the commit pipeline: a writer
that returns a 200 KB document or 10,000 items never pushes the stored WM over the ceiling,
the items moved out are counted in the WM and found by ``archive_search``."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from tests.engine._support import is_capture_call, is_update_call, user
from wm_langgraph import WorkingMemory, WorkingMemoryConfig
from wm_langgraph.document import render_working_memory
from wm_langgraph.document.compaction import moved_count
from wm_langgraph.document.sections import SECTIONS
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.phase2.size import contract_for
from wm_langgraph.recall.tools import archive_search_text
from wm_langgraph.testing import ScriptedChatModel

UPDATE_TOOL = "update_working_memory"


def flooding_writer(kind: str) -> ScriptedChatModel:
    """``blob``: every reply carries a 200 KB Current State; ``ops``: 10,000 new goals a call."""
    calls = {"n": 0}

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if is_capture_call(tools):
            return "nothing to add"  # declines the capture follow-up; not a flood call
        calls["n"] += 1
        n = calls["n"]
        blob = " ".join(f"blobword{n}x{i}" for i in range(20_000))  # about 200 KB
        goals = [f"goal {n}-{i}: tidy widget{n}x{i}" for i in range(10_000)]
        if not is_update_call(tools):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Flooded session"
            body["Current State"] = blob if kind == "blob" else "Working."
            body["Task & Goals"] = "\n".join(f"- {g}" for g in goals) if kind == "ops" else ""
            return render_working_memory(body)
        sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
        if kind == "blob":
            sections["Current State"] = {"op": "UPDATE", "content": blob}
        else:
            sections["Task & Goals"] = {"op": "APPEND", "items": goals}
        return {
            "content": "",
            "tool_calls": [{"name": UPDATE_TOOL, "args": {"sections": sections}}],
        }

    return ScriptedChatModel(respond=reply)


def _run(kind: str, commits: int) -> tuple[WorkingMemory, dict[str, Any]]:
    config = WorkingMemoryConfig(
        token_budget=8_000, commit_token_threshold_ratio=0.0, background=False
    )
    memory = WorkingMemory(flooding_writer(kind), config=config, store=InMemoryStore())
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"flood-{kind}"}}
    state: dict[str, Any] = {"messages": []}
    for i in range(1, commits + 1):
        state = {**state, "messages": [user(i)]}
        state = {**state, **memory.compact(state, cfg)}
    return memory, cfg


def test_a_200_kb_writer_never_pushes_the_stored_wm_over_the_ceiling() -> None:
    memory, cfg = _run("blob", commits=3)
    ceiling = contract_for(memory.config).ceiling
    document = memory.get_working_memory(cfg)
    assert count_tokens(document) <= ceiling
    assert moved_count(document) >= 1
    assert "archive_search finds them" in document
    found = archive_search_text(memory, cfg, "blobword3x19999")
    assert "moved out of the Working Memory" in found
    decisions = memory.list_archives(cfg)[-1].metadata["decisions"]
    assert any(d["applied"] == "COMPACT" for d in decisions)


def test_a_10000_ops_writer_stays_at_the_ceiling_and_counts_what_went() -> None:
    memory, cfg = _run("ops", commits=3)
    ceiling = contract_for(memory.config).ceiling
    document = memory.get_working_memory(cfg)
    assert count_tokens(document) <= ceiling
    moved = memory.moved_items(cfg)
    assert moved_count(document) == len(moved) > 20_000
    assert "goal 3-9999" in document  # the newest stay
    hit = archive_search_text(memory, cfg, "widget1x17")
    assert re.search(r"moved out of the Working Memory · Task & Goals", hit)


def test_items_moved_out_while_folding_an_archive_in_slices_are_all_kept() -> None:
    # An archive larger than the writer's prompt is folded in slices, one writer call each, into
    # one WM version; each slice's flood is compacted. What every slice moved out is stored, not
    # only the last slice's: the marker's count and the records agree.
    config = WorkingMemoryConfig(
        token_budget=8_000,
        commit_token_threshold_ratio=0.0,
        background=False,
        max_prompt_messages_tokens=300,
    )
    memory = WorkingMemory(flooding_writer("ops"), config=config, store=InMemoryStore())
    cfg: dict[str, Any] = {"configurable": {"thread_id": "flood-slices"}}
    state: dict[str, Any] = {"messages": [user(1)]}
    state = {**state, **memory.compact(state, cfg)}
    big = [HumanMessage(f"FACT-2{k:02d} " + "word " * 120, id=f"s{k}") for k in range(3)]
    state = {**state, "messages": big}
    memory.compact(state, cfg)
    (_, second) = memory.list_archives(cfg)
    assert second.metadata["metrics"]["slices"] > 1
    document = memory.get_working_memory(cfg)
    assert moved_count(document) == len(memory.moved_items(cfg))
