"""Where config-only reads find a thread's timeline: the thread's checkpoint, when known.

``get_working_memory(config)``, ``list_archives(config)`` and ``resume(config)`` have no state,
only a config. The timeline that counts is the one in the thread's checkpoint (the meta is a
channel of every graph the hooks are nodes of): a commit whose state update never reached the
checkpoint (the process died in between) must not show its archive, whose messages are still
live. So the engine remembers the checkpointer a hook ran with (or is given one) and reads the
meta of the thread's latest checkpoint, or of the one the config names (``checkpoint_id``).

Without a known checkpointer (another process that has not run a hook of the thread yet) the
store's timeline pointer is used, which the hooks write only with what a checkpoint confirmed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from wm_langgraph.state import META_KEY
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.storage.keys import split_memory_key

__all__ = [
    "CheckpointTimelines",
    "TimelinePointer",
    "graph_checkpointer",
    "graph_meta",
    "require_checkpointer",
]

_TASK_ID_KEY = "__pregel_task_id"
_CHECKPOINTER_KEY = "__pregel_checkpointer"
_READ_KEY = "__pregel_read"
_MAX_THREADS = 10_000


def graph_meta(config: RunnableConfig | None) -> Mapping[str, Any] | None:
    """Inside a graph run whose state has a ``working_memory`` channel: its value (``{}`` while
    the channel is empty: nothing of this lineage was accounted yet); else None.

    The hooks' own input schema adds the channel to every graph they are nodes of, so a state
    without the key still belongs to a lineage that keeps its meta in the checkpoint. Only a hook
    called from inside another node function of a graph without the channel gets None here (and
    keeps its meta in the store).
    """
    configurable = (config or {}).get("configurable") or {}
    read = configurable.get(_READ_KEY)
    if not callable(read):
        return None
    try:
        values = read([META_KEY])
    except Exception:  # the graph has no such channel
        return None
    value = values.get(META_KEY) if isinstance(values, Mapping) else None
    if isinstance(value, Mapping):
        return value
    if "|" in str(configurable.get("checkpoint_ns") or ""):
        # A subgraph's state may last one parent step only (no checkpointer of its own): an
        # empty channel there says nothing about the lineage; the store keeps the meta.
        return None
    return {}


def require_checkpointer(config: RunnableConfig | None) -> None:
    """Inside a graph run, the graph must persist its state between invocations."""
    configurable = (config or {}).get("configurable") or {}
    if _TASK_ID_KEY in configurable and configurable.get(_CHECKPOINTER_KEY) is None:
        raise ValueError(
            "Working Memory hooks need a checkpointer: compile the graph (or create_react_agent) "
            "with checkpointer=... (e.g. InMemorySaver() or open_sqlite(path)), otherwise the "
            "archived messages would come back on the next invocation"
        )


def graph_checkpointer(config: RunnableConfig | None) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer of the root graph a hook runs in (None outside a graph, in a subgraph
    with a checkpoint namespace of its own, or without a checkpointer)."""
    configurable = (config or {}).get("configurable") or {}
    saver = configurable.get(_CHECKPOINTER_KEY)
    if not isinstance(saver, BaseCheckpointSaver):
        return None
    namespace = str(configurable.get("checkpoint_ns") or "")
    if "|" in namespace:  # a node of a subgraph: its checkpoints are not the thread's root ones
        return None
    return saver


class CheckpointTimelines:
    """Remembers checkpointers per thread (bounded) and reads timelines from checkpoints."""

    def __init__(self, default: BaseCheckpointSaver[Any] | None = None) -> None:
        """``default``: a checkpointer to use for threads no hook has run for yet."""
        self._default = default
        self._savers: OrderedDict[str, BaseCheckpointSaver[Any]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, thread_id: str, config: RunnableConfig | None) -> None:
        """Note the checkpointer of the graph the hook runs in."""
        saver = graph_checkpointer(config)
        if saver is None:
            return
        with self._lock:
            self._savers[thread_id] = saver
            self._savers.move_to_end(thread_id)
            while len(self._savers) > _MAX_THREADS:
                self._savers.popitem(last=False)

    def timeline(self, thread_id: str, config: RunnableConfig | None) -> list[str] | None:
        """The timeline in the thread's checkpoint (the config's ``checkpoint_id`` if it names
        one, else the latest), or None when no checkpoint with a meta can be read."""
        with self._lock:
            saver = self._savers.get(thread_id, self._default)
        if saver is None or type(saver).__name__.startswith("Async"):
            return None  # an async-only saver cannot be read from sync code safely
        # A memory key names a thread and, for a named memory, its scope ("name|graph ns"):
        # a top-level memory's meta is in the thread's root checkpoint, a subgraph's is not.
        root_thread, scope = split_memory_key(thread_id)
        if scope.partition("|")[2]:
            return None
        configurable = (config or {}).get("configurable") or {}
        wanted: dict[str, Any] = {"thread_id": root_thread, "checkpoint_ns": ""}
        if configurable.get("checkpoint_id"):
            wanted["checkpoint_id"] = configurable["checkpoint_id"]
        try:
            found = saver.get_tuple({"configurable": wanted})
        except Exception:  # a closed connection, an async-only implementation: fall back
            return None
        if found is None:
            return None
        meta = (found.checkpoint.get("channel_values") or {}).get(META_KEY)
        for _, channel, value in found.pending_writes or []:
            # A hook's task that finished is durable once its writes are saved, even if the
            # next checkpoint never was: the graph applies them when it resumes.
            if channel == META_KEY:
                meta = value
        if not isinstance(meta, Mapping):
            return None
        return [str(a) for a in meta.get("archives") or [] if isinstance(a, str)]


class TimelinePointer:
    """The store's per-thread timeline pointer, as config-only reads without a checkpointer see
    it, and the reads that prefer the checkpoint."""

    def __init__(self, archives: ArchiveStore, checkpoints: CheckpointTimelines) -> None:
        """Write through ``archives``; read checkpoints through ``checkpoints``."""
        self._archives = archives
        self._checkpoints = checkpoints
        self._written: dict[str, list[str]] = {}
        self._behind: set[str] = set()  # pointer behind a commit not checkpointed yet
        self._lock = threading.Lock()

    def write(self, thread_id: str, timeline: list[str], *, behind: bool) -> None:
        """Point the store at ``timeline`` (``behind``: a newer, unconfirmed one exists)."""
        with self._lock:
            known = self._written.get(thread_id)
        if known is None:
            known = self._archives.timeline(thread_id)
        if known != timeline:
            self._archives.set_timeline(thread_id, timeline)
        with self._lock:
            self._written[thread_id] = list(timeline)
            if behind:
                self._behind.add(thread_id)
            else:
                self._behind.discard(thread_id)

    def read(self, thread_id: str, config: RunnableConfig | None) -> list[str]:
        """The checkpoint's timeline when readable (the latest one then also confirms the
        pointer: it is durable), else the pointer."""
        found = self._checkpoints.timeline(thread_id, config)
        if found is None:
            return self._archives.timeline(thread_id)
        if not ((config or {}).get("configurable") or {}).get("checkpoint_id"):
            self.write(thread_id, found, behind=False)
        return found

    def confirm_all(self) -> None:
        """Bring the pointer of every thread that is behind up to its latest checkpoint."""
        with self._lock:
            threads = list(self._behind)
        for thread_id in threads:
            found = self._checkpoints.timeline(thread_id, None)
            if found is not None:
                self.write(thread_id, found, behind=False)
