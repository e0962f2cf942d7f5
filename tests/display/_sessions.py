"""Small agent sessions for the display tests: ``create_agent`` with the middleware, a scripted
agent model that calls a ``fetch`` tool now and then and searches its archives when asked, the
offline writer, and a budget small enough to commit every few turns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore

from wm_langgraph import (
    OfflineWorkingMemoryModel,
    WorkingMemoryConfig,
    WorkingMemoryMiddleware,
)
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel

__all__ = ["REPORT_HEADINGS", "SMALL", "Session", "run_session"]

REPORT_HEADINGS = (
    "Timeline",
    "The model input of every call",
    "The Working Memory now",
    "Every Working Memory version",
    "Archives",
    "Searches of the archives",
)
"""The parts of a thread report, by their headings."""

SMALL = WorkingMemoryConfig(
    token_budget=2_000,
    commit_token_threshold_ratio=0.1,
    commit_keep_recent_count=2,
    background=False,
)
"""Commits every few turns of a short session, Phase 2 inline (deterministic)."""


@dataclass
class Session:
    """A finished session: its memory, thread config, checkpointer and agent model."""

    memory: WorkingMemory
    config: RunnableConfig
    checkpointer: InMemorySaver
    model: ScriptedChatModel
    agent: Any

    def prompts(self) -> list[list[BaseMessage]]:
        """Every input the agent's model saw, in order."""
        return [call.messages for call in self.model.calls]


def run_session(
    turns: Sequence[str],
    *,
    tool_output: str = "the page says: deploy on Fridays is forbidden",
    search: str | None = None,
    writer: BaseChatModel | None = None,
    config: WorkingMemoryConfig = SMALL,
    thread_id: str = "display",
    path: str = "create_agent",
) -> Session:
    """Play ``turns`` (one user message each). Every third turn the agent first fetches a page
    (the tool returns ``tool_output``); with ``search`` the last turn first calls
    ``archive_search`` with that query. ``path``: ``create_agent`` with the middleware, or
    ``create_react_agent`` with the memory's hooks."""
    text_of_tool = tool_output

    @tool
    def fetch(url: str) -> str:
        """Fetch a web page."""
        return text_of_tool

    count = {"n": 0}

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            count["n"] += 1
            if search is not None and count["n"] == len(turns):
                return {
                    "content": "",
                    "tool_calls": [{"name": "archive_search", "args": {"query": search}}],
                }
            if count["n"] % 3 == 0:
                return {
                    "content": "",
                    "tool_calls": [{"name": "fetch", "args": {"url": "https://example.invalid/x"}}],
                }
            return f"noted: {last.text[:300]}"
        return f"read it: {last.text[:300]}"

    model = ScriptedChatModel(respond=reply)
    store = InMemoryStore()
    checkpointer = InMemorySaver()
    writer = writer or OfflineWorkingMemoryModel()
    agent: Any
    if path == "create_agent":
        middleware = WorkingMemoryMiddleware(writer, config=config, store=store)
        memory = middleware.memory
        agent = create_agent(
            model, [fetch], middleware=[middleware], checkpointer=checkpointer, store=store
        )
    elif path == "create_react_agent":
        memory = WorkingMemory(writer, config=config, store=store)
        agent = create_react_agent(
            model,
            [fetch],
            pre_model_hook=memory.pre_model_hook,
            post_model_hook=memory.post_model_hook,
            checkpointer=checkpointer,
            store=store,
            version="v2",
        )
    else:
        raise ValueError(f"unknown integration path {path!r}")
    run: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    for text in turns:
        agent.invoke({"messages": [{"role": "user", "content": text}]}, run)
    memory.wait(run)
    return Session(memory, run, checkpointer, model, agent)
