"""Where the CLI keeps a run: in memory, in one SQLite file, or in a PostgreSQL database
(checkpointer + store)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from wm_langgraph.storage.sqlite import open_sqlite

__all__ = [
    "DatabaseOpenError",
    "database_label",
    "free_thread_id",
    "is_database_url",
    "persistence",
]

_URL_SCHEMES = ("postgresql://", "postgres://")


class DatabaseOpenError(RuntimeError):
    """The database cannot be opened (a missing extra, a server that cannot be reached)."""


def database_label(db: str) -> str:
    """``db`` as the CLI prints it: a URL without its password."""
    if not is_database_url(db):
        return db
    parts = urlsplit(db)
    if parts.password is None:
        return db
    host = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def is_database_url(db: str) -> bool:
    """True when ``db`` names a PostgreSQL database (``postgresql://…``), not a SQLite file."""
    return db.startswith(_URL_SCHEMES)


@contextmanager
def persistence(db: str | None) -> Iterator[tuple[BaseCheckpointSaver[Any], BaseStore]]:
    """``(checkpointer, store)``: in memory when ``db`` is None, both on the SQLite file, or
    both on the PostgreSQL database a ``postgresql://`` URL names (the ``[postgres]`` extra;
    their tables are set up, as the SQLite file's are).

    Raises:
        DatabaseOpenError: A PostgreSQL URL without the ``[postgres]`` extra installed, or a
            database that cannot be connected to.
    """
    if db is None:
        yield InMemorySaver(), InMemoryStore()
    elif is_database_url(db):
        with _postgres(db) as found:
            yield found
    else:
        with open_sqlite(db) as (checkpointer, store):
            yield checkpointer, store


@contextmanager
def _postgres(url: str) -> Iterator[tuple[BaseCheckpointSaver[Any], BaseStore]]:
    """A ``PostgresSaver`` and a ``PostgresStore`` over one connection pool (a connection each
    at a time: the saver and the store must not share one connection across threads)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
        from psycopg import Connection, OperationalError
        from psycopg.rows import DictRow, dict_row
        from psycopg_pool import ConnectionPool, PoolTimeout
    except ImportError as exc:
        raise DatabaseOpenError(
            "a postgresql:// database needs the [postgres] extra: "
            'pip install "wm-langgraph[postgres]"'
        ) from exc
    options: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    try:  # one connection first: a bad URL or a server that is down says why at once
        Connection.connect(url, autocommit=True, prepare_threshold=0).close()
    except OperationalError as exc:
        raise DatabaseOpenError(f"cannot connect to the PostgreSQL database: {exc}") from exc
    pool = ConnectionPool[Connection[DictRow]](
        url, min_size=1, max_size=4, kwargs=options, open=False
    )
    try:
        pool.open(wait=True, timeout=30)
    except PoolTimeout as exc:
        raise DatabaseOpenError(f"cannot connect to the PostgreSQL database: {exc}") from exc
    try:
        checkpointer, store = PostgresSaver(pool), PostgresStore(pool)
        checkpointer.setup()
        store.setup()
        yield checkpointer, store
    finally:
        pool.close()


def free_thread_id(checkpointer: BaseCheckpointSaver[Any], base: str) -> str:
    """``base``, or ``base-2``, ``base-3``… when the checkpointer already has that thread."""
    candidate, number = base, 1
    while checkpointer.get_tuple({"configurable": {"thread_id": candidate}}) is not None:
        number += 1
        candidate = f"{base}-{number}"
    return candidate
