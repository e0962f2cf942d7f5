"""The archives' search index: per-archive term statistics in the store (behaviour §7.6).

Layout, next to the archives of a memory (design §2.2)::

    (..., "search")  <archive id>            term postings, lengths, message ids and roles
    (..., "texts")   <archive id>:<position>  one archived message's text, embedded by the
                                             store's vector index (only when it has one)
    (..., "abstracts") <archive id>          the abstract the writer gave the archive in
                                             Phase 2 (``texts`` gets ``<archive id>:abstract``)

An archive is immutable, so its index record is written once, when Phase 1 writes the archive
(:meth:`SearchIndex.write`), and read into a per-process cache keyed by the store, the memory's
namespace and the archive id: a query reads from the store only the index records it has not
seen yet. An archive written before the index existed gets its record on the first search that
needs it. The message texts are written with ``index=["text"]`` only when the store was created
with a vector index (``index=``); every other record of the memory stays ``index=False``.

An archive's abstract comes later than its index record: Phase 2 writes it
(:meth:`SearchIndex.write_abstracts`) before the Working Memory version that covers the archive,
so an archive that a version covers (and does not list as deferred) has its abstract record
already, or never gets one. A search reads the abstracts it has not cached; a missing one is
cached as missing only for such a *settled* archive (a pending archive's is read again).
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from wm_langgraph.document.text.ranking import term_counts
from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore, StoredMessages
from wm_langgraph.storage.timeline_postings import (
    AbstractPostings,
    AbstractTerms,
    MergedPostings,
    TimelinePostings,
    merged_view,
)

__all__ = [
    "ABSTRACT_POSITION",
    "INDEX_VERSION",
    "MAX_EMBEDDED_CHARS",
    "AbstractIndex",
    "ArchiveIndex",
    "SearchIndex",
    "build_index",
    "has_vector_index",
    "role_label",
    "searchable_text",
    "shown_parts",
]

INDEX_VERSION = 1
MAX_EMBEDDED_CHARS = 2_000
"""A message's text is embedded up to this many characters (embedding models read ~512
tokens; the keyword index sees the whole text)."""
ABSTRACT_POSITION = -1
"""The position an archive's abstract takes among its documents (its messages are 0, 1, ...):
the ``position`` of its embedded text, and of its search key."""
logger = logging.getLogger("wm_langgraph")
_CACHE_ARCHIVES = 16_384
_CACHE_DOCUMENTS = 65_536
"""The merged postings of the cached timelines hold at most about this many messages in all
(about 1.3 KB each with chat-sized messages: some 85 MB; the newest timeline is kept whatever
its size). A timeline dropped is merged again from the per-archive cache when searched."""
_BRANCHES = 4
"""Merged postings kept per memory: its timeline and up to three forks of it."""
_ABSTRACT_VERSION = 1


def searchable_text(message: BaseMessage) -> str:
    """What search sees of a message: its text, then its tool calls (name and arguments)."""
    parts: list[str] = [str(message.text)]
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call.get("args", {}), ensure_ascii=False, default=str)
            parts.append(f"→ tool call {call['name']}({args})")
    return "\n".join(p for p in parts if p)


_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def shown_parts(messages: Sequence[BaseMessage], position: int) -> tuple[str, str, str]:
    """:func:`searchable_text`, :func:`role_label` and the id (``""`` without one) of
    ``messages[position]``; a stored message whose content is text and that calls no tool is
    read from its stored fields (the same values, without making the message)."""
    if isinstance(messages, StoredMessages):
        found = messages.fields(position)
        if found is not None:
            kind, data = found
            plain = _plain_parts(kind, data)
            if plain is not None:
                return plain
    message = messages[position]
    return searchable_text(message), role_label(message), str(message.id or "")


def _plain_parts(kind: str, data: Mapping[str, Any]) -> tuple[str, str, str] | None:
    content = data.get("content")
    extra = data.get("additional_kwargs")
    if (
        not isinstance(content, str)
        or data.get("tool_calls")
        or (isinstance(extra, Mapping) and extra.get("tool_calls"))
    ):
        return None
    if kind == "tool":
        name = data.get("name") or "tool"
        status = " error" if data.get("status") == "error" else ""
        role = f"tool result{status} ({name})"
    elif kind in _ROLES:
        role = _ROLES[kind]
    else:
        return None
    return content, role, str(data.get("id") or "")


def role_label(message: BaseMessage) -> str:
    """``user``, ``assistant``, ``tool result (name)`` (``tool result error (name)``), ..."""
    if isinstance(message, ToolMessage):
        name = message.name or "tool"
        status = " error" if message.status == "error" else ""
        return f"tool result{status} ({name})"
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


@dataclass(frozen=True, slots=True)
class ArchiveIndex:
    """One archive's term statistics (its messages are the documents).

    Attributes:
        archive_id: The archive.
        seq: Its position in its timeline.
        digest: The archive's digest (ties the index to the record's content).
        created_at: When the archive was written.
        ids: Each message's id (to leave hidden messages out).
        lengths: Each message's length in terms.
        postings: Each term's ``(message position, count)`` pairs.
    """

    archive_id: str
    seq: int
    digest: str
    created_at: str
    ids: tuple[str, ...]
    lengths: tuple[int, ...]
    postings: Mapping[str, tuple[tuple[int, int], ...]]

    def to_value(self) -> dict[str, Any]:
        """The JSON-plain store value."""
        return {
            "version": INDEX_VERSION,
            "archive_id": self.archive_id,
            "seq": self.seq,
            "digest": self.digest,
            "created_at": self.created_at,
            "ids": list(self.ids),
            "lengths": list(self.lengths),
            "postings": {t: [list(p) for p in ps] for t, ps in self.postings.items()},
        }

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> ArchiveIndex | None:
        """Read :meth:`to_value`'s output; None for another version or a malformed value."""
        try:
            if value.get("version") != INDEX_VERSION:
                return None
            postings = {
                str(t): tuple((int(p[0]), int(p[1])) for p in ps)
                for t, ps in dict(value["postings"]).items()
            }
            return cls(
                archive_id=str(value["archive_id"]),
                seq=int(value["seq"]),
                digest=str(value.get("digest") or ""),
                created_at=str(value.get("created_at") or ""),
                ids=tuple(str(i) for i in value["ids"]),
                lengths=tuple(int(n) for n in value["lengths"]),
                postings=postings,
            )
        except (KeyError, TypeError, ValueError, IndexError):
            return None


