"""Which archives a thread's reads see: checkpoint timelines, the store's pointer, deleted threads.

Config-only reads (``get_working_memory(config)``, ``list_archives(config)``, the archive tools,
``transcript(config)``, ``resume(config)``) have no state, only a config. The timeline that
counts is the one in the thread's checkpoint: a commit whose state update never reached the
checkpoint (the process died in between) must not show its archive, whose messages are still
live. So the session remembers the checkpointer a hook ran with (or is given one) and reads the
meta of the thread's latest checkpoint, or of the one the config names (``checkpoint_id``).

**Deleted means unreadable** (behaviour §6.8). A thread whose checkpoints the checkpointer
deleted (``delete_thread``) has no timeline: every read returns nothing of it, whether or not
``purge`` has removed its records yet. What counts as deleted:

- a checkpointer is known for the thread (the run's own, the one its hooks last ran with in this
  process, or the memory's ``checkpointer=``) and it holds no checkpoint of the thread's root
  graph: deleted. (A config naming a ``checkpoint_id`` that does not exist reads the thread as
  before while the thread has any checkpoint.)
- inside a run the thread exists whatever the checkpointer holds: before a run's first
  checkpoint (``durability="exit"``) the run's own state names its timeline;
- hooks driven without a graph have no checkpointer and nothing to delete but the records: the
  store's pointer is their timeline (recorded as not checkpointed), and only ``purge`` ends it;
- a memory that knows no checkpointer for a thread whose hooks ran under one (the pointer says
  so) reads the checkpoints kept beside its store (``storage.beside``: the checkpointer
  ``open_sqlite`` opened with the store, or the store's own SQLite file or PostgreSQL database):
  a checkpoint of the thread there is its timeline; none there is a deleted thread when the
  hooks recorded that the thread's checkpointer keeps them there. Where it still cannot tell a
  deleted thread from a live one and the thread has records, the read raises
  :class:`~wm_langgraph.errors.NoCheckpointerError` saying what to pass: never a silent empty
  answer for a thread that may be live (SPEC §11). A pointer written before the flag is read as
  before.

Without a known checkpointer (another process that has not run a hook of the thread yet) the
store's timeline pointer is used for threads driven without a graph; the hooks write it only with
what a checkpoint confirmed.
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.store.base import BaseStore

from wm_langgraph._compat import NS_SEP, in_graph_run, run_checkpointer, run_reader
from wm_langgraph.errors import NoCheckpointerError
from wm_langgraph.state import META_KEY
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.storage.beside import reads_as
from wm_langgraph.storage.keys import split_memory_key

__all__ = [
    "MAX_THREADS",
    "CheckpointTimelines",
    "Place",
    "TimelinePointer",
    "graph_checkpointer",
    "graph_meta",
    "thread_checkpointer",
]

MAX_THREADS = 10_000
"""Threads whose checkpointer, pointer or first sight a process remembers (the oldest go)."""

Place = tuple[int, str]
"""Where a memory lives: (id of its store, memory key). One memory instance may serve several
stores (tenants) whose threads share ids; what it remembers per thread it remembers per place."""


class Absent(enum.Enum):
    """What a checkpointer said when it gave no timeline."""

    THREAD = "the thread has no checkpoint"
    UNKNOWN = "no checkpointer could be read"


def graph_meta(config: RunnableConfig | None) -> Mapping[str, Any] | None:
    """Inside a graph run whose state has a ``working_memory`` channel: its value (``{}`` while
    the channel is empty: nothing of this lineage was accounted yet); else None.

    The hooks' own input schema adds the channel to every graph they are nodes of, so a state
    without the key still belongs to a lineage that keeps its meta in the checkpoint. Only a hook
    called from inside another node function of a graph without the channel gets None here (and
    keeps its meta in the store).
    """
    configurable = (config or {}).get("configurable") or {}
    read = run_reader(configurable)
    if read is None:
        return None
    try:
        values = read([META_KEY])
    except Exception:  # the graph has no such channel
        return None
    value = values.get(META_KEY) if isinstance(values, Mapping) else None
    if isinstance(value, Mapping):
        return value
    if NS_SEP in str(configurable.get("checkpoint_ns") or ""):
        # A subgraph's state may last one parent step only (no checkpointer of its own): an
        # empty channel there says nothing about the lineage; the store keeps the meta.
        return None
    return {}


def graph_checkpointer(config: RunnableConfig | None) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer of the root graph a hook runs in (None outside a graph, in a subgraph
    with a checkpoint namespace of its own, or without a checkpointer)."""
    configurable = (config or {}).get("configurable") or {}
    if NS_SEP in str(configurable.get("checkpoint_ns") or ""):
        return None  # a node of a subgraph: its checkpoints are not the thread's root ones
    return thread_checkpointer(config)


