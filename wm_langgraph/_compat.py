"""Every use of a private internal of LangChain or LangGraph, in one place.

The memory runs inside a LangGraph run and next to LangChain's streaming machinery; a few
things it must know have no public API. Each is read here, by one small function whose
docstring says what it relies on and what happens if a release removes it, and each has a
test of its own (``tests/test_compat.py``) that fails by name when the installed library no
longer has it. Nothing else in the package touches a private name of those libraries.

- LangGraph's run config keys (``__pregel_runtime``, ``__pregel_task_id``,
  ``__pregel_checkpointer``, ``__pregel_read``): :func:`run_runtime`, :func:`in_graph_run`,
  :func:`run_checkpointer`, :func:`run_reader`.
- LangGraph's checkpoint namespace separators: :data:`NS_SEP`, :data:`NS_END`.
- langchain-core's ``_StreamingCallbackHandler`` protocol: :func:`is_streaming_handler`.
- LangGraph's messages-stream handler's ``seen`` set: :func:`stream_seen_ids`.
- ``AsyncBatchedBaseStore._loop``: :func:`store_event_loop`.
- ``AsyncSqliteStore._cursor``: :func:`immediate_async_sqlite_store`.
- ``create_agent``'s local variables ``model`` and ``middleware`` while it reads a
  middleware's ``tools`` or ``state_schema``: :func:`building_agent`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

try:  # a runtime-checkable Protocol: isinstance checks its two methods
    from langchain_core.tracers._streaming import _StreamingCallbackHandler
except ImportError:  # pragma: no cover - a langchain-core without it
    _StreamingCallbackHandler = None  # type: ignore[assignment,misc]

__all__ = [
    "NS_END",
    "NS_SEP",
    "BuildingAgent",
    "building_agent",
    "immediate_async_sqlite_store",
    "in_graph_run",
    "is_streaming_handler",
    "run_checkpointer",
    "run_reader",
    "run_runtime",
    "store_event_loop",
    "stream_seen_ids",
]

RUNTIME_KEY = "__pregel_runtime"
TASK_ID_KEY = "__pregel_task_id"
CHECKPOINTER_KEY = "__pregel_checkpointer"
READ_KEY = "__pregel_read"

NS_SEP = "|"
"""Separates the levels of a ``checkpoint_ns`` (``"agent:<task id>|tools:<task id>"``)."""
NS_END = ":"
"""Separates a level's node name from its task id in a ``checkpoint_ns``."""


def in_graph_run(configurable: Mapping[str, Any]) -> bool:
    """True when ``configurable`` is a running graph task's.

    Relies on LangGraph putting the task id under ``"__pregel_task_id"``
    (``langgraph._internal._constants.CONFIG_KEY_TASK_ID``). If the key is renamed, every config
    looks hand-built: the graph's store is then found only through ``get_store()``, a missing
    checkpointer is no longer reported, and the scope of a subgraph's memory keeps the
    running node's name.
    """
    return TASK_ID_KEY in configurable


def run_runtime(configurable: Mapping[str, Any]) -> Any:
    """The running graph's ``Runtime`` (its ``store`` among others), or None.

    Relies on ``"__pregel_runtime"`` (``CONFIG_KEY_RUNTIME``). If it disappears, None: the
    caller falls back to ``langgraph.config.get_store()``.
    """
    return configurable.get(RUNTIME_KEY)


def run_checkpointer(configurable: Mapping[str, Any]) -> Any:
    """The running graph's checkpointer (None when it has none, or outside a run).

    Relies on ``"__pregel_checkpointer"`` (``CONFIG_KEY_CHECKPOINTER``). If it disappears,
    None: a graph compiled without a checkpointer is no longer reported at once, and checkpoint
    timelines (which archives a fork's lineage holds) are not read from the checkpointer.
    """
    return configurable.get(CHECKPOINTER_KEY)


def run_reader(configurable: Mapping[str, Any]) -> Callable[..., Any] | None:
    """The running task's state reader, ``read(channels) -> {channel: value}``, or None.

    Relies on ``"__pregel_read"`` (``CONFIG_KEY_READ``), a callable taking a list of channel
    names. If it disappears (or is not callable), None: the hooks then keep their meta in the
    store, as they do when called from a graph without the ``working_memory`` channel, and a
    fork or time travel no longer takes its meta from the checkpoint.
    """
    read = configurable.get(READ_KEY)
    return read if callable(read) else None


def is_streaming_handler(handler: object) -> bool:
    """True for a callback handler that feeds a user's stream.

    Relies on langchain-core's private runtime-checkable protocol ``_StreamingCallbackHandler``
    (``tap_output_aiter`` and ``tap_output_iter``), which the handlers of ``astream_events``,
    ``astream_log`` and LangGraph's ``stream_mode="messages"`` implement. If the protocol
    disappears, the same two methods are checked by hand.
    """
    if _StreamingCallbackHandler is not None:
        return isinstance(handler, _StreamingCallbackHandler)
    return callable(getattr(handler, "tap_output_aiter", None)) and callable(  # pragma: no cover
        getattr(handler, "tap_output_iter", None)
    )


