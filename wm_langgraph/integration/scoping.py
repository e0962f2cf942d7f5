"""Which memory a call addresses, with which store, and its records: helper of ``memory.py``.

A :class:`Scoper` turns a run's config into the memory key (thread id, the memory's name, the
graph namespace), binds that key to the graph's store, adopts the key's records from the old
store layout on first sight, and wraps the engine's hook functions so that each one sees the
memory key as ``configurable.thread_id``, runs with callbacks that reach tracers but no user
stream, fails at once beside another summariser, and leaves no message in the user's streams.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig

from wm_langgraph.integration.binding import (
    graph_store,
    in_run,
    internal_callbacks,
    loop_bound,
    quiet_node_output,
    reject_foreign_summaries,
)
from wm_langgraph.integration.hooks import HookFn
from wm_langgraph.phase1.session import Session
from wm_langgraph.phase2.graph import unfolded_archive_ids
from wm_langgraph.storage.archives import (
    ArchiveRecord,
    ArchiveStatus,
    ArchiveStore,
    graph_namespace,
    memory_key,
    memory_scope,
    split_memory_key,
    thread_id_from_config,
)

__all__ = ["MemoryScope", "Scoper", "check_name"]

_MAX_CHECKED = 256  # memory keys whose last checked messages are remembered

MemoryScope = Literal["graph", "thread"]
"""``"graph"``: one memory per thread, name and graph namespace (each subgraph agent has its
own); ``"thread"``: one per thread and name, shared by every graph that uses that name."""


def check_name(name: object) -> str:
    """A memory name as stored ("" for the default), validated.

    Raises:
        TypeError: Not a str or None.
        ValueError: Empty, or with ``|`` / ``:`` (LangGraph's namespace separators).
    """
    if name is None:
        return ""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {type(name).__name__}")
    if not name.strip() or any(c in name for c in "|:\x1f"):
        raise ValueError(f"name must be non-empty, without '|' or ':', got {name!r}")
    return name


class Scoper:
    """Memory keys, store binding and hook wrapping for one ``WorkingMemory``."""

    def __init__(
        self, archives: ArchiveStore, session: Session, *, name: str, scope: MemoryScope
    ) -> None:
        """Bind the helper to the memory's archive store and session logic."""
        self._archives = archives
        self._session = session
        self._name = name
        self._scope: MemoryScope = scope
        self._adopted: set[tuple[str, int]] = set()
        self._checked: OrderedDict[str, list[Any]] = OrderedDict()

    def key(self, config: RunnableConfig | None) -> str:
        """The memory key a config addresses (see ``WorkingMemory.memory_key``)."""
        thread_id = thread_id_from_config(config)
        configurable = (config or {}).get("configurable") or {}
        graph_ns = graph_namespace(configurable) if self._scope == "graph" else ""
        return memory_key(thread_id, memory_scope(self._name, graph_ns))

    def enter(self, config: RunnableConfig | None, state: Mapping[str, Any] | None) -> str:
        """Resolve the memory key of a hook call and bind it to the graph's store.

        Use it inside :meth:`serving` (the hooks do), so that what follows reads and writes the
        store of this run, not of another run of the same thread id.

        Raises:
            NoStoreError: A run without any store, or a hand-driven call with none known.
        """
        key = self.key(config)
        configurable = (config or {}).get("configurable") or {}
        found = graph_store(configurable)
        if found is not None or in_run(configurable):
            store = self._archives.bind(key, found)  # NoStoreError inside a run without store
        else:
            store = self._archives.store_for(key)  # a hand-driven call: the known store, or raises
        adopted = (key, id(store))
        if adopted not in self._adopted:
            self._adopted.add(adopted)
            if state is not None and split_memory_key(key)[1]:
                with self._archives.using(store):
                    self._archives.adopt_legacy(key, self._session.timeline_of(state, key))
        return key

    @contextlib.contextmanager
    def serving(self, config: RunnableConfig | None) -> Iterator[None]:
        """Within the block, the memory uses the store of the run ``config`` belongs to (and
        the Phase 2 work scheduled there carries it); outside a run nothing changes."""
        found = graph_store((config or {}).get("configurable") or {})
        with self._archives.using(found):
            yield

    def bind_for_read(self, key: str, config: RunnableConfig | None) -> None:
        """Bind ``key`` to the run's store when a config-only call happens inside a run."""
        found = graph_store((config or {}).get("configurable") or {})
        if found is not None:
            self._archives.bind(key, found)

    def readable(self, config: RunnableConfig | None) -> str:
        """The key of a config-only call, checked against a deadlock on the event loop.

        Raises:
            RuntimeError: The key's store is an async store bound to the running loop.
        """
        key = self.key(config)
        self.bind_for_read(key, config)
        if loop_bound(self._archives.store_for(key)):
            raise RuntimeError(
                "this store's sync API cannot be used on its own event loop: use "
                "await memory.aget_working_memory(config) / await memory.alist_archives(config)"
            )
        return key

    def loop_bound_work(self, key: str | None) -> bool:
        """True when waiting for ``key``'s (or any) Phase 2 here would block its store's loop."""
        if key is not None:
            return loop_bound(self._archives.store_for(key))
        stores = [self._archives.explicit, *self._archives.bound_stores()]
        return any(loop_bound(s) for s in stores if s is not None)

    def working_memory(self, key: str, config: RunnableConfig | None = None) -> str:
        """The current WM text of ``key``'s timeline ("" while there is none): the one of the
        config's checkpoint (its ``checkpoint_id``, else the latest) where the checkpointer is
        known."""
        timeline = self._session.timeline_for_thread(key, config)
        current = self._archives.current_wm(key, timeline)
        return current.text if current else ""

    def archives(self, key: str, config: RunnableConfig | None = None) -> list[ArchiveRecord]:
        """``key``'s archives in order, ``status`` "done" once a WM covers them (the timeline as
        for :meth:`working_memory`)."""
        timeline = self._session.timeline_for_thread(key, config)
        current = self._archives.current_wm(key, timeline)
        covered = set(timeline) - set(unfolded_archive_ids(current, timeline))
        records = []
        for record in self._archives.get_archives(key, timeline):
            status: ArchiveStatus = "done" if record.id in covered else "pending"
            if status == "pending" and record.status == "failed":
                status = "failed"
            records.append(record if record.status == status else replace(record, status=status))
        return records

    def engine_config(self, key: str, config: RunnableConfig | None) -> RunnableConfig:
        """The config the engine below sees: the memory key as thread id, quiet callbacks."""
        given: RunnableConfig = config or {}
        thread_id, scope = split_memory_key(key)
        engine: RunnableConfig = {
            **given,
            "configurable": {**(given.get("configurable") or {}), "thread_id": key},
        }
        callbacks = internal_callbacks(given.get("callbacks"), thread_id=thread_id, scope=scope)
        if callbacks is not None:
            engine["callbacks"] = callbacks
        else:
            engine.pop("callbacks", None)
        return engine

    def _reject_foreign_summaries(self, key: str, messages: Any) -> None:
        """:func:`reject_foreign_summaries` on the messages not checked by the key's previous
        hook call: when that call's messages are the head of these (compared as a list: the
        same objects compare at once), only the messages after them are looked at."""
        if not isinstance(messages, list):
            reject_foreign_summaries(messages)
            return
        before = self._checked.get(key)
        n = len(before) if before is not None else 0
        # Only one copy of the list is made (none when nothing is new): the head compared is
        # the copy kept, once the new messages are added to it.
        head = messages if n == len(messages) else messages[:n]
        if before is not None and 0 < n <= len(messages) and head == before:
            if head is messages:  # nothing new: all checked already
                self._checked.move_to_end(key)
                return
            tail = messages[n:]
            reject_foreign_summaries(tail)
            head.extend(tail)
            checked = head
        else:
            reject_foreign_summaries(messages)
            checked = list(messages)
        self._checked[key] = checked
        self._checked.move_to_end(key)
        while len(self._checked) > _MAX_CHECKED:
            self._checked.popitem(last=False)

    def hooked(self, func: HookFn) -> HookFn:
        """``func`` as a hook: scoped, bound to the store, its output kept out of streams."""

        def hook(state: Mapping[str, Any], config: RunnableConfig | None) -> Any:
            if isinstance(state, Mapping):
                self._reject_foreign_summaries(self.key(config), state.get("messages"))
            with self.serving(config):
                key = self.enter(config, state if isinstance(state, Mapping) else None)
                update = func(state, self.engine_config(key, config))
            quiet_node_output(update, (config or {}).get("callbacks"))
            return update

        return hook
