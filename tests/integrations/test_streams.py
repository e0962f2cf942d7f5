"""No Working Memory writer token reaches the user's streams.

A token-streaming chat UI reads ``astream_events(version="v2")`` or ``stream_mode="messages"``.
The writer runs inline (``background=False``; a mid-turn overflow even with the default
background) inside the agent's run, so its model calls used to be streamed as the agent's
``on_chat_model_stream`` events; ``create_react_agent``'s ``pre_model_hook`` output (system
addition, ``[Session History Summary]``) was streamed as messages. Tracers in
``config["callbacks"]`` (LangSmith) must still see the writer's runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore

from tests.integrations.helpers import CollectingTracer, agent_model, wm_model
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.context.assemble import SUMMARY_HEADER
from wm_langgraph.testing import ScriptedChatModel

WRITER_MARK = "# Working Memory"


def streaming_writer() -> ScriptedChatModel:
    """The WM writer of ``wm_model`` streaming its reply word by word (like a real model)."""
    return ScriptedChatModel(respond=wm_model().respond, disable_streaming=False)


@tool
def fetch(key: str) -> str:
    """Fetch a large report."""
    return f"report {key}: " + " ".join(f"row{i}" for i in range(240))


INLINE = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)
OVERFLOW = WorkingMemoryConfig(
    token_budget=3_000,
    commit_token_threshold_ratio=1.0,
    commit_keep_recent_count=10,
    background=True,  # the default; an overflow commits inline all the same
)


def _middleware_agent(config: WorkingMemoryConfig, *, calls_per_turn: int = 1) -> Any:
    store = InMemoryStore()
    mw = WorkingMemoryMiddleware(streaming_writer(), config=config)
    model = agent_model(tool="fetch", calls_per_turn=calls_per_turn)
    return create_agent(
        model, [fetch], middleware=[mw], checkpointer=InMemorySaver(), store=store
    ), mw


def _react_agent(config: WorkingMemoryConfig) -> tuple[Any, WorkingMemory]:
    memory = WorkingMemory(streaming_writer(), config=config)
    agent = create_react_agent(
        agent_model(tool="fetch", calls_per_turn=4 if config is OVERFLOW else 1),
        [fetch, *memory.tools],
        pre_model_hook=memory.pre_model_hook,
        post_model_hook=memory.post_model_hook,
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        version="v2",
    )
    return agent, memory


def _turns(config: WorkingMemoryConfig) -> list[str]:
    if config is OVERFLOW:
        return [*(f"note FACT-{n}: " + "context " * 120 for n in range(3)), "now use fetch"]
    return [f"note FACT-{n}" for n in range(1, 5)]


def _events(agent: Any, turns: list[str], thread: str, tracer: CollectingTracer) -> list[Any]:
    config: Any = {"configurable": {"thread_id": thread}, "callbacks": [tracer]}

    async def run() -> list[Any]:
        seen: list[Any] = []
        for text in turns:
            payload = {"messages": [HumanMessage(text)]}
            seen.extend([e async for e in agent.astream_events(payload, config, version="v2")])
        return seen

    return asyncio.run(run())


def _writer_events(events: list[Any]) -> list[Any]:
    leaked = []
    for event in events:
        name = str(event.get("name", ""))
        data = event.get("data") or {}
        chunk = data.get("chunk")
        text = str(getattr(chunk, "content", "")) if chunk is not None else ""
        ours = name.startswith("wm.") or "wm_langgraph" in (event.get("tags") or [])
        token = event["event"] == "on_chat_model_stream" and "Working Memory" in text
        if ours or token:
            leaked.append(event)
    return leaked


@pytest.mark.parametrize("config", [INLINE, OVERFLOW], ids=["inline", "overflow"])
def test_astream_events_never_carry_the_writer_while_tracers_see_it(config):
    agent, mw = _middleware_agent(config, calls_per_turn=4 if config is OVERFLOW else 1)
    tracer = CollectingTracer()
    events = _events(agent, _turns(config), "events", tracer)
    assert mw.memory.list_archives({"configurable": {"thread_id": "events"}}), "no commit ran"
    assert _writer_events(events) == []
    commits = tracer.named("wm.commit")
    assert commits, "the tracer lost the writer's runs"
    models = [r for r in tracer.collected if r.run_type == "llm" and r.name.startswith("wm.")]
    assert models


def test_react_agent_streams_no_hook_output_and_no_writer_events():
    agent, memory = _react_agent(INLINE)
    tracer = CollectingTracer()
    events = _events(agent, _turns(INLINE), "react-events", tracer)
    assert memory.list_archives({"configurable": {"thread_id": "react-events"}})
    assert _writer_events(events) == []
    assert tracer.named("wm.commit")


def _message_chunks(agent: Any, turns: list[str], thread: str) -> list[BaseMessage]:
    config: Any = {"configurable": {"thread_id": thread}}
    chunks: list[BaseMessage] = []
    for text in turns:
        payload = {"messages": [HumanMessage(text)]}
        for message, _meta in agent.stream(payload, config, stream_mode="messages"):
            chunks.append(message)
    return chunks


@pytest.mark.parametrize("config", [INLINE, OVERFLOW], ids=["inline", "overflow"])
def test_stream_mode_messages_carries_only_the_conversation(config):
    agent, memory = _react_agent(config)
    turns = _turns(config)
    chunks = _message_chunks(agent, turns, "react-messages")
    assert memory.list_archives({"configurable": {"thread_id": "react-messages"}})
    texts = [str(m.text) for m in chunks]
    assert not [t for t in texts if SUMMARY_HEADER in t or WRITER_MARK in t]
    assert not [m for m in chunks if m.type == "system"]
    agent_mw, mw = _middleware_agent(config, calls_per_turn=4 if config is OVERFLOW else 1)
    texts = [str(m.text) for m in _message_chunks(agent_mw, turns, "mw-messages")]
    assert mw.memory.list_archives({"configurable": {"thread_id": "mw-messages"}})
    assert not [t for t in texts if SUMMARY_HEADER in t or WRITER_MARK in t]
