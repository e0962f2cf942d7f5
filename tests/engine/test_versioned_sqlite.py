"""VersionedSqliteSaver (open_sqlite's checkpointer) stores each channel value once per
version and reads back exactly what SqliteSaver would: state, history, forks, subgraphs,
threads a plain SqliteSaver started, deletion, and the async twin."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Interrupt, interrupt
from typing_extensions import TypedDict

from tests.engine._support import WMWriter, agent_model, build_agent, user
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, aopen_sqlite, open_sqlite
from wm_langgraph.storage.sqlite import AsyncVersionedSqliteSaver, VersionedSqliteSaver
from wm_langgraph.storage.versioned_sqlite import BLOBS_TABLE


class S(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    count: Annotated[int, operator.add]
    note: str


def _inner() -> Any:
    def ask(state: S) -> dict[str, Any]:
        answer = interrupt("why?")
        return {"note": f"inner:{answer}", "count": 10}

    b = StateGraph(S)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b.compile()


def _graph(checkpointer: Any) -> Any:
    """reply -> idle (changes nothing) -> inner subgraph (interrupts) -> END."""

    def reply(state: S) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(f"reply {n}", id=f"a-{n}")], "count": 1}

    def idle(state: S) -> dict[str, Any]:
        return {}

    b = StateGraph(S)
    b.add_node("reply", reply)
    b.add_node("idle", idle)
    b.add_node("inner", _inner())
    b.add_edge(START, "reply")
    b.add_edge("reply", "idle")
    b.add_edge("idle", "inner")
    b.add_edge("inner", END)
    return b.compile(checkpointer=checkpointer)


def _play(graph: Any, thread: str = "t") -> list[Any]:
    config: Any = {"configurable": {"thread_id": thread}}
    for i in range(3):
        graph.invoke({"messages": [HumanMessage(_long(i), id=f"h-{i}")]}, config)
        graph.invoke(Command(resume=f"because {i}"), config)
    return _history(graph, config)


def _long(i: int) -> str:
    return f"hi {i}: " + "a pasted log line of a real conversation\n" * 50


def _history(graph: Any, config: Any) -> list[Any]:
    return [
        (
            s.values,
            s.next,
            s.metadata.get("step"),
            [[i.value for i in t.interrupts] for t in s.tasks],
        )
        for s in graph.get_state_history(config)
    ]


def _every_checkpoint(saver: Any) -> list[Any]:
    return [
        (
            t.config["configurable"]["checkpoint_ns"].split(":")[0],
            t.checkpoint["channel_values"],
            [(w[1], _no_ids(w[2])) for w in t.pending_writes or []],
        )
        for t in saver.list(None)
    ]


def _no_ids(value: Any) -> Any:
    """Interrupt ids hash the task's checkpoint id, which differs between two runs."""
    if isinstance(value, list) and value and all(isinstance(v, Interrupt) for v in value):
        return [v.value for v in value]
    return value


def _sqlite(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, check_same_thread=False)


def test_it_reads_back_what_sqlite_saver_stores_for_every_checkpoint(tmp_path: Path) -> None:
    plain = SqliteSaver(_sqlite(tmp_path / "plain.sqlite"))
    versioned = VersionedSqliteSaver(_sqlite(tmp_path / "versioned.sqlite"))
    expected, got = _play(_graph(plain)), _play(_graph(versioned))
    assert got == expected
    assert len(expected) > 10
    # subgraph checkpoints (their own namespace) and pending writes too
    assert _every_checkpoint(versioned) == _every_checkpoint(plain)
    assert any(ns == "inner" for ns, _, _ in _every_checkpoint(versioned))