def stream_seen_ids(handler: object) -> set[Any] | None:
    """The message ids a ``stream_mode="messages"`` handler will not emit again, or None.

    Relies on LangGraph's ``StreamMessagesHandler.seen`` (``langgraph.pregel._messages``), the
    set by which it deduplicates node outputs. Adding an id there keeps that message out of
    the stream. If the attribute disappears, None: a hook's model-input messages (system
    addition, summary) may then show in ``stream_mode="messages"``.
    """
    seen = getattr(handler, "seen", None)
    return seen if is_streaming_handler(handler) and isinstance(seen, set) else None


def store_event_loop(store: object) -> asyncio.AbstractEventLoop | None:
    """The event loop an ``AsyncBatchedBaseStore`` runs its sync API on, or None.

    Relies on ``AsyncBatchedBaseStore._loop`` (set when the store is created). If it
    disappears, None: the memory then cannot tell that a sync call would deadlock the store's
    own loop, and such a call blocks instead of failing with advice.
    """
    loop = getattr(store, "_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


def immediate_async_sqlite_store() -> type[AsyncSqliteStore]:
    """``AsyncSqliteStore`` whose write transactions start with ``BEGIN IMMEDIATE``.

    Its transactions read, then write. Beside the checkpointer's connection on the same file,
    a ``BEGIN`` (deferred) transaction that read before the checkpointer committed cannot take
    the write lock (SQLite reports "database is locked" at once, without waiting for the busy
    timeout); taking the write lock at ``BEGIN`` lets the busy timeout do its job.

    Relies on ``AsyncSqliteStore._cursor(*, transaction=True)`` being the one place its
    operations open a transaction, and on its ``is_setup``, ``setup()``, ``lock`` and ``conn``.
    If ``_cursor`` disappears, the plain ``AsyncSqliteStore`` is returned: it works, but
    concurrent writes may fail with "database is locked".
    """
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    if not callable(getattr(AsyncSqliteStore, "_cursor", None)):  # pragma: no cover
        return AsyncSqliteStore

    class _ImmediateAsyncSqliteStore(AsyncSqliteStore):
        @asynccontextmanager
        async def _cursor(self, *, transaction: bool = True) -> AsyncIterator[Any]:
            if not self.is_setup:
                await self.setup()
            async with self.lock:
                if transaction:
                    await self.conn.execute("BEGIN IMMEDIATE")
                try:
                    async with self.conn.cursor() as cur:
                        yield cur
                except BaseException:
                    if transaction:
                        await self.conn.execute("ROLLBACK")
                    raise
                if transaction:
                    await self.conn.execute("COMMIT")

    _ImmediateAsyncSqliteStore.__name__ = "AsyncSqliteStore"
    _ImmediateAsyncSqliteStore.__qualname__ = "AsyncSqliteStore"
    return _ImmediateAsyncSqliteStore


_CREATE_AGENT_PACKAGE = "langchain.agents"
_MAX_FRAMES = 12


class BuildingAgent(NamedTuple):
    """What :func:`building_agent` finds in ``create_agent``'s frame.

    Attributes:
        model: The agent's model (a chat model once ``create_agent`` resolved a model string).
        middleware: The agent's middleware, in the order given.
        checkpointer: The agent's ``checkpointer=`` argument (None when not given).
        store: The agent's ``store=`` argument (None when not given).
    """

    model: object
    middleware: tuple[object, ...]
    checkpointer: object = None
    store: object = None


def building_agent() -> BuildingAgent | None:
    """The agent model and middleware list of the ``create_agent`` call that is reading a
    middleware's attribute right now (its ``tools`` or ``state_schema``), or None when no
    ``create_agent`` call is up the stack.

    Relies on ``create_agent`` (module ``langchain.agents.factory``) reading ``m.tools`` and
    ``m.state_schema`` of every middleware within a few frames of its own, after it has turned
    a model string into a chat model, with its arguments in the locals ``model`` and
    ``middleware`` (and ``checkpointer``, ``store``). Without that (a future release), this
    returns None and the memory falls back to its checks at run time: a conflicting summary
    middleware is refused when it appears, two memories in one agent at their first run, a
    fractional budget with a message saying to pass ``agent_model=``, and the checkpointer and
    store are learned from the thread's first run in the process (a config-only read before it
    needs ``checkpointer=`` and ``store=``, and says so).
    """
    frame: Any = sys._getframe(1)
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        if frame.f_code.co_name == "create_agent" and str(
            frame.f_globals.get("__name__", "")
        ).startswith(_CREATE_AGENT_PACKAGE):
            local = frame.f_locals
            middleware = local.get("middleware")
            if not isinstance(middleware, list | tuple):
                return None
            return BuildingAgent(
                local.get("model"),
                tuple(middleware),
                local.get("checkpointer"),
                local.get("store"),
            )
        frame = frame.f_back
    return None
