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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from wm_langgraph.config import WorkingMemoryConfig, recall_room
from wm_langgraph.context.assemble import (
    AssembledContext,
    RecallSource,
    assemble_context,
    compute_budgets,
    neutraliser,
)
from wm_langgraph.context.live import LiveView, LiveViews
from wm_langgraph.context.records import ArchiveReader, RecentMessages
from wm_langgraph.document.tokens import TokenCounter, count_tokens
from wm_langgraph.integration.binding import (
    graph_store,
    internal_callbacks,
    reject_foreign_summaries,
)
from wm_langgraph.integration.hooks import NodeHook, in_hook_thread
from wm_langgraph.integration.scoping import MemoryScope, Scoper, check_name
from wm_langgraph.messages import MessageTokenCache, message_tokens
from wm_langgraph.phase1.session import RESET_META, Session
from wm_langgraph.phase2.graph import (
    CommitDeps,
    CommitState,
    build_commit_graph,
    unfolded_archive_ids,
)
from wm_langgraph.phase2.runner import Phase2Runner
from wm_langgraph.recall import auto
from wm_langgraph.recall.auto import recall_candidates, recall_query, traced_recall
from wm_langgraph.recall.search import StaleIndexError, store_corpus
from wm_langgraph.state import MODEL_INPUT_KEY, WorkingMemoryState
from wm_langgraph.storage.archives import (
    ArchiveRecord,
    ArchiveStore,
    WorkingMemoryVersion,
    split_memory_key,
    thread_id_from_config,
)
from wm_langgraph.storage.longterm import search_facts, write_after_commit
from wm_langgraph.storage.retry import ATTEMPTS, is_transient
from wm_langgraph.storage.search_index import SearchIndex
from wm_langgraph.storage.settings import SettingsRecorder

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from wm_langgraph.context.recalled import RecallCandidate
    from wm_langgraph.display.report import ThreadReport
    from wm_langgraph.recall.search import Corpus

__all__ = ["MemoryScope", "TranscriptPage", "WorkingMemory"]


_Hook = Callable[[Mapping[str, Any], RunnableConfig | None], Any]


def _settled(current: WorkingMemoryVersion | None) -> set[str]:
    """The archives whose abstract can no longer appear: covered by ``current`` and not
    deferred."""
    if current is None:
        return set()
    deferred = set(current.info.get("deferred") or [])
    return {a for a in current.covers if a not in deferred}


def _removal_requests(state: Mapping[str, Any] | None) -> set[str]:
    """Ids of the ``RemoveMessage`` requests a state holds (archived messages to hide)."""
    raw = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(raw, list | tuple):
        return set()
    return {str(m.id) for m in raw if isinstance(m, RemoveMessage) and m.id}


def _as_state(state: Mapping[str, Any]) -> WorkingMemoryState:
    """A hook's state for the hook's typed Runnable interface (any mapping works)."""
    return cast("WorkingMemoryState", state)


logger = logging.getLogger("wm_langgraph")


def _after_the_answer(
    hook: Callable[[Mapping[str, Any], RunnableConfig | None], dict[str, Any]],
) -> Callable[[Mapping[str, Any], RunnableConfig | None], dict[str, Any]]:
    """``hook`` (the accounting after the model has answered) that lets a store error that
    outlasted its retries pass: the user's turn is done, nothing is lost (the messages stay
    live, the next turn archives them), so it is logged instead of failing the turn."""

    def guarded(state: Mapping[str, Any], config: RunnableConfig | None) -> dict[str, Any]:
        try:
            return hook(state, config)
        except Exception as exc:
            if not is_transient(exc):
                raise
            logger.warning(
                "wm_langgraph: the store failed after %d attempts (%s); the turn's messages "
                "stay live and the next turn archives them",
                ATTEMPTS,
                type(exc).__qualname__,
            )
            return {}

    return guarded


def _check_prompt(name: str, template: object, **values: str) -> str | None:
    if template is None:
        return None
    if not isinstance(template, str):
        raise TypeError(f"{name} must be a str or None, got {type(template).__name__}")
    from wm_langgraph.writer.prompts import render_prompt

    render_prompt(template, **values)  # raises ValueError naming a missing/unknown placeholder
    return template