def test_a_superstep_that_changes_no_channel_stores_no_copy_of_the_state(
    tmp_path: Path,
) -> None:
    def stored(saver: Any, conn: sqlite3.Connection) -> int:
        _play(_graph(saver))
        conn.commit()
        total = conn.execute("select sum(length(checkpoint)) from checkpoints").fetchone()[0]
        if saver.__class__ is VersionedSqliteSaver:
            blobs = f"select sum(coalesce(length(blob), 0)) from {BLOBS_TABLE}"
            total += conn.execute(blobs).fetchone()[0]
        return int(total)

    plain_conn, versioned_conn = _sqlite(tmp_path / "p.sqlite"), _sqlite(tmp_path / "v.sqlite")
    plain = stored(SqliteSaver(plain_conn), plain_conn)
    versioned = stored(VersionedSqliteSaver(versioned_conn), versioned_conn)
    assert versioned < 0.8 * plain  # most steps here do change the messages
    # no stored checkpoint row carries a channel value: the blobs table holds each version once
    saver = VersionedSqliteSaver(versioned_conn)
    rows = versioned_conn.execute("select type, checkpoint from checkpoints").fetchall()
    assert rows
    assert all(saver.serde.loads_typed(row)["channel_values"] == {} for row in rows)
    versions = versioned_conn.execute(
        f"select count(*), count(distinct channel || version) from {BLOBS_TABLE}"
    ).fetchone()
    assert versions[0] == versions[1]


def test_a_fork_from_an_old_checkpoint_continues_from_that_state(tmp_path: Path) -> None:
    def fork(saver: Any) -> list[Any]:
        graph = _graph(saver)
        config: Any = {"configurable": {"thread_id": "f"}}
        _play(graph, "f")
        idle = [s for s in graph.get_state_history(config) if s.next == ("idle",)]
        first_turn = idle[-1]  # newest first
        edited = graph.update_state(first_turn.config, {"note": "edited"}, as_node="reply")
        graph.invoke(None, edited)
        graph.invoke(Command(resume="fork"), config)
        return _history(graph, config)

    plain = fork(SqliteSaver(_sqlite(tmp_path / "p.sqlite")))
    assert fork(VersionedSqliteSaver(_sqlite(tmp_path / "v.sqlite"))) == plain
    assert plain[0][0]["note"] == "inner:fork"
    assert len(plain[0][0]["messages"]) == 2  # the fork's state, not the thread's newest


def test_a_thread_a_plain_sqlite_saver_started_carries_on(tmp_path: Path) -> None:
    """Upgrading: the older checkpoints hold their values inline and no blob exists yet."""
    config: Any = {"configurable": {"thread_id": "u"}}

    def turn(graph: Any, text: str) -> None:
        graph.invoke({"messages": [HumanMessage(text, id=f"h-{text}")]}, config)
        graph.invoke(Command(resume=text), config)

    reference = _graph(SqliteSaver(_sqlite(tmp_path / "reference.sqlite")))
    turn(reference, "before")
    turn(reference, "after")

    path = tmp_path / "upgrade.sqlite"
    conn = _sqlite(path)
    turn(_graph(SqliteSaver(conn)), "before")
    conn.close()
    graph = _graph(VersionedSqliteSaver(_sqlite(path)))
    assert graph.get_state(config).values["note"] == "inner:before"
    turn(graph, "after")

    values = graph.get_state(config).values
    assert [m.content for m in values["messages"]] == ["before", "reply 1", "after", "reply 3"]
    assert values == reference.get_state(config).values
    assert _history(graph, config) == _history(reference, config)
    # a fresh saver on the file reads the same (nothing lived only in memory)
    assert _graph(VersionedSqliteSaver(_sqlite(path))).get_state(config).values == values


def test_delete_thread_removes_its_channel_values_and_only_its(tmp_path: Path) -> None:
    conn = _sqlite(tmp_path / "d.sqlite")
    saver = VersionedSqliteSaver(conn)
    graph = _graph(saver)
    _play(graph, "gone")
    kept = _play(graph, "kept")
    saver.delete_thread("gone")
    threads = {r[0] for r in conn.execute(f"select distinct thread_id from {BLOBS_TABLE}")}
    assert threads == {"kept"}
    assert graph.get_state({"configurable": {"thread_id": "gone"}}).values == {}
    assert _history(graph, {"configurable": {"thread_id": "kept"}}) == kept


