"""How the memory meets the graph it runs in: the graph's store, the caller's callbacks, streams.

Private helpers of :mod:`wm_langgraph.memory`:

- :func:`graph_store`: the store LangGraph hands the running graph (``compile(store=...)``,
  ``create_agent(store=...)``, the platform's store under ``langgraph dev``) — read from the
  run's ``Runtime`` in the config, as ``langgraph.config.get_store()`` does.
- :func:`internal_callbacks`: the callbacks the Working Memory writer's runs get. Tracers
  (LangSmith's, any ``BaseTracer`` in ``config["callbacks"]``) keep seeing them; handlers that
  feed the user's streams (``astream_events``, ``astream_log``, ``stream_mode="messages"``:
  ``_compat.is_streaming_handler``) never do, so no writer token reaches a chat UI.
- :func:`quiet_node_output`: the messages a hook node returns only for the model's input (the
  system addition, the ``[Session History Summary]``, pending archives) or to remove messages are
  not conversation; ``stream_mode="messages"`` streams node outputs, so they are marked as seen.
- :func:`loop_bound`: whether a store's sync API would deadlock on the current event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore
from langgraph.store.base.batch import AsyncBatchedBaseStore

from wm_langgraph._compat import (
    in_graph_run,
    is_streaming_handler,
    run_checkpointer,
    run_runtime,
    store_event_loop,
    stream_seen_ids,
)
from wm_langgraph.errors import ConflictingMiddlewareError

__all__ = [
    "LC_SOURCE",
    "ConflictingMiddlewareError",
    "companion_store",
    "graph_store",
    "in_run",
    "internal_callbacks",
    "loop_bound",
    "quiet_node_output",
    "reject_foreign_summaries",
]

logger = logging.getLogger("wm_langgraph")

LC_SOURCE = "wm_langgraph"
"""``metadata["lc_source"]`` of the writer's runs (LangChain's marker for middleware calls)."""

try:  # langchain >= 1.3 marks middleware-internal model calls with it
    from langchain.agents.middleware.internal_call_transformer import internal_call_metadata
except ImportError:  # pragma: no cover - older langchain

    def internal_call_metadata() -> dict[str, Any]:
        """No internal-call marker in this langchain version."""
        return {}


def in_run(configurable: Mapping[str, Any]) -> bool:
    """True when the config is a running graph task's."""
    return in_graph_run(configurable)


def graph_store(configurable: Mapping[str, Any]) -> BaseStore | None:
    """The running graph's store (None outside a run, or when the graph has none).

    A graph with no store whose checkpointer lives in this process only (``InMemorySaver``)
    gets an ``InMemoryStore`` of the same lifetime (see :func:`companion_store`); a graph with
    a persistent checkpointer and no store gets None (the hooks raise ``NoStoreError``).
    """
    runtime = run_runtime(configurable)
    store = getattr(runtime, "store", None)
    if isinstance(store, BaseStore):
        return store
    if in_run(configurable):
        try:
            from langgraph.config import get_store

            found = get_store()
        except (RuntimeError, KeyError, AttributeError):
            found = None
        if isinstance(found, BaseStore):
            return found
        return companion_store(run_checkpointer(configurable))
    return None


_COMPANIONS: weakref.WeakKeyDictionary[Any, BaseStore] = weakref.WeakKeyDictionary()
_COMPANIONS_LOCK = threading.Lock()


def companion_store(checkpointer: object) -> BaseStore | None:
    """An ``InMemoryStore`` for a graph that has none, when that is safe: its checkpointer is
    LangGraph's ``InMemorySaver`` itself (not a subclass, which may persist), so the thread's
    live messages and its archives both end with the process. One store per checkpointer,
    dropped with it; said once per checkpointer at WARNING.

    Returns:
        The companion store, or None for any other checkpointer (or none).
    """
    from langgraph.checkpoint.memory import InMemorySaver

    if type(checkpointer) is not InMemorySaver:
        return None
    with _COMPANIONS_LOCK:
        store = _COMPANIONS.get(checkpointer)
        if store is None:
            from langgraph.store.memory import InMemoryStore

            store = _COMPANIONS[checkpointer] = InMemoryStore()
            logger.warning(
                "wm_langgraph: the graph has an InMemorySaver and no store: the Working Memory "
                "keeps its archives in an InMemoryStore that lives as long as that checkpointer "
                "(this process). Compile the graph with store= to choose the store; a persistent "
                "checkpointer needs one"
            )
    return store


