"""Deleted means unreadable (SPEC §10): after the checkpointer deletes a thread, no read of the
memory returns its content, whether or not ``purge`` ran; ``purge`` still removes the records.

Every public read that returns thread content is tried: ``get_working_memory`` /
``aget_working_memory``, ``list_archives`` / ``alist_archives``, ``recall_archives``,
``moved_items``, ``transcript`` / ``atranscript``, ``report`` / ``areport`` and the
``archive_search`` and ``archive_expand`` tools, on ``create_agent`` and
``create_react_agent``, with an ``InMemorySaver`` and the SQLite pair (sync and async). A
thread that was never deleted still reads normally, and a new conversation on the deleted id
sees nothing of the old one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.deploy._agents import EVERY_TURN, PATHS, Hooks, agent_with, build, memory_of
from tests.deploy.test_purge import _Seen
from tests.engine._support import is_capture_call, is_update_call
from tests.integrations.helpers import wm_model
from wm_langgraph import (
    NoCheckpointerError,
    WorkingMemory,
    WorkingMemoryConfig,
    WorkingMemoryMiddleware,
)
from wm_langgraph.document import render_working_memory
from wm_langgraph.document.sections import SECTIONS
from wm_langgraph.storage.archives import thread_label
from wm_langgraph.storage.sqlite import aopen_sqlite, open_sqlite
from wm_langgraph.testing import ScriptedChatModel

SSN = "078-05-1120"
SAVERS = ("memory", "sqlite")


@contextmanager
def _persistence(kind: str, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    if kind == "memory":
        yield InMemorySaver(), InMemoryStore()
    else:
        with open_sqlite(tmp_path / "deleted.sqlite") as pair:
            yield pair


def _records(store: Any, thread_id: str) -> int:
    return sum(
        len(store.search(ns, limit=10_000))
        for ns in store.list_namespaces(prefix=("wm_langgraph", thread_label(thread_id)))
    )


def _tool(memory: WorkingMemory, name: str) -> Any:
    return next(t for t in memory.tools if t.name == name)


def _every_read(memory: WorkingMemory, config: Any) -> str:
    """Everything the memory's public reads return for ``config``'s thread, as one text."""
    parts = [memory.get_working_memory(config)]
    parts += [str(m.content) for r in memory.list_archives(config) for m in r.messages]
    parts += [str(m.content) for r in memory.recall_archives(config) for m in r.messages]
    parts += [text for _, _, text in memory.moved_items(config)]
    parts += [str(m.content) for m in memory.transcript(config).messages]
    # the queries name no content (a refusal or "no match" echoes its query)
    parts.append(str(_tool(memory, "archive_search").invoke({"query": "SSN"}, config)))
    parts.append(str(_tool(memory, "archive_search").invoke({"query": "my note"}, config)))
    parts.append(str(_tool(memory, "archive_expand").invoke({"archive_id": "archive_001"}, config)))
    parts.append(memory.report(config).html)
    return "\n".join(parts)


async def _every_aread(memory: WorkingMemory, config: Any) -> str:
    """:func:`_every_read` through the async twins (safe on an async store's loop)."""
    parts = [await memory.aget_working_memory(config)]
    parts += [str(m.content) for r in await memory.alist_archives(config) for m in r.messages]
    parts += [str(m.content) for m in (await memory.atranscript(config)).messages]
    search, expand = _tool(memory, "archive_search"), _tool(memory, "archive_expand")
    parts.append(str(await search.ainvoke({"query": "SSN"}, config)))
    parts.append(str(await expand.ainvoke({"archive_id": "archive_001"}, config)))
    parts.append((await memory.areport(config)).html)
    return "\n".join(parts)


def _say(n: int, secret: str = SSN) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"note FACT-{n}: my SSN is {secret}")]}


