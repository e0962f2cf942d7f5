"""The first process of the restart cases: an agent on one integration path plays turns on two
threads, deletes one, prints what its memory reads, and exits.

Run as ``python -m tests.deploy._restart PATH PERSISTENCE WHERE``:

- ``PATH``: ``stategraph`` (the guide's ``assemble`` / ``agent`` / ``after_turn`` nodes,
  ``WorkingMemory(store=store)``), ``create_react_agent`` (the memory's pre/post model hooks,
  ``WorkingMemory(store=store)``) or ``create_agent`` (``WorkingMemoryMiddleware()``, no store
  of its own: the agent's);
- ``PERSISTENCE``: ``plain`` (LangGraph's ``SqliteSaver`` + ``SqliteStore`` on one file),
  ``open_sqlite``, ``split`` (the store in ``WHERE``, the checkpoints in ``WHERE.checkpoints``)
  or ``postgres`` (``WHERE`` is ``URL SCHEMA``: a ``PostgresSaver`` and a ``PostgresStore`` on
  one pool);
- prints one JSON line: ``{"live": {"wm": ..., "archives": [...]}}`` for thread ``live`` (the
  deleted thread is ``gone``, its facts carry the secret :data:`SECRET`).

:func:`persistence` and :func:`hooks_and_graph` build the same set-up again in the reading
(test) process.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.store.sqlite import SqliteStore

from tests.common import lookup, thread_config
from tests.deploy._agents import EVERY_TURN
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemory, WorkingMemoryMiddleware, WorkingMemoryState, open_sqlite

__all__ = ["SECRET", "TURNS", "hooks_and_graph", "memory_of", "persistence", "play"]

SECRET = "078-05-1120"
TURNS = 8


@contextmanager
def persistence(kind: str, where: str) -> Iterator[tuple[Any, Any]]:
    """``(checkpointer, store)`` of ``kind`` at ``where`` (see the module docstring)."""
    if kind == "open_sqlite":
        with open_sqlite(where) as pair:
            yield pair
    elif kind in ("plain", "split"):
        saver_file = where + ".checkpoints" if kind == "split" else where
        with (
            closing(sqlite3.connect(saver_file, check_same_thread=False)) as saver_conn,
            closing(
                sqlite3.connect(where, check_same_thread=False, isolation_level=None)
            ) as store_conn,
        ):
            saver, store = SqliteSaver(saver_conn), SqliteStore(store_conn)
            saver.setup()
            store.setup()
            yield saver, store
    elif kind == "postgres":
        from tests.deploy._pg import Schema

        url, schema = where.split(" ")
        with Schema(url, schema).sync() as pair:
            yield pair
    else:
        raise ValueError(f"unknown persistence {kind!r}")


def hooks_and_graph(path: str, saver: Any, store: Any) -> tuple[Any, Any]:
    """A fresh memory for ``path`` (``WorkingMemory(store=store)``, or a middleware that knows
    no store) and the graph built with it on ``saver`` and ``store``."""
    if path == "create_agent":
        middleware = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
        agent = create_agent(
            agent_model(), [lookup], middleware=[middleware], checkpointer=saver, store=store
        )
        return middleware, agent
    memory = WorkingMemory(wm_model(), config=EVERY_TURN, store=store)
    if path == "create_react_agent":
        react = create_react_agent(
            agent_model(),
            [lookup],
            pre_model_hook=memory.pre_model_hook,
            post_model_hook=memory.post_model_hook,
            checkpointer=saver,
            store=store,
            version="v2",
        )
        return memory, react
    if path != "stategraph":
        raise ValueError(f"unknown path {path!r}")
    llm = agent_model()

    def agent(state: WorkingMemoryState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["llm_input_messages"])]}

    builder = StateGraph(WorkingMemoryState)
    builder.add_node("assemble", memory.assemble)
    builder.add_node("agent", agent)
    builder.add_node("after_turn", memory.after_turn)
    builder.add_edge(START, "assemble")
    builder.add_edge("assemble", "agent")
    builder.add_edge("agent", "after_turn")
    builder.add_edge("after_turn", END)
    return memory, builder.compile(checkpointer=saver, store=store)


def memory_of(hooks: Any) -> WorkingMemory:
    """The ``WorkingMemory`` behind a middleware or a memory."""
    return hooks.memory if isinstance(hooks, WorkingMemoryMiddleware) else hooks


def play(graph: Any, thread: str, first: int, secret: str) -> None:
    """:data:`TURNS` turns on ``thread``, facts ``FACT-<first>``… each naming ``secret``."""
    config: RunnableConfig = thread_config(thread)
    for n in range(first, first + TURNS):
        said = f"note FACT-{n}: the vault code is {secret}"
        graph.invoke({"messages": [HumanMessage(said)]}, config)


def main(path: str, kind: str, where: str) -> None:
    """Play both threads, delete ``gone``, print what the memory reads of ``live``; exit
    without ``memory.close()`` (a process that simply ends)."""
    with persistence(kind, where) as (saver, store):
        hooks, graph = hooks_and_graph(path, saver, store)
        memory = memory_of(hooks)
        play(graph, "live", 1, "219-09-9999")
        play(graph, "gone", 101, SECRET)
        memory.wait()
        saver.delete_thread("gone")
        live = thread_config("live")
        shown = {
            "wm": memory.get_working_memory(live),
            "archives": [a.id for a in memory.list_archives(live)],
        }
    print(json.dumps({"live": shown}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
