"""Deletion deletes: after ``checkpointer.delete_thread(tid)`` ("delete my chat") ``purge``
removes every memory record of the thread, and ``reset`` after "clear chat" starts a fresh
Working Memory, so nothing of the cleared conversation reaches a prompt again."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.deploy._agents import EVERY_TURN, PATHS, Hooks, build, memory_of
from tests.integrations.helpers import wm_model
from wm_langgraph import WorkingMemory
from wm_langgraph.storage.archives import thread_label
from wm_langgraph.testing import ScriptedChatModel

FACT = re.compile(r"FACT-\d+")


class _Seen:
    def __init__(self) -> None:
        self.inputs: list[str] = []
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> str:
        self.inputs.append("\n".join(str(m.text) for m in messages))
        return "ok"


def _records(store: InMemoryStore, thread_id: str) -> list[Any]:
    found = []
    for ns in store.list_namespaces(prefix=("wm_langgraph", thread_label(thread_id))):
        found.extend(store.search(ns, limit=10_000))
    return found


def _agents(path: str, seen: _Seen, store: Any, saver: Any) -> tuple[Any, Hooks]:
    return build(path, EVERY_TURN, saver=saver, store=store, model=seen.model)


@pytest.mark.parametrize("path", PATHS)
def test_delete_thread_then_purge_leaves_no_record_and_no_read(path: str) -> None:
    store, saver, seen = InMemoryStore(), InMemorySaver(), _Seen()
    agent, memory = _agents(path, seen, store, saver)
    config = thread_config(f"delete-{path}")
    other = thread_config(f"keep-{path}")
    for n in range(1, 6):
        agent.invoke({"messages": [HumanMessage(f"my SSN is 078-05-{n:04d} FACT-{n}")]}, config)
        agent.invoke({"messages": [HumanMessage(f"other thread FACT-{100 + n}")]}, other)
    assert _records(store, f"delete-{path}")
    kept = len(_records(store, f"keep-{path}"))

    saver.delete_thread(f"delete-{path}")
    deleted = memory.purge(config)
    assert deleted > 0
    assert not _records(store, f"delete-{path}"), "records of the deleted thread remain"
    assert len(_records(store, f"keep-{path}")) == kept
    wm = memory_of(memory)
    assert wm.get_working_memory(config) == ""
    assert wm.list_archives(config) == []
    assert "FACT-101" in wm.get_working_memory(other)


@pytest.mark.parametrize("path", PATHS)
def test_reset_after_clear_chat_starts_a_fresh_working_memory(path: str) -> None:
    store, saver, seen = InMemoryStore(), InMemorySaver(), _Seen()
    agent, memory = _agents(path, seen, store, saver)
    config = thread_config(f"clear-{path}")
    for n in range(1, 6):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    wm = memory_of(memory)
    assert "FACT-1" in wm.get_working_memory(config)

    clear = [RemoveMessage(id=REMOVE_ALL_MESSAGES)]
    if path == "create_agent":  # "clear chat" as a state update, then the memory's reset
        agent.update_state(config, {"messages": clear})
        clear = []
    memory.reset(config)
    seen.inputs.clear()
    for n in range(10, 15):  # (create_react_agent: the clearing comes with the next input)
        first = clear if n == 10 else []
        agent.invoke({"messages": [*first, HumanMessage(f"note FACT-{n}")]}, config)
    shown = set(FACT.findall("\n".join(seen.inputs)))
    assert shown
    assert all(int(f.split("-")[1]) >= 10 for f in shown), shown
    assert "FACT-10" in wm.get_working_memory(config)
    assert "FACT-1\n" not in wm.get_working_memory(config) + "\n"
    assert [r.id for r in wm.list_archives(config)][:1] == ["archive_001"]
    archived = " ".join(str(m.text) for r in wm.list_archives(config) for m in r.messages)
    assert "FACT-1 " not in archived + " "
    assert "FACT-2" not in archived


def test_apurge_from_the_middleware_on_an_async_run() -> None:
    store, saver, seen = InMemoryStore(), InMemorySaver(), _Seen()
    agent, mw = _agents("create_agent", seen, store, saver)
    config = thread_config("async-delete")

    async def run() -> int:
        for n in range(1, 4):
            await agent.ainvoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
        await saver.adelete_thread("async-delete")
        return int(await mw.apurge(config))

    assert asyncio.run(run()) > 0
    assert not _records(store, "async-delete")


_thread_ids = st.text(alphabet="ab-_é/ ", min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    threads=st.lists(_thread_ids, min_size=2, max_size=3, unique=True),
    turns=st.integers(min_value=1, max_value=5),
    victim=st.integers(min_value=0, max_value=2),
    named=st.booleans(),
)
def test_after_purge_no_record_of_the_thread_remains_and_no_read_returns_it(
    threads: list[str], turns: int, victim: int, named: bool
) -> None:
    store = InMemoryStore()
    memories = [WorkingMemory(wm_model(), config=EVERY_TURN, store=store)]
    if named:
        memories.append(WorkingMemory(wm_model(), config=EVERY_TURN, store=store, name="b"))
    states: dict[tuple[int, str], list[BaseMessage]] = {}
    for t, thread in enumerate(threads):
        for m, memory in enumerate(memories):
            messages: list[BaseMessage] = []
            for n in range(turns):
                messages += [
                    HumanMessage(f"T{t}M{m} secret FACT-{t * 100 + n}", id=f"h{t}-{m}-{n}"),
                    AIMessage("ok", id=f"a{t}-{m}-{n}"),
                ]
                update = memory.after_turn({"messages": messages}, thread_config(thread))
                gone = {x.id for x in update.get("messages", []) if isinstance(x, RemoveMessage)}
                messages = [x for x in messages if x.id not in gone]
            states[(t, thread)] = messages
    target = threads[victim % len(threads)]
    memories[0].purge(thread_config(target))

    assert not _records(store, target)
    for ns in store.list_namespaces(prefix=("wm_langgraph",)):
        for item in store.search(ns, limit=10_000):
            assert f"T{threads.index(target)}M" not in str(item.value)
    for memory in memories:
        assert memory.list_archives(thread_config(target)) == []
        assert memory.get_working_memory(thread_config(target)) == ""
    for thread in threads:
        if thread != target and turns > 1:
            assert _records(store, thread), "another thread lost its records"


def _converse(memory: WorkingMemory, config: Any, word: str, turns: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for n in range(turns):
        messages += [
            HumanMessage(f"{word}-{n} secret", id=f"{word}-h{n}"),
            AIMessage("ok", id=f"{word}-a{n}"),
        ]
        update = memory.after_turn({"messages": messages}, config)
        gone = {x.id for x in update.get("messages", []) if isinstance(x, RemoveMessage)}
        messages = [x for x in messages if x.id not in gone]
    return messages


def _model_input(memory: WorkingMemory, messages: list[BaseMessage], config: Any) -> str:
    shown = memory.assemble({"messages": messages}, config)["llm_input_messages"]
    return "\n".join(str(m.text) for m in shown)


def test_a_purge_drops_every_cached_record_of_the_thread_from_every_memory() -> None:
    """A purge deletes the records of every memory of the thread (a named one too), and the
    verbatim fill's cache forgets them all: the thread's next conversation, whose archives take
    the same ids again, never shows a purged message from the cache."""
    store = InMemoryStore()
    first = WorkingMemory(wm_model(), config=EVERY_TURN, store=store)
    named = WorkingMemory(wm_model(), config=EVERY_TURN, store=store, name="b")
    config = thread_config("purge-cache")
    for memory in (first, named):
        live = _converse(memory, config, "OLD", 4)
        assert "OLD-0" in _model_input(memory, live, config)  # read through the cache

    first.purge(config)
    for memory in (first, named):
        live = _converse(memory, config, "NEW", 4)
        assert [r.id for r in memory.list_archives(config)][:1] == ["archive_001"]
        shown = _model_input(memory, live, config)
        assert "OLD" not in shown
        assert "NEW-0" in shown