@dataclass(frozen=True, slots=True)
class AbstractIndex:
    """One archive's abstract and its terms (a search document beside its messages).

    Attributes:
        archive_id: The archive.
        digest: The digest of the archive it was written for (ties it to that content).
        text: The abstract, as Phase 2 stored it (cleaned: ``document.abstracts``).
        counts: Each search term of the text with how often it occurs.
        length: The text's length in terms.
    """

    archive_id: str
    digest: str
    text: str
    counts: Mapping[str, int]
    length: int

    @classmethod
    def of(cls, archive_id: str, digest: str, text: str) -> AbstractIndex:
        """The index of ``text`` as the abstract of ``archive_id`` (of ``digest``)."""
        counts = dict(term_counts(text))
        return cls(archive_id, digest, text, counts, sum(counts.values()))

    def to_value(self) -> dict[str, Any]:
        """The JSON-plain store value."""
        return {
            "version": _ABSTRACT_VERSION,
            "archive_id": self.archive_id,
            "digest": self.digest,
            "text": self.text,
        }

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> AbstractIndex | None:
        """Read a stored abstract record; None for another version or a malformed value."""
        if value.get("version") != _ABSTRACT_VERSION:
            return None
        text, archive_id, digest = value.get("text"), value.get("archive_id"), value.get("digest")
        if not all(isinstance(v, str) for v in (text, archive_id, digest)):
            return None
        if not str(text).strip():
            return None
        return cls.of(str(archive_id), str(digest), str(text))


_MISSING = AbstractIndex("", "", "", {}, 0)
"""The cache's entry for a settled archive without an abstract."""


