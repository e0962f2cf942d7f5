"""Archive records and Working Memory versions over a LangGraph ``BaseStore`` (design §2.2-§2.3).

Layout, per memory (``label`` is the thread id made safe for store namespaces)::

    ("wm_langgraph", label, "archives")  archive_001, archive_002, ...  messages verbatim
    ("wm_langgraph", label, "wm")        <last covered archive id>       a WM + its coverage
                                         latest                          a copy of the newest
    ("wm_langgraph", label, "meta")      timeline | breaker | state |     bookkeeping values
                                         hidden
    ("wm_langgraph", label, "ids")       <message id>                    the archives holding it
    ("wm_langgraph", label, "moved")     <last covered archive id>       items a WM version
                                                                         moved out (size limit)

A thread can hold several memories (two named middlewares, agents in subgraphs of a supervisor
or swarm): each has a *scope* (:func:`memory_scope`: its name and graph namespace). The default
scope (default name, top-level graph) keeps the layout above, so stores written before scopes
existed read unchanged; any other scope adds one segment, ``("wm_langgraph", label, "@" +
<scope label>, kind)``. The engine addresses a memory by its *memory key*
(:func:`memory_key`), the thread id plus the scope in one injective string.

The current WM of a timeline (its ordered archive ids) is the newest version whose coverage is a
prefix of the timeline; the archives after that prefix are pending.

Every record is written with ``ttl=None``: a store's default TTL (``SqliteStore(ttl=...)``, a
``store.ttl`` in ``langgraph.json``, a Postgres store with TTL) never expires a memory's records,
which its timelines (in the checkpoints) name for as long as the thread lives; deleting them is
``WorkingMemory.purge``'s job.

Records are immutable once written. A record's identity is its place in a lineage (``prev``, the
archive before it on its timeline) and a digest of its messages (every field, verbatim). An id
is never reused for other content: a fork that archives different messages (an edited one, other
turns) at a number another branch already used gets a suffix (``archive_003_2``); a branch that
archives exactly the same messages after the same archive shares the record (and its WM
versions, whose coverage is then the same lineage).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, overload

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict
from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from wm_langgraph.storage.keys import (
    ROOT_LABEL,
    SCOPE_PREFIX,
    NoStoreError,
    graph_namespace,
    memory_key,
    memory_scope,
    namespace,
    split_memory_key,
    thread_id_from_config,
    thread_label,
)
from wm_langgraph.storage.retry import RetryingStore

__all__ = [
    "LATEST_KEY",
    "ROOT_LABEL",
    "SCOPE_PREFIX",
    "ArchiveRecord",
    "ArchiveStatus",
    "ArchiveStore",
    "NoStoreError",
    "WorkingMemoryVersion",
    "digest_of",
    "graph_namespace",
    "memory_key",
    "memory_scope",
    "message_list",
    "namespace",
    "now_iso",
    "split_memory_key",
    "thread_id_from_config",
    "thread_label",
]

ArchiveStatus = Literal["pending", "done", "failed"]

LATEST_KEY = "latest"
"""Key of the copy of the newest Working Memory version in a memory's ``"wm"`` namespace (the
version covering the most archives), for clients that read the store directly."""


def now_iso() -> str:
    """The current UTC time as ISO 8601."""
    return datetime.now(UTC).isoformat()


_BYTES_KEY = "__wm_bytes_b64__"


def _json_plain(value: Any) -> Any:
    """Make archived message dicts storable by every store (SQLite and Postgres keep JSON).

    A message the checkpointer accepts may carry values JSON cannot hold (bytes in
    ``additional_kwargs``, a provider object): without this, the archive write raised on every
    turn and the thread could never commit again. Bytes are kept reversibly (restored by
    :func:`_restore`); dates become ISO text; other objects their ``repr``; non-finite floats
    text (Postgres ``jsonb`` rejects them).
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray):
        return {_BYTES_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): _json_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_plain(v) for v in value]
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return str(isoformat())
    return repr(value)


def _restore(value: Any) -> Any:
    """Undo the reversible part of :func:`_json_plain` (bytes)."""
    if isinstance(value, Mapping):
        if len(value) == 1 and isinstance(value.get(_BYTES_KEY), str):
            return base64.b64decode(value[_BYTES_KEY])
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def message_list(value: Mapping[str, Any]) -> list[BaseMessage]:
    """The messages of a stored archive record value (without reading its other fields)."""
    return messages_from_dict(_restore(value.get("messages") or []))


