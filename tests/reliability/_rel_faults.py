"""Fault injection plumbing: a SQLite checkpointer and store that crash or fail on cue.

``Crasher`` counts durable writes (checkpointer ``put``/``put_writes``, store batches with a
``PutOp``). Armed at write ``k`` it raises :class:`Crash` *instead of* that write, and from then
on every operation raises (the process is dead) — a ``BaseException``, so no ``except
Exception`` in the engine can swallow it, as with a real kill. A restart is a new
``WorkingMemory`` over :func:`~wm_langgraph.storage.sqlite.open_sqlite` on the same file.

Armed with ``fail_at`` it instead raises :class:`InjectedError` (an ordinary ``Exception``) at
one operation (read or write) and carries on: a transient database error.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.sqlite import SqliteStore

__all__ = ["Crash", "Crasher", "InjectedError", "crashing_sqlite"]


class Crash(BaseException):
    """The process died here."""


class InjectedError(Exception):
    """A transient failure of one database operation."""


class Crasher:
    """Counts operations and crashes or fails at the armed one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.writes = 0
        self.ops = 0
        self.crash_at_write: int | None = None
        self.fail_at_op: int | None = None
        self.dead = False
        self.log: list[str] = []

    def arm_crash(self, write_number: int) -> None:
        """Crash instead of the ``write_number``-th write from now (1-based)."""
        with self._lock:
            self.crash_at_write = self.writes + write_number

    def arm_failure(self, op_number: int) -> None:
        """Fail the ``op_number``-th operation from now (1-based), once."""
        with self._lock:
            self.fail_at_op = self.ops + op_number

    def check(self, what: str, *, write: bool) -> None:
        """Called before every operation."""
        with self._lock:
            if self.dead:
                raise Crash(f"process already dead ({what})")
            self.ops += 1
            if write:
                self.writes += 1
            self.log.append(what)
            if write and self.crash_at_write == self.writes:
                self.dead = True
                raise Crash(f"crash instead of write {self.writes}: {what}")
            if self.fail_at_op == self.ops:
                self.fail_at_op = None
                raise InjectedError(f"injected failure of operation {self.ops}: {what}")


class _Saver(SqliteSaver):
    crasher: Crasher

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.crasher.check("checkpoint.put", write=True)
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.crasher.check("checkpoint.put_writes", write=True)
        super().put_writes(config, writes, task_id, task_path)

    def get_tuple(self, config: Any) -> Any:
        self.crasher.check("checkpoint.get_tuple", write=False)
        return super().get_tuple(config)


class _Store(SqliteStore):
    crasher: Crasher

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        puts = [op for op in ops if isinstance(op, PutOp)]
        if puts:
            what = "store.put " + ",".join(f"{op.namespace[-1]}/{op.key}" for op in puts)
        else:
            what = f"store.read x{len(ops)}"
        self.crasher.check(what, write=bool(puts))
        return super().batch(ops)


@contextmanager
def crashing_sqlite(path: str, crasher: Crasher) -> Iterator[tuple[SqliteSaver, SqliteStore]]:
    """A checkpointer and a store on ``path`` (like ``open_sqlite``) wired to ``crasher``."""
    with (
        closing(sqlite3.connect(path, check_same_thread=False, timeout=30.0)) as saver_conn,
        closing(
            sqlite3.connect(path, check_same_thread=False, timeout=30.0, isolation_level=None)
        ) as store_conn,
    ):
        saver_conn.execute("PRAGMA journal_mode=WAL")
        store_conn.execute("PRAGMA journal_mode=WAL")
        saver = _Saver(saver_conn)
        saver.setup()
        store = _Store(store_conn)
        store.setup()
        saver.crasher = crasher
        store.crasher = crasher
        yield saver, store
