"""A store-wide default TTL (``SqliteStore(ttl=...)``, ``store.ttl`` in ``langgraph.json``) must
never expire the memory's records: the checkpoints name them for as long as the thread lives."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore

from tests.common import thread_config
from tests.deploy._agents import EVERY_TURN, PATHS, build, memory_of

TTL_MINUTES = 0.0005  # 30 ms: every record written with the store's default expires at once


@pytest.mark.parametrize("path", PATHS)
def test_a_store_default_ttl_never_expires_the_memory(tmp_path: Path, path: str) -> None:
    db = str(tmp_path / "ttl.sqlite")
    conn = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, ttl={"default_ttl": TTL_MINUTES})
    store.setup()
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    agent, hooks = build(path, EVERY_TURN, saver=saver, store=store)
    memory = memory_of(hooks)
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
