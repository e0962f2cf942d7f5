"""PostgreSQL back-ends for the deploy cases (marker ``postgres``), each in a schema of its own.

``WM_TEST_POSTGRES_URL`` names the server (``source .ci/postgres.sh`` starts one and exports it).
A :class:`Schema` is a fresh PostgreSQL schema; its connections put it first on their
``search_path``, so the checkpointer's and the store's tables (which LangGraph creates
unqualified) are the schema's own and a test never sees another test's rows. The
``schemas`` fixture of ``test_postgres_deploy.py`` creates schemas on request and drops them,
with everything in them, when the test ends.

Also runnable as the victim process of the kill test (``python _pg.py <url> <schema> <thread>``):
plays a few turns of a ``create_agent`` with background Phase 2 on the schema, then a turn whose
writer call hangs, printing ``hung`` from inside that call; the test then kills it.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.base import TTLConfig
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["URL_VARIABLE", "Schema", "Schemas"]

URL_VARIABLE = "WM_TEST_POSTGRES_URL"


@dataclass(frozen=True)
class Schema:
    """A PostgreSQL schema of its own on the test server."""

    url: str
    name: str

    @property
    def kwargs(self) -> dict[str, Any]:
        """Connection options: autocommit, dict rows, this schema first on the search path."""
        return {
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "options": f"-c search_path={self.name}",
        }

    @contextmanager
    def sync(
        self, *, max_size: int = 8, ttl: TTLConfig | None = None
    ) -> Iterator[tuple[PostgresSaver, PostgresStore]]:
        """A ``PostgresSaver`` and a ``PostgresStore`` over one pool, tables set up."""
        pool = ConnectionPool(
            self.url, min_size=1, max_size=max_size, kwargs=self.kwargs, open=True
        )
        try:
            saver, store = PostgresSaver(pool), PostgresStore(pool, ttl=ttl)  # type: ignore[arg-type]
            saver.setup()
            store.setup()
            yield saver, store
        finally:
            pool.close()

    @asynccontextmanager
    async def aio(
        self, *, max_size: int = 8
    ) -> AsyncIterator[tuple[AsyncPostgresSaver, AsyncPostgresStore]]:
        """An ``AsyncPostgresSaver`` and an ``AsyncPostgresStore`` over one pool, set up."""
        pool = AsyncConnectionPool(
            self.url, min_size=1, max_size=max_size, kwargs=self.kwargs, open=False
        )
        await pool.open()
        try:
            saver, store = AsyncPostgresSaver(pool), AsyncPostgresStore(pool)  # type: ignore[arg-type]
            await saver.setup()
            await store.setup()
            yield saver, store
        finally:
            await pool.close()


@dataclass
class Schemas:
    """Creates schemas on the server and drops every one it created (``drop_all``)."""

    url: str
    created: list[str] = field(default_factory=list)

    def new(self) -> Schema:
        """A fresh, empty schema."""
        name = f"wm_deploy_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')  # type: ignore[arg-type]
        self.created.append(name)
        return Schema(self.url, name)

    def drop_all(self) -> None:
        """Drop every schema this object created, with all its tables."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            for name in self.created:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')  # type: ignore[arg-type]
        self.created.clear()


def _victim(url: str, schema: str, thread: str) -> None:
    """Turns on ``thread`` until a background writer call hangs (see the module docstring)."""
    from langchain_core.messages import BaseMessage, HumanMessage

    from tests.common import thread_config
    from tests.deploy._agents import BACKGROUND, agent_with, hooks_for, memory_of
    from tests.integrations.helpers import wm_model
    from wm_langgraph.testing import ScriptedChatModel

    healthy = wm_model().respond
    assert healthy is not None
    hang = {"on": False}
    said = threading.Lock()

    def say(line: str) -> None:
        """One whole line at a time: the hang (a Phase 2 worker thread) and the answer (the
        main thread) come nearly together, and ``print`` writes a line and its end apart."""
        with said:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def write(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if hang["on"]:
            say("hung")
            time.sleep(600)  # killed in here
        return healthy(messages, tools, tool_choice)

    with Schema(url, schema).sync() as (saver, store):
        hooks = hooks_for("create_agent", BACKGROUND, ScriptedChatModel(respond=write))
        agent = agent_with(hooks, saver=saver, store=store)
        memory = memory_of(hooks)
        config = thread_config(thread)
        for n in range(3):
            agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
        assert memory.wait(timeout=120)
        hang["on"] = True
        agent.invoke({"messages": [HumanMessage("note FACT-3")]}, config)
        say("answered")
        sys.stdin.read()  # until killed


if __name__ == "__main__":
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's view of a hang
    sys.path.append(str(Path(__file__).resolve().parents[2]))  # after the installed package
    _victim(sys.argv[1], sys.argv[2], sys.argv[3])