class StoredMessages(Sequence[BaseMessage]):
    """The messages of a stored archive record value, each made into a message only when it is
    read (a search shows a few messages of an archive of hundreds)."""

    def __init__(self, value: Mapping[str, Any]) -> None:
        raw = value.get("messages") or []
        self._raw: list[Any] = list(raw) if isinstance(raw, list) else []
        self._made: dict[int, BaseMessage] = {}

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> BaseMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[BaseMessage]: ...

    def __getitem__(self, index: int | slice) -> BaseMessage | list[BaseMessage]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        if index < 0:
            index += len(self._raw)
        if not 0 <= index < len(self._raw):
            raise IndexError(index)
        made = self._made.get(index)
        if made is None:
            made = messages_from_dict([_restore(self._raw[index])])[0]
            self._made[index] = made
        return made

    def id_at(self, index: int) -> str:
        """``str(message.id)`` of message ``index`` without making the message."""
        made = self._made.get(index)
        if made is not None:
            return str(made.id)
        raw = self._raw[index]
        data = raw.get("data") if isinstance(raw, Mapping) else None
        return str(data.get("id") if isinstance(data, Mapping) else None)

    def fields(self, index: int) -> tuple[str, Mapping[str, Any]] | None:
        """Message ``index``'s stored type and fields as stored, without making the message
        (``None``: not in the stored form; read the message)."""
        raw = self._raw[index]
        if not isinstance(raw, Mapping):
            return None
        kind, data = raw.get("type"), raw.get("data")
        return (kind, data) if isinstance(kind, str) and isinstance(data, Mapping) else None

    def text_start(self, index: int) -> str | None:
        """Message ``index``'s content when it is plain text, read without making the message
        (``None``: content blocks; read the message)."""
        raw = self._raw[index]
        data = raw.get("data") if isinstance(raw, Mapping) else None
        content = data.get("content") if isinstance(data, Mapping) else None
        return content if isinstance(content, str) else None


def digest_of(messages: Sequence[BaseMessage]) -> str:
    """A digest of messages as a record stores them (every field, in order)."""
    plain = _json_plain(messages_to_dict(list(messages)))
    text = json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def message_signature(message: BaseMessage) -> str:
    """A digest of what a message says: its type, content, tool calls and tool call id.

    Two messages with one id and the same signature are one message sent twice; with different
    signatures they are two messages (a client that reuses ids). Metadata (``response_metadata``,
    ``additional_kwargs``, ``name``) is left out: a client replaying its history may drop it.
    """
    calls = [
        [str(c.get("name")), _json_plain(c.get("args")), str(c.get("id"))]
        for c in getattr(message, "tool_calls", None) or []
    ]
    plain = [
        message.type,
        _json_plain(message.content),
        calls,
        str(getattr(message, "tool_call_id", "") or ""),
    ]
    text = json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_IMMUTABLE = frozenset(
    {"id", "seq", "messages", "message_count", "prev", "digest", "thread_id", "message_tokens"}
)


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """One archive: messages moved out of the live state, kept verbatim.

    Attributes:
        id: ``archive_001``, ``archive_002``, ... (unique per thread).
        seq: Position in the thread's timeline (1-based).
        status: ``"pending"`` (not yet folded into the WM), ``"done"`` or ``"failed"``
            (Phase 2 failed; still pending for assemble and retried later).
        messages: The archived messages, verbatim.
        message_count: ``len(messages)``.
        token_count: Their token estimate.
        abstract: A one-line description: Phase 1's (the message count, the first and last
            request), replaced by the writer's abstract when Phase 2 has one
            (``metadata["abstract_by"] == "writer"``).
        overview: The Working Memory after this archive was folded in ("" until done).
        metadata: Timings, guard decisions, errors.
        prev: The archive before this one on its timeline (None for the first).
        digest: :func:`digest_of` the messages ("" for records of older versions).
        message_tokens: The token count of each message, in order, as Phase 1 counted it
            (empty for records of older versions: readers count those themselves).
    """

    id: str
    seq: int
    status: ArchiveStatus
    messages: list[BaseMessage] = field(default_factory=list)
    message_count: int = 0
    token_count: int = 0
    abstract: str = ""
    overview: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    thread_id: str = ""
    created_at: str = ""
    updated_at: str = ""
    prev: str | None = None
    digest: str = ""
    message_tokens: list[int] = field(default_factory=list)

    def to_value(self) -> dict[str, Any]:
        """The JSON-plain store value."""
        return {
            "id": self.id,
            "seq": self.seq,
            "status": self.status,
            "messages": _json_plain(messages_to_dict(self.messages)),
            "message_count": self.message_count,
            "token_count": self.token_count,
            "abstract": self.abstract,
            "overview": self.overview,
            "metadata": self.metadata,
            "thread_id": self.thread_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "prev": self.prev,
            "digest": self.digest,
            "message_tokens": list(self.message_tokens),
        }

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> ArchiveRecord:
        """Read a store value written by :meth:`to_value`."""
        status = value.get("status", "pending")
        return cls(
            id=str(value["id"]),
            seq=int(value.get("seq", 0)),
            status=status if status in ("pending", "done", "failed") else "pending",
            messages=messages_from_dict(_restore(value.get("messages") or [])),
            message_count=int(value.get("message_count", 0)),
            token_count=int(value.get("token_count", 0)),
            abstract=str(value.get("abstract", "")),
            overview=str(value.get("overview", "")),
            metadata=dict(value.get("metadata") or {}),
            thread_id=str(value.get("thread_id", "")),
            created_at=str(value.get("created_at", "")),
            updated_at=str(value.get("updated_at", "")),
            prev=str(value["prev"]) if value.get("prev") is not None else None,
            digest=str(value.get("digest") or ""),
            message_tokens=_message_tokens(value),
        )


