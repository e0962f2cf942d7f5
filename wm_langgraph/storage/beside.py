"""The checkpoints kept beside a store: what a memory that knows only its store reads them with.

A config-only read (``get_working_memory(config)`` in a new process, before any turn) must tell
a live thread from a deleted one, which only the thread's checkpoints can (behaviour §6.8). A
memory often knows the store but not the checkpointer: a ``StateGraph`` or
``create_react_agent`` compiled with both, where only ``WorkingMemory(store=...)`` was given.
When the checkpoints live in the store's own database, the store is enough:

- the checkpointer :func:`~wm_langgraph.storage.sqlite.open_sqlite` / ``aopen_sqlite`` opened
  with the store (:func:`pair`);
- else a reader over the store's own database, when that database holds LangGraph's checkpoint
  tables: a ``SqliteStore``'s file (read as ``VersionedSqliteSaver`` reads it, which also reads
  a plain ``SqliteSaver``'s checkpoints) or a ``PostgresStore``'s database (its connection or
  pool, its ``search_path``). The reader shares the store's connection and its lock and never
  writes (no table is created).

Whether such a reader is *the thread's* checkpointer is a separate question: a graph may keep
its checkpoints elsewhere. :func:`reads_as` answers it while a hook runs (the run's own
checkpointer at hand) and the hooks record the answer in the store's timeline pointer.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

__all__ = ["checkpointer_beside", "pair", "reads_as"]

_LOCK = threading.Lock()
_PAIRED: weakref.WeakKeyDictionary[BaseStore, BaseCheckpointSaver[Any]] = (
    weakref.WeakKeyDictionary()
)
_READERS: weakref.WeakKeyDictionary[BaseStore, BaseCheckpointSaver[Any] | None] = (
    weakref.WeakKeyDictionary()
)
"""What :func:`checkpointer_beside` found per store (None: nothing; asked once per store)."""


def pair(store: BaseStore, saver: BaseCheckpointSaver[Any]) -> None:
    """Record that ``saver`` keeps its checkpoints beside ``store`` (one file, one database)."""
    with _LOCK:
        _PAIRED[store] = saver


def checkpointer_beside(store: BaseStore) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer paired with ``store``, else a read-only reader of the checkpoints in
    the store's own database (None: neither; the store keeps no checkpoints beside it)."""
    try:
        with _LOCK:
            if store in _PAIRED:
                return _PAIRED[store]
            if store in _READERS:
                return _READERS[store]
    except TypeError:  # a store that cannot be weakly referenced: not remembered
        pass
    reader = _sqlite_reader(store) or _postgres_reader(store)
    try:
        with _LOCK:
            _READERS[store] = reader
    except TypeError:
        pass
    return reader


def reads_as(
    saver: BaseCheckpointSaver[Any], beside: BaseCheckpointSaver[Any], thread_id: str
) -> bool | None:
    """Does ``beside`` read the thread's checkpoints exactly as ``saver`` (the run's) does?
    True when both name the same latest root checkpoint, False when they differ, None when
    neither can tell (no checkpoint yet, a read failed)."""
    if beside is saver:
        return True
    wanted: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for _ in range(2):  # a checkpoint written between the two reads: read again
        try:
            ours = saver.get_tuple(wanted)
            theirs = beside.get_tuple(wanted)
        except Exception:  # an async-only saver, a closed connection
            return None
        if ours is None or theirs is None:
            return None if ours is None else False
        if ours.checkpoint["id"] == theirs.checkpoint["id"]:
            return True
    return False


def _sqlite_reader(store: BaseStore) -> BaseCheckpointSaver[Any] | None:
    from langgraph.store.sqlite import SqliteStore

    if not isinstance(store, SqliteStore) or not isinstance(store.conn, sqlite3.Connection):
        return None
    from langgraph.checkpoint.sqlite import SqliteSaver

    from wm_langgraph.storage.versioned_sqlite import BLOBS_TABLE, VersionedSqliteSaver

    try:
        with store.lock:
            tables = {
                str(row[0])
                for row in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            columns = (
                {str(row[1]) for row in store.conn.execute("PRAGMA table_info(writes)")}
                if "writes" in tables
                else set()
            )
    except sqlite3.Error:  # a closed connection
        return None
    if not {"checkpoints", "writes"} <= tables:
        return None
    kind = VersionedSqliteSaver if BLOBS_TABLE in tables else SqliteSaver
    reader = kind(store.conn)
    reader.lock = store.lock  # one connection: one lock, the store's
    reader.is_setup = True  # the tables exist; a reader creates none
    reader._has_task_path = "task_path" in columns
    return reader


def _postgres_reader(store: BaseStore) -> BaseCheckpointSaver[Any] | None:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
    except ImportError:  # the [postgres] extra is not installed
        return None
    if not isinstance(store, PostgresStore):
        return None
    try:
        with store._cursor() as cur:
            cur.execute("SELECT to_regclass('checkpoints') IS NOT NULL AS found")
            row = cur.fetchone()
    except Exception:  # a closed pool, no permission
        return None
    if not row or not row["found"]:
        return None
    reader = PostgresSaver(store.conn, pipe=store.pipe)
    reader.lock = store.lock  # a single connection is used by one thread at a time
    return reader