@pytest.mark.parametrize("saver_kind", SAVERS)
@pytest.mark.parametrize("path", PATHS)
def test_a_deleted_thread_is_unreadable_until_and_after_purge(
    path: str, saver_kind: str, tmp_path: Path
) -> None:
    with _persistence(saver_kind, tmp_path) as (saver, store):
        seen = _Seen()
        agent, hooks = build(path, EVERY_TURN, saver=saver, store=store, model=seen.model)
        memory = memory_of(hooks)
        victim, kept = thread_config(f"victim-{path}"), thread_config(f"kept-{path}")
        for n in range(1, 6):
            agent.invoke(_say(n), victim)
            agent.invoke(_say(100 + n, "219-09-9999"), kept)
        assert SSN in _every_read(memory, victim)  # the reads do show it before deletion
        assert "FACT-1" in memory.get_working_memory(victim)
        stored = _records(store, f"victim-{path}")

        saver.delete_thread(f"victim-{path}")
        shown = _every_read(memory, victim)
        assert SSN not in shown
        assert "FACT-" not in shown
        assert memory.get_working_memory(victim) == ""
        assert memory.list_archives(victim) == []
        assert memory.transcript(victim).total == 0
        assert _records(store, f"victim-{path}") == stored, "a read deleted records"
        # the thread that was not deleted reads as before
        assert "FACT-101" in memory.get_working_memory(kept)
        assert "219-09-9999" in _every_read(memory, kept)

        assert hooks.purge(victim) == stored  # purge stays the call that removes them
        assert _records(store, f"victim-{path}") == 0
        assert SSN not in _every_read(memory, victim)
        assert "FACT-101" in memory.get_working_memory(kept)


@pytest.mark.parametrize("path", PATHS)
def test_a_new_conversation_on_a_deleted_id_sees_nothing_old_and_reads_only_its_own(
    path: str,
) -> None:
    store, saver, seen = InMemoryStore(), InMemorySaver(), _Seen()
    agent, hooks = build(path, EVERY_TURN, saver=saver, store=store, model=seen.model)
    memory = memory_of(hooks)
    config = thread_config(f"reused-{path}")
    for n in range(1, 6):
        agent.invoke(_say(n), config)
    saver.delete_thread(f"reused-{path}")  # no purge: the old records stay in the store

    seen.inputs.clear()
    for n in range(20, 25):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}: the port is 80{n}")]}, config)
    assert SSN not in "\n".join(seen.inputs)
    shown = _every_read(memory, config)
    assert SSN not in shown
    assert "FACT-2\n" not in memory.get_working_memory(config) + "\n"
    assert "FACT-20" in memory.get_working_memory(config)
    assert "FACT-20" in shown


def test_a_named_memory_of_a_deleted_thread_is_unreadable_too() -> None:
    """A named memory keeps its timeline outside the root checkpoint's meta; the thread's
    deletion still makes it unreadable."""
    store, saver, seen = InMemoryStore(), InMemorySaver(), _Seen()
    named = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, name="notes")
    agent = agent_with(named, saver=saver, store=store, model=seen.model)
    config = thread_config("named-victim")
    for n in range(1, 5):
        agent.invoke(_say(n), config)
    assert SSN in _every_read(named.memory, config)
    saver.delete_thread("named-victim")
    assert SSN not in _every_read(named.memory, config)
    assert named.memory.get_working_memory(config) == ""


def test_a_fresh_process_given_the_checkpointer_reads_nothing_of_a_deleted_thread(
    tmp_path: Path,
) -> None:
    """Another process that never ran a hook knows the thread's checkpointer only when it is
    given (``checkpointer=``); then it reads exactly what a process that ran the thread reads."""
    db = tmp_path / "fresh.sqlite"
    with open_sqlite(db) as (saver, store):
        agent, _ = build("create_agent", EVERY_TURN, saver=saver, store=store)
        for n in range(1, 5):
            agent.invoke(_say(n), thread_config("fresh"))
        agent.invoke(_say(9, "219-09-9999"), thread_config("alive"))
        saver.delete_thread("fresh")
    with open_sqlite(db) as (saver, store):
        reader = WorkingMemory(store=store, checkpointer=saver, config=EVERY_TURN)
        assert SSN not in _every_read(reader, thread_config("fresh"))
        assert "219-09-9999" in _every_read(reader, thread_config("alive"))


def test_a_fresh_process_that_built_create_agent_knows_its_checkpointer(tmp_path: Path) -> None:
    """``create_agent`` tells the middleware its checkpointer while it builds the agent: a new
    process reads a live thread before its first run, and nothing of a deleted one."""
    db = tmp_path / "built.sqlite"
    with open_sqlite(db) as (saver, store):
        agent, _ = build("create_agent", EVERY_TURN, saver=saver, store=store)
        for n in range(1, 5):
            agent.invoke(_say(n), thread_config("gone"))
            agent.invoke(_say(10 + n, "219-09-9999"), thread_config("here"))
        saver.delete_thread("gone")
    with open_sqlite(db) as (saver, store):
        hooks = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store)
        agent_with(hooks, saver=saver, store=store)  # built, never run
        assert "FACT-11" in hooks.memory.get_working_memory(thread_config("here"))
        assert SSN not in _every_read(hooks.memory, thread_config("gone"))