def _message_tokens(value: Mapping[str, Any]) -> list[int]:
    """The stored per-message token counts, or ``[]`` when absent or malformed (one count per
    message, each a non-negative int)."""
    raw = value.get("message_tokens")
    if not isinstance(raw, list) or len(raw) != len(value.get("messages") or []):
        return []
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in raw):
        return []
    return list(raw)


@dataclass(frozen=True, slots=True)
class WorkingMemoryVersion:
    """A stored WM document and the archive ids (a timeline prefix) it covers."""

    text: str
    covers: list[str]
    info: dict[str, Any] = field(default_factory=dict)


_NO_STORE = (
    "Working Memory has no store: pass store=... to WorkingMemory / WorkingMemoryMiddleware, "
    "or compile the graph with one (builder.compile(store=...), create_agent(store=...); "
    "LangGraph Platform and `langgraph dev` provide one). Config-only calls outside a run "
    "(get_working_memory(config), ...) use the store the memory last ran with in this process."
)
_NO_STORE_HERE = (
    "Working Memory has no store to use here (outside a run): it knows the store given as "
    "store=..., the one create_agent(..., store=...) was built with (the middleware learns it "
    "then), or the one it last ran with in this process; a StateGraph's compile(store=...) or "
    "create_react_agent(..., store=...) is not visible to it before one of its hooks ran. Pass "
    "the same store to the memory: WorkingMemory(..., store=store) or "
    "WorkingMemoryMiddleware(..., store=store)"
)
_MAX_BOUND = 4096
_MOVED_PAGE = 500
"""Moved-items records listed per store search."""

_ACTIVE: ContextVar[BaseStore | None] = ContextVar("wm_langgraph_active_store", default=None)
"""The store of the run (or background job) executing in this context (see ``using``)."""