def build_index(
    record_id: str,
    seq: int,
    messages: Sequence[BaseMessage],
    *,
    digest: str = "",
    created_at: str = "",
) -> ArchiveIndex:
    """The term statistics of one archive's messages."""
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    for position, message in enumerate(messages):
        counts = term_counts(searchable_text(message))
        lengths.append(sum(counts.values()))
        for term, count in counts.items():
            postings.setdefault(term, []).append((position, count))
    return ArchiveIndex(
        archive_id=record_id,
        seq=seq,
        digest=digest,
        created_at=created_at,
        ids=tuple(str(m.id) for m in messages),
        lengths=tuple(lengths),
        postings={t: tuple(ps) for t, ps in postings.items()},
    )


def index_of(record: ArchiveRecord) -> ArchiveIndex:
    """:func:`build_index` of a stored record."""
    return build_index(
        record.id,
        record.seq,
        record.messages,
        digest=record.digest,
        created_at=record.created_at,
    )


def has_vector_index(store: BaseStore) -> bool:
    """Whether ``store`` was created with a vector index (``index={...}``)."""
    return bool(getattr(store, "index_config", None))


class _Lru:
    """A small thread-safe LRU map."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def drop(self, predicate: Callable[[Any], bool]) -> None:
        with self._lock:
            for key in [k for k in self._data if predicate(k)]:
                del self._data[key]


class _Timelines:
    """The merged postings of the memories' timelines (:mod:`.timeline_postings`): a few per
    memory (its current timeline, forks), least recently used dropped first, bounded by the
    messages they hold in all; thread-safe."""

    def __init__(self, documents: int, branches: int) -> None:
        self._documents = documents
        self._branches = branches
        self._data: OrderedDict[Any, list[MergedPostings]] = OrderedDict()
        self._lock = threading.Lock()

    def view(
        self,
        key: Any,
        timeline: Sequence[str],
        read: Callable[[Sequence[str]], list[ArchiveIndex]],
    ) -> TimelinePostings:
        """The postings of ``timeline`` (archive ids) of the memory ``key``, reading the
        indexes it lacks with ``read``: a cached timeline it starts, else one it extends
        (extended in place), else merged anew and cached. A timeline with an archive that has
        no index is merged from the indexes found, and not cached."""
        with self._lock:
            entries = list(self._data.get(key, ()))
            if entries:
                self._data.move_to_end(key)
        for merged in entries:
            if merged.starts_with(timeline):
                return merged.view(len(timeline))
        for merged in entries:
            if merged.extend_to(timeline, read):
                self._evict()
                return merged.view(len(timeline))
        indexes = read(timeline)
        if len(indexes) != len(timeline):
            return merged_view(indexes)
        merged = MergedPostings(indexes)
        with self._lock:
            branches = [*self._data.get(key, ()), merged][-self._branches :]
            self._data[key] = branches
            self._data.move_to_end(key)
        self._evict()
        return merged.view(len(indexes))

    def drop_holding(self, key: Any, archive_id: str) -> None:
        """Drop the memory ``key``'s merged postings that hold ``archive_id`` (its record was
        written again)."""
        with self._lock:
            entries = self._data.get(key)
            if entries and any(archive_id in m.position for m in entries):
                kept = [m for m in entries if archive_id not in m.position]
                if kept:
                    self._data[key] = kept
                else:
                    del self._data[key]

    def entries(self, key: Any) -> list[MergedPostings]:
        """The merged postings cached for the memory ``key``."""
        with self._lock:
            return list(self._data.get(key, ()))

    def _evict(self) -> None:
        with self._lock:
            held = sum(m.documents for ms in self._data.values() for m in ms)
            while held > self._documents and len(self._data) > 1:
                _, dropped = self._data.popitem(last=False)
                held -= sum(m.documents for m in dropped)

    def drop(self, predicate: Callable[[Any], bool]) -> None:
        with self._lock:
            for key in [k for k in self._data if predicate(k)]:
                del self._data[key]


_STORE_IDS: weakref.WeakKeyDictionary[BaseStore, int] = weakref.WeakKeyDictionary()
_STORE_LOCK = threading.Lock()
_NEXT_STORE = [0]


def _store_token(store: BaseStore) -> int:
    """A number for ``store`` that is never reused in this process (``id()`` can be)."""
    with _STORE_LOCK:
        try:
            token = _STORE_IDS.get(store)
            if token is None:
                _NEXT_STORE[0] += 1
                token = _STORE_IDS[store] = _NEXT_STORE[0]
            return token
        except TypeError:  # a store that cannot be weakly referenced
            return id(store)


class SearchIndex:
    """The index records of the memories of one :class:`ArchiveStore`, with the process cache.

    The cache is shared by every ``SearchIndex`` in the process (it holds immutable
    per-archive data keyed by store, namespace and archive id).
    """

    _indexes = _Lru(_CACHE_ARCHIVES)
    _abstracts = _Lru(_CACHE_ARCHIVES)
    _timelines = _Timelines(_CACHE_DOCUMENTS, _BRANCHES)

    def __init__(self, archives: ArchiveStore) -> None:
        """Index the archives of ``archives``."""
        self._archives = archives

    def _prefix(self, key: str) -> tuple[int, tuple[str, ...]]:
        store = self._archives.store_for(key)
        return (_store_token(store), self._archives.namespace(key, "search"))

    # -- writing ----------------------------------------------------------------------------
    def write(self, key: str, record: ArchiveRecord) -> ArchiveIndex:
        """Write ``record``'s index record (and its message texts when the store embeds)."""
        op, index = self.prepare(key, record)
        self._archives.io(key).batch([op])
        return self.written(key, record, index)

    def prepare(self, key: str, record: ArchiveRecord) -> tuple[PutOp, ArchiveIndex]:
        """The write of ``record``'s index record, for a caller that batches it with others;
        :meth:`written` once it is stored."""
        index = index_of(record)
        namespace = self._archives.namespace(key, "search")
        return PutOp(namespace, record.id, index.to_value(), index=False, ttl=None), index

    def written(self, key: str, record: ArchiveRecord, index: ArchiveIndex) -> ArchiveIndex:
        """Note that ``index`` (:meth:`prepare`) of ``record`` is stored: the process cache
        holds it, and the message texts are embedded when the store has a vector index."""
        prefix = self._prefix(key)
        self._indexes.put((*prefix, record.id), index)
        self._timelines.drop_holding(prefix, record.id)  # an id written again: merge anew
        store = self._archives.store_for(key)
        if has_vector_index(store):
            self._embed(key, store, record)
        return index

    def write_abstracts(self, key: str, abstracts: Mapping[str, str]) -> None:
        """Store each archive's abstract (archive id -> cleaned text) as its search document,
        tied to the archive's digest, and embed it when the store has a vector index. Phase 2
        calls this before it stores the Working Memory version that covers the archives; an
        archive that does not exist gets none."""
        digests = {i.archive_id: i.digest for i in self.indexes(key, list(abstracts))}
        records = [
            AbstractIndex.of(archive_id, digests[archive_id], text)
            for archive_id, text in abstracts.items()
            if archive_id in digests
        ]
        if not records:
            return
        ns = self._archives.namespace(key, "abstracts")
        puts = [PutOp(ns, r.archive_id, r.to_value(), index=False, ttl=None) for r in records]
        self._archives.io(key).batch(puts)
        prefix = self._abstract_prefix(key)
        for record in records:
            self._abstracts.put((*prefix, record.archive_id), record)
        for merged in self._timelines.entries(self._prefix(key)):
            with merged.lock:  # the abstracts its searches read are read anew
                merged.abstract_generation += 1
        store = self._archives.store_for(key)
        if has_vector_index(store):
            texts_ns = self._archives.namespace(key, "texts")
            embedded = [
                PutOp(
                    texts_ns,
                    f"{archive_id}:abstract",
                    {"text": text, "archive_id": archive_id, "position": ABSTRACT_POSITION},
                    ["text"],
                    ttl=None,
                )
                for archive_id, text in abstracts.items()
            ]
            self._embed_batch(store, embedded, ", ".join(abstracts), "abstracts")

    def _embed(self, key: str, store: BaseStore, record: ArchiveRecord) -> None:
        """Write the record's message texts for the store's vector index."""
        texts_ns = self._archives.namespace(key, "texts")
        puts: list[PutOp] = []
        for position, message in enumerate(record.messages):
            text = searchable_text(message).strip()
            if not text:
                continue
            value = {
                "text": text[:MAX_EMBEDDED_CHARS],
                "archive_id": record.id,
                "position": position,
                "message_id": str(message.id),
            }
            puts.append(PutOp(texts_ns, f"{record.id}:{position}", value, ["text"], ttl=None))
        self._embed_batch(store, puts, record.id, "messages")

    @staticmethod
    def _embed_batch(store: BaseStore, puts: list[PutOp], what: str, kind: str) -> None:
        """Write texts for the store's vector index. An embedding service that fails leaves
        them to keyword search (logged), never the turn or the round."""
        if not puts:
            return
        try:
            store.batch(puts)
        except Exception as exc:  # the embedding service is outside our control
            logger.warning(
                "archive %s: its %s were not embedded for semantic search (%s: %s); "
                "keyword search still finds them",
                what,
                kind,
                type(exc).__name__,
                exc,
            )

    # -- reading ----------------------------------------------------------------------------
    def indexes(
        self, key: str, timeline: Sequence[str], *, write: bool = True
    ) -> list[ArchiveIndex]:
        """The index of every archive of ``timeline`` that exists, in timeline order.

        Cached indexes are used as they are; the rest are read in one batch, and an archive
        without an index record (written before the index existed) is indexed now and its
        record written (``write=False``: only cached, for a reader that writes nothing).
        """
        found: dict[str, ArchiveIndex] = {}
        missing: list[str] = []
        prefix = self._prefix(key)
        for archive_id in timeline:
            cached = self._indexes.get((*prefix, archive_id))
            if cached is not None:
                found[archive_id] = cached
            else:
                missing.append(archive_id)
        if missing:
            store = self._archives.store_for(key)
            ns = self._archives.namespace(key, "search")
            items = store.batch([GetOp(ns, a) for a in missing])
            unindexed: list[str] = []
            for archive_id, item in zip(missing, items, strict=True):
                index = ArchiveIndex.from_value(item.value) if isinstance(item, Item) else None
                if index is None:
                    unindexed.append(archive_id)
                    continue
                found[archive_id] = index
                self._indexes.put((*prefix, archive_id), index)
            for record in self._archives.get_archives(key, unindexed):
                if write:
                    found[record.id] = self.write(key, record)
                else:
                    found[record.id] = index_of(record)
                    self._indexes.put((*prefix, record.id), found[record.id])
        return [found[a] for a in timeline if a in found]

    def postings(
        self, key: str, timeline: Sequence[str], *, write: bool = True
    ) -> TimelinePostings:
        """The merged postings of ``timeline`` (its archives that exist, in order), from the
        process cache, extended or merged from :meth:`indexes` where it lacks archives."""
        return self._timelines.view(
            self._prefix(key), list(timeline), lambda ids: self.indexes(key, ids, write=write)
        )

    def _abstract_prefix(self, key: str) -> tuple[int, tuple[str, ...]]:
        store = self._archives.store_for(key)
        return (_store_token(store), self._archives.namespace(key, "abstracts"))

    def abstracts(
        self, key: str, indexes: Sequence[ArchiveIndex], settled: Collection[str] = ()
    ) -> dict[str, AbstractIndex]:
        """The abstract of every archive of ``indexes`` that has one for its content (archive
        id -> index; one written for other content under the same id never counts).

        Cached ones are used as they are; the rest are read in one batch. An archive of
        ``settled`` (covered by the Working Memory, not deferred) without a record is cached
        as having none; any other is read again by the next search.
        """
        prefix = self._abstract_prefix(key)
        found: dict[str, AbstractIndex] = {}
        missing: list[ArchiveIndex] = []
        for index in indexes:
            cached = self._abstracts.get((*prefix, index.archive_id))
            if cached is None or (cached is not _MISSING and cached.digest != index.digest):
                missing.append(index)
            elif cached is not _MISSING:
                found[index.archive_id] = cached
        if missing:
            ns = self._archives.namespace(key, "abstracts")
            items = self._archives.io(key).batch([GetOp(ns, i.archive_id) for i in missing])
            for index, item in zip(missing, items, strict=True):
                read = AbstractIndex.from_value(item.value) if isinstance(item, Item) else None
                if read is not None and (read.archive_id, read.digest) == (
                    index.archive_id,
                    index.digest,
                ):
                    found[index.archive_id] = read
                    self._abstracts.put((*prefix, index.archive_id), read)
                elif index.archive_id in settled:
                    self._abstracts.put((*prefix, index.archive_id), _MISSING)
        return found

    def timeline_abstracts(
        self, key: str, view: TimelinePostings, settled: Collection[str] = ()
    ) -> AbstractTerms:
        """:meth:`abstracts` of the archives of ``view``, kept with its merged postings: only
        the archives whose abstract may still come are looked up again (and, after the
        memory's abstract records were written, all of them once)."""
        merged = view.merged
        with merged.lock:
            generation = merged.abstract_generation
            state = merged.abstracts
            if state is None or state.generation != generation:
                state = merged.abstracts = AbstractPostings(generation)
        archives = merged.archives
        with state.lock:
            state.pending.update(range(state.known, view.count))
            state.known = max(state.known, view.count)
            todo = sorted(a for a in state.pending if a < view.count)
            if todo:
                found = self.abstracts(key, [archives[a] for a in todo], settled)
                for a in todo:
                    archive_id = archives[a].archive_id
                    abstract = found.get(archive_id)
                    if abstract is not None:
                        state.add(a, abstract)
                        state.pending.discard(a)
                    elif archive_id in settled:
                        state.pending.discard(a)
        return state.terms(view)

    def messages(
        self, key: str, ids: Sequence[str]
    ) -> dict[str, tuple[str, Sequence[BaseMessage]]]:
        """The digest and messages of the archives ``ids`` (read from the store, never cached:
        only the few archives a result shows are read; each message is made only when read,
        :class:`~wm_langgraph.storage.archives.StoredMessages`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        ns = self._archives.namespace(key, "archives")
        items = self._archives.io(key).batch([GetOp(ns, a) for a in wanted])
        return {
            archive_id: (str(item.value.get("digest") or ""), StoredMessages(item.value))
            for archive_id, item in zip(wanted, items, strict=True)
            if isinstance(item, Item)
        }

    def forget(self, key: str, *, whole_thread: bool = False) -> None:
        """Drop ``key``'s cached indexes and abstracts (``whole_thread``: those of every
        memory of its thread)."""
        ns = self._archives.namespace(key, "search")
        abstracts = self._archives.namespace(key, "abstracts")
        if whole_thread:
            thread = ns[:2]
            self._indexes.drop(lambda k: k[1][:2] == thread)
            self._abstracts.drop(lambda k: k[1][:2] == thread)
            self._timelines.drop(lambda k: k[1][:2] == thread)
            return
        self._indexes.drop(lambda k: k[1] == ns)
        self._abstracts.drop(lambda k: k[1] == abstracts)
        self._timelines.drop(lambda k: k[1] == ns)

    def embeds(self, key: str) -> bool:
        """Whether ``key``'s store has a vector index (semantic search is on)."""
        return has_vector_index(self._archives.store_for(key))

    def semantic(
        self, key: str, query: str, timeline: Sequence[str], limit: int
    ) -> list[tuple[str, int, float]] | None:
        """The store's semantic search over ``key``'s archived message texts and abstracts:
        ``(archive id, position, similarity)`` best first (an abstract's position is
        :data:`ABSTRACT_POSITION`), only archives of ``timeline``; None when the store has no
        vector index. A store that gives no score counts by rank (1 down to 0)."""
        store = self._archives.store_for(key)
        if not has_vector_index(store):
            return None
        on_timeline = set(timeline)
        # other branches' archives share the namespace: ask for more, keep this timeline's
        items = store.search(self._archives.namespace(key, "texts"), query=query, limit=limit * 3)
        out: list[tuple[str, int, float]] = []
        for rank, item in enumerate(items):
            value = item.value
            archive_id = str(value.get("archive_id", ""))
            position = value.get("position")
            if archive_id in on_timeline and isinstance(position, int):
                score = getattr(item, "score", None)
                similarity = float(score) if score is not None else 1.0 - rank / len(items)
                out.append((archive_id, position, similarity))
        return out[:limit]
