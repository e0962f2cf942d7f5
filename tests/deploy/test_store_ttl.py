"""A store-wide default TTL (``SqliteStore(ttl=...)``, ``store.ttl`` in ``langgraph.json``) must
never expire the memory's records: the checkpoints name them for as long as the thread lives."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent
from langgraph.store.sqlite import SqliteStore

from tests.common import lookup, thread_config
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryMiddleware

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)
TTL_MINUTES = 0.0005  # 30 ms: every record written with the store's default expires at once


@pytest.mark.parametrize("path", ["create_agent", "create_react_agent"])
def test_a_store_default_ttl_never_expires_the_memory(tmp_path: Path, path: str) -> None:
    db = str(tmp_path / "ttl.sqlite")
    conn = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, ttl={"default_ttl": TTL_MINUTES})
    store.setup()
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    memory: Any
    if path == "create_agent":
        mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
        memory = mw.memory
        agent = create_agent(
            agent_model(), [lookup], middleware=[mw], checkpointer=saver, store=store
        )
    else:
        memory = WorkingMemory(wm_model(), config=EVERY_TURN)
        agent = create_react_agent(
            agent_model(),
            [lookup],
            pre_model_hook=memory.pre_model_hook,
            post_model_hook=memory.post_model_hook,
            checkpointer=saver,
            store=store,
            version="v2",
        )
    config = thread_config(f"ttl-{path}")
    for n in range(1, 7):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n} zebra{n}")]}, config)
    before = [r.id for r in memory.list_archives(config)]
    assert len(before) >= 4

    time.sleep(1.5)  # idle past the default TTL (SQLite compares whole seconds), then a sweep
    store.sweep_ttl()
    assert [r.id for r in memory.list_archives(config)] == before
    assert "FACT-1" in memory.get_working_memory(config)
    search = next(t for t in memory.tools if t.name == "archive_search")
    assert not str(search.invoke({"query": "zebra1"}, config)).startswith("No match")
    conn.close()
