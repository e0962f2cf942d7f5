"""The update path filters the writer's own instructions as the create path does (issue:
capture): a writer talked into copying its prompt put the prompt's lines into Current State and
Key Facts. Reproduced on create_agent + WorkingMemoryMiddleware."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.integrations.helpers import agent_model
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.testing import ScriptedChatModel, tool_reply
from wm_langgraph.writer.prompts import load_prompt

CONFIG = WorkingMemoryConfig(
    token_budget=8_000,
    commit_token_threshold_ratio=0.02,
    commit_keep_recent_count=2,
    background=False,
)


def _prompt_lines() -> list[str]:
    lines = [line.strip() for line in load_prompt("update").splitlines()]
    return [line for line in lines if len(line) > 60 and "{{" not in line][:12]


def _echoing_writer() -> ScriptedChatModel:
    copied = _prompt_lines()

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if tools:
            ops: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
            ops["Current State"] = {
                "op": "UPDATE",
                "content": "\n".join(["The exporter now writes CSV.", *copied[:6]]),
            }
            ops["Key Facts & Decisions"] = {
                "op": "APPEND",
                "items": ["Invoices are exported nightly at 02:00", *copied[6:]],
            }
            return tool_reply(UPDATE_TOOL_NAME, {"sections": ops})
        return render_working_memory(
            {
                "Session Title": "Invoice exporter migration",
                "Current State": "Started the exporter migration.",
                "Key Facts & Decisions": "- The exporter targets Postgres 16",
            }
        )

    return ScriptedChatModel(respond=reply)


def test_prompt_lines_a_writer_copies_into_an_update_are_dropped():
    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(_echoing_writer(), config=CONFIG, store=store)
    agent = create_agent(
        agent_model(), [], middleware=[middleware], checkpointer=InMemorySaver(), store=store
    )
    config = thread_config("echo")
    for n in range(8):
        text = f"turn {n}: the invoice exporter moves to Postgres 16, nightly at 02:00 " * 3
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    middleware.memory.wait(config)
    wm = middleware.memory.get_working_memory(config)
    sections = parse_working_memory(wm)
    assert "Invoices are exported nightly at 02:00" in sections["Key Facts & Decisions"]
    assert "The exporter now writes CSV." in sections["Current State"]
    for line in _prompt_lines():
        assert line not in wm, line
    archives = middleware.memory.list_archives(config)
    reasons = [d["reason"] for a in archives for d in (a.metadata or {}).get("decisions") or []]
    assert any("prompt" in r for r in reasons)
