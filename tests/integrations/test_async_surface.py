"""Async apps — async reads and wait, async stores end to end, aopen_sqlite.

An async app runs the agent with ``ainvoke`` on async stores (``AsyncSqliteStore``,
``AsyncPostgresStore``) whose sync API only works from threads other than their event loop's.
Before: no async read or wait API; ``memory.wait()`` on the loop blocked the Phase 2 it waited
for; ``get_working_memory`` raised ``InvalidStateError``; ``aopen_sqlite``'s store made a user
tool's ``await runtime.store.aput`` raise ``NotImplementedError``.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.store.sqlite.aio import AsyncSqliteStore

from tests.common import thread_config
from tests.integrations.helpers import agent_model, ids, wm_model
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware, aopen_sqlite
from wm_langgraph.testing import ScriptedChatModel

BACKGROUND = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=True,
)


@tool
async def remember(note: str, runtime: ToolRuntime) -> str:
    """Keep a note in the app's own store namespace."""
    assert runtime.store is not None
    await runtime.store.aput(("app", "notes"), note, {"note": note})
    item = await runtime.store.aget(("app", "notes"), note)
    return f"kept {item.value['note'] if item else None}"


def _agent(mw: WorkingMemoryMiddleware, saver: Any, store: Any) -> Any:
    model = agent_model(tool="remember")
    return create_agent(model, [remember], middleware=[mw], checkpointer=saver, store=store)


async def _play(path: Path, thread: str, turns: list[str], writer: Any = None) -> dict[str, Any]:
    async with aopen_sqlite(path) as (saver, store):
        assert isinstance(saver, AsyncSqliteSaver)
        assert isinstance(store, AsyncSqliteStore)
        mw = WorkingMemoryMiddleware(writer or wm_model(), config=BACKGROUND)
        agent = _agent(mw, saver, store)
        config = thread_config(thread)
        for text in turns:
            await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
        assert await mw.memory.await_phase2(config, timeout=60)
        with pytest.raises(RuntimeError, match="aget_working_memory"):
            mw.memory.get_working_memory(config)  # the store's own loop: a clear error
        archives = await mw.memory.alist_archives(config)
        return {
            "wm": await mw.memory.aget_working_memory(config),
            "archives": [(a.id, a.status, ids(a.messages)) for a in archives],
            "note": await store.aget(("app", "notes"), "FACT-2"),
            "state": (await agent.aget_state(config)).values,
        }


def test_an_async_agent_on_aopen_sqlite_end_to_end_and_after_a_restart(tmp_path):
    path = tmp_path / "async.sqlite"
    turns = ['call remember {"note": "FACT-2"}', *[f"note FACT-{n}" for n in range(3, 7)]]
    first = asyncio.run(_play(path, "a1", turns))
    assert first["note"] is not None  # the user's tool wrote through runtime.store.aput
    assert first["archives"]
    assert all(status == "done" for _id, status, _ids in first["archives"])
    assert "FACT-3" in first["wm"]
    # A new process on the same file: the memory is all there and goes on.
    second = asyncio.run(_play(path, "a1", ["note FACT-7", "note FACT-8", "note FACT-9"]))
    assert second["archives"][: len(first["archives"])] == first["archives"]
    assert "FACT-3" in second["wm"]
    assert "FACT-7" in second["wm"]


def _gated_writer(gate: threading.Event) -> ScriptedChatModel:
    inner = wm_model().respond

    def reply(messages: Any, tools: Any, tool_choice: Any) -> Any:
        gate.wait(30)
        return inner(messages, tools, tool_choice)

    return ScriptedChatModel(respond=reply)


def test_wait_on_the_event_loop_raises_instead_of_deadlocking(tmp_path):
    gate = threading.Event()

    async def run() -> str:
        async with aopen_sqlite(tmp_path / "wait.sqlite") as (saver, store):
            mw = WorkingMemoryMiddleware(_gated_writer(gate), config=BACKGROUND)
            agent = _agent(mw, saver, store)
            config = thread_config("w1")
            for n in range(1, 4):
                await agent.ainvoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
            with pytest.raises(RuntimeError, match="await_phase2"):
                mw.memory.wait(config, timeout=30)  # Phase 2 is held: work is outstanding
            gate.set()
            assert await mw.memory.await_phase2(config, timeout=60)
            return await mw.memory.aget_working_memory(config)

    assert "FACT-1" in asyncio.run(run())


