"""``WorkingMemory``: the three hooks of behaviour §6-§7 as LangGraph nodes, plus their plumbing.

Where data lives (design §2): the live messages and a small JSON-plain meta in the graph state
(``state["working_memory"]``, a channel the hooks' input schema adds to every graph they are
nodes of, ``create_react_agent`` included, so it follows forks and time travel); archives and
Working Memory versions in a ``BaseStore``. Hooks called directly (no graph) keep the meta in
the store.

The store is the one given as ``store=``, else the running graph's (``compile(store=...)``, the
platform's). A memory is addressed by its key (:func:`~wm_langgraph.storage.archives.memory_key`:
thread id + name + graph namespace), which every hook puts into the config it hands the engine
below as ``configurable.thread_id``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import AssembledContext, assemble_context, pending_messages
from wm_langgraph.document.tokens import TokenCounter, count_tokens
from wm_langgraph.integration.binding import graph_store, reject_foreign_summaries
from wm_langgraph.integration.hooks import NodeHook
from wm_langgraph.integration.scoping import MemoryScope, Scoper, check_name
from wm_langgraph.messages import MessageTokenCache, message_tokens
from wm_langgraph.phase1.session import Session
from wm_langgraph.phase2.graph import (
    CommitDeps,
    CommitState,
    build_commit_graph,
    unfolded_archive_ids,
)
from wm_langgraph.phase2.runner import Phase2Runner
from wm_langgraph.state import MODEL_INPUT_KEY, WorkingMemoryState
from wm_langgraph.storage.archives import (
    ArchiveRecord,
    ArchiveStore,
    thread_id_from_config,
)
from wm_langgraph.storage.longterm import search_facts, write_after_commit
from wm_langgraph.storage.search_index import SearchIndex

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from wm_langgraph.recall.search import Corpus

__all__ = ["MemoryScope", "WorkingMemory"]


def _as_state(state: Mapping[str, Any]) -> WorkingMemoryState:
    """A hook's state for the hook's typed Runnable interface (any mapping works)."""
    return cast("WorkingMemoryState", state)


logger = logging.getLogger("wm_langgraph")


def _check_prompt(name: str, template: object, **values: str) -> str | None:
    if template is None:
        return None
    if not isinstance(template, str):
        raise TypeError(f"{name} must be a str or None, got {type(template).__name__}")
    from wm_langgraph.writer.prompts import render_prompt

    render_prompt(template, **values)  # raises ValueError naming a missing/unknown placeholder
    return template


class WorkingMemory:
    """Structured, loss-guarded Working Memory for one LangGraph agent (many threads).

    Hooks (each callable as ``hook(state, config)`` and usable as ``builder.add_node(name,
    hook)`` in ``invoke`` and ``ainvoke``): :attr:`after_turn`, :attr:`compact`,
    :attr:`assemble`, :attr:`pre_model_hook`, :attr:`post_model_hook`; async twins
    :meth:`aafter_turn`, :meth:`acompact`, :meth:`aassemble`, :meth:`apre_model_hook`,
    :meth:`apost_model_hook`.
    """

    def __init__(
        self,
        model: BaseChatModel | None = None,
        *,
        config: WorkingMemoryConfig | None = None,
        store: BaseStore | None = None,
        token_counter: TokenCounter | None = None,
        create_prompt: str | None = None,
        update_prompt: str | None = None,
        system_prompt: str | None = None,
        name: str | None = None,
        scope: MemoryScope = "graph",
        checkpointer: BaseCheckpointSaver[Any] | None = None,
    ) -> None:
        """Create the engine.

        Args:
            model: The chat model that writes the WM (create: plain completion; update: the
                ``update_working_memory`` tool forced). None resolves a default on first use
                (ChatOpenAI when ``OPENAI_API_KEY`` is set, else the offline model).
            config: Settings; defaults to ``WorkingMemoryConfig()``.
            store: BaseStore for archives and WM versions. None (default): the running graph's
                store (``compile(store=...)``, ``create_agent(store=...)``, the platform's store
                under ``langgraph dev``); a run without any store raises :class:`NoStoreError`.
            token_counter: Text -> tokens (a pure function: message counts are cached);
                defaults to offline cl100k counts.
            create_prompt: Overrides ``prompts/create.md`` (placeholders ``{{prior_summary}}``,
                ``{{messages}}``).
            update_prompt: Overrides ``prompts/update.md`` (``{{working_memory}}``,
                ``{{messages}}``, ``{{section_size_warnings}}``).
            system_prompt: Overrides the assemble system-prompt addition (``prompts/system.md``).
            name: Separates memories that share a thread and a store (two agents on one
                conversation); None is the default name. ``WorkingMemoryMiddleware`` passes
                its own ``name``.
            scope: ``"graph"`` (default) also separates the memories of agents in different
                subgraphs (supervisor or swarm members) by their graph namespace;
                ``"thread"`` shares one memory between every agent of the thread that uses
                this name (deliberate sharing).
            checkpointer: The graph's checkpointer (optional). Config-only reads
                (``get_working_memory``, ``list_archives``, ``resume``) read the thread's
                timeline from its checkpoint; the hooks tell the engine the checkpointer
                anyway, this only matters in a process that reads before any hook ran.

        Raises:
            TypeError: An argument of the wrong type.
            ValueError: A prompt with missing or unknown placeholders.
        """
        if model is not None and not isinstance(model, BaseChatModel):
            raise TypeError(f"model must be a LangChain chat model, got {type(model).__name__}")
        if config is not None and not isinstance(config, WorkingMemoryConfig):
            raise TypeError(f"config must be a WorkingMemoryConfig, got {type(config).__name__}")
        if store is not None and not isinstance(store, BaseStore):
            raise TypeError(f"store must be a langgraph BaseStore, got {type(store).__name__}")
        if token_counter is not None and not callable(token_counter):
            raise TypeError("token_counter must be a callable str -> int")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError("system_prompt must be a str or None")
        if scope not in ("graph", "thread"):
            raise ValueError(f"scope must be 'graph' or 'thread', got {scope!r}")
        self._name = check_name(name)
        if checkpointer is not None and not isinstance(checkpointer, BaseCheckpointSaver):
            raise TypeError(
                f"checkpointer must be a langgraph checkpointer, got {type(checkpointer).__name__}"
            )
        self.config = config or WorkingMemoryConfig()
        self._counter: TokenCounter = token_counter or count_tokens
        # Each message is rendered and tokenised once per process, not on every assemble.
        self._message_tokens = MessageTokenCache(self._uncached_message_tokens)
        self._create_prompt = _check_prompt(
            "create_prompt", create_prompt, prior_summary="", messages=""
        )
        self._update_prompt = _check_prompt(
            "update_prompt", update_prompt, working_memory="", messages="", section_size_warnings=""
        )
        self._system_prompt = system_prompt
        self._model = model
        self._model_lock = threading.Lock()
        self._archives = ArchiveStore(store)
        self.commit_graph = build_commit_graph(
            CommitDeps(
                get_model=self._get_model,
                archives=self._archives,
                config=self.config,
                counter=self._counter,
                create_prompt=self._create_prompt,
                update_prompt=self._update_prompt,
                on_done=self._on_done,
            )
        )
        self._runner = Phase2Runner(self.commit_graph, self._archives, self.config)
        self._session = Session(
            self._archives, self._runner, self.config, self._count_message, checkpointer
        )
        self._scoper = Scoper(self._archives, self._session, name=self._name, scope=scope)
        self.after_turn = NodeHook("wm_after_turn", self._scoper.hooked(self._session.after_turn))
        self.compact = NodeHook("wm_compact", self._scoper.hooked(self._session.compact))
        self.assemble = NodeHook("wm_assemble", self._scoper.hooked(self._assemble))
        self.pre_model_hook = NodeHook(
            "wm_pre_model_hook", self._scoper.hooked(self._pre_model_hook)
        )
        self.post_model_hook = NodeHook(
            "wm_post_model_hook", self._scoper.hooked(self._post_model_hook)
        )

    # -- store and scope ---------------------------------------------------------------------
    @property
    def store(self) -> BaseStore:
        """The store given as ``store=``, else the graph store this memory last ran with.

        Raises:
            NoStoreError: No store was given and the memory has not run in a graph yet.
        """
        return self._archives.store

    @property
    def name(self) -> str | None:
        """The memory's name (None: the default name)."""
        return self._name or None

    def memory_key(self, config: RunnableConfig | None) -> str:
        """The key of the memory a config addresses (thread id, name, graph namespace).

        Inside a run the graph namespace comes from the run's ``checkpoint_ns``; a config built
        by hand for a memory inside a subgraph names the subgraph's node path itself:
        ``{"configurable": {"thread_id": "t1", "checkpoint_ns": "research_agent"}}``.
        """
        return self._scoper.key(config)

    # -- model -------------------------------------------------------------------------------
    @property
    def model(self) -> BaseChatModel:
        """The chat model that writes the WM (resolved on first use when none was given)."""
        return self._get_model()

    def _get_model(self) -> BaseChatModel:
        if self._model is None:
            with self._model_lock:
                if self._model is None:
                    from wm_langgraph.writer.binding import resolve_default_model

                    self._model = resolve_default_model()
                    logger.info(
                        "wm_langgraph: no model given; using %s for the Working Memory",
                        type(self._model).__name__,
                    )
        return self._model

    # -- tokens ------------------------------------------------------------------------------
    def _uncached_message_tokens(self, message: BaseMessage) -> int:
        return message_tokens(message, self._counter)

    def _count_message(self, message: BaseMessage) -> int:
        return self._message_tokens(message)

    def count_tokens(self, messages: Sequence[BaseMessage]) -> int:
        """Prompt tokens of ``messages`` as the engine counts them."""
        return sum(self._count_message(m) for m in convert_to_messages(list(messages)))

    # -- assemble ----------------------------------------------------------------------------
    def _assemble(self, state: Mapping[str, Any], config: RunnableConfig | None) -> dict[str, Any]:
        # config carries the memory key as thread id (see _hooked)
        thread_id = thread_id_from_config(config)
        messages, timeline = self._session.model_view(state, config)
        context = self._build(messages, thread_id, timeline, None)
        return {MODEL_INPUT_KEY: context.all_messages}

    def _pre_model_hook(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any]:
        update, messages, timeline = self._session.overflow(state, config)
        thread_id = thread_id_from_config(config)
        context = self._build(messages, thread_id, timeline, None)
        return {**(update or {}), MODEL_INPUT_KEY: context.all_messages}

    def _post_model_hook(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any]:
        update = self._session.post_model_hook(state, config)
        if state.get(MODEL_INPUT_KEY):
            # The model has answered: its input is spent. Clearing it keeps it out of the
            # state that create_react_agent copies into each tool call's Send packet (which
            # LangGraph persists as a pending write even for an untracked channel).
            update = {**(update or {}), MODEL_INPUT_KEY: []}
        return update

    def overflow_guard(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any] | None:
        """Mid-turn safety: when the live messages no longer fit beside the WM layer, commit
        inline (Phase 2 waited for) keeping the newest user turn, tool-pair-safe.

        Returns:
            The state update, or None when the live messages fit (nothing done).
        """
        update: dict[str, Any] | None = self._scoper.hooked(self._overflow_update)(state, config)
        return update

    def _overflow_update(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any] | None:
        update, _, _ = self._session.overflow(state, config)
        return update

    def build_context(
        self,
        messages: Sequence[BaseMessage],
        config: RunnableConfig | None,
        *,
        system_message: SystemMessage | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> AssembledContext:
        """Assemble the model input for ``messages`` (live) of the config's thread: system
        prompt (+ addition), the WM, the pending archives' messages, the live messages.

        ``state`` (optional) is the graph state the messages come from; its meta names the
        timeline's archives, which after a fork or time travel differ from the thread's latest.
        """
        reject_foreign_summaries(messages)
        thread_id = self._scoper.enter(config, state)
        if state is not None:
            timeline = self._session.timeline_of(state, thread_id, config)
        else:
            timeline = self._session.timeline_for_thread(thread_id, config)
        return self._build(convert_to_messages(list(messages)), thread_id, timeline, system_message)

    def _build(
        self,
        messages: Sequence[BaseMessage],
        thread_id: str,
        timeline: Sequence[str],
        system_message: SystemMessage | None,
    ) -> AssembledContext:
        current = self._archives.current_wm(thread_id, timeline)
        document = current.text if current else ""
        pending = pending_messages(
            self._archives,
            self.config,
            thread_id,
            unfolded_archive_ids(current, timeline),
            live_tokens=sum(self._count_message(m) for m in messages),
            document_tokens=self._counter(document) if document else 0,
        )
        if pending:  # removed after they were archived (RemoveMessage of an archived id)
            hidden = self._archives.hidden_ids(thread_id)
            pending = [m for m in pending if m.id not in hidden]
        return assemble_context(
            system_message=system_message,
            working_memory=document,
            pending_messages=pending,
            live_messages=messages,
            token_budget=self.config.token_budget,
            reserve_tokens=self.config.reserve_tokens,
            archive_memory_tokens=self.config.archive_memory_tokens,
            count=self._count_message,
            system_addition=self._system_prompt,
        )

    # -- reading -----------------------------------------------------------------------------
    def get_working_memory(self, config: RunnableConfig | None) -> str:
        """The thread's current Working Memory document (``""`` while there is none).

        Outside a run this reads the store given as ``store=``, else the one the memory last
        ran with in this process; a memory in a subgraph is named by ``checkpoint_ns`` (see
        :meth:`memory_key`). On an async store's own event loop use
        :meth:`aget_working_memory`.
        """
        return self._get_working_memory(self._scoper.readable(config), config)

    def _get_working_memory(self, thread_id: str, config: RunnableConfig | None) -> str:
        self._scoper.bind_for_read(thread_id, config)
        return self._scoper.working_memory(thread_id, config)

    def moved_items(self, config: RunnableConfig | None) -> list[tuple[str, str, str]]:
        """Items the size contract moved out of the thread's current Working Memory.

        Returns:
            ``(archive id, section, text)`` per item, oldest first; the archive id names the WM
            version (the last archive it covered) that moved the item out.
        """
        thread_id = self._scoper.readable(config)
        self._scoper.bind_for_read(thread_id, config)
        timeline = self._session.timeline_for_thread(thread_id, config)
        current = self._archives.current_wm(thread_id, timeline)
        keys = current.covers if current else []
        return [
            (key, item.get("section", ""), item.get("text", ""))
            for key, items in self._archives.moved_items(thread_id, keys)
            for item in items
        ]

    def list_archives(self, config: RunnableConfig | None) -> list[ArchiveRecord]:
        """The thread's archives in order; ``status`` is ``"done"`` once a WM covers them.

        The store and the subgraph are found as for :meth:`get_working_memory`; the async
        twin is :meth:`alist_archives`.
        """
        return self._list_archives(self._scoper.readable(config), config)

    def _list_archives(self, thread_id: str, config: RunnableConfig | None) -> list[ArchiveRecord]:
        self._scoper.bind_for_read(thread_id, config)
        return self._scoper.archives(thread_id, config)

    def recall_archives(self, config: RunnableConfig | None) -> list[ArchiveRecord]:
        """:meth:`list_archives` as the archive tools show it: without the messages removed
        with ``RemoveMessage`` after they were archived (the records themselves are kept)."""
        records = self.list_archives(config)
        hidden = self._archives.hidden_ids(self._scoper.readable(config)) if records else set()
        if not hidden:
            return records
        out = []
        for record in records:
            kept = [m for m in record.messages if m.id not in hidden]
            out.append(
                record if len(kept) == len(record.messages) else replace(record, messages=kept)
            )
        return out

    def recall_corpus(self, config: RunnableConfig | None) -> Corpus:
        """What ``archive_search`` ranks for the config's memory (behaviour §7.6): the
        per-archive search indexes of its current timeline (from the process cache, else the
        store; an archive written before the index existed is indexed now), its hidden message
        ids, the items moved out of its Working Memory, and the store's semantic search when the
        store has a vector index. Only the archives a result shows are read in full."""
        from wm_langgraph.recall.search import store_corpus

        thread_id = self._scoper.readable(config)
        self._scoper.bind_for_read(thread_id, config)
        timeline = self._session.timeline_for_thread(thread_id, config)
        return store_corpus(
            SearchIndex(self._archives),
            thread_id,
            timeline,
            hidden=self._archives.hidden_ids(thread_id) if timeline else set(),
            moved=self.moved_items(config) if timeline else [],
        )

    # -- phase 2 control ---------------------------------------------------------------------
    def wait(self, config: RunnableConfig | None = None, timeout: float | None = None) -> bool:
        """Wait for outstanding background Phase 2 work (of one thread, or of all).

        On the event loop that an async store (``AsyncSqliteStore``, ``AsyncPostgresStore``,
        the platform's) runs on, blocking would stop the Phase 2 it waits for: there it raises
        and says to ``await memory.await_phase2(config)`` instead.

        Returns:
            True when all of it finished, False when ``timeout`` seconds passed first.

        Raises:
            RuntimeError: Called on the event loop the work needs, with work outstanding.
        """
        thread_id = self.memory_key(config) if config is not None else None
        if self._runner.wait(thread_id, 0):
            return True
        if self._scoper.loop_bound_work(thread_id):
            raise RuntimeError(
                "memory.wait() would block the event loop that this store's Phase 2 needs "
                "(a deadlock): use `await memory.await_phase2(config)` in async code"
            )
        return self._runner.wait(thread_id, timeout)

    def resume(self, config: RunnableConfig | None, *, wait: bool | None = None) -> None:
        """Close the thread's circuit breaker and retry its pending, failed and deferred archives.

        Args:
            config: Names the thread.
            wait: Run inline (True) or in the background (False); default: the opposite of
                ``config.background``.
        """
        thread_id = self.memory_key(config)
        self._scoper.bind_for_read(thread_id, config)
        self._runner.reset_breaker(thread_id)
        self._runner.retry_deferred(thread_id)
        inline = (not self.config.background) if wait is None else wait
        self._session.schedule(
            thread_id,
            self._session.timeline_for_thread(thread_id, config),
            self._scoper.engine_config(thread_id, config),
            wait=inline,
        )

    def phase2_status(self, config: RunnableConfig | None) -> dict[str, Any]:
        """The thread's breaker record and whether its Phase 2 is paused now."""
        thread_id = self.memory_key(config)
        return {**self._runner.breaker(thread_id), "paused": self._runner.is_paused(thread_id)}

    def close(self) -> None:
        """Finish queued background work and stop the worker threads."""
        self._runner.shutdown()
        self._session.confirm_timelines()

    # -- tools and long-term memory ----------------------------------------------------------
    @property
    def tools(self) -> list[BaseTool]:
        """The archive recall tools (``archive_expand``, ``archive_search``) for this memory."""
        from wm_langgraph.recall.tools import make_archive_tools

        return make_archive_tools(self)

    def search_long_term(
        self, config: RunnableConfig | None, query: str | None = None, *, limit: int = 10
    ) -> list[dict[str, Any]]:
        """Search the long-term facts of the config's ``user_id`` (behaviour §8).

        Raises:
            ValueError: The config has no ``configurable.user_id``.
        """
        user_id = ((config or {}).get("configurable") or {}).get("user_id")
        if user_id is None:
            raise ValueError("search_long_term needs config={'configurable': {'user_id': ...}}")
        store = graph_store(config.get("configurable") or {}) if config else None
        return search_facts(
            store or self.store, self.config.long_term_namespace, str(user_id), query, limit=limit
        )

    def _on_done(self, state: CommitState) -> None:
        if self.config.long_term_memory:
            store = self._archives.store_for(state["thread_id"])
            write_after_commit(store, self.config.long_term_namespace, state)

    # -- async twins ------------------------------------------------------------------------
    async def aafter_turn(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`after_turn`."""
        return await self.after_turn.ainvoke(_as_state(state), config)

    async def acompact(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`compact`."""
        return await self.compact.ainvoke(_as_state(state), config)

    async def aassemble(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`assemble`."""
        return await self.assemble.ainvoke(_as_state(state), config)

    async def apre_model_hook(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`pre_model_hook`."""
        return await self.pre_model_hook.ainvoke(_as_state(state), config)

    async def apost_model_hook(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        """Async twin of :attr:`post_model_hook`."""
        return await self.post_model_hook.ainvoke(_as_state(state), config)

    async def aoverflow_guard(
        self, state: Mapping[str, Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`overflow_guard`."""
        return await asyncio.to_thread(self.overflow_guard, state, config)

    async def aget_working_memory(self, config: RunnableConfig | None) -> str:
        """Async twin of :meth:`get_working_memory` (safe with async stores on their loop)."""
        return await asyncio.to_thread(self._get_working_memory, self.memory_key(config), config)

    async def alist_archives(self, config: RunnableConfig | None) -> list[ArchiveRecord]:
        """Async twin of :meth:`list_archives` (safe with async stores on their loop)."""
        return await asyncio.to_thread(self._list_archives, self.memory_key(config), config)

    async def await_phase2(
        self, config: RunnableConfig | None = None, timeout: float | None = None
    ) -> bool:
        """Await outstanding background Phase 2 work without blocking the event loop (which
        an async store's Phase 2 needs): the async twin of :meth:`wait`."""
        key = self.memory_key(config) if config is not None else None
        return await asyncio.to_thread(self._runner.wait, key, timeout)

    await_idle = await_phase2
