"""LangGraph's own async SQLite pairing, ``AsyncSqliteSaver`` + ``AsyncSqliteStore`` on one file
(what a LangGraph user already has), under many short sessions and concurrent threads: no turn
fails with ``database is locked`` (the memory's store operations are retried with backoff and
Phase 2 store errors stay in the background)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.store.sqlite.aio import AsyncSqliteStore

from tests.deploy._agents import BACKGROUND, build, memory_of, play_turns, remember
from tests.integrations.helpers import agent_model


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
            agent, mw = build("create_agent", BACKGROUND, saver=saver, store=store)
            for s in range(200):  # short sessions, one after another
                failed_sessions += await play_turns(agent, f"s{s}", 2)
            failed_concurrent = sum(
                await asyncio.gather(*(play_turns(agent, f"c{t}", 6) for t in range(50)))
            )
            assert await memory_of(mw).await_phase2(timeout=300)
        return failed_sessions, failed_concurrent

    assert asyncio.run(run()) == (0, 0)


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
            agent, mw = build(
                "create_agent",
                BACKGROUND,
                saver=saver,
                store=store,
                model=agent_model(tool="remember"),
                tools=[remember],
            )
            for s in range(12):
                failed += await play_turns(agent, f"tool-{s}", 5, tool="remember")
            assert await memory_of(mw).await_phase2(timeout=120)
            notes = await store.asearch(("app", "notes"), limit=100)
        return failed, len(notes)

    failed, notes = asyncio.run(run())
    assert failed == 0
    assert notes > 0


@pytest.mark.slow
def test_a_tool_writing_the_store_while_sessions_overlap_fails_no_turn(tmp_path: Path):
    """The flaky case above made reliable: three sessions at a time instead of one, so the
    tool's ``aput`` is often queued in the same tick as a read of the memory's Phase 2."""
    path = str(tmp_path / "pairing-overlap.sqlite")

    async def run() -> int:
        async with (
            AsyncSqliteSaver.from_conn_string(path) as saver,
            AsyncSqliteStore.from_conn_string(path) as store,
        ):
            await store.setup()
            agent, mw = build(
                "create_agent",
                BACKGROUND,
                saver=saver,
                store=store,
                model=agent_model(tool="remember"),
                tools=[remember],
            )
            failed = 0
            for s in range(0, 12, 3):
                failed += sum(
                    await asyncio.gather(
                        *(
                            play_turns(agent, f"overlap-{s + i}", 5, tool="remember")
                            for i in range(3)
                        )
                    )
                )
            assert await memory_of(mw).await_phase2(timeout=120)
        return failed

    assert asyncio.run(run()) == 0
