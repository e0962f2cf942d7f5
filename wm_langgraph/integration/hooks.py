"""A hook that is both a plain callable and a Runnable (sync and async) for ``add_node``.

Typed as ``Runnable[WorkingMemoryState, Any]`` so that ``builder.add_node("assemble",
memory.assemble)`` satisfies ``mypy --strict`` (LangGraph wants a node's input to be a state
class, not a ``Mapping``); any state schema with a ``messages`` list works at run time, and
direct calls take any mapping.

The hook's ``__call__`` is annotated with :class:`HookInput`, a state schema holding the
``messages`` and the Working Memory meta (``working_memory``). ``StateGraph.add_node`` infers a
node's input schema from that annotation and adds its channels to the graph, so every graph the
hooks are nodes of (a ``create_react_agent`` with ``AgentState``, a StateGraph over
``MessagesState``) checkpoints the meta with the messages. The meta therefore follows forks and
time travel: a run resumed from any checkpoint sees that checkpoint's own timeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from wm_langgraph.state import WorkingMemoryState

__all__ = ["HookFn", "HookInput", "NodeHook", "to_thread_twin"]

HookFn = Callable[[Mapping[str, Any], RunnableConfig | None], Any]


class HookInput(TypedDict):
    """What the hooks read from the graph state (the graph's own reducers apply: a plain
    ``list`` here never replaces the graph's ``messages`` channel)."""

    messages: list[AnyMessage]
    working_memory: NotRequired[dict[str, Any]]


if TYPE_CHECKING:  # callers pass any mapping; add_node reads the TypedDict at runtime
    _State = Mapping[str, Any]
else:
    _State = HookInput


def to_thread_twin(func: HookFn) -> Callable[..., Any]:
    """An async twin that runs ``func`` in a worker thread (context variables copied)."""

    async def twin(state: Mapping[str, Any], config: RunnableConfig | None = None) -> Any:
        return await asyncio.to_thread(func, state, config)

    return twin


class NodeHook(RunnableLambda[WorkingMemoryState, Any]):
    """``hook(state, config)`` works directly; ``builder.add_node("x", hook)`` works in
    ``invoke`` and ``ainvoke`` (the async path runs the sync code off the event loop)."""

    def __init__(self, name: str, func: HookFn) -> None:
        """Wrap ``func(state, config)`` under the run name ``name``."""
        self._hook = func

        def call(state: Mapping[str, Any], config: RunnableConfig) -> Any:
            return func(state, config)

        twin = to_thread_twin(func)

        async def acall(state: Mapping[str, Any], config: RunnableConfig) -> Any:
            return await twin(state, config)

        super().__init__(call, afunc=acall, name=name)

    def __call__(self, state: _State, config: RunnableConfig | None = None) -> Any:
        """Run the hook on ``state`` with ``config`` (needs ``configurable.thread_id``)."""
        return self._hook(state, config)