@dataclass(frozen=True, slots=True)
class TranscriptPage:
    """One page of :meth:`WorkingMemory.transcript`.

    Attributes:
        messages: The page's messages, oldest first.
        offset: Index of the page's first message in the whole conversation.
        total: Messages in the whole conversation.
        next_offset: ``offset`` of the next page, None after the last one.
    """

    messages: list[BaseMessage]
    offset: int
    total: int
    next_offset: int | None


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
        model: BaseChatModel | str | None = None,
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
        agent_model: BaseChatModel | None = None,
    ) -> None:
        """Create the engine.

        Args:
            model: The chat model that writes the WM (create: plain completion; update: the
                ``update_working_memory`` tool forced), or a ``"provider:model"`` string for
                ``init_chat_model`` (``"openai:gpt-4.1-mini"``, ``"anthropic:claude-…"``).
                None resolves a default on first use (ChatOpenAI when ``OPENAI_API_KEY`` or
                ``OPENAI_BASE_URL`` is set, else the heuristic offline writer); a fallback is
                logged once at WARNING (the offline writer, or a provider the agent's model
                does not use).
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
                (``get_working_memory``, ``list_archives``, ``transcript``, the archive tools,
                ``resume``) read the thread's timeline from its checkpoint, and nothing of a
                thread the checkpointer deleted (behaviour §6.8); the hooks tell the engine
                the checkpointer anyway (``create_agent`` tells the middleware when it builds
                the agent), and the checkpoints kept beside ``store`` (``open_sqlite``'s, or the
                store's own SQLite file or PostgreSQL database) are found without it. It
                matters in a process that reads a thread before any of its hooks ran, with the
                checkpoints elsewhere: without it such a read of a thread with records raises
                :class:`~wm_langgraph.errors.NoCheckpointerError`.
            agent_model: The agent's own chat model (optional): a ``token_budget`` given as
                ``("fraction", f)`` is resolved against its ``profile["max_input_tokens"]``, and
                a default writer from another provider is warned about. The middleware finds it
                itself when ``create_agent`` builds the agent.

        Raises:
            TypeError: An argument of the wrong type.
            ValueError: A prompt with missing or unknown placeholders, a model string
                ``init_chat_model`` cannot build, or a fractional ``token_budget`` with an
                ``agent_model`` that has no input window in its profile.
        """
        if model is not None:
            from wm_langgraph.writer.binding import writer_model

            model = writer_model(model)
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
        self._model: BaseChatModel | None = model
        self._model_given = model is not None
        self._agent_model_checked = False
        self._model_lock = threading.Lock()
        self._archives = ArchiveStore(store)
        self._checkpointer = checkpointer
        self._scope: MemoryScope = scope
        self._build_engine()
        if agent_model is not None:
            self.use_agent_model(agent_model)

    def _build_engine(self) -> None:
        """The commit graph, runner, session, scoper and hooks for ``self.config`` (again when
        a fractional budget is resolved, before anything ran: the runner starts lazily)."""
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
        # Archived messages for assemble (pending layer and verbatim fill), cached per thread.
        self._reader = ArchiveReader(self._archives, self._count_message)
        # The live messages as assemble reads them, per thread: a call looks at new ones only.
        self._views = LiveViews(self._count_message, neutraliser(self.config.recall))
        self._session = Session(
            self._archives,
            self._runner,
            self.config,
            self._count_message,
            self._checkpointer,
            forget_cached=self._reader.forget,
        )
        self._scoper = Scoper(self._archives, self._session, name=self._name, scope=self._scope)
        # The thread records the settings it runs with, once per thread and process (the
        # report rebuilds each call with them: storage.settings).
        self._settings = SettingsRecorder(self._archives, self.config)
        hooked = self._scoper.hooked
        self.after_turn = NodeHook(
            "wm_after_turn", hooked(self._resolved(_after_the_answer(self._after_turn)))
        )
        self.compact = NodeHook("wm_compact", hooked(self._resolved(self._compact)))
        self.assemble = NodeHook("wm_assemble", hooked(self._resolved(self._assemble)))
        self.pre_model_hook = NodeHook(
            "wm_pre_model_hook", hooked(self._resolved(self._pre_model_hook))
        )
        self.post_model_hook = NodeHook(
            "wm_post_model_hook", hooked(self._resolved(self._post_model_hook))
        )

    def _resolved(self, hook: _Hook) -> _Hook:
        """``hook``, refusing to run while ``token_budget`` is an unresolved fraction."""

        def run(state: Mapping[str, Any], config: RunnableConfig | None) -> Any:
            self.config.tokens  # noqa: B018 - raises ValueError saying how to resolve it
            update = hook(state, config)
            # After the hook: input it refuses writes nothing; still before the checkpoint
            # the next model call starts from.
            self._settings.note(thread_id_from_config(config))
            return update

        return run

    def _after_turn(self, state: Mapping[str, Any], config: RunnableConfig | None) -> Any:
        return self._session.after_turn(state, config)

    def _compact(self, state: Mapping[str, Any], config: RunnableConfig | None) -> Any:
        return self._session.compact(state, config)

    def use_agent_model(self, agent_model: object) -> None:
        """Tell the memory the agent's own chat model: a fractional ``token_budget`` is
        resolved against its input window (once, before the memory has run), and a default
        writer from another provider is warned about at its first use.

        Raises:
            ValueError: The budget is a fraction and the model's profile has no
                ``max_input_tokens``, or the resolved budget collides with another setting.
        """
        if self.config.budget_fraction is not None:
            self.config = self.config.for_model(agent_model)
            self._build_engine()
            logger.info(
                "wm_langgraph: token_budget resolved to %d tokens from the agent model's profile",
                self.config.tokens,
            )

    def use_checkpointer(self, checkpointer: BaseCheckpointSaver[Any]) -> None:
        """Tell the memory the graph's checkpointer for config-only reads of threads no hook
        has run for in this process (``WorkingMemoryMiddleware`` passes the agent's when
        ``create_agent`` builds it). One given as ``checkpointer=`` is kept.

        Raises:
            TypeError: Not a LangGraph checkpointer.
        """
        if not isinstance(checkpointer, BaseCheckpointSaver):
            raise TypeError(
                f"checkpointer must be a langgraph checkpointer, got {type(checkpointer).__name__}"
            )
        if self._checkpointer is None:
            self._checkpointer = checkpointer
            self._session.use_checkpointer(checkpointer)

    def use_store(self, store: BaseStore) -> None:
        """Tell the memory the graph's store for config-only reads before any of its hooks ran
        in this process (``WorkingMemoryMiddleware`` passes the agent's when ``create_agent``
        builds it). A store given as ``store=`` is kept; a run still uses its own graph's.

        Raises:
            TypeError: Not a LangGraph store.
        """
        if not isinstance(store, BaseStore):
            raise TypeError(f"store must be a langgraph BaseStore, got {type(store).__name__}")
        self._archives.know(store)

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
                    if type(self._model).__name__ == "OfflineWorkingMemoryModel":
                        logger.warning(
                            "wm_langgraph: no writer model given and neither OPENAI_API_KEY nor "
                            "OPENAI_BASE_URL is set: the Working Memory is written by the "
                            "heuristic offline writer (OfflineWorkingMemoryModel: extractive "
                            "rules, no LLM). Pass model= (a chat model or 'provider:model') "
                            "to choose the writer"
                        )
                    else:
                        logger.info(
                            "wm_langgraph: no model given; using %s for the Working Memory",
                            type(self._model).__name__,
                        )
        return self._model

    def check_agent_model(self, agent_model: object) -> None:
        """Warn once when the default writer (no ``model=`` given) is from another provider
        than the agent's model: e.g. ``OPENAI_API_KEY`` is set, so the memory calls OpenAI,
        while the agent runs on Anthropic. The middleware calls this with its model."""
        if self._model_given or self._agent_model_checked:
            return
        self._agent_model_checked = True
        from wm_langgraph.writer.binding import model_provider

        writer = self._get_model()
        ours, theirs = model_provider(writer), model_provider(agent_model)
        if ours is None or theirs is None or ours == theirs:
            return
        if type(writer).__name__ == "OfflineWorkingMemoryModel":
            return  # already said when it was chosen
        logger.warning(
            "wm_langgraph: no writer model given, so the Working Memory is written by %s "
            "(provider %s, from the environment) while the agent's model is from provider %s; "
            "pass model= (a chat model or 'provider:model') to choose the writer",
            type(writer).__name__,
            ours,
            theirs,
        )

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
        context = self._build(
            messages, thread_id, timeline, None, _removal_requests(state), config=config
        )
        return {MODEL_INPUT_KEY: context.all_messages}

    def _pre_model_hook(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any]:
        update, messages, timeline = self._session.overflow(state, config)
        thread_id = thread_id_from_config(config)
        context = self._build(messages, thread_id, timeline, None, config=config)
        return {**(update or {}), MODEL_INPUT_KEY: context.all_messages}

    def _post_model_hook(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any]:
        update = _after_the_answer(self._session.post_model_hook)(state, config)
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
        self._settings.note(thread_id_from_config(config))
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
        if not isinstance(messages, list | tuple):
            messages = list(messages)
        with self._scoper.serving(config):
            thread_id = self._scoper.enter(config, state)
            view = self._views.view(thread_id, messages)
            reject_foreign_summaries(view.marked)
            if state is not None:
                timeline = self._session.timeline_of(state, thread_id, config)
            else:
                timeline = self._session.timeline_for_thread(thread_id, config)
            requested = _removal_requests(state) | view.removals
            context = self._build(
                view, thread_id, timeline, system_message, requested, config=config
            )
            self._settings.note(thread_id)
            return context

    def _build(
        self,
        messages: Sequence[BaseMessage] | LiveView,
        thread_id: str,
        timeline: Sequence[str],
        system_message: SystemMessage | None,
        removed: set[str] | frozenset[str] = frozenset(),
        *,
        config: RunnableConfig | None = None,
    ) -> AssembledContext:
        """The assembled context (``removed``: ids of archived messages whose removal the next
        hook carries out; they are hidden already). The live messages are read through the
        thread's :class:`LiveView` (only messages new since the last call are looked at).
        On a user's turn the recall runs (as a traced run in ``config``'s callbacks) when
        assemble finds room for its layer."""
        view = messages if isinstance(messages, LiveView) else self._views.view(thread_id, messages)
        current = self._archives.current_wm(thread_id, timeline)
        document = current.text if current else ""
        pending_ids = unfolded_archive_ids(current, timeline)
        folded_ids = list(current.covers) if current is not None else []
        budgets = compute_budgets(
            self.config.tokens, self.config.reserve_tokens, self.config.archive_memory_tokens
        )
        # The room the live messages leave for archived messages: while the whole history
        # fits, it is the input (behaviour §7.4), so the archives are read up to that room.
        room = budgets.usable - view.total
        pending: list[BaseMessage] = []
        folded = RecentMessages([], [], True)
        whole = not (pending_ids or folded_ids)  # no archive: the history is the live messages
        hidden: set[str] | None = None  # read only where needed: a store round trip
        if room > 0 and (pending_ids or folded_ids):
            # removed after they were archived (RemoveMessage of an archived id)
            hidden = self._archives.hidden_ids(thread_id) | removed
            recent = self._reader.recent(thread_id, pending_ids, room, hidden=hidden)
            pending = recent.messages
            whole = recent.complete and not recent.missing
            if not recent.complete:
                # Messages before the first user message belong to a turn that starts in an
                # archive not read; that turn is larger than the room: it cannot be shown.
                first = next(
                    (i for i, m in enumerate(pending) if isinstance(m, HumanMessage)), None
                )
                pending = pending[first:] if first is not None else []
            elif folded_ids and room > recent.tokens:
                left = room - recent.tokens
                folded = self._reader.recent(thread_id, folded_ids, left, hidden=hidden)
                whole = whole and folded.complete and not folded.missing
            elif folded_ids:
                whole = False
        return assemble_context(
            system_message=system_message,
            working_memory=document,
            pending_messages=pending,
            live_messages=view.source,
            live_view=view,
            token_budget=self.config.tokens,
            reserve_tokens=self.config.reserve_tokens,
            archive_memory_tokens=self.config.archive_memory_tokens,
            count=self._count_message,
            system_addition=self._system_prompt,
            folded_messages=folded.messages,
            folded_sizes=folded.sizes,
            whole_history=whole,
            verbatim_fill=self.config.verbatim_fill,
            recall=self._recall_source(
                view=view,
                thread_id=thread_id,
                timeline=timeline,
                current=current,
                hidden=hidden,
                removed=removed,
                config=config,
            ),
            recall_tokens=recall_room(budgets.usable, self.config.recall_tokens),
        )

    def _recall_source(
        self,
        *,
        view: LiveView,
        thread_id: str,
        timeline: Sequence[str],
        current: WorkingMemoryVersion | None,
        hidden: set[str] | None,
        removed: set[str] | frozenset[str],
        config: RunnableConfig | None,
    ) -> RecallSource | None:
        """The recall of this call for assemble: ``None`` when the setting is off; nothing to
        find on a turn that is not the user's (the newest message is not a user message)."""
        if not self.config.recall:
            return None
        query = recall_query(view.source)
        if not query or not timeline:
            return lambda: ()

        def search() -> list[RecallCandidate]:
            # ``hidden`` is None when the build did not read it (no archive was read): the
            # recall reads it only when assemble runs it
            seen = hidden if hidden is not None else self._archives.hidden_ids(thread_id)
            return self._recall_search(thread_id, timeline, current, seen | set(removed), query)

        callbacks = internal_callbacks(
            (config or {}).get("callbacks"), thread_id=thread_id, scope=""
        )
        return lambda: traced_recall(search, query, thread_id=thread_id, callbacks=callbacks)

    def _recall_search(
        self,
        thread_id: str,
        timeline: Sequence[str],
        current: WorkingMemoryVersion | None,
        hidden: set[str],
        query: str,
    ) -> list[RecallCandidate]:
        """The recall step: ``query`` searched in the memory's archives on ``timeline`` (read
        only: an archive without an index record is indexed in memory)."""
        for attempt in range(2):
            corpus = store_corpus(
                SearchIndex(self._archives),
                thread_id,
                timeline,
                hidden=hidden,
                moved=self._moved_of(thread_id, current),
                settled=_settled(current),
                write=False,
            )
            try:
                return recall_candidates(
                    corpus, query, limit=auto.RECALL_HITS, min_score=self.config.recall_min_score
                )
            except StaleIndexError:  # the records changed under the cache: read anew, once
                if attempt:
                    raise
        return []

    def recall_hits(
        self, config: RunnableConfig | None, message: str | BaseMessage
    ) -> list[RecallCandidate]:
        """The recall step of a user's turn on its own (behaviour §7.4): what the search finds
        for ``message`` (a user message or its text) in the config's thread, best first, as
        the recalled layer's candidates — before assemble leaves out what the input shows
        already and packs the best into the layer's room. Reads only; no traced run. For
        measurements (the bench times it) and for tools that show the recall.

        Returns:
            The candidates (empty when the message is not a user message, or the thread has no
            archive).
        """
        query = recall_query([message]) if isinstance(message, BaseMessage) else message.strip()
        with self._scoper.serving(config):
            thread_id = self._scoper.readable(config)
            self._scoper.bind_for_read(thread_id, config)
            timeline = self._session.timeline_for_thread(thread_id, config)
            if not query or not timeline:
                return []
            current = self._archives.current_wm(thread_id, timeline)
            hidden = self._archives.hidden_ids(thread_id)
            return self._recall_search(thread_id, timeline, current, hidden, query)

    # -- reading -----------------------------------------------------------------------------
    def get_working_memory(self, config: RunnableConfig | None) -> str:
        """The thread's current Working Memory document (``""`` while there is none).

        Outside a run this reads the store given as ``store=``, else the one the memory last
        ran with in this process; a memory in a subgraph is named by ``checkpoint_ns`` (see
        :meth:`memory_key`). On an async store's own event loop use
        :meth:`aget_working_memory`.

        Raises:
            NoStoreError: No store is known outside a run (pass ``store=``).
            NoCheckpointerError: The thread has records, ran under a checkpointer this memory
                cannot read, and so may be live or deleted (pass ``checkpointer=``); every
                config-only read raises it in that case rather than answer with nothing.
        """
        with self._scoper.serving(config):
            return self._get_working_memory(self._scoper.readable(config), config)

    def _get_working_memory(self, thread_id: str, config: RunnableConfig | None) -> str:
        with self._scoper.serving(config):
            self._scoper.bind_for_read(thread_id, config)
            return self._scoper.working_memory(thread_id, config)

    def moved_items(self, config: RunnableConfig | None) -> list[tuple[str, str, str]]:
        """Items the size contract moved out of the thread's current Working Memory.

        Returns:
            ``(archive id, section, text)`` per item, oldest first; the archive id names the WM
            version (the last archive it covered) that moved the item out.
        """
        with self._scoper.serving(config):
            thread_id = self._scoper.readable(config)
            self._scoper.bind_for_read(thread_id, config)
            timeline = self._session.timeline_for_thread(thread_id, config)
            current = self._archives.current_wm(thread_id, timeline)
            return self._moved_of(thread_id, current)

    def _moved_of(
        self, thread_id: str, current: WorkingMemoryVersion | None
    ) -> list[tuple[str, str, str]]:
        keys = current.covers if current else []
        moved = self._archives.moved_items(thread_id, keys)
        return [
            (key, item.get("section", ""), item.get("text", ""))
            for key, items in moved
            for item in items
        ]

    def list_archives(self, config: RunnableConfig | None) -> list[ArchiveRecord]:
        """The thread's archives in order; ``status`` is ``"done"`` once a WM covers them.

        The store and the subgraph are found as for :meth:`get_working_memory`; the async
        twin is :meth:`alist_archives`.
        """
        with self._scoper.serving(config):
            return self._list_archives(self._scoper.readable(config), config)

    def _list_archives(self, thread_id: str, config: RunnableConfig | None) -> list[ArchiveRecord]:
        with self._scoper.serving(config):
            self._scoper.bind_for_read(thread_id, config)
            return self._scoper.archives(thread_id, config)

    def recall_archives(self, config: RunnableConfig | None) -> list[ArchiveRecord]:
        """:meth:`list_archives` as the archive tools show it: without the messages removed
        with ``RemoveMessage`` after they were archived (the records themselves are kept)."""
        with self._scoper.serving(config):
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

    def transcript(
        self,
        config: RunnableConfig | None,
        *,
        state: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> TranscriptPage:
        """The thread's whole conversation in order, for UIs and exports: the archived
        messages of its timeline, then the live ones, without the messages removed with
        ``RemoveMessage`` (archived or live). After a commit ``get_state()`` shows only the
        live tail; this shows everything.

        Args:
            config: Names the thread (and ``checkpoint_id``, a fork, when it names one).
            state: The graph state to take the live messages from (e.g.
                ``graph.get_state(config).values``); None reads the thread's checkpoint
                through the checkpointer the memory ran with (or was given).
            offset: Index of the first message of the page.
            limit: Messages per page (None: all from ``offset``).

        Returns:
            The page: ``messages``, ``offset``, ``total`` and ``next_offset`` (None at the end).
        """
        if offset < 0 or (limit is not None and limit < 1):
            raise ValueError("offset must be >= 0 and limit >= 1 (or None)")
        key = self._scoper.readable(config)
        return self._transcript(key, config, state, offset, limit)

    def _transcript(
        self,
        key: str,
        config: RunnableConfig | None,
        state: Mapping[str, Any] | None,
        offset: int,
        limit: int | None,
    ) -> TranscriptPage:
        self._scoper.bind_for_read(key, config)
        if state is None:
            state = self._session.checkpoint_state(key, config)
        live: list[BaseMessage] = []
        if state is not None:  # its meta names its timeline's archives (a fork's own)
            timeline = self._session.timeline_of(state, key, config)
            records = self._archives.get_archives(key, timeline)
            live = self._session.messages_of(state)
        else:  # no checkpoint to read: the archives the store's pointer names
            records = self._scoper.archives(key, config)
        hidden = self._archives.hidden_ids(key) if records else set()
        seen: set[str] = set()
        every: list[BaseMessage] = []
        for message in [m for r in records for m in r.messages] + list(live):
            if message.id is not None:
                if message.id in hidden or message.id in seen:
                    continue
                seen.add(message.id)
            every.append(message)
        end = len(every) if limit is None else min(len(every), offset + limit)
        return TranscriptPage(
            messages=every[offset:end],
            offset=offset,
            total=len(every),
            next_offset=end if end < len(every) else None,
        )

    async def atranscript(
        self,
        config: RunnableConfig | None,
        *,
        state: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> TranscriptPage:
        """Async twin of :meth:`transcript` (safe with async stores and checkpointers on
        their loop)."""
        if offset < 0 or (limit is not None and limit < 1):
            raise ValueError("offset must be >= 0 and limit >= 1 (or None)")
        key = self.memory_key(config)
        if state is None:
            state = await self._session.acheckpoint_state(key, config)
        return await asyncio.to_thread(self._transcript, key, config, state, offset, limit)

    def recall_corpus(self, config: RunnableConfig | None) -> Corpus:
        """What ``archive_search`` ranks for the config's memory (behaviour §7.6): the
        per-archive search indexes of its current timeline (from the process cache, else the
        store; an archive written before the index existed is indexed now), the abstracts
        Phase 2 wrote, its hidden message ids, the items moved out of its Working Memory, and
        the store's semantic search when the store has a vector index. Only the archives a
        result shows are read in full."""
        with self._scoper.serving(config):
            thread_id = self._scoper.readable(config)
            self._scoper.bind_for_read(thread_id, config)
            timeline = self._session.timeline_for_thread(thread_id, config)
            current = self._archives.current_wm(thread_id, timeline) if timeline else None
            return store_corpus(
                SearchIndex(self._archives),
                thread_id,
                timeline,
                hidden=self._archives.hidden_ids(thread_id) if timeline else set(),
                moved=self._moved_of(thread_id, current) if timeline else [],
                settled=_settled(current),
            )

    # -- display -----------------------------------------------------------------------------
    def report(
        self,
        config: RunnableConfig | None,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        where: str = "",
        assume: WorkingMemoryConfig | Literal["memory"] | None = "memory",
        assumed_from: str = "",
    ) -> ThreadReport:
        """What the memory did in the config's thread, as pictures: in Jupyter the report and
        its parts (``.working_memory``, ``.commits``, ``.archives``, ``.calls``) display
        themselves; ``.save(path)`` writes one self-contained HTML file. Reads only.

        The model input of each call is rebuilt from the checkpoint the call started from, with
        the store as it was then and the settings the thread recorded for that moment
        (docs/guide.md, "See what it did").

        Args:
            config: Names the thread (as for :meth:`transcript`).
            checkpointer: The graph's checkpointer; default: the one given to the memory, else
                the one its hooks last ran with (with none, the report has no per-call sizes).
                A memory that has none takes it as its own (:meth:`use_checkpointer`): it is
                what tells a deleted thread, which reports nothing (behaviour §6.8).
            where: Where the thread is kept, for the report's heading.
            assume: The settings of calls the thread's records do not cover (it ran before
                settings were recorded): ``"memory"`` (default) this memory's, a config, or
                None to leave those calls out. The report says which calls are so rebuilt.
            assumed_from: Where ``assume`` comes from, as the report says it (e.g. the CLI's
                ``--budget 6000``).
        """
        from wm_langgraph.display.history import AsOfStore
        from wm_langgraph.display.report import (
            IN_SUBGRAPH,
            NO_CHECKPOINTER,
            ReportSource,
            ThreadReport,
        )
        from wm_langgraph.storage.settings import read_settings, settings_values

        if checkpointer is not None:
            self.use_checkpointer(checkpointer)
        with self._scoper.serving(config):
            key = self._scoper.readable(config)
            store = self._archives.store_for(key)
            thread_id, scope = split_memory_key(key)
            in_subgraph = bool(scope.partition("|")[2])  # its calls: in a subgraph's checkpoints
            saver = None if in_subgraph else checkpointer or self._session.checkpointer_of(key)
            found = (
                saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
                if saver is not None
                else None
            )
            latest = dict(found.checkpoint.get("channel_values") or {}) if found else None
            archives = self._list_archives(key, config)
            conversation = self._transcript(key, config, latest, 0, None).messages
            recorded = read_settings(self._archives, key)
        view = AsOfStore(store)
        replicas: dict[str, WorkingMemory] = {}

        def replica(settings: WorkingMemoryConfig) -> WorkingMemory:
            digest = repr(sorted(settings_values(settings).items()))
            if digest not in replicas:
                replicas[digest] = WorkingMemory(
                    config=settings,
                    store=view,
                    token_counter=self._counter,
                    system_prompt=self._system_prompt,
                    name=self.name,
                    scope=self._scope,
                )
            return replicas[digest]

        def rebuild(
            messages: Sequence[BaseMessage],
            state: Mapping[str, Any],
            at: Any,
            settings: WorkingMemoryConfig,
        ) -> AssembledContext:
            view.as_of = at
            return replica(settings).build_context(messages, config, state=state)

        if assume == "memory":
            assume, assumed_from = self.config, assumed_from or "this memory's settings"
        return ThreadReport(
            ReportSource(
                thread_id=thread_id,
                key=key,
                store=store,
                archives=archives,
                conversation=conversation,
                config=self.config,
                count_text=self._counter,
                count_message=self._count_message,
                checkpointer=saver,
                rebuild=rebuild,
                where=where,
                no_calls=IN_SUBGRAPH if in_subgraph else NO_CHECKPOINTER,
                settings=tuple(recorded),
                assumed=assume,
                assumed_from=assumed_from,
            )
        )

    async def areport(
        self,
        config: RunnableConfig | None,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        where: str = "",
        assume: WorkingMemoryConfig | Literal["memory"] | None = "memory",
        assumed_from: str = "",
    ) -> ThreadReport:
        """Async twin of :meth:`report` (safe with async stores and checkpointers on their
        loop: the report is read, and its calls rebuilt, off the loop)."""

        def read() -> ThreadReport:
            report = self.report(
                config,
                checkpointer=checkpointer,
                where=where,
                assume=assume,
                assumed_from=assumed_from,
            )
            report.calls  # noqa: B018 - rebuilt here, off the event loop
            return report

        return await asyncio.to_thread(read)

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
        with self._scoper.serving(config):
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

    # -- deletion ----------------------------------------------------------------------------
    def purge(
        self,
        config: RunnableConfig | None,
        *,
        store: BaseStore | None = None,
        long_term: bool = False,
    ) -> int:
        """Delete every record the memory keeps for the config's thread ("delete my chat").

        Everything under the thread's namespace prefix in the store goes, whatever its kind:
        archives (the verbatim messages), Working Memory versions, the message-id index,
        moved-out items, bookkeeping, and the records of every named or subgraph memory of the
        thread. Queued background work of the thread is dropped first (a running round is
        waited for). The checkpoints are the checkpointer's: follow
        ``checkpointer.delete_thread(thread_id)`` with this call (docs/reliability.md).

        Args:
            config: Names the thread (``configurable.thread_id``; ``user_id`` for long-term).
            store: The store to delete from; default: the memory's store (``store=``, else the
                one the thread last ran with in this process, else the one used last). Pass
                it when one memory serves several stores (tenants), or in a fresh process.
            long_term: Also delete the long-term facts (behaviour §8) of the config's
                ``user_id`` that were last written from this thread.

        Returns:
            How many store records were deleted.

        Raises:
            ValueError: ``long_term`` without ``configurable.user_id``.
        """
        key = self.memory_key(config)
        with self._scoper.serving(config), self._archives.using(store):
            self._runner.cancel(key)
            timeout = self.config.model_timeout_seconds
            self._runner.wait(key, timeout if timeout is not None else 60.0)
            deleted = self._archives.purge(key, whole_thread=True)
            if long_term:
                deleted += self._purge_long_term(key, config)
            self._session.forget(key)
            # every memory of the thread lost its records, and their archive ids may be reused
            self._reader.forget(key, whole_thread=True)
            SearchIndex(self._archives).forget(key, whole_thread=True)
        logger.info("wm_langgraph: purged %d record(s) of a thread", deleted)
        return deleted

    def _purge_long_term(self, key: str, config: RunnableConfig | None) -> int:
        user_id = ((config or {}).get("configurable") or {}).get("user_id")
        if user_id is None:
            raise ValueError("purge(long_term=True) needs configurable.user_id")
        from langgraph.store.base import PutOp

        from wm_langgraph.storage.longterm import facts_namespace

        store = self._archives.io(key)  # retried on transient errors, as every memory record
        namespace = facts_namespace(self.config.long_term_namespace, str(user_id))
        thread_id = split_memory_key(key)[0]
        doomed, offset = [], 0
        while page := store.search(namespace, limit=500, offset=offset):
            offset += len(page)
            for item in page:
                written_by = split_memory_key(str(item.value.get("thread_id", "")))[0]
                if written_by == thread_id:
                    doomed.append(PutOp(tuple(item.namespace), item.key, None))
        if doomed:
            store.batch(doomed)
        return len(doomed)

    async def apurge(
        self,
        config: RunnableConfig | None,
        *,
        store: BaseStore | None = None,
        long_term: bool = False,
    ) -> int:
        """Async twin of :meth:`purge` (safe with async stores on their loop)."""
        return await asyncio.to_thread(self.purge, config, store=store, long_term=long_term)

    def reset(self, config: RunnableConfig | None, *, store: BaseStore | None = None) -> int:
        """Start a fresh Working Memory for the config's thread ("clear chat").

        Deletes this memory's records of the thread (as :meth:`purge` does, other memories of
        the thread are left alone) and marks the thread: the next hook run drops the deleted
        archives from the state's timeline, so no earlier Working Memory, archive or pending
        message reaches a prompt again. Clearing the messages is the caller's
        (``RemoveMessage(id=REMOVE_ALL_MESSAGES)``); ``REMOVE_ALL_MESSAGES`` alone keeps the
        memory, as compaction leaves no live messages either.

        Returns:
            How many store records were deleted.
        """
        key = self.memory_key(config)
        with self._scoper.serving(config), self._archives.using(store):
            self._runner.cancel(key)
            timeout = self.config.model_timeout_seconds
            self._runner.wait(key, timeout if timeout is not None else 60.0)
            timeline = self._session.timeline_for_thread(key, config)
            known = self._archives.listed_archive_ids(key)
            deleted = self._archives.purge(key)
            self._session.forget(key)
            self._reader.forget(key)  # its archive ids may be reused
            marker = sorted({*timeline, *known})
            if marker:
                self._archives.put_meta(key, RESET_META, {"archives": marker})
        return deleted

    async def areset(self, config: RunnableConfig | None, *, store: BaseStore | None = None) -> int:
        """Async twin of :meth:`reset`."""
        return await asyncio.to_thread(self.reset, config, store=store)

    def phase2_status(self, config: RunnableConfig | None) -> dict[str, Any]:
        """The thread's breaker record and whether its Phase 2 is paused now."""
        thread_id = self.memory_key(config)
        with self._scoper.serving(config):
            breaker = self._runner.breaker(thread_id)
            return {**breaker, "paused": self._runner.is_paused(thread_id)}

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
        return await in_hook_thread(self.overflow_guard, state, config)

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