def thread_checkpointer(config: RunnableConfig | None) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer of the run ``config`` belongs to, a subgraph's node included (a subgraph
    without a checkpointer of its own keeps its checkpoints in its parent's, beside the thread's
    root ones); None outside a run or without a checkpointer."""
    saver = run_checkpointer((config or {}).get("configurable") or {})
    return saver if isinstance(saver, BaseCheckpointSaver) else None


def _state_values(found: CheckpointTuple | None) -> dict[str, Any] | None:
    """The messages and the meta of a checkpoint (None: no checkpoint)."""
    if found is None:
        return None
    values = found.checkpoint.get("channel_values") or {}
    raw = values.get("messages")
    messages = [m for m in raw if isinstance(m, BaseMessage)] if isinstance(raw, list) else []
    state: dict[str, Any] = {"messages": messages}
    meta = values.get(META_KEY)
    for _, channel, value in found.pending_writes or []:
        if channel == META_KEY:  # a finished hook's write, as in timeline()
            meta = value
    if isinstance(meta, Mapping):
        state[META_KEY] = meta
    return state


def _on_own_loop(saver: BaseCheckpointSaver[Any]) -> bool:
    """True when ``saver`` is an async saver (``AsyncSqliteSaver``, ``AsyncPostgresSaver``)
    whose event loop is running in this thread: its sync API would raise there (or block the
    loop it needs). From any other thread (the hooks' and the async reads' worker threads) the
    sync API hands the read to the saver's loop and works like a sync saver's."""
    loop = getattr(saver, "loop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop):
        return False
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _root(thread_id: str, checkpoint_id: object = None) -> RunnableConfig:
    """The config of the thread's root checkpoint (the latest, or ``checkpoint_id``)."""
    wanted: dict[str, Any] = {"thread_id": split_memory_key(thread_id)[0], "checkpoint_ns": ""}
    if checkpoint_id:
        wanted["checkpoint_id"] = checkpoint_id
    return {"configurable": wanted}


def _subgraph_key(thread_id: str) -> bool:
    """A memory key whose meta is not in the thread's root checkpoint (a subgraph's memory)."""
    return bool(split_memory_key(thread_id)[1].partition("|")[2])


