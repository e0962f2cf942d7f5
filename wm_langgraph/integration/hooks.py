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
import contextvars
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, TypeVar

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from wm_langgraph.state import WorkingMemoryState

__all__ = ["HOOK_THREADS", "HookFn", "HookInput", "NodeHook", "in_hook_thread", "to_thread_twin"]

_T = TypeVar("_T")

HOOK_THREADS = 32
"""Worker threads of the hooks' async twins, shared by every memory of the process. The hooks
run the sync engine off the event loop; most of a hook's wall time under load is waiting (for
the store's replies through the loop, for the GIL), not CPU, so the loop's default executor
(``min(32, CPUs + 4)`` threads: 6 on two cores, shared with everything else that uses
``asyncio.to_thread``) made 50 concurrent conversations queue for a thread (bench/LOAD.md)."""


@functools.cache
def _hook_executor() -> ThreadPoolExecutor:
    # threads start as work arrives; a race here at worst makes one pool that never runs
    return ThreadPoolExecutor(HOOK_THREADS, thread_name_prefix="wm-hook")


async def in_hook_thread(func: Callable[..., _T], /, *args: Any) -> _T:
    """``await asyncio.to_thread(func, *args)`` on the hooks' own threads (:data:`HOOK_THREADS`),
    context variables copied (the run's config and tracing reach ``func``)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, func, *args)
    return await loop.run_in_executor(_hook_executor(), call)


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
        return await in_hook_thread(func, state, config)

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
