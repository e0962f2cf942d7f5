"""One test per private LangChain / LangGraph internal that wm_langgraph/_compat.py relies on.

Each fails, naming the internal, when the installed library no longer has it, so a dependency
upgrade that breaks the memory is caught here rather than as a subtle behaviour change.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from typing import Any, TypedDict

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.base import BaseTracer
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.memory import InMemoryStore

from wm_langgraph import _compat


class _State(TypedDict, total=False):
    value: str


def _capture_configurable(
    *, checkpointer: BaseCheckpointSaver[Any] | None = None, subgraph: bool = False
) -> dict[str, Any]:
    """The ``configurable`` a node of a running graph gets (in a subgraph when asked)."""
    captured: dict[str, Any] = {}

    def node(state: _State, config: RunnableConfig) -> _State:
        captured.update(config["configurable"])
        reader = _compat.run_reader(config["configurable"])
        captured["read value"] = reader(["value"]) if reader is not None else None
        return {"value": "seen"}

    inner = StateGraph(_State)
    inner.add_node("inner", node)
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)
    builder = StateGraph(_State)
    builder.add_node("outer", inner.compile() if subgraph else node)
    builder.add_edge(START, "outer")
    builder.add_edge("outer", END)
    graph = builder.compile(checkpointer=checkpointer, store=InMemoryStore())
    graph.invoke({"value": "start"}, {"configurable": {"thread_id": "compat"}})
    captured["store"] = graph.store
    return captured


def _private_constants() -> Any:
    return importlib.import_module("langgraph._internal._constants")


def test_langgraph_config_key_task_id():
    """``__pregel_task_id`` marks a running task's config."""
    assert _private_constants().CONFIG_KEY_TASK_ID == _compat.TASK_ID_KEY
    configurable = _capture_configurable()
    assert _compat.in_graph_run(configurable)
    assert not _compat.in_graph_run({"thread_id": "hand-built"})


def test_langgraph_config_key_runtime():
    """``__pregel_runtime`` holds the run's ``Runtime`` with the graph's store."""
    assert _private_constants().CONFIG_KEY_RUNTIME == _compat.RUNTIME_KEY
    configurable = _capture_configurable()
    runtime = _compat.run_runtime(configurable)
    assert runtime is not None
    assert runtime.store is configurable["store"]


def test_langgraph_config_key_checkpointer():
    """``__pregel_checkpointer`` holds the graph's checkpointer (None without one)."""
    assert _private_constants().CONFIG_KEY_CHECKPOINTER == _compat.CHECKPOINTER_KEY
    saver = InMemorySaver()
    assert _compat.run_checkpointer(_capture_configurable(checkpointer=saver)) is saver
    assert _compat.run_checkpointer(_capture_configurable()) is None


def test_langgraph_config_key_read():
    """``__pregel_read`` reads the running task's channels by name."""
    assert _private_constants().CONFIG_KEY_READ == _compat.READ_KEY
    configurable = _capture_configurable()
    assert _compat.run_reader(configurable) is not None
    assert configurable["read value"] == {"value": "start"}


def test_langgraph_checkpoint_namespace_separators():
    """``checkpoint_ns`` is ``node:<task id>``, levels joined by ``|``."""
    constants = _private_constants()
    assert (constants.NS_SEP, constants.NS_END) == (_compat.NS_SEP, _compat.NS_END)
    namespace = _capture_configurable(subgraph=True)["checkpoint_ns"]
    levels = namespace.split(_compat.NS_SEP)
    assert [level.split(_compat.NS_END)[0] for level in levels] == ["outer", "inner"]


