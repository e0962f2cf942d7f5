"""The state-side work of the hooks: read the meta, account the turn, commit, write it back.

The meta is read from ``state["working_memory"]``: a channel of every graph the hooks are nodes
of (their input schema adds it, see ``_hooks``), so it is checkpointed with the messages and a
run resumed from any checkpoint (a fork, time travel) continues that checkpoint's own timeline.
Only hooks called outside a graph, or from inside another node function of a graph without the
channel, keep the meta in the store, keyed by thread. Every update carries the meta under
``working_memory`` (a graph without that channel ignores the key), and the store copy is
refreshed whenever the state had none.

Config-only reads have no state, only a config: which timeline they see (the checkpoint's, the
store's pointer, nothing of a deleted thread) is :mod:`.timelines`.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from wm_langgraph._compat import NS_SEP, in_graph_run, run_checkpointer
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.phase1.archiving import Phase1Result, archive_oldest
from wm_langgraph.phase1.timelines import (
    MAX_THREADS,
    CheckpointTimelines,
    Place,
    TimelinePointer,
    graph_checkpointer,
    graph_meta,
    thread_checkpointer,
)
from wm_langgraph.phase1.window import (
    MessageCounter,
    account_messages,
    account_tail,
    conversation,
    ensure_message_ids,
    live_tokens,
    new_messages_start,
    newest_turn_start,
)
from wm_langgraph.phase2.runner import Phase2Runner
from wm_langgraph.state import META_KEY, WorkingMemoryMeta, clamp_meta
from wm_langgraph.storage.archives import (
    ArchiveStore,
    message_signature,
    thread_id_from_config,
)
from wm_langgraph.storage.beside import checkpointer_beside
from wm_langgraph.storage.keys import NoStoreError

__all__ = ["Session"]

logger = logging.getLogger("wm_langgraph")


_MAX_ACCOUNTED = 256  # memory keys whose latest accountings are kept
_ACCOUNTINGS_PER_KEY = 4


logger = logging.getLogger("wm_langgraph")

COMMIT_START_EVENT = "wm_commit_start"
"""Custom stream event of a commit's start (Phase 1 archived messages): payload ``thread_id``
(the memory key), ``archive_ids``, ``messages``, ``tokens``, ``background``."""

COMMIT_END_EVENT = "wm_commit_end"
"""Custom stream event of a commit's end in the run: payload ``thread_id``, ``archive_ids`` and
``phase2``: ``"done"`` / ``"failed"`` / ``"paused"`` / ``"busy"`` for an inline Phase 2,
``"queued"`` when it runs in the background (``memory.wait`` / ``await_phase2`` wait for it)."""


def emit_commit_event(name: str, payload: Mapping[str, Any], config: RunnableConfig | None) -> None:
    """Tell the run's streams about a commit: ``stream_mode="custom"`` gets
    ``{"type": name, **payload}``, ``astream_events`` an ``on_custom_event`` named ``name``.
    Outside a run, or when a stream cannot take it, nothing happens: a commit never fails
    for its event."""
    data = {"type": name, **payload}
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()(data)
    except Exception:  # not in a run, or no custom stream
        pass
    try:
        # The node's own config: the one the engine passes down has the streaming handlers
        # taken out (the writer's tokens must not reach the streams; this event must).
        from langgraph.config import get_config

        run_config: RunnableConfig | None = get_config()
    except RuntimeError:
        run_config = config
    if run_config is None or not run_config.get("callbacks"):
        return
    try:
        from langchain_core.callbacks.manager import dispatch_custom_event

        dispatch_custom_event(name, data, config=run_config)
    except Exception:  # no parent run to attach the event to
        logger.debug("wm_langgraph: commit event %s not dispatched", name, exc_info=True)


def require_checkpointer(config: RunnableConfig | None) -> None:
    """Inside a graph run, the graph must persist its state between invocations."""
    configurable = (config or {}).get("configurable") or {}
    if in_graph_run(configurable) and run_checkpointer(configurable) is None:
        raise ValueError(
            "Working Memory hooks need a checkpointer: compile the graph (or create_react_agent) "
            "with checkpointer=... (e.g. InMemorySaver() or open_sqlite(path)), otherwise the "
            "archived messages would come back on the next invocation"
        )


_STORE_META = "state"
RESET_META = "reset"
"""The bookkeeping value ``WorkingMemory.reset`` leaves: the archive ids it deleted. The next
hook run drops them from the state's timeline and starts a fresh Working Memory."""


