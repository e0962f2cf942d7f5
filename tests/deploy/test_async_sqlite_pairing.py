"""LangGraph's own async SQLite pairing, ``AsyncSqliteSaver`` + ``AsyncSqliteStore`` on one file
(what a LangGraph user already has), under many short sessions and concurrent threads: no turn
fails with ``database is locked`` (the memory's store operations are retried with backoff and
Phase 2 store errors stay in the background)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.store.sqlite.aio import AsyncSqliteStore

from tests.common import lookup, thread_config
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware

BACKGROUND = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=True,
)


async def _turns(agent: Any, thread: str, turns: int) -> int:
    failed = 0
    for n in range(turns):
        try:
            await agent.ainvoke(
                {"messages": [HumanMessage(f"note FACT-{n} use lookup")]}, thread_config(thread)
            )
        except Exception:
            failed += 1
    return failed


@pytest.mark.slow
def test_standard_async_sqlite_pairing_under_sessions_and_concurrent_threads(tmp_path: Path):
    path = str(tmp_path / "pairing.sqlite")

    async def run() -> tuple[int, int]:
        failed_sessions = 0
        async with (
            AsyncSqliteSaver.from_conn_string(path) as saver,
            AsyncSqliteStore.from_conn_string(path) as store,
        ):
            await store.setup()
            mw = WorkingMemoryMiddleware(wm_model(), config=BACKGROUND)
            agent = create_agent(
                agent_model(), [lookup], middleware=[mw], checkpointer=saver, store=store
            )
            for s in range(200):  # short sessions, one after another
                failed_sessions += await _turns(agent, f"s{s}", 2)
            failed_concurrent = sum(
                await asyncio.gather(*(_turns(agent, f"c{t}", 6) for t in range(50)))
            )
            assert await mw.memory.await_phase2(timeout=300)
        return failed_sessions, failed_concurrent

    assert asyncio.run(run()) == (0, 0)


@tool
async def remember(key: str, runtime: ToolRuntime) -> str:
    """Keep a note in the app's own store namespace."""
    assert runtime.store is not None
    await runtime.store.aput(("app", "notes"), key, {"key": key})
    return "kept"


@pytest.mark.slow
def test_standard_async_sqlite_pairing_with_a_tool_that_writes_the_store(tmp_path: Path):
    path = str(tmp_path / "pairing-tool.sqlite")

    async def run() -> tuple[int, int]:
        failed = 0
        async with (
            AsyncSqliteSaver.from_conn_string(path) as saver,
            AsyncSqliteStore.from_conn_string(path) as store,
        ):
            await store.setup()
            mw = WorkingMemoryMiddleware(wm_model(), config=BACKGROUND)
            agent = create_agent(
                agent_model(tool="remember"),
                [remember],
                middleware=[mw],
                checkpointer=saver,
                store=store,
            )
            for s in range(12):
                for n in range(5):
                    try:
                        await agent.ainvoke(
                            {"messages": [HumanMessage(f"note FACT-{n} use remember")]},
                            thread_config(f"tool-{s}"),
                        )
                    except Exception:
                        failed += 1
            assert await mw.memory.await_phase2(timeout=120)
            notes = await store.asearch(("app", "notes"), limit=100)
        return failed, len(notes)

    failed, notes = asyncio.run(run())
    assert failed == 0
    assert notes > 0