class CheckpointTimelines:
    """Remembers checkpointers per thread (bounded) and reads timelines from checkpoints."""

    def __init__(
        self,
        default: BaseCheckpointSaver[Any] | None = None,
        place: Callable[[str], Place] | None = None,
        beside: Callable[[str], BaseCheckpointSaver[Any] | None] | None = None,
    ) -> None:
        """``default``: a checkpointer to use for threads no hook has run for yet; ``place``:
        a memory key's place in this context (default: the key alone); ``beside``: the
        checkpoints kept beside a memory key's store (``storage.beside``), if any."""
        self._default = default
        self._place: Callable[[str], Place] = place or (lambda key: (0, key))
        self._beside = beside or (lambda key: None)
        self._savers: OrderedDict[Place, BaseCheckpointSaver[Any]] = OrderedDict()
        # (run's saver, reader beside the store) -> (same checkpoints?, the two, kept alive)
        self._pairs: dict[tuple[int, int], tuple[bool, object, object]] = {}
        self._lock = threading.Lock()

    def use_default(self, saver: BaseCheckpointSaver[Any]) -> None:
        """Use ``saver`` for threads no hook has run for yet, unless one was given already."""
        with self._lock:
            if self._default is None:
                self._default = saver

    def remember(self, thread_id: str, config: RunnableConfig | None) -> None:
        """Note the checkpointer of the graph the hook runs in (a subgraph's node too: the
        thread's root checkpoints are there as well, which is what tells a deleted thread)."""
        saver = thread_checkpointer(config)
        if saver is None:
            return
        place = self._place(thread_id)
        with self._lock:
            self._savers[place] = saver
            self._savers.move_to_end(place)
            while len(self._savers) > MAX_THREADS:
                self._savers.popitem(last=False)

    def saver(self, thread_id: str) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer of the graph the thread's hooks last ran in, else the default."""
        with self._lock:
            return self._savers.get(self._place(thread_id), self._default)

    def _saver(
        self, thread_id: str, config: RunnableConfig | None
    ) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer to read ``thread_id``'s checkpoints with: the run's, else the one
        its hooks last ran with here, else the memory's own (None: none known)."""
        return thread_checkpointer(config) or self.saver(thread_id)

    def beside(self, thread_id: str) -> BaseCheckpointSaver[Any] | None:
        """The reader of the checkpoints kept beside ``thread_id``'s store (None: none)."""
        try:
            return self._beside(thread_id)
        except Exception:  # no store known: nothing beside it
            return None

    def reader(self, thread_id: str) -> BaseCheckpointSaver[Any] | None:
        """:meth:`saver`, else the checkpoints beside the store (what a report reads)."""
        return self.saver(thread_id) or self.beside(thread_id)

    def kept_beside(self, thread_id: str, config: RunnableConfig | None) -> bool | None:
        """Inside a run: does the run's checkpointer keep the thread's checkpoints beside the
        store (the reader there sees the same latest checkpoint)? None: cannot tell yet."""
        saver = thread_checkpointer(config)
        if saver is None:
            return None
        beside = self.beside(thread_id)
        if beside is None:
            return False
        pair = (id(saver), id(beside))
        with self._lock:
            known = self._pairs.get(pair)
        if known is not None:
            return known[0]
        if _on_own_loop(saver) or _on_own_loop(beside):
            return None
        same = reads_as(saver, beside, split_memory_key(thread_id)[0])
        if same is not None:
            with self._lock:
                if len(self._pairs) >= MAX_THREADS:
                    self._pairs.clear()
                self._pairs[pair] = (same, saver, beside)
        return same

    def state(self, thread_id: str, config: RunnableConfig | None) -> dict[str, Any] | None:
        """The live messages and the meta in the thread's checkpoint (as :meth:`timeline`
        finds it), or None when no checkpoint can be read."""
        return _state_values(self._tuple(thread_id, config))

    async def astate(self, thread_id: str, config: RunnableConfig | None) -> dict[str, Any] | None:
        """:meth:`state` through the saver's async API (async-only savers included)."""
        saver = self._saver(thread_id, config) or self.beside(thread_id)
        if saver is None or _subgraph_key(thread_id):
            return None
        wanted = _root(thread_id, ((config or {}).get("configurable") or {}).get("checkpoint_id"))
        try:
            found = await saver.aget_tuple(wanted)
        except NotImplementedError:
            found = self._tuple(thread_id, config)
        except Exception:  # a closed connection
            return None
        return _state_values(found)

    def _tuple(self, thread_id: str, config: RunnableConfig | None) -> CheckpointTuple | None:
        saver = self._saver(thread_id, config) or self.beside(thread_id)
        if saver is None or _subgraph_key(thread_id) or _on_own_loop(saver):
            return None  # an async saver's sync API cannot run on its own event loop
        wanted = _root(thread_id, ((config or {}).get("configurable") or {}).get("checkpoint_id"))
        try:
            return saver.get_tuple(wanted)
        except Exception:  # a closed connection, an async-only implementation
            return None

    def timeline(self, thread_id: str, config: RunnableConfig | None) -> list[str] | Absent | None:
        """The timeline in the thread's checkpoint (the config's ``checkpoint_id`` if it names
        one, else the latest). :attr:`Absent.THREAD` when the known checkpointer holds no
        checkpoint of the thread outside a run (deleted, or never checkpointed);
        :attr:`Absent.UNKNOWN` when no checkpointer is known or it cannot be read; None when the
        thread has a checkpoint that names no timeline (a subgraph's memory, a checkpoint
        before any accounting). Inside a run the run's own checkpointer is read, and a run
        without a checkpoint yet gives its state's timeline."""
        return self._timeline_in(self._saver(thread_id, config), thread_id, config)

    def timeline_beside(
        self, thread_id: str, config: RunnableConfig | None
    ) -> list[str] | Absent | None:
        """:meth:`timeline` as the checkpoints beside the store give it (:attr:`Absent.UNKNOWN`
        when there are none): for a thread whose checkpointer the memory does not know."""
        return self._timeline_in(self.beside(thread_id), thread_id, config)

    def unreadable_saver(self, thread_id: str, config: RunnableConfig | None) -> bool:
        """True when a checkpointer is known but its sync API cannot be used here (an async
        saver on its own event loop)."""
        saver = self._saver(thread_id, config)
        return saver is not None and _on_own_loop(saver)

    def _timeline_in(
        self,
        saver: BaseCheckpointSaver[Any] | None,
        thread_id: str,
        config: RunnableConfig | None,
    ) -> list[str] | Absent | None:
        if saver is None or _on_own_loop(saver):
            return Absent.UNKNOWN  # an async saver's sync API cannot run on its own event loop
        configurable = (config or {}).get("configurable") or {}
        named = configurable.get("checkpoint_id") if not _subgraph_key(thread_id) else None
        try:
            found = saver.get_tuple(_root(thread_id, named))
            if found is None and named:  # no such checkpoint: is there any of the thread?
                return None if saver.get_tuple(_root(thread_id)) is not None else Absent.THREAD
        except Exception:  # a closed connection, an async-only implementation
            return Absent.UNKNOWN
        if found is None:
            if in_graph_run(configurable):  # the run is the thread: before its first checkpoint
                meta = graph_meta(config)
                return _archives_of(meta) if meta is not None else None
            return Absent.THREAD
        if _subgraph_key(thread_id):
            return None  # a subgraph memory's meta is not in the root checkpoint
        meta = (found.checkpoint.get("channel_values") or {}).get(META_KEY)
        for _, channel, value in [] if named else found.pending_writes or []:
            # A hook's task that finished is durable once its writes are saved, even if the
            # next checkpoint never was: the graph applies them when it resumes. (A checkpoint
            # named by id is read as it is: its pending writes belong to the step after it.)
            if channel == META_KEY:
                meta = value
        if not isinstance(meta, Mapping):
            # A named checkpoint from before any accounting has no archives yet.
            return [] if named else None
        return _archives_of(meta)


