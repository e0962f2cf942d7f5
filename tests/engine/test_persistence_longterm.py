"""The SQLite helper and long-term memory (behaviour §8; the SQLite helper: design §2.6)."""

import asyncio

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore

from tests.engine._support import agent_model, build_agent, user
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, aopen_sqlite, open_sqlite


def test_open_sqlite_gives_a_ready_checkpointer_and_store_in_one_file(tmp_path):
    path = tmp_path / "one.sqlite"
    with open_sqlite(path) as (checkpointer, store):
        assert isinstance(checkpointer, SqliteSaver)
        assert isinstance(store, SqliteStore)
        store.put(("ns",), "k", {"v": 1})
    assert [p.name for p in tmp_path.glob("*.sqlite")] == ["one.sqlite"]
    with open_sqlite(str(path)) as (_, store):
        assert store.get(("ns",), "k").value == {"v": 1}
    with pytest.raises(ValueError, match="file"), open_sqlite(":memory:"):
        pass


def test_background_phase2_writes_from_worker_threads_on_sqlite(tmp_path, writer):
    with open_sqlite(tmp_path / "bg.sqlite") as (checkpointer, store):
        wm = WorkingMemory(
            writer.model,
            config=WorkingMemoryConfig(token_budget=3000, commit_token_threshold_ratio=0.2),
            store=store,
        )
        graph = build_agent(wm, agent_model(), checkpointer=checkpointer, store=store)
        cfg = {"configurable": {"thread_id": "bg"}}
        for i in range(1, 30):
            graph.invoke({"messages": [user(i)]}, cfg)
        assert wm.wait(timeout=30)
        assert wm.list_archives(cfg)
        assert all(a.status == "done" for a in wm.list_archives(cfg))
        wm.close()


def test_async_sqlite_pair_runs_an_async_graph(tmp_path, writer):
    async def run():
        async with aopen_sqlite(tmp_path / "async.sqlite") as (checkpointer, store):
            wm = WorkingMemory(
                writer.model,
                config=WorkingMemoryConfig(token_budget=3000, commit_token_threshold_ratio=0.2),
                store=store,
            )
            graph = build_agent(wm, agent_model(), checkpointer=checkpointer)
            cfg = {"configurable": {"thread_id": "async"}}
            for i in range(1, 25):
                out = await graph.ainvoke({"messages": [user(i)]}, cfg)
            assert await wm.await_phase2(cfg, 30)
            archives = await wm.alist_archives(cfg)  # the store is async: not on its own loop
            wm.close()
            return archives, out

    archives, out = asyncio.run(run())
    assert isinstance(out["messages"][-1], AIMessage)
    assert archives
    assert all(a.status == "done" for a in archives)


def _commit_facts(wm, thread, user_id, facts):
    cfg = {"configurable": {"thread_id": thread, "user_id": user_id}}
    wm.compact({"messages": [user(n) for n in facts]}, cfg)
    return cfg


def test_long_term_memory_is_off_by_default(writer, memory):
    wm = memory(writer.model, config=WorkingMemoryConfig(background=False))
    _commit_facts(wm, "a", "ann", [1, 2])
    assert wm.search_long_term({"configurable": {"user_id": "ann"}}) == []


def test_key_facts_are_shared_across_threads_of_the_same_user_only(writer, memory):
    config = WorkingMemoryConfig(background=False, long_term_memory=True)
    wm = memory(writer.model, config=config)
    _commit_facts(wm, "thread-a", "ann", [1, 2])
    _commit_facts(wm, "thread-b", "bob", [3])
    from_other_thread = {"configurable": {"thread_id": "thread-c", "user_id": "ann"}}
    texts = [hit["text"] for hit in wm.search_long_term(from_other_thread)]
    assert any("FACT-001" in t for t in texts)
    assert any("FACT-002" in t for t in texts)
    assert not any("FACT-003" in t for t in texts)
    hits = wm.search_long_term(from_other_thread, "fact-002")
    assert [h["thread_id"] for h in hits] == ["thread-a"]
    with pytest.raises(ValueError, match="user_id"):
        wm.search_long_term({"configurable": {"thread_id": "x"}})