def test_a_process_given_only_the_store_tells_deleted_from_live_by_the_checkpoints_beside_it(
    tmp_path: Path,
) -> None:
    """A memory given only ``open_sqlite``'s store reads the checkpoints kept beside it: the
    live thread reads as before, the deleted one reads nothing (SPEC §11)."""
    db = tmp_path / "beside.sqlite"
    with open_sqlite(db) as (saver, store):
        agent, _ = build("create_react_agent", EVERY_TURN, saver=saver, store=store)
        for n in range(1, 5):
            agent.invoke(_say(n), thread_config("deleted"))
            agent.invoke(_say(10 + n), thread_config("alive"))
        saver.delete_thread("deleted")
    with open_sqlite(db) as (saver, store):
        only_store = WorkingMemory(store=store, config=EVERY_TURN)
        assert SSN not in _every_read(only_store, thread_config("deleted"))
        assert "FACT-11" in only_store.get_working_memory(thread_config("alive"))


def test_a_process_that_cannot_tell_deleted_from_live_raises_saying_what_to_pass(
    tmp_path: Path,
) -> None:
    """The checkpoints are not beside the store (another file): a memory that knows no
    checkpointer cannot tell a deleted thread from a live one, so every read of a thread with
    records raises, naming ``checkpointer=`` (never a silent empty answer, SPEC §11)."""
    with (
        open_sqlite(tmp_path / "checkpoints.sqlite") as (saver, _),
        open_sqlite(tmp_path / "records.sqlite") as (_, store),
    ):
        agent, _ = build("create_react_agent", EVERY_TURN, saver=saver, store=store)
        for n in range(1, 5):
            agent.invoke(_say(n), thread_config("deleted"))
            agent.invoke(_say(10 + n), thread_config("alive"))
        saver.delete_thread("deleted")
    with (
        open_sqlite(tmp_path / "checkpoints.sqlite") as (saver, _),
        open_sqlite(tmp_path / "records.sqlite") as (_, store),
    ):
        blind = WorkingMemory(store=store, config=EVERY_TURN)
        for thread in ("deleted", "alive"):
            with pytest.raises(NoCheckpointerError, match=r"checkpointer="):
                blind.get_working_memory(thread_config(thread))
            with pytest.raises(NoCheckpointerError):
                _every_read(blind, thread_config(thread))
        told = WorkingMemory(store=store, config=EVERY_TURN, checkpointer=saver)
        assert "FACT-11" in told.get_working_memory(thread_config("alive"))
        assert SSN not in _every_read(told, thread_config("deleted"))


def test_hooks_driven_without_a_graph_read_from_the_store_until_purged() -> None:
    """With no graph there is no checkpointer and nothing to delete but the records: the store's
    timeline is the thread's, and only ``purge`` makes it unreadable."""
    memory = WorkingMemory(wm_model(), config=EVERY_TURN, store=InMemoryStore())
    config = thread_config("by-hand")
    messages: list[BaseMessage] = []
    for n in range(1, 5):
        messages = [*messages, *_say(n)["messages"]]
        update = memory.after_turn({"messages": messages}, config)
        gone = {m.id for m in update.get("messages", []) if m.type == "remove"}
        messages = [m for m in messages if m.id not in gone]
    assert SSN in _every_read(memory, config)
    memory.purge(config)
    assert SSN not in _every_read(memory, config)


def _mover() -> ScriptedChatModel:
    """A writer whose every update appends 3,000 goals: the size contract moves items out."""
    calls = {"n": 0}

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if is_capture_call(tools):
            return "nothing to add"
        calls["n"] += 1
        goals = [f"goal {calls['n']}-{i}: call {SSN} widget{calls['n']}x{i}" for i in range(3000)]
        if not is_update_call(tools):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Moved items"
            body["Task & Goals"] = "\n".join(f"- {g}" for g in goals)
            return render_working_memory(body)
        sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
        sections["Task & Goals"] = {"op": "APPEND", "items": goals}
        return {
            "content": "",
            "tool_calls": [{"name": "update_working_memory", "args": {"sections": sections}}],
        }

    return ScriptedChatModel(respond=reply)