def _archives_of(meta: Mapping[str, Any]) -> list[str]:
    return [str(a) for a in meta.get("archives") or [] if isinstance(a, str)]


class TimelinePointer:
    """The store's per-thread timeline pointer, as config-only reads without a checkpointer see
    it, and the reads that prefer the checkpoint (and read nothing of a deleted thread)."""

    def __init__(self, archives: ArchiveStore, checkpoints: CheckpointTimelines) -> None:
        """Write through ``archives``; read checkpoints through ``checkpoints``."""
        self._archives = archives
        self._checkpoints = checkpoints
        self._written: dict[Place, tuple[list[str], bool | None, bool | None]] = {}
        # pointers behind a commit not checkpointed yet, with the store that holds them
        self._behind: dict[Place, tuple[str, BaseStore]] = {}
        self._lock = threading.Lock()

    def write(
        self,
        thread_id: str,
        timeline: list[str],
        *,
        behind: bool,
        checkpointed: bool,
        beside: bool | None = None,
    ) -> None:
        """Point the store at ``timeline`` (``behind``: a newer, unconfirmed one exists;
        ``checkpointed``: the hooks ran under a checkpointer, whose checkpoints decide;
        ``beside``: that checkpointer keeps them beside the store, None: as recorded)."""
        store = self._archives.store_for(thread_id)
        place = (id(store), thread_id)
        with self._lock:
            known = self._written.get(place)
        if known is None:
            known = self._archives.pointer_record(thread_id)
        if beside is None or not checkpointed:
            beside = known[2] if checkpointed else None
        wanted = (list(timeline), checkpointed, beside)
        if known != wanted:
            self._archives.set_timeline(
                thread_id, timeline, checkpointed=checkpointed, beside=beside
            )
        with self._lock:
            if len(self._written) >= MAX_THREADS and place not in self._written:
                self._written.pop(next(iter(self._written)))
            self._written[place] = wanted
            if behind:
                self._behind[place] = (thread_id, store)
            else:
                self._behind.pop(place, None)

    def forget(self, place: Place) -> None:
        """Forget the pointer written for ``place`` (its records were deleted)."""
        with self._lock:
            self._written.pop(place, None)
            self._behind.pop(place, None)

    def read(self, thread_id: str, config: RunnableConfig | None) -> list[str]:
        """The checkpoint's timeline when readable (the latest one then also confirms the
        pointer: it is durable); nothing of a deleted thread (module docstring); else the
        pointer.

        Raises:
            NoCheckpointerError: The thread has records, its hooks ran under a checkpointer
                this memory cannot read, and nothing tells a live thread from a deleted one.
        """
        found = self._checkpoints.timeline(thread_id, config)
        if isinstance(found, list):
            if not ((config or {}).get("configurable") or {}).get("checkpoint_id"):
                self.write(thread_id, found, behind=False, checkpointed=True)
            return found
        pointer, checkpointed, beside = self._archives.pointer_record(thread_id)
        if found is None or checkpointed is False:
            return pointer  # a live thread whose checkpoint names no timeline; hooks by hand
        if found is Absent.UNKNOWN and checkpointed is None:
            return pointer  # a pointer from before the rule: read as it was
        if found is Absent.THREAD:
            return []  # the thread's checkpointer holds none of it: deleted
        seen = self._checkpoints.timeline_beside(thread_id, config)
        if isinstance(seen, list):
            return seen
        if seen is None:
            return pointer  # a checkpoint of the thread beside the store, naming no timeline
        if seen is Absent.THREAD and beside:
            return []  # where the thread's checkpointer keeps them, none is left: deleted
        if not self._archives.has_records(thread_id):
            return []  # nothing to read, deleted or not
        raise NoCheckpointerError(self._cannot_tell(thread_id, config))

    def _cannot_tell(self, thread_id: str, config: RunnableConfig | None) -> str:
        thread = split_memory_key(thread_id)[0]
        if self._checkpoints.unreadable_saver(thread_id, config):
            return (
                f"thread {thread!r}: the memory's checkpointer is async and this sync read runs "
                "on its own event loop, where its sync API cannot be used, so the read cannot "
                "tell a live thread from a deleted one. Use the async reads: await "
                "memory.aget_working_memory(config), alist_archives, atranscript, areport"
            )
        return (
            f"thread {thread!r} has Working Memory records written under a checkpointer this "
            "memory does not know, so it cannot tell a live thread from a deleted one (a "
            "deleted thread reads as nothing). Pass the graph's checkpointer: "
            "WorkingMemory(..., checkpointer=checkpointer) or "
            "WorkingMemoryMiddleware(..., checkpointer=checkpointer), or call "
            "memory.use_checkpointer(checkpointer) before reading (create_agent(..., "
            "checkpointer=...) tells the middleware when it builds the agent; a store from "
            "open_sqlite, or a SqliteStore / PostgresStore in the checkpointer's own database, "
            "finds the checkpoints itself)"
        )

    def confirm_all(self) -> None:
        """Bring the pointer of every thread that is behind up to its latest checkpoint."""
        with self._lock:
            threads = list(self._behind.values())
        for thread_id, store in threads:
            with self._archives.using(store):
                found = self._checkpoints.timeline(thread_id, None)
                if isinstance(found, list):
                    self.write(thread_id, found, behind=False, checkpointed=True)
