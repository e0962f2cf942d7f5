"""A hook that is both a plain callable and a Runnable (sync and async) for ``add_node``.

Typed as ``Runnable[WorkingMemoryState, Any]`` so that ``builder.add_node("assemble",
memory.assemble)`` satisfies ``mypy --strict`` (LangGraph wants a node's input to be a state
class, not a ``Mapping``); any state schema with a ``messages`` list works at run time, and
direct calls take any mapping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda

from wm_langgraph.engine.state import WorkingMemoryState

__all__ = ["HookFn", "NodeHook", "to_thread_twin"]

HookFn = Callable[[Mapping[str, Any], RunnableConfig | None], Any]


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

    def __call__(self, state: Mapping[str, Any], config: RunnableConfig | None = None) -> Any:
        """Run the hook on ``state`` with ``config`` (needs ``configurable.thread_id``)."""
        return self._hook(state, config)
