"""Bounded retries of the memory's own store operations on transient errors.

A store that fails now and then (a busy SQLite file: ``database is locked``; a dropped Postgres
connection; a network store timing out) must not cost a turn or a Working Memory: the memory's
reads and writes are retried a few times with exponential backoff and jitter. Only errors that
look transient are retried (:func:`is_transient`); anything else (a bad value, a missing table, a
programming error) is raised at once. Every operation the memory does is safe to repeat: records
are immutable (a second write of the same record is a no-op or the same value) and bookkeeping
values are whole-value puts.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.base.batch import AsyncBatchedBaseStore

__all__ = ["ATTEMPTS", "RetryingStore", "is_transient", "retrying"]

logger = logging.getLogger("wm_langgraph")

ATTEMPTS = 8
"""How often an operation is tried in all before its error is raised (about 5 s of backoff in
all: enough for 50 threads writing one SQLite file at once)."""
BASE_DELAY = 0.05
"""Seconds before the first retry; doubled for each one after it (with jitter), at most 2 s."""
_MAX_DELAY = 2.0
_TRANSIENT_NAMES = frozenset(
    {"OperationalError", "InterfaceError", "PoolTimeout", "TooManyConnections", "DeadlockDetected"}
)
_TRANSIENT_WORDS = ("locked", "busy", "timeout", "timed out", "connection", "temporar")

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` looks like a store error that may pass when retried: a connection or
    time-out error, a locked or busy SQLite database, a driver's operational error."""
    if not isinstance(exc, Exception):
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    if isinstance(exc, sqlite3.OperationalError):
        return any(word in str(exc).lower() for word in ("locked", "busy"))
    if type(exc).__name__ in _TRANSIENT_NAMES:
        return True
    if isinstance(exc, OSError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(word in text for word in _TRANSIENT_WORDS)


def retrying(
    operation: Callable[[], T],
    *,
    what: str = "store operation",
    attempts: int = ATTEMPTS,
    base_delay: float = BASE_DELAY,
) -> T:
    """Run ``operation``; on a transient error try again (``attempts`` in all, backoff).

    Raises:
        Exception: The last error, when every attempt failed or an error is not transient.
    """
    for attempt in range(1, attempts + 1):
        try:
            return operation()
        except Exception as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            delay = min(_MAX_DELAY, base_delay * 2 ** (attempt - 1))
            logger.debug(
                "wm_langgraph: %s failed with %s (attempt %d of %d); retrying",
                what,
                type(exc).__qualname__,
                attempt,
                attempts,
            )
            time.sleep(delay * (0.5 + random.random()))
    raise AssertionError("unreachable")  # pragma: no cover


class _Unqueued(BaseStore):
    """An async-batched store (``AsyncSqliteStore``, ``AsyncPostgresStore``) seen through its
    ``batch``/``abatch`` only, so that each of the memory's operations is a batch of its own.

    Such a store's ``get``/``put``/``search`` queue their operation on the store's shared
    per-tick queue, where it is merged with whatever the application queued in the same tick;
    the merged batch runs as one transaction and one failure fails every operation in it. A
    busy SQLite file then failed a user tool's ``aput`` because the memory's read was batched
    with it (the memory retries its own operations; the tool's write is not ours to retry).
    ``BaseStore``'s methods build the operation and call ``batch``, which these stores run
    directly, never through the queue.
    """

    def __init__(self, store: AsyncBatchedBaseStore) -> None:
        super().__init__()
        self._store = store
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._store.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._store.abatch(ops)


class RetryingStore:
    """The memory's view of a ``BaseStore``: the operations it uses, each retried (and, on an
    async-batched store, each a batch of its own: :class:`_Unqueued`)."""

    __slots__ = ("_store",)

    def __init__(self, store: BaseStore) -> None:
        """Wrap ``store``."""
        self._store: BaseStore = (
            _Unqueued(store) if isinstance(store, AsyncBatchedBaseStore) else store
        )

    def get(self, namespace: tuple[str, ...], key: str) -> Any:
        """``store.get``, retried."""
        return retrying(lambda: self._store.get(namespace, key), what="store get")

    def put(self, namespace: tuple[str, ...], key: str, value: Any, **kwargs: Any) -> None:
        """``store.put``, retried."""
        retrying(lambda: self._store.put(namespace, key, value, **kwargs), what="store put")

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """``store.delete``, retried."""
        retrying(lambda: self._store.delete(namespace, key), what="store delete")

    def batch(self, ops: Any) -> Any:
        """``store.batch``, retried (its operations are all safe to repeat)."""
        ops = list(ops)
        return retrying(lambda: self._store.batch(ops), what="store batch")

    def search(self, namespace: tuple[str, ...], **kwargs: Any) -> Any:
        """``store.search``, retried."""
        return retrying(lambda: self._store.search(namespace, **kwargs), what="store search")

    def list_namespaces(self, **kwargs: Any) -> Any:
        """``store.list_namespaces``, retried."""
        return retrying(lambda: self._store.list_namespaces(**kwargs), what="store listing")
