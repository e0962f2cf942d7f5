"""Title grounding through the engine: the commit passes the folded conversation to the merge, so a
title the writer invents (or copies from a prompt) is refused, a grounded one accepted."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from tests.engine._support import is_update_call
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel

CONFIG = WorkingMemoryConfig(token_budget=8000, background=False)


def _writer(title: str) -> ScriptedChatModel:
    def reply(messages, tools, tool_choice):
        if is_update_call(tools):
            ops = {name: {"op": "KEEP"} for name in SECTIONS}
            ops["Session Title"] = {"op": "UPDATE", "content": title}
            return {
                "content": "",
                "tool_calls": [{"name": "update_working_memory", "args": {"sections": ops}}],
            }
        return render_working_memory({"Current State": "Started.", "Key Facts & Decisions": "- x"})

    return ScriptedChatModel(respond=reply)


def _title_after(title: str) -> str:
    wm = WorkingMemory(_writer(title), config=CONFIG, store=InMemoryStore())
    cfg = {"configurable": {"thread_id": "title"}}
    turn = [HumanMessage("add retries to the webhook sender", id="h1"), AIMessage("ok", id="a1")]
    wm.compact({"messages": turn}, cfg)
    more = [HumanMessage("and log each retry", id="h2"), AIMessage("done", id="a2")]
    wm.compact({"messages": more}, cfg)
    return parse_working_memory(wm.get_working_memory(cfg))["Session Title"]


def test_an_invented_title_is_refused():
    assert _title_after("Migrating the payments service from MySQL to Postgres") == ""


def test_a_title_grounded_in_the_conversation_is_accepted():
    assert _title_after("Webhook sender retries") == "Webhook sender retries"
