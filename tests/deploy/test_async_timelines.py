"""Reads follow the checkpoint on async savers as they do on sync ones: outside a run,
``alist_archives`` / ``aget_working_memory`` see the newest archive at once, and a config's
``checkpoint_id`` names the timeline of that checkpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.common import thread_config
from tests.deploy._agents import EVERY_TURN, PATHS, build, memory_of
from wm_langgraph import WorkingMemory, aopen_sqlite


def _build(path: str, saver: Any, store: Any) -> tuple[Any, WorkingMemory]:
    agent, hooks = build(path, EVERY_TURN, saver=saver, store=store)
    return agent, memory_of(hooks)


@pytest.mark.parametrize("path", PATHS)
def test_async_saver_reads_follow_the_checkpoint(tmp_path: Path, path: str) -> None:
    async def run() -> None:
        async with aopen_sqlite(tmp_path / "timeline.sqlite") as (saver, store):
            agent, memory = _build(path, saver, store)
            config = thread_config(f"async-{path}")
            for n in range(1, 6):
                await agent.ainvoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
                state = await agent.aget_state(config)
                expected = list(state.values["working_memory"]["archives"])
                listed = [r.id for r in await memory.alist_archives(config)]
                assert listed == expected, f"turn {n}: the read lags the checkpoint"
            history = [s async for s in agent.aget_state_history(config)]
            older = next(
                s
                for s in history
                if 0 < len(s.values.get("working_memory", {}).get("archives", [])) < len(expected)
            )
            listed = [r.id for r in await memory.alist_archives(older.config)]
            assert listed == list(older.values["working_memory"]["archives"])

    asyncio.run(run())


def test_sync_saver_reads_honour_checkpoint_id_too() -> None:
    agent, memory = _build("create_agent", InMemorySaver(), None)
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore()
    agent, memory = _build("create_agent", InMemorySaver(), store)
    config = thread_config("sync-ids")
    for n in range(1, 5):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    history = list(agent.get_state_history(config))
    for snapshot in history[::3]:
        expected = list(snapshot.values.get("working_memory", {}).get("archives", []))
        assert [r.id for r in memory.list_archives(snapshot.config)] == expected
