"""The three ways users plug the engine in, behind one small driver for the state-operation tests.

``stategraph``: a StateGraph with the assemble / after_turn nodes (``_support.build_agent``);
``react``: ``create_react_agent`` with ``pre_model_hook`` / ``post_model_hook``;
``middleware``: ``create_agent`` with ``WorkingMemoryMiddleware``.

Each is compiled with an InMemorySaver and the engine's store, and driven through the public
graph API (``invoke``, ``get_state``, ``get_state_history``, ``update_state``), so forks, edits and
removals are exactly what a user would do.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from tests.engine._support import WMWriter, agent_model, build_agent
from wm_langgraph import (
    WorkingMemoryAgentState,
    WorkingMemoryMiddleware,
    archive_aware_add_messages,
)
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import ToolNode, create_react_agent
    from langgraph.prebuilt.chat_agent_executor import AgentState

PATHS = ("stategraph", "react", "middleware")


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@dataclass
class Driver:
    """One agent of one kind, over a WorkingMemory and a scripted agent model."""

    kind: str
    wm: WorkingMemory
    graph: Any
    model: ScriptedChatModel
    writer: WMWriter

    # the node a manual update_state is attributed to, so nothing runs after it
    @property
    def last_node(self) -> str:
        return {
            "stategraph": "after_turn",
            "react": "post_model_hook",
            "middleware": "WorkingMemoryMiddleware.after_agent",
        }[self.kind]

    @property
    def model_node(self) -> str:
        """The node that writes the agent model's reply (an update as_node it routes on)."""
        return {"stategraph": "agent", "react": "post_model_hook", "middleware": "model"}[self.kind]

    def invoke(self, messages: list[BaseMessage] | None, config: dict[str, Any]) -> Any:
        return self.graph.invoke(None if messages is None else {"messages": messages}, config)

    def values(self, config: dict[str, Any]) -> dict[str, Any]:
        return dict(self.graph.get_state(config).values)

    def live(self, config: dict[str, Any]) -> list[BaseMessage]:
        return list(self.values(config).get("messages", []))

    def timeline(self, config: dict[str, Any]) -> list[str]:
        meta = self.values(config).get("working_memory")
        if meta is None:  # a graph that keeps no meta in its state: the thread's latest
            return [a.id for a in self.wm.list_archives(config)]
        return list(meta.get("archives") or [])

    def prompts(self) -> list[list[BaseMessage]]:
        """Every model input the agent model saw, in order."""
        return [call.messages for call in self.model.calls]


class ReactState(AgentState):
    """create_react_agent's state with the reducer that accepts removals of archived ids."""

    messages: Annotated[Sequence[BaseMessage], archive_aware_add_messages]


def make(
    kind: str,
    config: WorkingMemoryConfig,
    *,
    tool_every: int = 0,
    parallel: int = 1,
    tolerant: bool = False,
    store: BaseStore | None = None,
    model: ScriptedChatModel | None = None,
    tools: Sequence[BaseTool] | None = None,
    **graph_kwargs: Any,
) -> Driver:
    """A driver of ``kind`` (one of :data:`PATHS`). ``tolerant``: the agents get the state
    schema whose reducer accepts ``RemoveMessage`` of archived ids (the StateGraph always has
    it: ``WorkingMemoryState``). ``store``: the engine's store (a new ``InMemoryStore`` by
    default). ``model`` / ``tools``: the agent model and its tools (default: ``agent_model``
    and ``read_file``)."""
    writer = WMWriter()
    store = InMemoryStore() if store is None else store
    model = agent_model(tool_every=tool_every, parallel=parallel) if model is None else model
    tools = [read_file] if tools is None else list(tools)
    checkpointer = InMemorySaver()
    if kind == "stategraph":
        wm = WorkingMemory(writer.model, config=config, store=store)
        node = ToolNode(tools) if tools != [read_file] else None
        graph = build_agent(wm, model, checkpointer=checkpointer, store=wm.store, tools=node)
        if graph_kwargs:
            graph = graph.builder.compile(checkpointer=checkpointer, store=wm.store, **graph_kwargs)
    elif kind == "react":
        wm = WorkingMemory(writer.model, config=config, store=store)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = create_react_agent(
                model,
                tools,
                pre_model_hook=wm.pre_model_hook,
                post_model_hook=wm.post_model_hook,
                checkpointer=checkpointer,
                store=wm.store,
                version="v2",
                **({"state_schema": ReactState} if tolerant else {}),
                **graph_kwargs,
            )
    elif kind == "middleware":
        mw = WorkingMemoryMiddleware(writer.model, config=config, store=store)
        wm = mw.memory
        graph = create_agent(
            model,
            tools,
            middleware=[mw],
            checkpointer=checkpointer,
            store=wm.store,
            **({"state_schema": WorkingMemoryAgentState} if tolerant else {}),
            **graph_kwargs,
        )
    else:  # pragma: no cover - a typo in a test
        raise ValueError(kind)
    return Driver(kind, wm, graph, model, writer)


def make_plain(kind: str, model: ScriptedChatModel, tools: Sequence[BaseTool]) -> Any:
    """The graph of ``kind`` without any memory: what the agent sends with no memory at all
    (the StateGraph's model node reads the state's messages)."""
    checkpointer = InMemorySaver()
    if kind == "stategraph":

        def agent(state: dict[str, Any]) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def route(state: dict[str, Any]) -> str:
            last = state["messages"][-1]
            return "tools" if getattr(last, "tool_calls", None) else END

        builder = StateGraph(AgentState)
        builder.add_node("agent", agent)
        builder.add_node("tools", ToolNode(list(tools)))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", route, ["tools", END])
        builder.add_edge("tools", "agent")
        return builder.compile(checkpointer=checkpointer)
    if kind == "react":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_react_agent(model, list(tools), checkpointer=checkpointer)
    return create_agent(model, list(tools), checkpointer=checkpointer)


def conversation_ids(messages: list[BaseMessage]) -> list[str]:
    return [str(m.id) for m in messages if not isinstance(m, SystemMessage)]


def archived_ids(driver: Driver, config: dict[str, Any]) -> list[str]:
    """Message ids of the archives on the state's own timeline, in order."""
    timeline = driver.timeline(config)
    thread = str(config["configurable"]["thread_id"])
    records = driver.wm._archives.get_archives(thread, timeline)
    assert [r.id for r in records] == timeline, "an archive of the timeline is missing"
    return [str(m.id) for r in records for m in r.messages]
