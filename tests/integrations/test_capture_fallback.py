"""A create or update reply without content is not the end of the round (issue: capture).

A small real writer answered both create calls with the seven headers and nothing else; both
archives ended failed/deferred and the Working Memory stayed empty. Now the round still leaves
a Working Memory behind, extracted from the folded messages by the offline writer's rules and
marked ``extractive``, and a later writer round refines it.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import lookup_tool, thread_config
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME
from wm_langgraph.document.sections import parse_working_memory, render_working_memory
from wm_langgraph.testing import ScriptedChatModel, tool_reply

CONFIG = WorkingMemoryConfig(
    token_budget=8_000,
    commit_token_threshold_ratio=0.02,
    commit_keep_recent_count=2,
    background=False,
)
lookup = lookup_tool(details=5)


def _empty_writer(*, empty_update: str = "headers") -> ScriptedChatModel:
    """Create: the seven headers alone. Update: a call whose arguments hold no section."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if tools:
            return tool_reply(UPDATE_TOOL_NAME, {})
        return render_working_memory({}) if empty_update == "headers" else ""

    return ScriptedChatModel(respond=reply)


def _agent(writer: ScriptedChatModel) -> tuple[Any, WorkingMemoryMiddleware]:
    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(writer, config=CONFIG, store=store)
    agent = create_agent(
        agent_model(tool="lookup"),
        [lookup],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        store=store,
    )
    return agent, middleware


TURNS = [
    "We are moving the invoice exporter to Postgres 16; the deadline is 2031-04-30.",
    "Decision: keep CSV export because the finance team imports it weekly. use lookup",
    "TODO: add a metric for 429 rejections on the exporter endpoint.",
    "The staging database listens on port 6543.",
]


def test_headers_alone_still_leave_an_extractive_working_memory():
    writer = _empty_writer()
    agent, middleware = _agent(writer)
    config = thread_config("empty-create")
    for text in TURNS:
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    middleware.memory.wait(config)
    wm = middleware.memory.get_working_memory(config)
    sections = parse_working_memory(wm)
    assert any(body.strip() for body in sections.values())
    assert "2031-04-30" in wm or "Postgres 16" in wm
    archives = middleware.memory.list_archives(config)
    assert archives
    assert {a.status for a in archives} == {"done"}
    assert "extractive" in {(a.metadata or {}).get("fallback") for a in archives}
    assert writer.calls  # the writer was asked first


def test_an_empty_reply_is_extracted_too():
    agent, middleware = _agent(_empty_writer(empty_update="empty"))
    config = thread_config("empty-reply")
    for text in TURNS:
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    middleware.memory.wait(config)
    assert "Postgres 16" in middleware.memory.get_working_memory(config)


def test_a_later_writer_round_refines_the_extractive_memory():
    empty, good = _empty_writer(), wm_model()
    mode = {"writer": empty}

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        return mode["writer"].respond(messages, tools, tool_choice)

    agent, middleware = _agent(ScriptedChatModel(respond=reply))
    config = thread_config("refined")
    for text in TURNS:
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    middleware.memory.wait(config)
    first = middleware.memory.get_working_memory(config)
    assert "Postgres 16" in first
    mode["writer"] = good  # the writer answers again: it updates the extracted document
    for n in range(4):
        agent.invoke({"messages": [HumanMessage(f"remember FACT-{n}; use lookup")]}, config)
    middleware.memory.wait(config)
    wm = middleware.memory.get_working_memory(config)
    assert "FACT-" in wm
    assert "Postgres 16" in wm
    latest = middleware.memory.list_archives(config)[-1]
    assert (latest.metadata or {}).get("fallback") != "extractive"