def _renamed(messages: Sequence[BaseMessage], reused: set[str]) -> list[BaseMessage]:
    """``messages`` with each message under a reused id given a new id of its own (copies)."""
    out: list[BaseMessage] = []
    for message in messages:
        if message.id in reused:
            new_id = f"{message.id}~{uuid.uuid4().hex[:12]}"
            logger.info(
                "wm_langgraph: message id %r was reused for a new message (an archived message "
                "has that id and other content); the new message is kept as %r",
                message.id,
                new_id,
            )
            out.append(message.model_copy(update={"id": new_id}))
        else:
            out.append(message)
    return out


def _in_subgraph(config: RunnableConfig | None) -> bool:
    """True inside a graph that runs as a node (or a call) of a parent graph."""
    configurable = (config or {}).get("configurable") or {}
    return NS_SEP in str(configurable.get("checkpoint_ns") or "")


def _copy_meta(meta: WorkingMemoryMeta) -> WorkingMemoryMeta:
    """A copy that shares no list with ``meta``."""
    return {
        **meta,
        "window": [list(entry) for entry in meta["window"]],
        "archives": list(meta["archives"]),
    }


@dataclass
class _Turn:
    thread_id: str
    messages: list[BaseMessage]
    ids_assigned: bool
    meta: WorkingMemoryMeta
    in_state: bool
    # Live messages this turn takes out of the state without archiving them: the removals of a
    # commit that never reached the checkpoint, and re-sent ids of already archived messages.
    removals: list[str]
    reset: bool = False  # the state's timeline was dropped (``WorkingMemory.reset``)


