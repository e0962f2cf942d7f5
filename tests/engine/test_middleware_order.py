"""Middleware order (docs/guide.md, "Middleware order"): a middleware listed before
``WorkingMemoryMiddleware`` sees the state's raw messages, one listed after it sees exactly what
the model gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.context.assemble import SUMMARY_HEADER
from wm_langgraph.messages import content_text
from wm_langgraph.testing import ScriptedChatModel


class Recorder(AgentMiddleware[Any, Any, Any]):
    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self.seen: list[list[BaseMessage]] = []

    @property
    def name(self) -> str:
        return self._name

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage:
        self.seen.append(list(request.messages))
        return handler(request)


def _texts(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, content_text(m.content)) for m in messages]


def test_before_the_memory_the_raw_state_after_it_the_model_input():
    outer, inner = Recorder("outer"), Recorder("inner")
    model = ScriptedChatModel(respond=lambda messages, tools, choice: "noted")
    store = InMemoryStore()
    memory = WorkingMemoryMiddleware(
        OfflineWorkingMemoryModel(),
        config=WorkingMemoryConfig(token_budget=2_000, background=False),
        store=store,
    )
    checkpointer = InMemorySaver()
    agent = create_agent(
        model, [], middleware=[outer, memory, inner], checkpointer=checkpointer, store=store
    )
    config: RunnableConfig = {"configurable": {"thread_id": "order"}}
    for i in range(30):
        text = f"note {i}: build-{i}.example.com runs v1.{i}.0 " + "and more words " * 10
        state_before = list(agent.get_state(config).values.get("messages", []))
        agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        # the outer one saw the saved messages plus the new user message: the raw state
        assert [m.id for m in outer.seen[-1][:-1]] == [m.id for m in state_before]
        sent = [m for m in model.calls[-1].messages if m.type != "system"]
        assert _texts(inner.seen[-1]) == _texts(sent)  # the inner one: what the model got
    assert content_text(inner.seen[-1][0].content).startswith(SUMMARY_HEADER)
    assert not any(content_text(m.content).startswith(SUMMARY_HEADER) for m in outer.seen[-1])