def test_open_sqlite_runs_a_working_memory_agent_on_it(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    cfg: Any = {"configurable": {"thread_id": "wm"}}
    config = WorkingMemoryConfig(
        token_budget=3000, commit_token_threshold_ratio=0.2, background=False
    )
    with open_sqlite(path) as (checkpointer, store):
        assert isinstance(checkpointer, VersionedSqliteSaver)
        wm = WorkingMemory(WMWriter().model, config=config, store=store)
        graph = build_agent(wm, agent_model(), checkpointer=checkpointer, store=store)
        for i in range(1, 16):
            graph.invoke({"messages": [user(i)]}, cfg)
        before = graph.get_state(cfg).values
        wm.close()
    assert before["messages"]
    with open_sqlite(path) as (checkpointer, store):
        wm = WorkingMemory(WMWriter().model, config=config, store=store)
        graph = build_agent(wm, agent_model(), checkpointer=checkpointer, store=store)
        assert graph.get_state(cfg).values == before
        wm.close()


def test_the_async_twin_reads_back_what_it_stores(tmp_path: Path) -> None:
    async def run() -> tuple[list[Any], list[Any]]:
        async with aopen_sqlite(tmp_path / "a.sqlite") as (checkpointer, _):
            assert isinstance(checkpointer, AsyncVersionedSqliteSaver)
            graph = _graph(checkpointer)
            config: Any = {"configurable": {"thread_id": "a"}}
            for i in range(3):
                message = HumanMessage(_long(i), id=f"h-{i}")
                await graph.ainvoke({"messages": [message]}, config)
                await graph.ainvoke(Command(resume=f"because {i}"), config)
            history = [
                (
                    s.values,
                    s.next,
                    s.metadata.get("step"),
                    [[i.value for i in t.interrupts] for t in s.tasks],
                )
                async for s in graph.aget_state_history(config)
            ]
            # the sync API from a worker thread goes through the same reads
            threaded = await asyncio.to_thread(lambda: list(checkpointer.list(config)))
            await checkpointer.adelete_thread("a")
            assert await checkpointer.aget_tuple(config) is None
            async with checkpointer.conn.execute(f"select count(*) from {BLOBS_TABLE}") as cur:
                assert (await cur.fetchone()) == (0,)
            return history, [t.checkpoint["channel_values"] for t in threaded]

    history, threaded = asyncio.run(run())
    plain = SqliteSaver(_sqlite(tmp_path / "p.sqlite"))
    assert history == _play(_graph(plain), "a")
    config: Any = {"configurable": {"thread_id": "a"}}
    assert threaded == [t.checkpoint["channel_values"] for t in plain.list(config)]


def _joined(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*state, *(item for batch in writes for item in batch)]


class D(TypedDict, total=False):
    items: Annotated[list[str], DeltaChannel(_joined, snapshot_frequency=3)]


def _delta_graph(checkpointer: Any) -> Any:
    def add(state: D) -> dict[str, Any]:
        return {"items": [f"item {len(state.get('items', []))}"]}

    b = StateGraph(D)
    b.add_node("add", add)
    b.add_edge(START, "add")
    b.add_edge("add", END)
    return b.compile(checkpointer=checkpointer)


def test_a_delta_channel_is_rebuilt_from_its_stored_history(tmp_path: Path) -> None:
    """LangGraph's DeltaChannel stores snapshots and replays writes; both come back."""

    def play(saver: Any) -> list[Any]:
        graph = _delta_graph(saver)
        config: Any = {"configurable": {"thread_id": "d"}}
        for i in range(8):
            graph.invoke({"items": [f"user {i}"]}, config)
        return [s.values for s in graph.get_state_history(config)]

    plain = play(SqliteSaver(_sqlite(tmp_path / "p.sqlite")))
    assert plain[0]["items"][-2:] == ["user 7", "item 15"]
    assert play(VersionedSqliteSaver(_sqlite(tmp_path / "v.sqlite"))) == plain
