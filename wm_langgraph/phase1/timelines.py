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
  so) cannot tell a deleted thread from a live one: it reads nothing of it and says once at
  WARNING how to read it (give the memory ``checkpointer=``). A pointer written before this rule
  (no such flag) is read as before.

Without a known checkpointer (another process that has not run a hook of the thread yet) the
store's timeline pointer is used for threads driven without a graph; the hooks write it only with
what a checkpoint confirmed.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.store.base import BaseStore

from wm_langgraph._compat import NS_SEP, in_graph_run, run_checkpointer, run_reader
from wm_langgraph.state import META_KEY
from wm_langgraph.storage.archives import ArchiveStore
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

logger = logging.getLogger("wm_langgraph")

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
    ) -> None:
        """``default``: a checkpointer to use for threads no hook has run for yet; ``place``:
        a memory key's place in this context (default: the key alone)."""
        self._default = default
        self._place: Callable[[str], Place] = place or (lambda key: (0, key))
        self._savers: OrderedDict[Place, BaseCheckpointSaver[Any]] = OrderedDict()
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

    def state(self, thread_id: str, config: RunnableConfig | None) -> dict[str, Any] | None:
        """The live messages and the meta in the thread's checkpoint (as :meth:`timeline`
        finds it), or None when no checkpoint can be read."""
        return _state_values(self._tuple(thread_id, config))

    async def astate(self, thread_id: str, config: RunnableConfig | None) -> dict[str, Any] | None:
        """:meth:`state` through the saver's async API (async-only savers included)."""
        saver = self._saver(thread_id, config)
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
        saver = self._saver(thread_id, config)
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
        saver = self._saver(thread_id, config)
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
        self._written: dict[Place, tuple[list[str], bool | None]] = {}
        # pointers behind a commit not checkpointed yet, with the store that holds them
        self._behind: dict[Place, tuple[str, BaseStore]] = {}
        self._warned = False
        self._lock = threading.Lock()

    def write(
        self, thread_id: str, timeline: list[str], *, behind: bool, checkpointed: bool
    ) -> None:
        """Point the store at ``timeline`` (``behind``: a newer, unconfirmed one exists;
        ``checkpointed``: the hooks ran under a checkpointer, whose checkpoints decide)."""
        store = self._archives.store_for(thread_id)
        place = (id(store), thread_id)
        with self._lock:
            known = self._written.get(place)
        if known is None:
            known = self._archives.timeline_pointer(thread_id)
        if known != (timeline, checkpointed):
            self._archives.set_timeline(thread_id, timeline, checkpointed=checkpointed)
        with self._lock:
            if len(self._written) >= MAX_THREADS and place not in self._written:
                self._written.pop(next(iter(self._written)))
            self._written[place] = (list(timeline), checkpointed)
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
        pointer."""
        found = self._checkpoints.timeline(thread_id, config)
        if isinstance(found, list):
            if not ((config or {}).get("configurable") or {}).get("checkpoint_id"):
                self.write(thread_id, found, behind=False, checkpointed=True)
            return found
        pointer, checkpointed = self._archives.timeline_pointer(thread_id)
        if found is None or checkpointed is False:
            return pointer  # a live thread whose checkpoint names no timeline; hooks by hand
        if found is Absent.UNKNOWN and checkpointed is None:
            return pointer  # a pointer from before the rule: read as it was
        if found is Absent.UNKNOWN and pointer:
            self._warn_unknown()
        return []

    def _warn_unknown(self) -> None:
        with self._lock:
            warned, self._warned = self._warned, True
        if not warned:
            logger.warning(
                "wm_langgraph: a thread's timeline is kept in its checkpoints, and this memory "
                "knows no checkpointer to read them with (no hook of the thread ran in this "
                "process, or the async checkpointer's sync API was called on its own event "
                "loop): it reads nothing of the thread, which may have been deleted. Pass "
                "checkpointer=... to WorkingMemory / WorkingMemoryMiddleware, or use the async "
                "reads (aget_working_memory, alist_archives, atranscript)"
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
