"""Archive records and Working Memory versions over a LangGraph ``BaseStore`` (design §2.2-§2.3).

Layout, per memory (``label`` is the thread id made safe for store namespaces)::

    ("wm_langgraph", label, "archives")  archive_001, archive_002, ...  messages verbatim
    ("wm_langgraph", label, "wm")        <last covered archive id>       a WM + its coverage
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

Records are immutable once written. A record's identity is its place in a lineage (``prev``, the
archive before it on its timeline) and a digest of its messages (every field, verbatim). An id
is never reused for other content: a fork that archives different messages (an edited one, other
turns) at a number another branch already used gets a suffix (``archive_003_2``); a branch that
archives exactly the same messages after the same archive shares the record (and its WM
versions, whose coverage is then the same lineage).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

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

__all__ = [
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


def digest_of(messages: Sequence[BaseMessage]) -> str:
    """A digest of messages as a record stores them (every field, in order)."""
    plain = _json_plain(messages_to_dict(list(messages)))
    text = json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_IMMUTABLE = frozenset({"id", "seq", "messages", "message_count", "prev", "digest", "thread_id"})


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
        abstract: A one-line description.
        overview: The Working Memory after this archive was folded in ("" until done).
        metadata: Timings, guard decisions, errors.
        prev: The archive before this one on its timeline (None for the first).
        digest: :func:`digest_of` the messages ("" for records of older versions).
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
        )


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
_MAX_BOUND = 4096


class ArchiveStore:
    """Archive records, WM versions and per-memory bookkeeping over a ``BaseStore``.

    With an explicit store every memory key uses it. Without one, the hooks :meth:`bind` each
    key to the graph's store as they run, and background work for the key uses that store;
    keys never bound (a config-only call) use the store bound last.
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
        """The explicit store, else the graph store bound last.

        Raises:
            NoStoreError: Neither exists.
        """
        found = self._explicit if self._explicit is not None else self._last
        if found is None:
            raise NoStoreError(_NO_STORE)
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

    def bound_stores(self) -> list[BaseStore]:
        """The distinct graph stores keys are bound to."""
        found: list[BaseStore] = []
        for store in [*self._bound.values(), self._last]:
            if store is not None and all(store is not s for s in found):
                found.append(store)
        return found

    def store_for(self, key: str) -> BaseStore:
        """The store that holds ``key``'s memory."""
        if self._explicit is not None:
            return self._explicit
        return self._bound.get(key) or self.store

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
        store = self.store_for(key)
        if store.get(namespace(key, "archives"), timeline[0]) is not None:
            return 0
        legacy = memory_key(thread_id)
        copied = 0
        for archive_id in timeline:
            item = store.get(namespace(legacy, "archives"), archive_id)
            if item is None:
                continue
            store.put(namespace(key, "archives"), archive_id, item.value, index=False)
            copied += 1
            wm = store.get(namespace(legacy, "wm"), archive_id)
            covers = [str(x) for x in (wm.value.get("covers") or [])] if wm else []
            if wm is not None and covers == list(timeline[: len(covers)]):
                store.put(namespace(key, "wm"), archive_id, wm.value, index=False)
                copied += 1
        if copied:
            self.set_timeline(key, timeline)
        return copied

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
        store = self.store_for(thread_id)
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
        store = self.store_for(record.thread_id)
        existing = store.get(ns, record.id)
        if existing is not None:
            if record.digest and existing.value.get("digest") == record.digest:
                return  # the very same archive, written before: nothing to do
            raise ValueError(
                f"archive {record.id} exists with other content; records are immutable"
            )
        store.put(ns, record.id, value, index=False)

    def get_archives(self, thread_id: str, ids: Sequence[str]) -> list[ArchiveRecord]:
        """The records of ``ids`` in that order (missing ones are skipped)."""
        if not ids:
            return []
        ns = self.namespace(thread_id, "archives")
        items = self.store_for(thread_id).batch([GetOp(ns, archive_id) for archive_id in ids])
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
            item = self.store_for(thread_id).get(ns, ids[index])
            if item is None:
                continue
            total += max(0, int(item.value.get("token_count", 0) or 0))
            out.append(ArchiveRecord.from_value(item.value))
        return out[::-1], True

    def update_archives(self, thread_id: str, ids: Sequence[str], **changes: Any) -> None:
        """Set fields on stored records (``metadata`` is merged, ``updated_at`` refreshed).

        Only the bookkeeping fields change (status, overview, metadata, abstract): the messages
        and the record's identity are immutable.

        Raises:
            ValueError: ``changes`` names an immutable field.
        """
        frozen = sorted(_IMMUTABLE.intersection(changes))
        if frozen:
            raise ValueError(f"archive fields {frozen} are immutable")
        ns = self.namespace(thread_id, "archives")
        store = self.store_for(thread_id)
        for archive_id in ids:
            item = store.get(ns, archive_id)
            if item is None:
                continue
            value = dict(item.value)
            for key, new in changes.items():
                if key == "metadata":
                    value["metadata"] = {**(value.get("metadata") or {}), **new}
                else:
                    value[key] = new
            value["updated_at"] = now_iso()
            store.put(ns, archive_id, value, index=False)

    # -- message id index ------------------------------------------------------------------
    def index_messages(self, thread_id: str, archive_id: str, message_ids: Sequence[str]) -> None:
        """Record that the messages ``message_ids`` are archived in ``archive_id``.

        A message id can be in several archives only across forks (each branch archives its own
        copy); the index keeps all of them, so a lookup can ask about one timeline.
        """
        ids = list(dict.fromkeys(str(i) for i in message_ids))
        if not ids:
            return
        ns = self.namespace(thread_id, "ids")
        store = self.store_for(thread_id)
        found = store.batch([GetOp(ns, i) for i in ids])
        puts: list[PutOp] = []
        for message_id, item in zip(ids, found, strict=True):
            value = item.value if isinstance(item, Item) else {}
            known = [str(a) for a in value.get("archives") or []]
            if archive_id not in known:
                puts.append(PutOp(ns, message_id, {"archives": [*known, archive_id]}, index=False))
        if puts:
            store.batch(puts)

    def archived_among(
        self, thread_id: str, message_ids: Sequence[str], timeline: Sequence[str]
    ) -> set[str]:
        """The ids among ``message_ids`` that an archive of ``timeline`` already holds."""
        ids = list(dict.fromkeys(str(i) for i in message_ids))
        if not ids or not timeline:
            return set()
        on_timeline = set(timeline)
        ns = self.namespace(thread_id, "ids")
        found = self.store_for(thread_id).batch([GetOp(ns, i) for i in ids])
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
        store = self.store_for(thread_id)
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
        self.store_for(thread_id).put(
            self.namespace(thread_id, "wm"), covers[-1], value, index=False
        )

    # -- items moved out of the document by the size contract ------------------------------
    def put_moved(
        self, thread_id: str, key: str, items: Sequence[Mapping[str, str]], covers: Sequence[str]
    ) -> None:
        """Store the items the WM version ``key`` moved out of its document (size contract)."""
        value = {
            "items": [{"section": str(i["section"]), "text": str(i["text"])} for i in items],
            "covers": list(covers),
            "created_at": now_iso(),
        }
        self.store_for(thread_id).put(self.namespace(thread_id, "moved"), key, value, index=False)

    def moved_items(
        self, thread_id: str, keys: Sequence[str]
    ) -> list[tuple[str, list[dict[str, str]]]]:
        """The moved-out items recorded under ``keys`` (WM version keys), in that order."""
        if not keys:
            return []
        ns = self.namespace(thread_id, "moved")
        found = self.store_for(thread_id).batch([GetOp(ns, key) for key in keys])
        out: list[tuple[str, list[dict[str, str]]]] = []
        for key, item in zip(keys, found, strict=True):
            if isinstance(item, Item):
                items = [dict(i) for i in item.value.get("items") or [] if isinstance(i, Mapping)]
                out.append((key, items))
        return out

    # -- small bookkeeping values ---------------------------------------------------------------
    def get_meta(self, thread_id: str, key: str) -> dict[str, Any] | None:
        """A bookkeeping value ("timeline", "breaker", "state") or None."""
        item = self.store_for(thread_id).get(self.namespace(thread_id, "meta"), key)
        return dict(item.value) if item is not None else None

    def put_meta(self, thread_id: str, key: str, value: Mapping[str, Any]) -> None:
        """Write a bookkeeping value."""
        self.store_for(thread_id).put(
            self.namespace(thread_id, "meta"), key, dict(value), index=False
        )

    def timeline(self, thread_id: str) -> list[str]:
        """The archive ids of the thread's most recently written timeline."""
        value = self.get_meta(thread_id, "timeline") or {}
        return [str(a) for a in value.get("archives") or []]

    def set_timeline(self, thread_id: str, archives: Sequence[str]) -> None:
        """Record the thread's current timeline (used by config-only calls)."""
        self.put_meta(thread_id, "timeline", {"archives": list(archives), "updated_at": now_iso()})