class Session:
    """Implements after_turn / compact / post_model_hook / overflow on states."""

    def __init__(
        self,
        archives: ArchiveStore,
        runner: Phase2Runner,
        config: WorkingMemoryConfig,
        count: MessageCounter,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        *,
        forget_cached: Callable[[str], None] | None = None,
    ) -> None:
        """Bind the session logic to its store, runner, settings and token counter
        (``checkpointer``: the graph's, for config-only reads before any hook ran;
        ``forget_cached``: drops what the memory cached of a memory key's archive records,
        called when a turn starts a lineage without archives)."""
        self._checkpoints = CheckpointTimelines(checkpointer, self.place, self._beside)
        self._forget_cached = forget_cached
        self._pointer = TimelinePointer(archives, self._checkpoints)
        self._archives = archives
        self._runner = runner
        self._config = config
        self._count = count
        self._touched: set[Place] = set()
        self._lock = threading.Lock()
        # The latest accounting per memory key: the messages and the meta it produced.
        self._accounted: OrderedDict[str, list[tuple[list[BaseMessage], WorkingMemoryMeta]]] = (
            OrderedDict()
        )

    def use_checkpointer(self, checkpointer: BaseCheckpointSaver[Any]) -> None:
        """The checkpointer for threads no hook has run for yet (when none was given)."""
        self._checkpoints.use_default(checkpointer)

    def _beside(self, thread_id: str) -> BaseCheckpointSaver[Any] | None:
        """The checkpoints kept beside the store of ``thread_id`` (``storage.beside``)."""
        return checkpointer_beside(self._archives.store_for(thread_id))

    def place(self, thread_id: str) -> Place:
        """Where the memory ``thread_id`` lives in this context (its store, its key)."""
        try:
            return (id(self._archives.store_for(thread_id)), thread_id)
        except NoStoreError:
            return (0, thread_id)

    # -- reading state -----------------------------------------------------------------------
    @staticmethod
    def messages_of(state: Mapping[str, Any]) -> list[BaseMessage]:
        """The state's messages as message objects.

        Raises:
            ValueError: The state has no ``messages`` list.
        """
        Session.messages_of_check(state)
        return convert_to_messages(list(state["messages"]))

    @staticmethod
    def messages_of_check(state: Mapping[str, Any]) -> None:
        """Raise the errors of :meth:`messages_of` without converting anything."""
        if not isinstance(state, Mapping):
            raise TypeError(f"state must be a mapping, got {type(state).__name__}")
        if not isinstance(state.get("messages"), list | tuple):
            raise ValueError(
                "Working Memory hooks need a state with a 'messages' list "
                "(use WorkingMemoryState or a schema with messages: Annotated[list, add_messages])"
            )

    def _stored(self, thread_id: str) -> dict[str, Any]:
        return self._archives.get_meta(thread_id, _STORE_META) or {}

    @staticmethod
    def state_meta(
        state: Mapping[str, Any], config: RunnableConfig | None
    ) -> Mapping[str, Any] | None:
        """The meta of the state's own lineage: the state's value, or (inside a graph that
        checkpoints it) the channel's, ``{}`` when empty; None when the meta lives in the store."""
        raw = state.get(META_KEY)
        if isinstance(raw, Mapping):
            return raw
        return graph_meta(config)

    def timeline_of(
        self, state: Mapping[str, Any], thread_id: str, config: RunnableConfig | None = None
    ) -> list[str]:
        """The archive ids of the state's timeline."""
        raw = self.state_meta(state, config)
        if raw is not None:
            return clamp_meta(raw, self._config.commit_keep_recent_count)["archives"]
        return self.timeline_for_thread(thread_id, config)

    def model_view(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> tuple[list[BaseMessage], list[str]]:
        """The state's messages as the model may see them, and the state's timeline: without
        re-sent ids of archived messages (the next after_turn takes them out of the state)."""
        thread_id = thread_id_from_config(config)
        messages = self.messages_of(state)
        raw = self.state_meta(state, config)
        in_state = raw is not None
        if raw is None:
            raw = self._stored(thread_id).get("meta") or {
                "archives": self.timeline_for_thread(thread_id, config)
            }
        meta = clamp_meta(raw, self._config.commit_keep_recent_count)
        resent, _ = self.resends(thread_id, messages, meta, everything=not in_state)
        shown = [m for m in messages if m.id not in resent and not isinstance(m, RemoveMessage)]
        return shown, meta["archives"]

    def forget(self, thread_id: str) -> None:
        """Drop what this process remembers of ``thread_id`` in the current store (its records
        were deleted: the next turn starts from the store, not from these caches)."""
        place = self.place(thread_id)
        with self._lock:
            self._touched.discard(place)
        self._pointer.forget(place)

    def timeline_for_thread(
        self, thread_id: str, config: RunnableConfig | None = None
    ) -> list[str]:
        """The thread's timeline for config-only calls: the one of the thread's checkpoint (the
        config's ``checkpoint_id``, else the latest) when the checkpointer is known, else the
        store's pointer (only ever what a checkpoint confirmed, see :meth:`_finish`)."""
        return self._pointer.read(thread_id, config)

    def checkpointer_of(self, thread_id: str) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer the thread's hooks last ran with (else the one given, else the
        checkpoints kept beside the store), or None."""
        return self._checkpoints.reader(thread_id)

    def checkpoint_state(
        self, thread_id: str, config: RunnableConfig | None = None
    ) -> dict[str, Any] | None:
        """The live messages and meta of the thread's checkpoint for config-only reads (None
        when the checkpointer is unknown or async-only)."""
        return self._checkpoints.state(thread_id, config)

    async def acheckpoint_state(
        self, thread_id: str, config: RunnableConfig | None = None
    ) -> dict[str, Any] | None:
        """:meth:`checkpoint_state` through the checkpointer's async API."""
        return await self._checkpoints.astate(thread_id, config)

    def confirm_timelines(self) -> None:
        """Before the process goes: bring the store's pointer up to the checkpoints."""
        self._pointer.confirm_all()

    def _messages_for(
        self, state: Mapping[str, Any], meta: WorkingMemoryMeta
    ) -> tuple[list[BaseMessage], bool]:
        """The state's messages with ids. Messages up to the last accounted one were checked
        when they were accounted, so only the new tail is checked (O(new messages))."""
        raw = state.get("messages")
        index = meta["last_counted_index"]
        if isinstance(raw, list) and 0 <= index < len(raw):
            anchor = raw[index]
            if (
                isinstance(anchor, BaseMessage)
                and anchor.id == meta["last_counted_id"]
                and all(isinstance(m, BaseMessage) and m.id for m in raw[index + 1 :])
            ):
                return raw, False
        return ensure_message_ids(self.messages_of(state))

    def _load(self, state: Mapping[str, Any], config: RunnableConfig | None) -> _Turn:
        thread_id = thread_id_from_config(config)
        self._checkpoints.remember(thread_id, config)
        self.messages_of_check(state)
        keep = self._config.commit_keep_recent_count
        raw = self.state_meta(state, config)
        in_state = raw is not None
        stored: dict[str, Any] = {}
        if not in_state:
            stored = self._stored(thread_id)
            raw = stored.get("meta")
            if raw is None:  # first turn: continue the thread's timeline, if it has one
                raw = {"archives": self._archives.timeline(thread_id)}
        meta = clamp_meta(raw if isinstance(raw, Mapping) else None, keep)
        reset = False
        if not meta["archives"] and self._forget_cached is not None:
            # A lineage without archives (a new conversation, perhaps on the id of a deleted
            # one whose records another process removed): its archives will reuse the ids of
            # records this process may have cached.
            self._forget_cached(thread_id)
        if meta["keep_recent_count"] != keep:  # the setting changed: recount from scratch
            meta = {
                **meta,
                "keep_recent_count": keep,
                "window": [],
                "pending_tokens": 0,
                "last_counted_id": None,
                "last_counted_index": -1,
            }
        messages, assigned = self._messages_for(state, meta)
        # A meta read from the store in a subgraph (whose state may last one parent step) cannot
        # vouch for the messages before its last accounted one: the parent re-sends archived ones.
        everything = not in_state and _in_subgraph(config)
        signatures: dict[str, str] = {}
        if meta["archives"]:
            # The reset marker and the new messages' archive index entries: one round trip.
            marker, signatures = self._archives.meta_and_signatures(
                thread_id,
                RESET_META,
                [str(m.id) for m in self._fresh(messages, meta, everything=everything)],
                meta["archives"],
            )
            dropped = {str(a) for a in (marker or {}).get("archives") or []}
            if dropped.intersection(meta["archives"]):
                meta, reset = clamp_meta(None, keep), True  # a fresh start: recount it all
                messages, assigned = self._messages_for(state, meta)
        removals: list[str] = []
        if stored.get("removed_ids"):  # a commit whose removal never reached the checkpoint
            present = {m.id for m in messages}
            removals = [i for i in stored["removed_ids"] if i in present]
        resent, reused = self.resends(
            thread_id, messages, meta, everything=everything, signatures=signatures
        )
        if reused:
            messages = _renamed(messages, reused)
            assigned = True  # the update replaces the messages: the new ids reach the state
        removals += sorted(resent - set(removals))
        # Removal requests are appended after the messages accounted last (the hooks take
        # them out every time), so only the new messages are looked at.
        fresh = new_messages_start(meta, messages) or 0
        requests = [str(m.id) for m in messages[fresh:] if isinstance(m, RemoveMessage)]
        if requests:  # RemoveMessage of ids that are not live (archive_aware_add_messages)
            hidden = self._archives.archived_among(thread_id, requests, meta["archives"])
            if hidden:
                self._archives.hide_messages(thread_id, sorted(hidden))
            removals += [i for i in requests if i not in removals]
        if removals:
            gone = set(removals)
            messages = [m for m in messages if m.id not in gone]
        meta = self._account(thread_id, meta, messages)
        return _Turn(thread_id, messages, assigned, meta, in_state, removals, reset)

    def resends(
        self,
        thread_id: str,
        messages: Sequence[BaseMessage],
        meta: WorkingMemoryMeta,
        *,
        everything: bool = False,
        signatures: Mapping[str, str] | None = None,
    ) -> tuple[set[str], set[str]]:
        """Messages new since the meta's last accounting whose id an archive of the meta's
        timeline already holds, in two kinds:

        - *re-sent*: the same message again (a parent graph passing its whole history on every
          turn, a client replaying the conversation). An archived message is immutable and is
          never archived a second time: these are taken out of the state again.
        - *reused*: another message under that id (a client that numbers its ids and restarted
          at ``u1``). It is a new message: kept, shown, and given an id of its own.

        Same or not is decided by :func:`~wm_langgraph.storage.archives.message_signature`.
        O(new messages): one batched store read, none when nothing is new (or none at all
        when the caller read them already: ``signatures``, as :meth:`_load` does).

        Returns:
            The re-sent ids and the reused ids.
        """
        if not meta["archives"]:
            return set(), set()
        fresh = self._fresh(messages, meta, everything=everything)
        if signatures is None:
            signatures = self._archives.archived_signatures(
                thread_id, [str(m.id) for m in fresh], meta["archives"]
            )
        resent: set[str] = set()
        reused: set[str] = set()
        for message in fresh:
            archived = signatures.get(str(message.id))
            if archived is None or isinstance(message, RemoveMessage):
                continue
            if archived and archived != message_signature(message):
                reused.add(str(message.id))
            else:
                resent.add(str(message.id))
        return resent, reused

    @staticmethod
    def _fresh(
        messages: Sequence[BaseMessage], meta: WorkingMemoryMeta, *, everything: bool
    ) -> list[BaseMessage]:
        """The messages new since the meta's last accounting (all with ``everything``)."""
        start = None if everything else new_messages_start(meta, messages)
        return [m for m in (messages if start is None else messages[start:]) if m.id]

    def _account(
        self, thread_id: str, meta: WorkingMemoryMeta, messages: list[BaseMessage]
    ) -> WorkingMemoryMeta:
        """:func:`account_messages`, counting only the new messages when the meta and the
        messages before them are exactly those of the thread's previous accounting.

        The previous accounting's messages are compared as a list (``==``: the very same
        objects, as within a run, compare at once; equal copies, as after a checkpoint is
        read again, compare field by field). Any difference (an edit, a removal, a fork, a
        commit) falls back to the full accounting, so the result is always exact.
        """
        with self._lock:
            previous = list(self._accounted.get(thread_id) or ())
        result: WorkingMemoryMeta | None = None
        copy: list[BaseMessage] | None = None  # the messages' copy to keep, when made
        for before, before_meta in reversed(previous):
            n = len(before)
            if not 0 < n <= len(messages) or meta != before_meta:
                continue
            if n == len(messages):
                if messages == before:  # nothing new: the same accounting again
                    result = account_tail(meta, messages, n, self._count)
                    if result == before_meta:
                        return result
                    break
                continue
            head = messages[:n]
            if head == before:
                result = account_tail(meta, messages, n, self._count)
                head.extend(messages[n:])
                copy = head
                break
        if result is None:
            result = account_messages(meta, messages, self._count)
        self._remember_accounting(thread_id, messages, result, owned=copy)
        return result

    def _remember_accounting(
        self,
        thread_id: str,
        messages: Sequence[BaseMessage],
        meta: WorkingMemoryMeta,
        *,
        owned: list[BaseMessage] | None = None,
    ) -> None:
        """Keep the accounting (a few per memory key: a run resumed from an earlier checkpoint
        starts from an older one). ``owned``: a copy of ``messages`` already made, kept as is
        (otherwise ``messages`` is copied: the caller's list may change later)."""
        entry = (owned if owned is not None else list(messages), _copy_meta(meta))
        with self._lock:
            kept = [e for e in self._accounted.get(thread_id) or [] if e[1] != entry[1]]
            self._accounted[thread_id] = [*kept[-(_ACCOUNTINGS_PER_KEY - 1) :], entry]
            self._accounted.move_to_end(thread_id)
            while len(self._accounted) > _MAX_ACCOUNTED:
                self._accounted.popitem(last=False)

    def resent_ids(
        self,
        thread_id: str,
        messages: Sequence[BaseMessage],
        meta: WorkingMemoryMeta,
        *,
        everything: bool = False,
    ) -> set[str]:
        """The re-sent ids of :meth:`resends` (the same archived message sent again)."""
        return self.resends(thread_id, messages, meta, everything=everything)[0]

    # -- writing state -----------------------------------------------------------------------
    def _finish(
        self,
        turn: _Turn,
        result: Phase1Result | None,
        config: RunnableConfig | None,
        *,
        resume: bool = True,
    ) -> dict[str, Any]:
        meta = result.meta if result is not None else turn.meta
        removed = [str(m.id) for m in result.archived] if result is not None else []
        update: dict[str, Any] = {META_KEY: dict(meta)}
        if turn.reset:
            self._archives.delete_meta(turn.thread_id, RESET_META)
        if turn.ids_assigned:
            live = result.remaining if result is not None else turn.messages
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *live]
        elif removed or turn.removals:
            update["messages"] = [RemoveMessage(id=i) for i in [*turn.removals, *removed]]
        if not turn.in_state or _in_subgraph(config):
            # A subgraph's state may last one parent step only (no checkpointer of its own): the
            # next step starts without the meta, so the store copy must be current there too.
            # Removals this update carries but the checkpoint has not confirmed yet: the earlier
            # unfinished ones too, or a crash before this update is checkpointed forgets them.
            pending_removals = [*turn.removals, *removed]
            self._archives.put_meta(
                turn.thread_id, _STORE_META, {"meta": dict(meta), "removed_ids": pending_removals}
            )
        # The store's pointer serves config-only reads of processes that do not know the
        # checkpointer. Inside a checkpointed graph this update is not durable until the graph
        # writes its checkpoint (a crash in between leaves the archive's messages live), so the
        # pointer gets the timeline the state was read with: one a checkpoint confirmed. It
        # also says whether the thread runs under a checkpointer: then its checkpoints decide
        # what is readable (a deleted thread reads as nothing, see .timelines).
        checkpointed = turn.in_state and graph_checkpointer(config) is not None
        confirmed = turn.meta["archives"] if checkpointed else None
        self._sync_timeline(
            turn.thread_id,
            meta["archives"],
            config,
            confirmed=confirmed,
            resume=resume,
            checkpointed=thread_checkpointer(config) is not None,
            beside=self._checkpoints.kept_beside(turn.thread_id, config),
        )
        return update

    def _sync_timeline(
        self,
        thread_id: str,
        archives: list[str],
        config: RunnableConfig | None,
        *,
        resume: bool = True,
        confirmed: list[str] | None = None,
        checkpointed: bool = False,
        beside: bool | None = None,
    ) -> None:
        pointer = archives if confirmed is None else confirmed
        place = self.place(thread_id)
        with self._lock:
            first_touch = place not in self._touched
            if len(self._touched) >= MAX_THREADS and first_touch:
                self._touched.clear()  # a later first touch only re-checks for pending work
            self._touched.add(place)
        self._pointer.write(
            thread_id,
            pointer,
            behind=pointer != archives,
            checkpointed=checkpointed,
            beside=beside,
        )
        # ``resume`` is False when the caller schedules Phase 2 itself (a commit): the job it
        # schedules folds these archives too, so scheduling here as well would run it twice.
        if resume and first_touch and archives and not self._runner.is_paused(thread_id):
            current = self._archives.current_wm(thread_id, archives)
            if current is None or len(current.covers) < len(archives):
                # First sight of a thread with archives never folded in (a restart after an
                # interrupted Phase 2): resume them.
                self.schedule(thread_id, archives, config, wait=not self._config.background)

    def schedule(
        self,
        thread_id: str,
        timeline: Sequence[str],
        config: RunnableConfig | None,
        *,
        wait: bool,
    ) -> str:
        """Run Phase 2 for the timeline: inline when ``wait``, else in the background.

        Returns:
            The inline run's outcome (``"done"``, ``"failed"``, ``"noop"``, ``"paused"``,
            ``"busy"``), or ``"queued"``.
        """
        configurable = (config or {}).get("configurable") or {}
        user_id = configurable.get("user_id")
        callbacks = (config or {}).get("callbacks")
        user = str(user_id) if user_id is not None else None
        if wait:
            return self._runner.run_inline(thread_id, timeline, user_id=user, callbacks=callbacks)
        self._runner.submit(thread_id, timeline, user_id=user, callbacks=callbacks)
        return "queued"

    def _commit(
        self, turn: _Turn, config: RunnableConfig | None, *, keep: int, wait: bool
    ) -> dict[str, Any]:
        result = archive_oldest(
            self._archives,
            turn.thread_id,
            turn.messages,
            turn.meta,
            keep=keep,
            window_keep=self._config.commit_keep_recent_count,
            count=self._count,
        )
        if result is not None:  # the next turn starts from what stays live
            self._remember_accounting(turn.thread_id, result.remaining, result.meta)
        scheduled = result is not None or wait
        update = self._finish(turn, result, config, resume=not scheduled)
        archived = [r.id for r in result.records] if result is not None else []
        if archived:
            emit_commit_event(
                COMMIT_START_EVENT,
                {
                    "thread_id": turn.thread_id,
                    "archive_ids": archived,
                    "messages": len(result.archived) if result is not None else 0,
                    "tokens": sum(r.token_count for r in result.records) if result else 0,
                    "background": not wait,
                },
                config,
            )
        if scheduled:
            timeline = update[META_KEY]["archives"]
            outcome = self.schedule(turn.thread_id, timeline, config, wait=wait)
            if archived:
                emit_commit_event(
                    COMMIT_END_EVENT,
                    {
                        "thread_id": turn.thread_id,
                        "archive_ids": archived,
                        "phase2": outcome if wait else "queued",
                    },
                    config,
                )
        return update

    # -- the hooks ---------------------------------------------------------------------------
    def after_turn(self, state: Mapping[str, Any], config: RunnableConfig | None) -> dict[str, Any]:
        """Account the turn; commit (keep the recent window) when over the threshold."""
        require_checkpointer(config)
        turn = self._load(state, config)
        if turn.meta["pending_tokens"] >= self._config.commit_threshold_tokens:
            return self._commit(
                turn,
                config,
                keep=self._config.commit_keep_recent_count,
                wait=not self._config.background,
            )
        return self._finish(turn, None, config)

    def compact(self, state: Mapping[str, Any], config: RunnableConfig | None) -> dict[str, Any]:
        """Archive every live message and fold the pending archives in before returning."""
        return self._commit(self._load(state, config), config, keep=0, wait=True)

    def post_model_hook(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> dict[str, Any]:
        """after_turn for ``create_react_agent``: commits only once the model has answered
        (no pending tool calls) and always keeps that answer live (the agent routes on it)."""
        require_checkpointer(config)
        turn = self._load(state, config)
        last = turn.messages[-1] if turn.messages else None
        answered = isinstance(last, AIMessage) and not last.tool_calls
        if answered and turn.meta["pending_tokens"] >= self._config.commit_threshold_tokens:
            keep = max(1, self._config.commit_keep_recent_count)
            update = self._commit(turn, config, keep=keep, wait=not self._config.background)
        else:
            update = self._finish(turn, None, config)
        return update

    def overflow(
        self, state: Mapping[str, Any], config: RunnableConfig | None
    ) -> tuple[dict[str, Any] | None, list[BaseMessage], list[str]]:
        """Commit inline, keeping the newest turn, when the live messages outgrow the budget.

        Returns:
            The state update (None when nothing was done), the live messages after it, and the
            timeline's archive ids.
        """
        require_checkpointer(config)
        turn = self._load(state, config)
        budgets = compute_budgets(
            self._config.tokens,
            self._config.reserve_tokens,
            self._config.archive_memory_tokens,
        )
        if live_tokens(turn.meta) <= budgets.usable - budgets.archive:
            if turn.removals or turn.ids_assigned or turn.reset:  # e.g. re-sent archived ids
                return self._finish(turn, None, config), turn.messages, turn.meta["archives"]
            return None, turn.messages, turn.meta["archives"]
        convo = conversation(turn.messages)
        keep = len(convo) - newest_turn_start(convo)
        update = self._commit(turn, config, keep=keep, wait=True)
        archives = list(update[META_KEY]["archives"])
        gone = {m.id for m in update.get("messages", []) if isinstance(m, RemoveMessage)}
        live = [m for m in turn.messages if m.id not in gone]
        if any(m.id == REMOVE_ALL_MESSAGES for m in update.get("messages", [])):
            live = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
        return update, live, archives
