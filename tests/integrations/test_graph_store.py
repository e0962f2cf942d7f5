"""The memory lives in the graph's store, one memory per agent.

Built without ``store=`` (as a ``langgraph.json`` export is: the platform supplies the store) the
memory must write to the store the graph runs with, so a restart on the same store keeps every
archive and the Working Memory; with no store anywhere the run fails at once and says how to fix
it. Agents sharing a store and a thread id (two named agents, subgraph agents of one parent
graph) must never see each other's archives, WM or search hits.
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

from tests.common import lookup, thread_config
from tests.integrations.helpers import agent_model, ids, wm_model
from wm_langgraph import NoStoreError, WorkingMemory, WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.recall.tools import archive_search_text

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)


def _agent(mw: WorkingMemoryMiddleware, checkpointer: Any, store: Any) -> Any:
    return create_agent(
        agent_model(), [lookup], middleware=[mw], checkpointer=checkpointer, store=store
    )


def _namespaces(store: InMemoryStore) -> list[tuple[str, ...]]:
    return [tuple(ns) for ns in store.list_namespaces(prefix=("wm_langgraph",))]


def test_without_store_the_middleware_uses_the_graph_store_and_survives_a_restart():
    store, saver = InMemoryStore(), InMemorySaver()
    config = thread_config("platform")
    agent = _agent(WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN), saver, store)
    for n in range(1, 5):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)

    assert any(ns[-1] == "archives" for ns in _namespaces(store)), "the graph store is empty"
    # A "server restart": a new middleware and agent, the same checkpointer and store.
    restarted = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
    agent = _agent(restarted, saver, store)
    agent.invoke({"messages": [HumanMessage("note FACT-5")]}, config)
    archives = restarted.memory.list_archives(config)
    archived = [i for record in archives for i in ids(record.messages)]
    assert len(archives) >= 4
    assert len(archived) == len(set(archived))
    assert "FACT-1" in restarted.memory.get_working_memory(config)
    assert restarted.memory.store is store


def test_a_graph_without_any_store_fails_at_once_with_a_clear_error(tmp_path):
    # A persistent checkpointer: with an InMemorySaver an in-process store is used instead.
    connection = sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False)
    agent = _agent(
        WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN), SqliteSaver(connection), None
    )
    with pytest.raises(NoStoreError, match=r"store="):
        agent.invoke({"messages": [HumanMessage("hello")]}, thread_config("nostore"))
    connection.close()
    memory = WorkingMemory(wm_model())
    with pytest.raises(NoStoreError):
        memory.get_working_memory(thread_config("nostore"))


def test_an_explicit_store_still_wins_over_the_graph_store():
    mine, graphs = InMemoryStore(), InMemoryStore()
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=mine)
    agent = _agent(mw, InMemorySaver(), graphs)
    for n in range(1, 4):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, thread_config("explicit"))
    assert _namespaces(mine)
    assert not _namespaces(graphs)


def test_two_named_agents_on_one_thread_and_store_never_see_each_other():
    store = InMemoryStore()
    alpha = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store, name="alpha")
    beta = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store, name="beta")
    agent_a = _agent(alpha, InMemorySaver(), store)
    agent_b = _agent(beta, InMemorySaver(), store)
    config = thread_config("shared-thread")
    for n in range(1, 5):
        agent_a.invoke({"messages": [HumanMessage(f"alpha says ALPHA-{n}")]}, config)
        agent_b.invoke({"messages": [HumanMessage(f"beta says BETA-{n}")]}, config)

    for mine, theirs, other in ((alpha, "BETA", "ALPHA"), (beta, "ALPHA", "BETA")):
        records = mine.memory.list_archives(config)
        text = " ".join(str(m.text) for r in records for m in r.messages)
        assert records
        assert other in text
        assert theirs not in text
        assert theirs not in mine.memory.get_working_memory(config)
        assert "No match" in archive_search_text(mine.memory, config, theirs)


class _Parent(TypedDict):
    messages: list[Any]


def test_subgraph_agents_with_the_default_name_have_separate_memories():
    store = InMemoryStore()
    keep_none = EVERY_TURN.replace(commit_keep_recent_count=0)
    first = WorkingMemoryMiddleware(wm_model(), config=keep_none, store=store)
    second = WorkingMemoryMiddleware(wm_model(), config=keep_none, store=store)
    researcher = create_agent(agent_model(), [lookup], middleware=[first], name="researcher")
    writer = create_agent(agent_model(), [lookup], middleware=[second], name="writer")

    def ask_researcher(state: _Parent) -> dict[str, Any]:
        text = state["messages"][-1].text
        researcher.invoke({"messages": [HumanMessage(f"research {text}")]})
        return {"messages": [AIMessage(f"researched {text}")]}

    def ask_writer(state: _Parent) -> dict[str, Any]:
        text = state["messages"][-1].text
        writer.invoke({"messages": [HumanMessage(f"write {text}")]})
        return {"messages": [AIMessage(f"written {text}")]}

    builder = StateGraph(_Parent)
    builder.add_node("ask_researcher", ask_researcher)
    builder.add_node("ask_writer", ask_writer)
    builder.add_edge(START, "ask_researcher")
    builder.add_edge("ask_researcher", "ask_writer")
    builder.add_edge("ask_writer", END)
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)
    config = thread_config("team")
    for n in range(1, 5):
        graph.invoke({"messages": [HumanMessage(f"topic TOPIC-{n}")]}, config)

    def memory_of(mw: WorkingMemoryMiddleware, node: str) -> list[str]:
        scoped = {"configurable": {"thread_id": "team", "checkpoint_ns": node}}
        return [str(m.text) for r in mw.memory.list_archives(scoped) for m in r.messages]

    researched, written = memory_of(first, "ask_researcher"), memory_of(second, "ask_writer")
    assert researched
    assert written
    assert any(t.startswith("research") for t in researched)
    assert any(t.startswith("write") for t in written)
    assert all(not t.startswith("write") for t in researched)
    assert all(not t.startswith("research") for t in written)


def test_a_named_memory_written_in_the_old_layout_is_adopted_not_lost():
    """Before scopes, every memory of a thread lived in ("wm_langgraph", <thread>, kind). A
    named middleware finds its archives there (the ones its checkpoint lists) and copies them."""
    store, saver = InMemoryStore(), InMemorySaver()
    config = thread_config("upgraded")
    old = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store)  # old layout
    agent = _agent(old, saver, store)
    for n in range(1, 5):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    before = [(r.id, ids(r.messages)) for r in old.memory.list_archives(config)]
    wm_before = old.memory.get_working_memory(config)
    assert before
    assert "FACT-1" in wm_before

    named = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store, name="custom")
    agent = _agent(named, saver, store)
    agent.invoke({"messages": [HumanMessage("note FACT-5")]}, config)
    agent.invoke({"messages": [HumanMessage("note FACT-6")]}, config)
    after = [(r.id, ids(r.messages)) for r in named.memory.list_archives(config)]
    assert after[: len(before)] == before
    assert "FACT-1" in named.memory.get_working_memory(config)
    assert "FACT-5" in named.memory.get_working_memory(config)
