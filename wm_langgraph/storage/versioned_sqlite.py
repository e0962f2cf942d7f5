"""SQLite checkpointers that store each channel's value once per version.

``SqliteSaver`` serialises every checkpoint whole: a superstep that changes nothing (the
``assemble`` node writes only an untracked channel) still stores the whole state again, the
message list included. ``PostgresSaver`` and ``InMemorySaver`` store a channel's value once
per version, in a blobs table, and a checkpoint only names the versions it holds. These
savers do the same on SQLite:

- ``put`` writes the value of every channel whose version is new into
  ``wm_checkpoint_blobs`` (and any value whose version has no blob yet, which is how a thread
  written by a plain ``SqliteSaver`` carries on), then the checkpoint without those values;
- ``get_tuple`` / ``list`` put the values back from the blobs table, so callers (and the
  graph) see exactly what ``SqliteSaver`` would return.

Checkpoints written by a plain ``SqliteSaver`` keep their inline values and read as before.
A database written by these savers needs them to read it: a plain ``SqliteSaver`` would see
the checkpoints without their channel values.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

__all__ = ["AsyncVersionedSqliteSaver", "VersionedSqliteSaver"]

BLOBS_TABLE = "wm_checkpoint_blobs"
_EMPTY = "empty"  # a channel version with no value (the channel was cleared)

_CREATE = f"""CREATE TABLE IF NOT EXISTS {BLOBS_TABLE} (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    blob BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
)"""
_INSERT = (
    f"INSERT OR IGNORE INTO {BLOBS_TABLE} "
    "(thread_id, checkpoint_ns, channel, version, type, blob) VALUES (?, ?, ?, ?, ?, ?)"
)
_DELETE = f"DELETE FROM {BLOBS_TABLE} WHERE thread_id = ?"

Key = tuple[str, str]  # (channel, version)


def _select(thread_id: str, ns: str, keys: Sequence[Key]) -> tuple[str, list[str]]:
    """One query for the blobs of ``keys`` in one thread and namespace."""
    pairs = " OR ".join("(channel = ? AND version = ?)" for _ in keys)
    sql = (
        f"SELECT channel, version, type, blob FROM {BLOBS_TABLE} "
        f"WHERE thread_id = ? AND checkpoint_ns = ? AND ({pairs})"
    )
    return sql, [thread_id, ns, *(part for key in keys for part in key)]


def _where(config: RunnableConfig) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))


def _versioned(checkpoint: Checkpoint) -> dict[str, str]:
    return {ch: str(v) for ch, v in checkpoint["channel_versions"].items()}


def _slim(checkpoint: Checkpoint) -> Checkpoint:
    """The checkpoint without the values the blobs table holds."""
    versioned = checkpoint["channel_versions"]
    values = {k: v for k, v in checkpoint["channel_values"].items() if k not in versioned}
    return {**checkpoint, "channel_values": values}


def _to_check(checkpoint: Checkpoint, new_versions: ChannelVersions) -> list[Key]:
    """Versions held from an earlier checkpoint: their blob should exist; ask."""
    return [(ch, v) for ch, v in _versioned(checkpoint).items() if ch not in new_versions]


def _blob_rows(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    checkpoint: Checkpoint,
    keys: Sequence[Key],
) -> list[tuple[Any, ...]]:
    thread_id, ns = _where(config)
    values = checkpoint["channel_values"]
    rows: list[tuple[Any, ...]] = []
    for channel, version in keys:
        if channel in values:
            type_, blob = saver.serde.dumps_typed(values[channel])
        else:
            type_, blob = _EMPTY, None
        rows.append((thread_id, ns, channel, version, type_, blob))
    return rows


def _to_write(
    checkpoint: Checkpoint, new_versions: ChannelVersions, present: set[Key]
) -> list[Key]:
    held = {(ch, v) for ch, v in _to_check(checkpoint, new_versions)}
    new = [(ch, str(v)) for ch, v in new_versions.items()]
    return new + sorted(held - present)


def _missing(tup: CheckpointTuple) -> list[Key]:
    values = tup.checkpoint["channel_values"]
    return [(ch, v) for ch, v in _versioned(tup.checkpoint).items() if ch not in values]


def _fill(saver: BaseCheckpointSaver[Any], tup: CheckpointTuple, rows: Iterable[Any]) -> None:
    wanted = dict(_missing(tup))
    values = tup.checkpoint["channel_values"]
    for channel, version, type_, blob in rows:
        if wanted.get(channel) == version and type_ != _EMPTY:
            values[channel] = saver.serde.loads_typed((type_, blob))


class VersionedSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` that stores each channel's value once per version.

    Use it where you would use ``SqliteSaver`` (``open_sqlite`` returns one)::

        conn = sqlite3.connect("agent.sqlite", check_same_thread=False)
        graph = builder.compile(checkpointer=VersionedSqliteSaver(conn))

    A superstep that changes no channel then costs a checkpoint row of bookkeeping, not a
    copy of the state. Reads return the same checkpoints ``SqliteSaver`` returns.
    """

    _blobs_ready = False

    def setup(self) -> None:
        """Create SqliteSaver's tables and the blobs table (idempotent)."""
        # SqliteSaver.cursor() calls setup() with the lock held: no locking here.
        super().setup()
        if not self._blobs_ready:
            self.conn.execute(_CREATE)
            self.conn.commit()
            self._blobs_ready = True

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store the new channel values, then the checkpoint that names their versions."""
        thread_id, ns = _where(config)
        present: set[Key] = set()
        check = _to_check(checkpoint, new_versions)
        with self.cursor() as cur:
            if check:
                cur.execute(*_select(thread_id, ns, check))
                present = {(row[0], row[1]) for row in cur.fetchall()}
            keys = _to_write(checkpoint, new_versions, present)
            cur.executemany(_INSERT, _blob_rows(self, config, checkpoint, keys))
        return super().put(config, _slim(checkpoint), metadata, new_versions)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint as ``SqliteSaver`` returns it, its channel values restored."""
        tup = super().get_tuple(config)
        return None if tup is None else self._hydrated(tup)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """``SqliteSaver.list``, each checkpoint's channel values restored."""
        # SqliteSaver yields while it holds its (non-reentrant) lock: collect first.
        found = [*super().list(config, filter=filter, before=before, limit=limit)]
        for tup in found:
            yield self._hydrated(tup)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, writes and channel values."""
        super().delete_thread(thread_id)
        with self.cursor() as cur:
            cur.execute(_DELETE, (str(thread_id),))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """The generic parent walk: SqliteSaver's fast path reads values inline."""
        return BaseCheckpointSaver.get_delta_channel_history(self, config=config, channels=channels)

    def _hydrated(self, tup: CheckpointTuple) -> CheckpointTuple:
        missing = _missing(tup)
        if missing:
            with self.cursor(transaction=False) as cur:
                cur.execute(*_select(*_where(tup.config), missing))
                _fill(self, tup, cur.fetchall())
        return tup


