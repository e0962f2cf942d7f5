"""The embedded persistent default: one SQLite file for the checkpointer and the store.

::

    with open_sqlite("agent.sqlite") as (checkpointer, store):
        wm = WorkingMemory(model, store=store)
        graph = builder.compile(checkpointer=checkpointer, store=store)

A restarted process that opens the same file continues its threads: the live messages and the
meta come back from the checkpointer, archives and Working Memory versions from the store, and
archives whose Phase 2 was interrupted are folded in again.

Both objects get their own connection to the file (WAL journal, busy timeout), opened with
``check_same_thread=False`` because Phase 2 runs in background threads; both serialise their
use of the connection with a lock. A memory given only the store knows the checkpointer too
(``storage.beside``: config-only reads in a new process tell a live thread from a deleted one).
The store's vector index is not used (it needs SQLite extension loading, which not every Python
build has); ``archive_search`` ranks with its keyword index (BM25), which lives in the same
file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from os import PathLike, fspath
from typing import TYPE_CHECKING

from langgraph.store.sqlite import SqliteStore

from wm_langgraph._compat import immediate_async_sqlite_store
from wm_langgraph.storage.beside import pair
from wm_langgraph.storage.versioned_sqlite import AsyncVersionedSqliteSaver, VersionedSqliteSaver

if TYPE_CHECKING:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

__all__ = ["AsyncVersionedSqliteSaver", "VersionedSqliteSaver", "aopen_sqlite", "open_sqlite"]

_BUSY_TIMEOUT_S = 30.0


def _connect(path: str, *, autocommit: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path,
        check_same_thread=False,
        timeout=_BUSY_TIMEOUT_S,
        isolation_level=None if autocommit else "DEFERRED",
    )
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    return conn


def _check_path(path: str | PathLike[str]) -> str:
    text = fspath(path)
    if not isinstance(text, str) or not text:
        raise ValueError("open_sqlite needs a file path (str or os.PathLike)")
    if text == ":memory:":
        raise ValueError(
            "open_sqlite needs a file: two ':memory:' connections would be two separate "
            "databases; use InMemorySaver and InMemoryStore for in-memory runs"
        )
    return text


@contextmanager
def open_sqlite(path: str | PathLike[str]) -> Iterator[tuple[VersionedSqliteSaver, SqliteStore]]:
    """Open (creating if needed) one SQLite file as a checkpointer and a store, both set up.

    Args:
        path: The database file.

    Yields:
        ``(checkpointer, store)``: a :class:`VersionedSqliteSaver` (a ``SqliteSaver`` that
        stores each channel's value once per version) and a ``SqliteStore`` on ``path``.
        Both connections are closed on exit.

    Raises:
        ValueError: ``path`` is empty or ``":memory:"``.
    """
    text = _check_path(path)
    with (
        closing(_connect(text, autocommit=False)) as saver_conn,
        closing(_connect(text, autocommit=True)) as store_conn,
    ):
        checkpointer = VersionedSqliteSaver(saver_conn)
        checkpointer.setup()
        store = SqliteStore(store_conn)
        store.setup()
        pair(store, checkpointer)  # a memory given only the store reads these checkpoints
        yield checkpointer, store


@asynccontextmanager
async def aopen_sqlite(
    path: str | PathLike[str],
) -> AsyncIterator[tuple[AsyncVersionedSqliteSaver, AsyncSqliteStore]]:
    """Async twin of :func:`open_sqlite` for graphs run with ``ainvoke``/``astream``.

    Yields an :class:`AsyncVersionedSqliteSaver` and an ``AsyncSqliteStore`` on the same file
    (each on its own connection, WAL journal, busy timeout), both set up. Both have the full
    async API (``await runtime.store.aput(...)`` in a user's tool works); the engine uses the
    store's sync API from worker threads, which hands the work to this event loop. So, in async
    code, read with ``await memory.aget_working_memory(config)`` / ``alist_archives`` and wait with
    ``await memory.await_phase2(config)`` (before leaving the block: the store closes on exit).

    Raises:
        ValueError: ``path`` is empty or ``":memory:"``.
    """
    import aiosqlite

    text = _check_path(path)
    async with (
        aiosqlite.connect(text, timeout=_BUSY_TIMEOUT_S) as saver_conn,
        aiosqlite.connect(text, timeout=_BUSY_TIMEOUT_S, isolation_level=None) as store_conn,
    ):
        async with store_conn.execute("PRAGMA journal_mode=WAL") as cursor:
            await cursor.fetchall()
        checkpointer = AsyncVersionedSqliteSaver(saver_conn)
        await checkpointer.setup()
        store = immediate_async_sqlite_store()(store_conn)
        await store.setup()
        pair(store, checkpointer)
        yield checkpointer, store
