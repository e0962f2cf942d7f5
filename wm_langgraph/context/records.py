"""Archived messages for assemble, read through a per-thread cache (behaviour §7.4).

Assemble shows the newest archived messages that fit the budget: those of the pending archives
and, in the room left after that, the newest already-folded ones verbatim. Both are read newest
archive first and only until their token counts fill the room, so older records are never
fetched. Records are immutable (an archive id is never reused for other content, design §2.2),
so a record read once is kept, with its per-message token counts, under its memory key and
archive id: a model call reads from the store only the archives it has not read before (after
a commit, one new record), never every archive of the timeline. A fork's timeline names its own
archive ids, so it finds only its own records.

The token counts are those Phase 1 stored with the record; a record written before they were
stored is counted once, when it is first read.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore
from wm_langgraph.storage.keys import split_memory_key

__all__ = ["ArchiveReader", "RecentMessages", "detached"]

MAX_THREADS = 256
"""Memory keys whose records the reader keeps (least recently used out)."""

MessageCounter = Callable[[BaseMessage], int]

_READERS: weakref.WeakSet[ArchiveReader] = weakref.WeakSet()
"""Every reader of the process: a purge of a thread deletes the records of every memory of it
(named ones, subgraph scopes), which other memories' readers may have cached."""
_READERS_LOCK = threading.Lock()


def _plain(value: dict[Any, Any] | list[Any]) -> dict[Any, Any] | list[Any]:
    """A copy of a dict or list and of every dict or list inside it (other values shared)."""
    if isinstance(value, dict):
        return {k: _plain(v) if isinstance(v, dict | list) else v for k, v in value.items()}
    return [_plain(v) if isinstance(v, dict | list) else v for v in value]


def detached(message: BaseMessage) -> BaseMessage:
    """A copy of a cached message that its receiver may change freely: the message object and
    its dicts and lists (content blocks, ``additional_kwargs``, ``response_metadata``, tool
    calls) are new; strings and other values are shared. Cheaper than a deep copy."""
    copy = message.model_copy()
    fields = copy.__dict__
    for name, value in fields.items():
        if isinstance(value, dict | list):
            fields[name] = _plain(value) if value else type(value)()
    return copy


@dataclass(frozen=True, slots=True)
class _Entry:
    messages: tuple[BaseMessage, ...]
    sizes: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return sum(self.sizes)


@dataclass(frozen=True, slots=True)
class RecentMessages:
    """The newest messages of a list of archives, oldest first.

    Attributes:
        messages: The messages (hidden ones left out), in archive order.
        sizes: The token count of each message.
        complete: Whether every archive of the list was read.
        missing: Whether an archive of the list was not in the store (its messages are
            unknown: what was read is not the whole history).
    """

    messages: list[BaseMessage]
    sizes: list[int]
    complete: bool
    missing: bool = False

    @property
    def tokens(self) -> int:
        """The tokens of all the messages."""
        return sum(self.sizes)