def test_langchain_core_streaming_callback_handler():
    """langchain-core's private ``_StreamingCallbackHandler`` protocol marks stream handlers."""
    from langchain_core.tracers._streaming import _StreamingCallbackHandler
    from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler
    from langgraph.pregel._messages import StreamMessagesHandler

    assert _compat._StreamingCallbackHandler is _StreamingCallbackHandler
    assert _compat.is_streaming_handler(StreamMessagesHandler(lambda _: None, subgraphs=False))
    assert _compat.is_streaming_handler(_AstreamEventsCallbackHandler())
    assert not _compat.is_streaming_handler(BaseCallbackHandler())

    class Tracer(BaseTracer):
        def _persist_run(self, run: Any) -> None:
            pass

    assert not _compat.is_streaming_handler(Tracer())


def test_langgraph_messages_stream_seen_ids():
    """LangGraph's ``StreamMessagesHandler.seen`` is the set it deduplicates node outputs by."""
    from langgraph.pregel._messages import StreamMessagesHandler

    emitted: list[Any] = []
    handler = StreamMessagesHandler(emitted.append, subgraphs=False)
    seen = _compat.stream_seen_ids(handler)
    assert seen is handler.seen
    assert isinstance(seen, set)
    assert _compat.stream_seen_ids(BaseCallbackHandler()) is None


def test_langgraph_async_batched_store_loop():
    """``AsyncBatchedBaseStore._loop`` is the event loop its sync API hands work to."""

    class Store(AsyncBatchedBaseStore):
        async def abatch(self, ops: Any) -> list[Any]:
            return [None for _ in ops]

    async def make() -> tuple[Any, asyncio.AbstractEventLoop]:
        return Store(), asyncio.get_running_loop()

    store, loop = asyncio.run(make())
    assert _compat.store_event_loop(store) is loop
    assert _compat.store_event_loop(InMemoryStore()) is None


def test_langgraph_async_sqlite_store_cursor(tmp_path):
    """``AsyncSqliteStore._cursor(*, transaction=True)`` opens its transactions."""
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    parameters = inspect.signature(AsyncSqliteStore._cursor).parameters
    assert "transaction" in parameters
    store_class = _compat.immediate_async_sqlite_store()
    assert store_class is not AsyncSqliteStore
    assert issubclass(store_class, AsyncSqliteStore)

    async def roundtrip() -> Any:
        import aiosqlite

        async with aiosqlite.connect(tmp_path / "s.sqlite", isolation_level=None) as conn:
            store = store_class(conn)
            await store.setup()
            for name in ("is_setup", "lock", "conn"):
                assert hasattr(store, name), name
            await store.aput(("ns",), "k", {"v": 1})
            return await store.aget(("ns",), "k")

    item = asyncio.run(roundtrip())
    assert item is not None
    assert item.value == {"v": 1}


@pytest.mark.parametrize("name", _compat.__all__)
def test_every_compat_name_resolves(name):
    assert getattr(_compat, name) is not None


def test_create_agent_frame_is_found_while_it_reads_middleware_tools_and_state_schema():
    """``create_agent`` reads ``m.tools`` and ``m.state_schema`` after ``init_chat_model``, with
    its arguments in the locals ``model`` and ``middleware``: what the one frame reader,
    :func:`_compat.building_agent`, finds for both attributes."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain.agents.middleware.types import AgentState

    from wm_langgraph.testing import ScriptedChatModel

    seen: dict[str, Any] = {}

    class Probe(AgentMiddleware[Any, Any, Any]):
        @property  # type: ignore[override]
        def tools(self) -> list[Any]:
            seen["tools"] = _compat.building_agent()
            return []

        @property  # type: ignore[override]
        def state_schema(self) -> Any:
            seen["state_schema"] = _compat.building_agent()
            return AgentState

    model = ScriptedChatModel(replies=["ok"])
    probe, other = Probe(), AgentMiddleware()
    create_agent(model, [], middleware=[probe, other])
    assert set(seen) == {"tools", "state_schema"}, "create_agent no longer reads them"
    for attribute, found in seen.items():
        assert isinstance(found, _compat.BuildingAgent), f"frame not found reading {attribute}"
        assert found.model is model
        assert found.middleware == (probe, other)
    assert _compat.building_agent() is None  # outside create_agent