class AsyncVersionedSqliteSaver(AsyncSqliteSaver):
    """The async twin of :class:`VersionedSqliteSaver` (``aopen_sqlite`` returns one)."""

    _blobs_ready = False

    async def setup(self) -> None:
        """Create AsyncSqliteSaver's tables and the blobs table (idempotent)."""
        await super().setup()
        if not self._blobs_ready:
            async with self.lock:
                if not self._blobs_ready:
                    await self.conn.execute(_CREATE)
                    await self.conn.commit()
                    self._blobs_ready = True

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store the new channel values, then the checkpoint that names their versions."""
        await self.setup()
        thread_id, ns = _where(config)
        present: set[Key] = set()
        check = _to_check(checkpoint, new_versions)
        async with self.lock, self.conn.cursor() as cur:
            if check:
                await cur.execute(*_select(thread_id, ns, check))
                present = {(row[0], row[1]) for row in await cur.fetchall()}
            keys = _to_write(checkpoint, new_versions, present)
            await cur.executemany(_INSERT, _blob_rows(self, config, checkpoint, keys))
            await self.conn.commit()
        return await super().aput(config, _slim(checkpoint), metadata, new_versions)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint as ``AsyncSqliteSaver`` returns it, its channel values restored."""
        tup = await super().aget_tuple(config)
        return None if tup is None else await self._hydrated(tup)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """``AsyncSqliteSaver.alist``, each checkpoint's channel values restored."""
        found = [t async for t in super().alist(config, filter=filter, before=before, limit=limit)]
        for tup in found:
            yield await self._hydrated(tup)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, writes and channel values."""
        await super().adelete_thread(thread_id)
        async with self.lock:
            await self.conn.execute(_DELETE, (str(thread_id),))
            await self.conn.commit()

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        """The generic parent walk: AsyncSqliteSaver's fast path reads values inline."""
        return await BaseCheckpointSaver.aget_delta_channel_history(
            self, config=config, channels=channels
        )

    async def _hydrated(self, tup: CheckpointTuple) -> CheckpointTuple:
        missing = _missing(tup)
        if missing:
            async with self.lock, self.conn.cursor() as cur:
                await cur.execute(*_select(*_where(tup.config), missing))
                _fill(self, tup, await cur.fetchall())
        return tup