def _user_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's metadata without LangGraph's per-task keys (they describe its node)."""
    return {
        key: value
        for key, value in metadata.items()
        if not key.startswith(("langgraph_", "checkpoint_", "__"))
    }


def internal_callbacks(
    callbacks: Any, *, thread_id: str, scope: str
) -> BaseCallbackManager | list[BaseCallbackHandler] | None:
    """The callbacks for the writer's runs started from a hook run with ``callbacks``.

    A callback manager is copied without streaming handlers, keeping its parent run (an inline
    commit nests under the hook that started it; a background one is made a root run by the
    runner) and the caller's tags and metadata, plus LangChain's internal-call markers
    (``lc_source``, ``internal_call_metadata()``) and the thread id.
    """
    extra: dict[str, Any] = {"lc_source": LC_SOURCE, **internal_call_metadata()}
    extra["thread_id"] = thread_id
    if scope:
        extra["wm_scope"] = scope
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        for handler in [*manager.handlers, *manager.inheritable_handlers]:
            if is_streaming_handler(handler):
                manager.remove_handler(handler)
        manager.inheritable_metadata = _user_metadata(manager.inheritable_metadata)
        manager.metadata = _user_metadata(manager.metadata)
        manager.add_metadata(extra, inherit=True)
        return manager
    if isinstance(callbacks, list):
        kept = [
            h
            for h in callbacks
            if isinstance(h, BaseCallbackHandler) and not is_streaming_handler(h)
        ]
        from langchain_core.callbacks import CallbackManager

        manager = CallbackManager(handlers=kept, inheritable_handlers=list(kept))
        manager.add_metadata(extra, inherit=True)
        return manager
    return None


def _handlers(callbacks: Any) -> list[Any]:
    if isinstance(callbacks, BaseCallbackManager):
        return [*callbacks.handlers, *callbacks.inheritable_handlers]
    if isinstance(callbacks, list):
        return list(callbacks)
    return []


def quiet_node_output(update: Any, callbacks: Any) -> None:
    """Keep a hook node's output messages out of ``stream_mode="messages"``.

    LangGraph's messages stream emits the messages of a node's output that it has not seen in
    the node's input, deduplicated by id; the hook's messages are marked seen.
    """
    if not isinstance(update, Mapping):
        return
    messages: list[BaseMessage] = []
    for value in update.values():
        if isinstance(value, BaseMessage):
            messages.append(value)
        elif isinstance(value, list | tuple):
            messages.extend(m for m in value if isinstance(m, BaseMessage))
    if not messages:
        return
    for handler in _handlers(callbacks):
        seen = stream_seen_ids(handler)
        if seen is None:
            continue
        for message in messages:
            if message.id is None:  # the hook's own messages (system addition, summary)
                message.id = f"wm-{uuid4()}"
            seen.add(message.id)


def loop_bound(store: BaseStore | None) -> bool:
    """True when ``store``'s sync methods need the event loop running in this thread (an
    ``AsyncSqliteStore``, ``AsyncPostgresStore``, or the platform's batched store): blocking
    this thread on work that uses the store would deadlock."""
    if not isinstance(store, AsyncBatchedBaseStore):
        return False
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return running is store_event_loop(store)


_FOREIGN_SUMMARIES = {"summarization": "LangChain's SummarizationMiddleware"}


def reject_foreign_summaries(messages: Any) -> None:
    """Fail at once when another summariser has rewritten the thread's messages.

    LangChain's ``SummarizationMiddleware`` replaces old messages with one summary message
    (``additional_kwargs["lc_source"] == "summarization"``) before the memory has archived
    them: they would be in neither an archive nor the Working Memory, a silent loss. A user's
    own ``RemoveMessage`` leaves no such marker and stays a normal operation.

    Raises:
        ConflictingMiddlewareError: Such a summary message is in ``messages``.
    """
    if not isinstance(messages, list | tuple):
        return
    for message in messages:
        kwargs = getattr(message, "additional_kwargs", None)
        source = kwargs.get("lc_source") if isinstance(kwargs, Mapping) else None
        if source in _FOREIGN_SUMMARIES:
            raise ConflictingMiddlewareError(
                f"{_FOREIGN_SUMMARIES[source]} removed messages of this thread before Working "
                "Memory archived them (its summary message is in the state), so they are in "
                "neither an archive nor the Working Memory. Use one of the two: Working Memory "
                "already keeps the model input within token_budget (remove "
                "SummarizationMiddleware from the agent's middleware)."
            )
