"""Where the CLI keeps a run: in memory, or in one SQLite file (checkpointer + store)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from wm_langgraph.storage.sqlite import open_sqlite

__all__ = ["free_thread_id", "persistence"]


@contextmanager
def persistence(db: str | None) -> Iterator[tuple[BaseCheckpointSaver[Any], BaseStore]]:
    """``(checkpointer, store)``: in memory when ``db`` is None, else both on the SQLite file."""
    if db is None:
        yield InMemorySaver(), InMemoryStore()
    else:
        with open_sqlite(db) as (checkpointer, store):
            yield checkpointer, store


def free_thread_id(checkpointer: BaseCheckpointSaver[Any], base: str) -> str:
    """``base``, or ``base-2``, ``base-3``… when the checkpointer already has that thread."""
    candidate, number = base, 1
    while checkpointer.get_tuple({"configurable": {"thread_id": candidate}}) is not None:
        number += 1
        candidate = f"{base}-{number}"
    return candidate
