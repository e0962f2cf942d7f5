"""The agent set-ups the deploy tests share: the two memory configurations they run with and an
agent on either integration path (``create_agent`` + ``WorkingMemoryMiddleware``, or
``create_react_agent`` with the memory's hooks) on a given checkpointer and store.

The tests build through :func:`build` (a fresh memory and its agent) or, to share one memory
between agents, :func:`hooks_for` once and :func:`agent_with` per agent; :func:`memory_of` gives
the ``WorkingMemory`` behind either hooks object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import create_react_agent
from langgraph.store.base import BaseStore

from tests.common import lookup, thread_config
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryMiddleware

__all__ = [
    "BACKGROUND",
    "EVERY_TURN",
    "PATHS",
    "Hooks",
    "agent_with",
    "build",
    "hooks_for",
    "memory_of",
    "play_turns",
    "remember",
]

PATHS = ("create_agent", "create_react_agent")
"""The integration paths the deploy cases run on."""

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)
"""A commit, with Phase 2 inline, on every turn."""

BACKGROUND = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=True,
)
"""A commit on every turn, with Phase 2 as a background job."""

Hooks = WorkingMemoryMiddleware | WorkingMemory
"""What an agent is built with: the middleware (``create_agent``) or the memory itself."""


def hooks_for(
    path: str,
    config: WorkingMemoryConfig,
    writer: BaseChatModel | None = None,
    *,
    store: BaseStore | None = None,
) -> Hooks:
    """A fresh memory for ``path``: a middleware for ``create_agent``, else a ``WorkingMemory``
    (the writer is :func:`~tests.integrations.helpers.wm_model` unless given; ``store``: the
    memory's own store, for reads before its first run)."""
    writer = writer if writer is not None else wm_model()
    if path == "create_agent":
        return WorkingMemoryMiddleware(writer, config=config, store=store)
    if path == "create_react_agent":
        return WorkingMemory(writer, config=config, store=store)
    raise ValueError(f"unknown integration path {path!r}")


def agent_with(
    hooks: Hooks,
    *,
    saver: Any,
    store: Any,
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] = (lookup,),
) -> Any:
    """An agent using ``hooks`` on ``saver`` and ``store`` (the agent's model is
    :func:`~tests.integrations.helpers.agent_model` unless given)."""
    model = model if model is not None else agent_model()
    if isinstance(hooks, WorkingMemoryMiddleware):
        return create_agent(model, list(tools), middleware=[hooks], checkpointer=saver, store=store)
    return create_react_agent(
        model,
        list(tools),
        pre_model_hook=hooks.pre_model_hook,
        post_model_hook=hooks.post_model_hook,
        checkpointer=saver,
        store=store,
        version="v2",
    )


def build(
    path: str,
    config: WorkingMemoryConfig,
    *,
    saver: Any,
    store: Any,
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] = (lookup,),
) -> tuple[Any, Hooks]:
    """A fresh memory for ``path`` and an agent using it: ``(agent, hooks)``."""
    hooks = hooks_for(path, config)
    return agent_with(hooks, saver=saver, store=store, model=model, tools=tools), hooks


def memory_of(hooks: Hooks) -> WorkingMemory:
    """The ``WorkingMemory`` behind ``hooks``."""
    return hooks.memory if isinstance(hooks, WorkingMemoryMiddleware) else hooks


async def play_turns(agent: Any, thread: str, turns: int, *, tool: str = "lookup") -> int:
    """Play ``turns`` turns on ``thread`` (``ainvoke``), each asking the agent to use ``tool``;
    returns how many turns raised."""
    failed = 0
    for n in range(turns):
        try:
            await agent.ainvoke(
                {"messages": [HumanMessage(f"note FACT-{n} use {tool}")]}, thread_config(thread)
            )
        except Exception:
            failed += 1
    return failed


@tool
async def remember(key: str, runtime: ToolRuntime) -> str:
    """Keep a note in the app's own store namespace."""
    assert runtime.store is not None
    await runtime.store.aput(("app", "notes"), key, {"key": key})
    return "kept"
