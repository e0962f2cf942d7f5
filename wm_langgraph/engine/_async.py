"""The async twins of ``WorkingMemory``'s hooks, reads and wait: private helper of ``memory.py``.

The hooks' sync code runs off the event loop (``asyncio.to_thread``): an async store
(``AsyncSqliteStore``, ``AsyncPostgresStore``, the platform's) then hands its work to the loop,
which stays free, instead of raising on it or deadlocking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig

from wm_langgraph.state import WorkingMemoryState

if TYPE_CHECKING:
    from wm_langgraph.engine._hooks import NodeHook
    from wm_langgraph.phase2.runner import Phase2Runner
    from wm_langgraph.storage.archives import ArchiveRecord

__all__ = ["AsyncTwins"]


def _as_state(state: Mapping[str, Any]) -> WorkingMemoryState:
    """A hook's state for the hook's typed Runnable interface (any mapping works)."""
    return cast("WorkingMemoryState", state)


class AsyncTwins:
    """Mixed into ``WorkingMemory``, which provides the attributes and methods named here."""

    after_turn: NodeHook
    compact: NodeHook
    assemble: NodeHook
    pre_model_hook: NodeHook
    post_model_hook: NodeHook
    _runner: Phase2Runner

    def memory_key(self, config: RunnableConfig | None) -> str:
        """Provided by ``WorkingMemory``."""
        raise NotImplementedError

    def overflow_guard(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any] | None:
        """Provided by ``WorkingMemory``."""
        raise NotImplementedError

    def _get_working_memory(self, thread_id: str, config: RunnableConfig | None) -> str:
        raise NotImplementedError

    def _list_archives(self, thread_id: str, config: RunnableConfig | None) -> list[ArchiveRecord]:
        raise NotImplementedError

    async def aafter_turn(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`after_turn`."""
        return await self.after_turn.ainvoke(_as_state(state), config)

    async def acompact(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`compact`."""
        return await self.compact.ainvoke(_as_state(state), config)

    async def aassemble(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`assemble`."""
        return await self.assemble.ainvoke(_as_state(state), config)

    async def apre_model_hook(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`pre_model_hook`."""
        return await self.pre_model_hook.ainvoke(_as_state(state), config)

    async def apost_model_hook(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`post_model_hook`."""
        return await self.post_model_hook.ainvoke(_as_state(state), config)

    async def aoverflow_guard(
        self, state: Mapping[str, Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`overflow_guard`."""
        return await asyncio.to_thread(self.overflow_guard, state, config)

    async def aget_working_memory(self, config: RunnableConfig | None) -> str:
        """Async twin of :meth:`get_working_memory` (safe with async stores on their loop)."""
        return await asyncio.to_thread(self._get_working_memory, self.memory_key(config), config)

    async def alist_archives(self, config: RunnableConfig | None) -> list[ArchiveRecord]:
        """Async twin of :meth:`list_archives` (safe with async stores on their loop)."""
        return await asyncio.to_thread(self._list_archives, self.memory_key(config), config)

    async def await_phase2(
        self, config: RunnableConfig | None = None, timeout: float | None = None
    ) -> bool:
        """Await outstanding background Phase 2 work without blocking the event loop (which
        an async store's Phase 2 needs): the async twin of :meth:`wait`."""
        key = self.memory_key(config) if config is not None else None
        return await asyncio.to_thread(self._runner.wait, key, timeout)

    await_idle = await_phase2
