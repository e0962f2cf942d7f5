"""``WorkingMemoryMiddleware``: Working Memory for ``langchain.agents.create_agent``.

::

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore
    from wm_langgraph import WorkingMemoryMiddleware

    mw = WorkingMemoryMiddleware()  # uses the agent's store
    agent = create_agent(
        model, tools, middleware=[mw], checkpointer=InMemorySaver(), store=InMemoryStore()
    )

The hooks map onto the engine (:class:`~wm_langgraph.memory.WorkingMemory`, ``mw.memory``):

- ``before_model``: the overflow guard; a tool loop that outgrows the budget mid-turn commits
  inline (tool-pair-safe, newest turn kept) instead of sending an oversized prompt.
- ``wrap_model_call``: assemble; the model sees the system prompt addition, the
  ``[Session History Summary]``, the pending archives' messages and the live messages, without
  any change to the saved state.
- ``after_agent``: after_turn; account the turn and commit (Phase 2 in the background by
  default) when the threshold is reached.

The middleware's state field ``working_memory`` (a JSON-plain meta value) is private: it is kept
in the checkpoint but is neither part of the agent's input nor of its output. The archive tools
(``archive_expand``, ``archive_search``) are registered as the middleware's tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, Required, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from wm_langgraph._compat import building_agent
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.errors import ConflictingMiddlewareError
from wm_langgraph.integration.hooks import in_hook_thread
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.state import META_KEY, archive_aware_add_messages

__all__ = ["WorkingMemoryAgentState", "WorkingMemoryMiddleware"]

DEFAULT_NAME = "WorkingMemoryMiddleware"

try:  # langchain >= 1.3: keep the writer's internal model calls out of run.messages
    from langchain.agents.middleware.internal_call_transformer import InternalCallTransformer

    _TRANSFORMERS: tuple[Any, ...] = (InternalCallTransformer,)
except ImportError:  # pragma: no cover - older langchain
    _TRANSFORMERS = ()

_STATE_KEYS = frozenset({"messages", META_KEY})


class WorkingMemoryAgentState(AgentState[Any]):
    """The agent state plus the private, JSON-plain Working Memory meta value.

    Pass it as ``create_agent(..., state_schema=WorkingMemoryAgentState)`` to also accept
    ``RemoveMessage`` of an archived message id (LangGraph's own reducer raises on it, since the
    message is no longer live; see :func:`~wm_langgraph.archive_aware_add_messages`).
    """

    messages: Required[Annotated[list[AnyMessage], archive_aware_add_messages]]
    working_memory: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class WorkingMemoryMiddleware(AgentMiddleware[WorkingMemoryAgentState, Any, Any]):
    """Working Memory as LangChain agent middleware (see the module docstring).

    Attributes:
        tools: The archive recall tools, added to the agent's tools by ``create_agent``.
    """

    transformers = _TRANSFORMERS

    @property
    def state_schema(self) -> type[WorkingMemoryAgentState]:  # type: ignore[override]
        """The agent state the middleware adds (``create_agent`` reads it when it builds).

        Raises:
            ConflictingMiddlewareError: The agent being built has another Working Memory
                middleware: both would keep their bookkeeping in the agent's one
                ``working_memory`` state value, and one memory would lose its archives.
        """
        built = building_agent()
        others = [
            m
            for m in (built.middleware if built is not None else ())
            if isinstance(m, WorkingMemoryMiddleware) and m is not self
        ]
        if others:
            names = ", ".join(repr(m.name) for m in [self, *others])
            raise ConflictingMiddlewareError(
                f"one agent got {1 + len(others)} WorkingMemoryMiddleware instances ({names}): "
                "an agent has one 'working_memory' state value, which they would share, and "
                "one memory would lose its archives. Use one WorkingMemoryMiddleware per agent; "
                "for separate memories of one conversation give each agent (supervisor or swarm "
                "members, subgraph agents) its own middleware with its own name="
            )
        return WorkingMemoryAgentState

    def __init__(
        self,
        model: BaseChatModel | str | None = None,
        *,
        config: WorkingMemoryConfig | None = None,
        store: BaseStore | None = None,
        name: str = DEFAULT_NAME,
        memory: WorkingMemory | None = None,
        **engine_kwargs: Any,
    ) -> None:
        """Build the middleware and its engine.

        Args:
            model: The chat model that writes the Working Memory, or a ``"provider:model"``
                string (``init_chat_model``); ``None``: the default writer, see
                :func:`wm_langgraph.writer.binding.resolve_default_model` (a fallback is logged
                once at WARNING). Not the agent's model.
            config: Engine settings (token budget, thresholds, ...).
            store: The BaseStore for archives and WM versions. ``None`` (default): the agent's
                store (``create_agent(store=...)``, or the platform's under ``langgraph dev``).
            name: The middleware name; ``create_agent`` names the hook nodes after it, so two
                instances in one agent need different names.
            memory: An existing engine to use instead of building one (then ``model``,
                ``config``, ``store`` and engine keyword arguments must not be given).
            **engine_kwargs: Further keyword arguments of ``WorkingMemory`` (e.g.
                ``token_counter``).

        Raises:
            ValueError: An empty name or one with ``|`` / ``:``, or ``memory`` combined with
                engine arguments.
            TypeError: A non-string name, or ``memory`` that is not a ``WorkingMemory``.
        """
        super().__init__()
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if not name.strip():
            raise ValueError("name must be a non-empty string (it names the agent's hook nodes)")
        if "|" in name or ":" in name:
            raise ValueError(
                f"name must not contain '|' or ':' (LangGraph node names), got {name!r}"
            )
        if memory is not None:
            if not isinstance(memory, WorkingMemory):
                raise TypeError(f"memory must be a WorkingMemory, got {type(memory).__name__}")
            given = [
                k
                for k, v in {"model": model, "config": config, "store": store}.items()
                if v is not None
            ]
            if given or engine_kwargs:
                raise ValueError(
                    "pass either memory= or the engine arguments, not both "
                    f"(got memory= and {', '.join(given + sorted(engine_kwargs))})"
                )
            self._memory = memory
        else:
            engine_name = None if name == DEFAULT_NAME else name
            self._memory = WorkingMemory(
                model, config=config, store=store, name=engine_name, **engine_kwargs
            )
        self._name = name
        self._tools = list(self._memory.tools)

    @property
    def tools(self) -> Sequence[BaseTool]:  # type: ignore[override]
        """The archive recall tools. ``create_agent`` reads them while it builds the agent:
        the memory then checks the agent's other middleware (a conflicting one is refused
        before anything ran) and learns the agent's model (a fractional ``token_budget``) and
        its checkpointer and store (config-only reads before the first run, deleted
        threads)."""
        built = building_agent()
        if built is not None:
            agent_model, middleware, checkpointer, store = built
            _refuse_conflicting(middleware)
            if agent_model is not None:
                self._memory.use_agent_model(agent_model)
            if isinstance(checkpointer, BaseCheckpointSaver):
                self._memory.use_checkpointer(checkpointer)
            if isinstance(store, BaseStore):
                self._memory.use_store(store)
        return self._tools

    @property
    def name(self) -> str:
        """The middleware name (hook nodes are called ``<name>.before_model`` etc.)."""
        return self._name

    @property
    def memory(self) -> WorkingMemory:
        """The underlying engine (``get_working_memory``, ``list_archives``, ``wait``, ...)."""
        return self._memory

    # -- deletion -------------------------------------------------------------------------

    def purge(self, config: RunnableConfig, **kwargs: Any) -> int:
        """Delete the thread's memory records: :meth:`WorkingMemory.purge`."""
        return self._memory.purge(config, **kwargs)

    async def apurge(self, config: RunnableConfig, **kwargs: Any) -> int:
        """Async twin of :meth:`purge`."""
        return await self._memory.apurge(config, **kwargs)

    def reset(self, config: RunnableConfig, **kwargs: Any) -> int:
        """Start a fresh Working Memory after "clear chat": :meth:`WorkingMemory.reset`."""
        return self._memory.reset(config, **kwargs)

    async def areset(self, config: RunnableConfig, **kwargs: Any) -> int:
        """Async twin of :meth:`reset`."""
        return await self._memory.areset(config, **kwargs)

    # -- before_model: overflow guard -----------------------------------------------------

    def before_model(
        self, state: WorkingMemoryAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Commit inline when the thread no longer fits the budget (mid-turn overflow)."""
        return _state_update(self._memory.overflow_guard(dict(state), _config()))

    async def abefore_model(
        self, state: WorkingMemoryAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        return _state_update(await self._memory.aoverflow_guard(dict(state), _config()))

    # -- wrap_model_call: assemble --------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage:
        """Call the model on the assembled context; the saved state is not touched."""
        return handler(self._assembled(request, _config()))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        """Async twin of :meth:`wrap_model_call`."""
        request = await in_hook_thread(self._assembled, request, _config())
        return await handler(request)

    def _assembled(self, request: ModelRequest[Any], config: RunnableConfig) -> ModelRequest[Any]:
        self._memory.check_agent_model(request.model)
        context = self._memory.build_context(
            request.messages,
            config,
            system_message=request.system_message,
            state=request.state,
        )
        messages = cast("list[AnyMessage]", context.messages)
        # A tool selector (LLMToolSelectorMiddleware) listed before this middleware may have
        # filtered the archive tools out: the messages point the model at them, so they stay.
        present = {t.get("name") if isinstance(t, dict) else t.name for t in request.tools}
        missing = [t for t in self._tools if t.name not in present]
        if missing:
            return request.override(
                messages=messages,
                system_message=context.system_message,
                tools=[*request.tools, *missing],
            )
        return request.override(messages=messages, system_message=context.system_message)

    # -- after_agent: after_turn ----------------------------------------------------------

    def after_agent(
        self, state: WorkingMemoryAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Account the finished turn; commit when the threshold is reached."""
        return _state_update(self._memory.after_turn(dict(state), _config()))

    async def aafter_agent(
        self, state: WorkingMemoryAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        return _state_update(await self._memory.aafter_turn(dict(state), _config()))


_CONFLICTING = {
    "SummarizationMiddleware": (
        "LangChain's SummarizationMiddleware replaces old messages with its own summary before "
        "the Working Memory has archived them, so they would be in neither the Working Memory "
        "nor an archive; the Working Memory already bounds the model input. Remove one of the "
        "two from the agent's middleware"
    ),
}


def _refuse_conflicting(middleware: tuple[object, ...]) -> None:
    """Refuse, when the agent is built, middleware that removes messages unarchived.

    Raises:
        ConflictingMiddlewareError: Such a middleware is in the agent's list.
    """
    for other in middleware:
        for klass in type(other).__mro__:
            reason = _CONFLICTING.get(klass.__name__)
            if reason is not None and klass.__module__.startswith("langchain"):
                raise ConflictingMiddlewareError(
                    f"WorkingMemoryMiddleware cannot be combined with {klass.__name__}: {reason}."
                )


def _config() -> RunnableConfig:
    try:
        return get_config()
    except RuntimeError as exc:
        raise RuntimeError(
            "WorkingMemoryMiddleware hooks run inside an agent built with create_agent(...); "
            "to drive the engine by hand use mw.memory.after_turn(state, config) etc."
        ) from exc


def _state_update(update: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Keep the keys the middleware state has (``messages`` and the meta value)."""
    if not update:
        return None
    kept = {key: value for key, value in update.items() if key in _STATE_KEYS}
    return kept or None