def test_items_moved_out_of_a_deleted_thread_are_unreadable() -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    settings = WorkingMemoryConfig(
        token_budget=8_000,
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=2,
        background=False,
    )
    hooks: Hooks = WorkingMemoryMiddleware(_mover(), config=settings)
    agent = agent_with(hooks, saver=saver, store=store, model=_Seen().model)
    config = thread_config("moved")
    for n in range(1, 4):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    memory = memory_of(hooks)
    search = _tool(memory, "archive_search")
    assert memory.moved_items(config)
    assert "moved out of the Working Memory" in str(search.invoke({"query": "widget1x17"}, config))
    saver.delete_thread("moved")
    assert memory.moved_items(config) == []
    assert SSN not in _every_read(memory, config)
    assert "moved out" not in str(search.invoke({"query": "widget1x17"}, config))


@asynccontextmanager
async def _apersistence(kind: str, tmp_path: Path) -> AsyncIterator[tuple[Any, Any]]:
    if kind == "memory":
        yield InMemorySaver(), InMemoryStore()
    else:
        async with aopen_sqlite(tmp_path / "adeleted.sqlite") as pair:
            yield pair


@pytest.mark.parametrize("saver_kind", SAVERS)
@pytest.mark.parametrize("path", PATHS)
def test_an_async_deleted_thread_is_unreadable_until_and_after_apurge(
    path: str, saver_kind: str, tmp_path: Path
) -> None:
    async def run() -> None:
        async with _apersistence(saver_kind, tmp_path) as (saver, store):
            agent, hooks = build(path, EVERY_TURN, saver=saver, store=store, model=_Seen().model)
            memory = memory_of(hooks)
            victim, kept = thread_config(f"avictim-{path}"), thread_config(f"akept-{path}")
            for n in range(1, 5):
                await agent.ainvoke(_say(n), victim)
                await agent.ainvoke(_say(100 + n, "219-09-9999"), kept)
            assert SSN in await _every_aread(memory, victim)
            await saver.adelete_thread(f"avictim-{path}")
            assert SSN not in await _every_aread(memory, victim)
            assert await memory.aget_working_memory(victim) == ""
            assert "219-09-9999" in await _every_aread(memory, kept)
            assert await hooks.apurge(victim) > 0
            assert SSN not in await _every_aread(memory, victim)
            assert "FACT-101" in await memory.aget_working_memory(kept)

    asyncio.run(run())


def _sweep(store: Any, thread_id: str) -> int:
    """Delete the thread's records through the store itself, as a deployment whose memory runs
    in another process does (the platform's store API): no ``purge`` in this process."""
    doomed = [
        (tuple(item.namespace), item.key)
        for ns in store.list_namespaces(prefix=("wm_langgraph", thread_label(thread_id)))
        for item in store.search(ns, limit=10_000)
    ]
    for namespace, key in doomed:
        store.delete(namespace, key)
    return len(doomed)


@pytest.mark.parametrize("path", PATHS)
def test_records_deleted_outside_the_memory_never_come_back_from_its_cache(path: str) -> None:
    """After the checkpoints and the records are deleted by another process, a new conversation
    on the same id reuses the archive ids; the memory's cache of the old records is not shown."""
    store, saver, seen = InMemoryStore(), InMemorySaver(), _Seen()
    agent, hooks = build(path, EVERY_TURN, saver=saver, store=store, model=seen.model)
    config = thread_config(f"swept-{path}")
    for n in range(1, 6):
        agent.invoke(_say(n), config)
    assert SSN in "\n".join(seen.inputs[-1:])  # the verbatim fill shows archived messages
    saver.delete_thread(f"swept-{path}")
    assert _sweep(store, f"swept-{path}") > 0

    seen.inputs.clear()
    for n in range(20, 26):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}: the port is 80{n}")]}, config)
    memory = memory_of(hooks)
    assert [r.id for r in memory.list_archives(config)][:1] == ["archive_001"]  # reused
    assert SSN not in "\n".join(seen.inputs)
    assert "FACT-20" in "\n".join(seen.inputs[-1:])