class ArchiveStore:
    """Archive records, WM versions and per-memory bookkeeping over a ``BaseStore``.

    With an explicit store every memory key uses it. Without one, the store is the one of the
    run being served: a hook runs :meth:`using` its graph's store, and the Phase 2 work it
    schedules carries that store with it, so one memory can serve any number of graphs and
    stores (tenants) that use the same thread ids. Outside any run, a key uses the store it
    was last :meth:`bind`-ed to, else the store bound last.
    """

    def __init__(self, store: BaseStore | None = None) -> None:
        """Wrap ``store`` (any BaseStore: in-memory, SQLite, Postgres), or none yet."""
        self._explicit = store
        self._bound: dict[str, BaseStore] = {}
        self._last: BaseStore | None = None

    @property
    def explicit(self) -> BaseStore | None:
        """The store given at construction, if any."""
        return self._explicit

    @property
    def store(self) -> BaseStore:
        """The explicit store, else the graph store bound last (or :meth:`know`-n).

        Raises:
            NoStoreError: Neither exists (the message says what to pass outside a run).
        """
        found = self._explicit if self._explicit is not None else self._last
        if found is None:
            raise NoStoreError(_NO_STORE_HERE)
        return found

    def bind(self, key: str, store: BaseStore | None) -> BaseStore:
        """Use ``store`` (a graph's store) for ``key`` unless an explicit store was given.

        Raises:
            NoStoreError: No explicit store and ``store`` is None.
        """
        if self._explicit is not None:
            return self._explicit
        if store is None:
            raise NoStoreError(_NO_STORE)
        if self._bound.get(key) is not store:
            if len(self._bound) >= _MAX_BOUND and key not in self._bound:
                self._bound.pop(next(iter(self._bound)))  # oldest; it falls back to _last
            self._bound[key] = store
        self._last = store
        return store

    def know(self, store: BaseStore) -> None:
        """Use ``store`` outside runs until a run binds one (unless an explicit store was
        given, or a run already did): the store of a graph built with this memory."""
        if self._explicit is None and self._last is None:
            self._last = store

    @contextlib.contextmanager
    def using(self, store: BaseStore | None) -> Iterator[None]:
        """Within the block (this context and copies of it), every key uses ``store`` (unless
        an explicit store was given). ``None`` leaves the current choice unchanged."""
        if store is None or self._explicit is not None:
            yield
            return
        token = _ACTIVE.set(store)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def bound_stores(self) -> list[BaseStore]:
        """The distinct graph stores keys are bound to."""
        found: list[BaseStore] = []
        for store in [*self._bound.values(), self._last]:
            if store is not None and all(store is not s for s in found):
                found.append(store)
        return found

    def store_for(self, key: str) -> BaseStore:
        """The store that holds ``key``'s memory: the explicit store, else the store of the run
        being served (:meth:`using`), else the one ``key`` was bound to last."""
        if self._explicit is not None:
            return self._explicit
        active = _ACTIVE.get()
        if active is not None:
            return active
        return self._bound.get(key) or self.store

    def _io(self, key: str) -> RetryingStore:
        """``key``'s store as the memory uses it: each operation retried on a transient error."""
        return RetryingStore(self.store_for(key))

    def io(self, key: str) -> RetryingStore:
        """``key``'s store with each operation retried on a transient error (a locked SQLite
        database): what the memory's other record kinds (the search index) write through."""
        return self._io(key)

    @staticmethod
    def namespace(thread_id: str, kind: str) -> tuple[str, ...]:
        """The namespace of ``kind`` ("archives", "wm", "meta") for a memory key."""
        return namespace(thread_id, kind)

    def adopt_legacy(self, key: str, timeline: Sequence[str]) -> int:
        """Move a scoped memory's archives and WM versions written before scopes existed.

        Such stores kept every memory of a thread in the default scope's namespace. A scoped
        memory whose own namespace lacks the archives its timeline (from its checkpoint) names
        copies those from the default namespace, with the WM versions covering them; what its
        timeline does not name stays where it is.

        Returns:
            How many records were copied.
        """
        thread_id, scope = split_memory_key(key)
        if not scope or not timeline:
            return 0
        store = self._io(key)
        if store.get(namespace(key, "archives"), timeline[0]) is not None:
            return 0
        legacy = memory_key(thread_id)
        copied = 0
        for archive_id in timeline:
            item = store.get(namespace(legacy, "archives"), archive_id)
            if item is None:
                continue
            store.put(namespace(key, "archives"), archive_id, item.value, index=False, ttl=None)
            copied += 1
            wm = store.get(namespace(legacy, "wm"), archive_id)
            covers = [str(x) for x in (wm.value.get("covers") or [])] if wm else []
            if wm is not None and covers == list(timeline[: len(covers)]):
                store.put(namespace(key, "wm"), archive_id, wm.value, index=False, ttl=None)
                copied += 1
        if copied:
            self.set_timeline(key, timeline)
        return copied

    # -- deletion ---------------------------------------------------------------------------
    def purge(self, key: str, *, whole_thread: bool = False) -> int:
        """Delete the records of memory ``key`` (``whole_thread``: of every memory of its
        thread): everything under their namespace prefix, whatever its kind (archives, WM
        versions, indexes, moved-out items, bookkeeping, records written by later versions).

        Returns:
            How many records were deleted.
        """
        thread_id, scope = split_memory_key(key)
        prefix: tuple[str, ...] = (ROOT_LABEL, thread_label(thread_id))
        if scope and not whole_thread:
            prefix = (*prefix, SCOPE_PREFIX + thread_label(scope))
        store = self._io(key)
        namespaces: list[tuple[str, ...]] = []
        while True:
            page = store.list_namespaces(prefix=prefix, limit=100, offset=len(namespaces))
            namespaces.extend(tuple(ns) for ns in page)
            if len(page) < 100:
                break
        if not scope and not whole_thread:  # the default scope: not the named memories
            namespaces = [ns for ns in namespaces if not ns[2:3] or ns[2][:1] != SCOPE_PREFIX]
        deleted = 0
        for ns in namespaces:
            while items := store.search(ns, limit=500):
                store.batch([PutOp(ns, item.key, None) for item in items])
                deleted += len(items)
        return deleted

    def listed_archive_ids(self, key: str) -> list[str]:
        """The ids of every archive record memory ``key`` has in the store (any branch)."""
        ns = self.namespace(key, "archives")
        store = self._io(key)
        ids: list[str] = []
        while page := store.search(ns, limit=500, offset=len(ids)):
            ids.extend(item.key for item in page if tuple(item.namespace) == ns)
            if len(page) < 500:
                break
        return ids

    # -- archives -------------------------------------------------------------------------
    def slot(self, thread_id: str, timeline: Sequence[str]) -> tuple[list[ArchiveRecord], str]:
        """The records already written at the next position of ``timeline`` (by any branch,
        or by a commit of this one that a crash kept out of the checkpoint), and a free id there.

        Returns:
            The records whose ``prev`` is the timeline's last archive, not on the timeline,
            in id order; and the first unused id (``archive_004``, then ``archive_004_2``, ...).
        """
        base = f"archive_{len(timeline) + 1:03d}"
        prev = timeline[-1] if timeline else None
        ns = self.namespace(thread_id, "archives")
        found: list[ArchiveRecord] = []
        candidate, n = base, 1
        store = self._io(thread_id)
        while (item := store.get(ns, candidate)) is not None:
            value = item.value
            if candidate not in timeline and value.get("digest") and value.get("prev") == prev:
                found.append(ArchiveRecord.from_value(value))
            n += 1
            candidate = f"{base}_{n}"
        return found, candidate

    def put_archive(self, record: ArchiveRecord) -> None:
        """Write a new archive record.

        Raises:
            ValueError: A record with this id exists and holds other messages (records are
                immutable: an id is never reused for different content).
        """
        ns = self.namespace(record.thread_id, "archives")
        value = record.to_value()
        store = self._io(record.thread_id)
        existing = store.get(ns, record.id)
        if existing is not None:
            if record.digest and existing.value.get("digest") == record.digest:
                return  # the very same archive, written before: nothing to do
            raise ValueError(
                f"archive {record.id} exists with other content; records are immutable"
            )
        store.put(ns, record.id, value, index=False, ttl=None)

    def put_new_archive(self, record: ArchiveRecord, then: Sequence[PutOp] = ()) -> None:
        """:meth:`index_messages` then :meth:`put_archive` of ``record``, then the writes
        ``then``, in two store round trips instead of four: one read (the index entries and the
        record's id), one write batch in that order (the index entries first: an entry naming
        an archive that never got written is harmless, a record missing from the index is
        not). The commit of a turn runs this inline, where every round trip is waited for.

        Raises:
            ValueError: A record with this id exists and holds other messages (nothing is
                written then).
        """
        thread_id = record.thread_id
        signatures = {str(m.id): message_signature(m) for m in record.messages if m.id}
        ids = list(signatures)
        ids_ns = self.namespace(thread_id, "ids")
        archives_ns = self.namespace(thread_id, "archives")
        store = self._io(thread_id)
        found = store.batch([*(GetOp(ids_ns, i) for i in ids), GetOp(archives_ns, record.id)])
        existing = found[-1]
        if isinstance(existing, Item) and not (
            record.digest and existing.value.get("digest") == record.digest
        ):
            raise ValueError(
                f"archive {record.id} exists with other content; records are immutable"
            )
        puts = _index_puts(ids_ns, record.id, ids, signatures, found[:-1])
        if existing is None:
            puts.append(PutOp(archives_ns, record.id, record.to_value(), index=False, ttl=None))
        puts.extend(then)
        if puts:
            store.batch(puts)

    def get_archives(self, thread_id: str, ids: Sequence[str]) -> list[ArchiveRecord]:
        """The records of ``ids`` in that order (missing ones are skipped)."""
        if not ids:
            return []
        ns = self.namespace(thread_id, "archives")
        items = self._io(thread_id).batch([GetOp(ns, archive_id) for archive_id in ids])
        return [ArchiveRecord.from_value(item.value) for item in items if isinstance(item, Item)]

    def get_recent_archives(
        self, thread_id: str, ids: Sequence[str], tokens: int
    ) -> tuple[list[ArchiveRecord], bool]:
        """The newest records of ``ids`` that together reach ``tokens``, in archive order.

        Records are read newest first, one at a time, and only until their stored
        ``token_count`` adds up to ``tokens`` (the record that crosses it is included): older
        records are never fetched or deserialised.

        Returns:
            The records (oldest first) and whether every record of ``ids`` was read.
        """
        ns = self.namespace(thread_id, "archives")
        out: list[ArchiveRecord] = []
        total = 0
        for index in range(len(ids) - 1, -1, -1):
            if total >= tokens:
                return out[::-1], False
            item = self._io(thread_id).get(ns, ids[index])
            if item is None:
                continue
            total += max(0, int(item.value.get("token_count", 0) or 0))
            out.append(ArchiveRecord.from_value(item.value))
        return out[::-1], True

    def update_archives(
        self,
        thread_id: str,
        ids: Sequence[str],
        *,
        each: Mapping[str, Mapping[str, Any]] | None = None,
        **changes: Any,
    ) -> None:
        """Set fields on stored records (``metadata`` is merged, ``updated_at`` refreshed).

        Only the bookkeeping fields change (status, overview, metadata, abstract): the messages
        and the record's identity are immutable. ``each`` adds changes of one archive (by id)
        to ``changes`` (its ``metadata`` merged over theirs).

        Raises:
            ValueError: ``changes`` or ``each`` names an immutable field.
        """
        named = set(changes).union(*(set(c) for c in (each or {}).values()))
        frozen = sorted(_IMMUTABLE.intersection(named))
        if frozen:
            raise ValueError(f"archive fields {frozen} are immutable")
        ns = self.namespace(thread_id, "archives")
        store = self._io(thread_id)
        for archive_id in ids:
            item = store.get(ns, archive_id)
            if item is None:
                continue
            value = dict(item.value)
            own = dict((each or {}).get(archive_id) or {})
            merged = {**changes, **own}
            if "metadata" in changes and "metadata" in own:
                merged["metadata"] = {**changes["metadata"], **own["metadata"]}
            for key, new in merged.items():
                if key == "metadata":
                    value["metadata"] = {**(value.get("metadata") or {}), **new}
                else:
                    value[key] = new
            value["updated_at"] = now_iso()
            store.put(ns, archive_id, value, index=False, ttl=None)

    # -- message id index ------------------------------------------------------------------
    def index_messages(
        self, thread_id: str, archive_id: str, messages: Sequence[BaseMessage]
    ) -> None:
        """Record that ``messages`` are archived in ``archive_id`` (their ids, and what each
        says: :func:`message_signature`).

        A message id can be in several archives only across forks (each branch archives its own
        copy); the index keeps all of them, so a lookup can ask about one timeline.
        """
        signatures = {str(m.id): message_signature(m) for m in messages if m.id}
        ids = list(signatures)
        if not ids:
            return
        ns = self.namespace(thread_id, "ids")
        store = self._io(thread_id)
        found = store.batch([GetOp(ns, i) for i in ids])
        puts = _index_puts(ns, archive_id, ids, signatures, found)
        if puts:
            store.batch(puts)

    def archived_signatures(
        self, thread_id: str, message_ids: Sequence[str], timeline: Sequence[str]
    ) -> dict[str, str]:
        """For each id among ``message_ids`` that an archive of ``timeline`` holds: the
        :func:`message_signature` of the archived message (read from the archive itself for
        index entries written before signatures were kept)."""
        ids = list(dict.fromkeys(str(i) for i in message_ids))
        if not ids or not timeline:
            return {}
        ns = self.namespace(thread_id, "ids")
        found = self._io(thread_id).batch([GetOp(ns, i) for i in ids])
        return self._signatures(thread_id, ids, found, timeline)

    def meta_and_signatures(
        self, thread_id: str, key: str, message_ids: Sequence[str], timeline: Sequence[str]
    ) -> tuple[dict[str, Any] | None, dict[str, str]]:
        """:meth:`get_meta` of ``key`` and :meth:`archived_signatures`, in one store round trip
        (every hook call reads both: one round trip fewer per call)."""
        ids = list(dict.fromkeys(str(i) for i in message_ids)) if timeline else []
        ops = [GetOp(self.namespace(thread_id, "meta"), key)]
        ops += [GetOp(self.namespace(thread_id, "ids"), i) for i in ids]
        found = self._io(thread_id).batch(ops)
        item = found[0]
        meta = dict(item.value) if isinstance(item, Item) else None
        signatures = self._signatures(thread_id, ids, found[1:], timeline) if ids else {}
        return meta, signatures

    def _signatures(
        self,
        thread_id: str,
        ids: Sequence[str],
        found: Sequence[Any],
        timeline: Sequence[str],
    ) -> dict[str, str]:
        """:meth:`archived_signatures` from the index entries ``found`` for ``ids``."""
        on_timeline = set(timeline)
        out: dict[str, str] = {}
        unsigned: dict[str, str] = {}  # message id -> the archive to read it from
        for message_id, item in zip(ids, found, strict=True):
            if not isinstance(item, Item):
                continue
            mine = [str(a) for a in item.value.get("archives") or [] if str(a) in on_timeline]
            if not mine:
                continue
            signed = item.value.get("signatures") or {}
            if isinstance(signed, Mapping) and isinstance(signed.get(mine[0]), str):
                out[message_id] = str(signed[mine[0]])
            else:
                unsigned[message_id] = mine[0]
        if unsigned:
            records = self.get_archives(thread_id, sorted(set(unsigned.values())))
            by_id = {str(m.id): m for r in records for m in r.messages if m.id in unsigned}
            for message_id in unsigned:
                message = by_id.get(message_id)
                out[message_id] = message_signature(message) if message is not None else ""
        return out

    def archived_among(
        self, thread_id: str, message_ids: Sequence[str], timeline: Sequence[str]
    ) -> set[str]:
        """The ids among ``message_ids`` that an archive of ``timeline`` already holds."""
        ids = list(dict.fromkeys(str(i) for i in message_ids))
        if not ids or not timeline:
            return set()
        on_timeline = set(timeline)
        ns = self.namespace(thread_id, "ids")
        found = self._io(thread_id).batch([GetOp(ns, i) for i in ids])
        return {
            message_id
            for message_id, item in zip(ids, found, strict=True)
            if isinstance(item, Item)
            and on_timeline.intersection(str(a) for a in item.value.get("archives") or [])
        }

    def hide_messages(self, thread_id: str, message_ids: Sequence[str]) -> None:
        """Hide archived messages of the thread (``RemoveMessage`` of an archived id): the
        archive tools, assemble and Phase 2 leave them out; the records stay verbatim."""
        hidden = self.hidden_ids(thread_id)
        new = [str(i) for i in message_ids if str(i) not in hidden]
        if new:
            self.put_meta(thread_id, "hidden", {"ids": [*sorted(hidden), *new]})

    def hidden_ids(self, thread_id: str) -> set[str]:
        """The thread's hidden message ids (see :meth:`hide_messages`)."""
        return {str(i) for i in (self.get_meta(thread_id, "hidden") or {}).get("ids") or []}

    # -- working memory versions --------------------------------------------------------------
    def current_wm(self, thread_id: str, timeline: Sequence[str]) -> WorkingMemoryVersion | None:
        """The newest WM version whose coverage is a prefix of ``timeline`` (None: no WM yet)."""
        ns = self.namespace(thread_id, "wm")
        store = self._io(thread_id)
        for k in range(len(timeline), 0, -1):
            item = store.get(ns, timeline[k - 1])
            if item is None:
                continue
            covers = [str(x) for x in item.value.get("covers") or []]
            if covers == list(timeline[:k]):
                return WorkingMemoryVersion(
                    text=str(item.value.get("text", "")),
                    covers=covers,
                    info={k2: v for k2, v in item.value.items() if k2 not in ("text", "covers")},
                )
        return None

    def put_wm(
        self, thread_id: str, covers: Sequence[str], text: str, info: Mapping[str, Any]
    ) -> None:
        """Store a WM version keyed by the last archive it covers."""
        if not covers:
            raise ValueError("a Working Memory version must cover at least one archive")
        value = {**dict(info), "text": text, "covers": list(covers), "created_at": now_iso()}
        store = self._io(thread_id)
        ns = self.namespace(thread_id, "wm")
        writes = [PutOp(ns, covers[-1], value, index=False, ttl=None)]
        # The current WM under a fixed key, for clients that read the store directly (a
        # platform's store API): the version covering the most archives wins, as in Phase 2.
        latest = store.get(ns, LATEST_KEY)
        if latest is None or len(covers) >= len(latest.value.get("covers") or []):
            # One batch (one transaction in the SQL stores), latest first: a store that applies
            # it op by op and dies in between leaves latest ahead of the versions, never behind.
            # The engine reads versions only, so it folds the archives again (next hook run or
            # resume) and writes both; latest behind a version would stay behind, no round
            # being left to write it.
            writes.insert(0, PutOp(ns, LATEST_KEY, value, index=False, ttl=None))
        store.batch(writes)

    # -- items moved out of the document by the size contract ------------------------------
    def put_moved(
        self, thread_id: str, key: str, items: Sequence[Mapping[str, str]], covers: Sequence[str]
    ) -> None:
        """Store the items the WM version ``key`` moved out of its document (size contract).

        Items already recorded under ``key`` stay: a late fold stores its version in the
        place of the version it builds on, and what that one moved out is kept (an item
        recorded twice, a round run again after a crash, is kept once)."""
        store, ns = self._io(thread_id), self.namespace(thread_id, "moved")
        old = store.get(ns, key)
        kept = [i for i in (old.value.get("items") or []) if isinstance(i, Mapping)] if old else []
        rows = [(str(i.get("section", "")), str(i.get("text", ""))) for i in kept]
        rows += [(str(i["section"]), str(i["text"])) for i in items]
        value = {
            "items": [{"section": s, "text": t} for s, t in dict.fromkeys(rows)],
            "covers": list(covers),
            "created_at": now_iso(),
        }
        store.put(ns, key, value, index=False, ttl=None)

    def moved_items(
        self, thread_id: str, keys: Sequence[str]
    ) -> list[tuple[str, list[dict[str, str]]]]:
        """The moved-out items recorded under ``keys`` (WM version keys), in that order.

        The thread's moved records are listed (a few: one per commit that moved items), not
        looked up one key per archive of the timeline: a search calls this every query.
        """
        if not keys:
            return []
        ns = self.namespace(thread_id, "moved")
        wanted = set(keys)
        io = self._io(thread_id)
        records: dict[str, Item] = {}
        seen = 0
        while page := io.search(ns, limit=_MOVED_PAGE, offset=seen):
            seen += len(page)
            records.update(
                (item.key, item)
                for item in page
                if item.key in wanted and tuple(item.namespace) == ns
            )
            if len(page) < _MOVED_PAGE:
                break
        out: list[tuple[str, list[dict[str, str]]]] = []
        for key in keys:
            item = records.get(key)
            if item is not None:
                items = [dict(i) for i in item.value.get("items") or [] if isinstance(i, Mapping)]
                out.append((key, items))
        return out

    # -- small bookkeeping values ---------------------------------------------------------------
    def get_meta(self, thread_id: str, key: str) -> dict[str, Any] | None:
        """A bookkeeping value ("timeline", "breaker", "state") or None."""
        item = self._io(thread_id).get(self.namespace(thread_id, "meta"), key)
        return dict(item.value) if item is not None else None

    def put_meta(self, thread_id: str, key: str, value: Mapping[str, Any]) -> None:
        """Write a bookkeeping value."""
        self._io(thread_id).put(
            self.namespace(thread_id, "meta"), key, dict(value), index=False, ttl=None
        )

    def delete_meta(self, thread_id: str, key: str) -> None:
        """Delete a bookkeeping value (nothing happens when there is none)."""
        self._io(thread_id).delete(self.namespace(thread_id, "meta"), key)

    def timeline(self, thread_id: str) -> list[str]:
        """The archive ids of the thread's most recently written timeline."""
        return self.timeline_pointer(thread_id)[0]

    def timeline_pointer(self, thread_id: str) -> tuple[list[str], bool | None]:
        """The thread's timeline pointer: its archive ids, and whether the hooks that wrote it
        ran under a checkpointer (None: not recorded, a pointer from before the flag)."""
        archives, checkpointed, _ = self.pointer_record(thread_id)
        return archives, checkpointed

    def pointer_record(self, thread_id: str) -> tuple[list[str], bool | None, bool | None]:
        """:meth:`timeline_pointer`, and whether the thread's checkpoints are kept beside the
        store (in its own database: ``storage.beside``; None: not recorded)."""
        value = self.get_meta(thread_id, "timeline") or {}
        flag = value.get("checkpointed")
        beside = value.get("beside_store")
        archives = [str(a) for a in value.get("archives") or []]
        return (
            archives,
            flag if isinstance(flag, bool) else None,
            beside if isinstance(beside, bool) else None,
        )

    def set_timeline(
        self,
        thread_id: str,
        archives: Sequence[str],
        *,
        checkpointed: bool | None = None,
        beside: bool | None = None,
    ) -> None:
        """Record the thread's current timeline (used by config-only calls) and, when given,
        whether the thread runs under a checkpointer (whose checkpoints then decide) and
        whether that checkpointer keeps them beside the store (``beside``)."""
        value: dict[str, Any] = {"archives": list(archives), "updated_at": now_iso()}
        if checkpointed is not None:
            value["checkpointed"] = checkpointed
        if beside is not None:
            value["beside_store"] = beside
        self.put_meta(thread_id, "timeline", value)

    def has_records(self, key: str) -> bool:
        """True when memory ``key`` has a timeline or any archive record in the store."""
        if self.timeline(key):
            return True
        return bool(self._io(key).search(self.namespace(key, "archives"), limit=1))


def _index_puts(
    namespace: tuple[str, ...],
    archive_id: str,
    ids: Sequence[str],
    signatures: Mapping[str, str],
    found: Sequence[Any],
) -> list[PutOp]:
    """The message-index writes that add ``archive_id`` to the entries ``found`` of ``ids``
    (an entry that already names it with a signature is left as it is)."""
    puts: list[PutOp] = []
    for message_id, item in zip(ids, found, strict=True):
        value = item.value if isinstance(item, Item) else {}
        known = [str(a) for a in value.get("archives") or []]
        signed = dict(value.get("signatures") or {})
        if archive_id not in known or archive_id not in signed:
            signed[archive_id] = signatures[message_id]
            archives = known if archive_id in known else [*known, archive_id]
            new = {"archives": archives, "signatures": signed}
            puts.append(PutOp(namespace, message_id, new, index=False, ttl=None))
    return puts