class ArchiveReader:
    """Reads archived messages newest first, caching records per memory key (see the module
    docstring). Thread-safe."""

    def __init__(self, archives: ArchiveStore, count: MessageCounter) -> None:
        """Read from ``archives``; count messages of records stored without token counts with
        ``count``."""
        self._archives = archives
        self._count = count
        # keyed by (id of the store, memory key): one memory may serve several stores (tenants)
        # whose threads share ids, and their archive ids coincide
        self._threads: OrderedDict[tuple[int, str], dict[str, _Entry]] = OrderedDict()
        self._lock = threading.Lock()
        self.store_reads = 0
        """How many records were read from the store (for tests and measurements)."""
        with _READERS_LOCK:
            _READERS.add(self)

    def _entry(self, thread_id: str, archive_id: str) -> _Entry | None:
        place = self._place(thread_id)
        with self._lock:
            cached = self._threads.get(place, {}).get(archive_id)
        if cached is not None:
            return cached
        records = self._archives.get_archives(thread_id, [archive_id])
        self.store_reads += 1
        if not records:
            return None
        entry = self._from_record(records[0])
        with self._lock:
            per = self._threads.setdefault(place, {})
            per[archive_id] = entry
        return entry

    def _place(self, thread_id: str) -> tuple[int, str]:
        return (id(self._archives.store_for(thread_id)), thread_id)

    def _from_record(self, record: ArchiveRecord) -> _Entry:
        messages = tuple(record.messages)
        sizes = record.message_tokens
        if len(sizes) != len(messages):  # a record of an older version: count once
            sizes = [max(0, self._count(m)) for m in messages]
        return _Entry(messages, tuple(sizes))

    def recent(
        self,
        thread_id: str,
        archive_ids: Sequence[str],
        room: int,
        *,
        hidden: frozenset[str] | set[str] = frozenset(),
    ) -> RecentMessages:
        """The messages of the newest archives of ``archive_ids`` whose tokens reach ``room``.

        Archives are taken newest first until their (not hidden) messages add up to ``room``;
        the archive that crosses it is included. Archives missing from the store are skipped.

        Args:
            thread_id: The memory key.
            archive_ids: Archive ids, oldest first.
            room: Tokens wanted (nothing is read when ``room <= 0``).
            hidden: Message ids to leave out.

        Returns:
            The messages, oldest first.
        """
        chunks: list[_Entry] = []
        total = 0
        complete = True
        missing = False
        used: set[str] = set()
        for index in range(len(archive_ids) - 1, -1, -1):
            if total >= room:
                complete = False
                break
            archive_id = archive_ids[index]
            entry = self._entry(thread_id, archive_id)
            used.add(archive_id)
            if entry is None:
                missing = True
                continue
            if hidden and any(m.id in hidden for m in entry.messages):
                pairs = [(m, s) for m, s in zip(entry.messages, entry.sizes, strict=True)]
                kept = [(m, s) for m, s in pairs if m.id not in hidden]
                entry = _Entry(tuple(m for m, _ in kept), tuple(s for _, s in kept))
            chunks.append(entry)
            total += entry.tokens
        self._touch(thread_id, used)
        chunks.reverse()
        return RecentMessages(
            messages=[detached(m) for c in chunks for m in c.messages],
            sizes=[s for c in chunks for s in c.sizes],
            complete=complete,
            missing=missing,
        )

    def _touch(self, thread_id: str, used: set[str]) -> None:
        """Mark the thread recently used; bound the cache (threads least recently used out)."""
        place = self._place(thread_id)
        with self._lock:
            per = self._threads.get(place)
            if per is None:
                return
            self._threads.move_to_end(place)
            # Keep the records this call used plus a few others (another fork's, or the
            # records a commit is about to move from pending to folded); drop the rest.
            if len(per) > 2 * max(8, len(used)):
                for archive_id in [a for a in per if a not in used]:
                    del per[archive_id]
            while len(self._threads) > MAX_THREADS:
                self._threads.popitem(last=False)

    def forget(self, thread_id: str, *, whole_thread: bool = False) -> None:
        """Drop the cached records of ``thread_id`` (its records were deleted).

        Args:
            thread_id: The memory key.
            whole_thread: Drop every memory key of its thread (every scope), in every reader
                of the process: a purge deletes the records of all the thread's memories, and
                a later conversation of the thread reuses their archive ids.
        """
        if not whole_thread:
            self._drop(lambda key: key == thread_id)
            return
        thread = split_memory_key(thread_id)[0]
        with _READERS_LOCK:
            readers = list(_READERS)
        for reader in readers:
            reader._drop(lambda key: split_memory_key(key)[0] == thread)

    def _drop(self, doomed: Callable[[str], bool]) -> None:
        with self._lock:
            for place in [p for p in self._threads if doomed(p[1])]:
                del self._threads[place]