POSTGRES_URL = os.environ.get("WM_TEST_POSTGRES_URL")


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="WM_TEST_POSTGRES_URL is not set (.ci/postgres.sh)")
def test_an_async_agent_on_async_postgres_end_to_end():
    pytest.importorskip(
        "langgraph.checkpoint.postgres",
        reason='needs the postgres extra: pip install ".[postgres]"',
    )
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.store.postgres.aio import AsyncPostgresStore

    async def run() -> dict[str, Any]:
        assert POSTGRES_URL is not None
        async with (
            AsyncPostgresSaver.from_conn_string(POSTGRES_URL) as saver,
            AsyncPostgresStore.from_conn_string(POSTGRES_URL) as store,
        ):
            await saver.setup()
            await store.setup()
            mw = WorkingMemoryMiddleware(wm_model(), config=BACKGROUND)
            agent = _agent(mw, saver, store)
            config = thread_config(f"apg-{os.getpid()}-{threading.get_ident()}")
            await agent.ainvoke(
                {"messages": [HumanMessage('call remember {"note": "PG-1"}')]}, config
            )
            for n in range(2, 6):
                await agent.ainvoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
            assert await mw.memory.await_phase2(config, timeout=60)
            return {
                "wm": await mw.memory.aget_working_memory(config),
                "archives": await mw.memory.alist_archives(config),
                "note": await store.aget(("app", "notes"), "PG-1"),
            }

    result = asyncio.run(run())
    assert result["note"] is not None
    assert result["archives"]
    assert all(a.status == "done" for a in result["archives"])
    assert "FACT-2" in result["wm"]


def test_the_async_hooks_do_not_wait_for_the_loops_default_executor() -> None:
    """An app whose own blocking work fills the event loop's default executor (what
    ``asyncio.to_thread`` uses: 6 threads on two cores) still gets its memory hooks run: they
    run on their own threads (shown on a StateGraph; the middleware's async hooks use the
    same). Before, every async hook queued there behind the app's work (and behind each other
    under 50 concurrent conversations, bench/LOAD.md)."""
    from concurrent.futures import ThreadPoolExecutor

    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.memory import InMemoryStore

    from wm_langgraph import WorkingMemory, WorkingMemoryState

    config = WorkingMemoryConfig(
        token_budget=2_000, commit_token_threshold_ratio=0.0, background=False
    )

    async def model(state: WorkingMemoryState) -> dict[str, Any]:
        seen = state["llm_input_messages"]
        return {"messages": [AIMessage(f"seen {len(seen)} messages")]}

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1))
        gate = threading.Event()
        busy = loop.run_in_executor(None, gate.wait)  # the app's work holds the only thread
        try:
            memory = WorkingMemory(wm_model(), config=config, store=InMemoryStore())
            builder = StateGraph(WorkingMemoryState)
            builder.add_node("assemble", memory.assemble)
            builder.add_node("model", model)
            builder.add_node("after_turn", memory.after_turn)
            builder.add_edge(START, "assemble")
            builder.add_edge("assemble", "model")
            builder.add_edge("model", "after_turn")
            builder.add_edge("after_turn", END)
            graph = builder.compile(checkpointer=InMemorySaver())
            sizes = []
            for turn in range(3):
                state = await asyncio.wait_for(
                    graph.ainvoke(
                        {"messages": [HumanMessage(f"turn {turn}: FACT-{turn}")]},
                        thread_config("busy-executor"),
                    ),
                    timeout=30,
                )
                sizes.append(len(state["messages"]))
            return sizes
        finally:
            gate.set()
            await busy

    sizes = asyncio.run(main())
    assert len(sizes) == 3
    assert all(n >= 2 for n in sizes)
