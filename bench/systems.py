"""The systems compared, each as a real agent graph around the same replayed agent.

* ``wm_langgraph`` — ``create_agent`` with ``WorkingMemoryMiddleware`` (guards on);
* ``wm_no_guards`` — the same with ``WorkingMemoryConfig(guards=False)`` (ablation);
* ``langmem`` — ``create_react_agent`` with LangMem's ``SummarizationNode`` as pre-model hook;
* ``langchain`` — ``create_agent`` with LangChain's ``SummarizationMiddleware``;
* ``plain`` — ``create_agent`` without any memory: the full history (the checkpoint-growth
  baseline, and the *no memory* row of the cost table);
* ``trimming`` — ``create_agent`` with :class:`TrimMiddleware`: LangChain's ``trim_messages``
  to the window's usable part (the cost table's baseline inside a window).

The agent's own model is :class:`ReplayAgent`'s ``model`` (a ``wm_langgraph.testing``
``ScriptedChatModel``): it replays the session's scripted assistant messages (tool calls, then
the answer) and records the exact messages it is given — the assembled context each system
builds — which is what the benchmark measures.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, trim_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import create_model

from bench.data import Session, Turn
from bench.models import records_of
from wm_langgraph.testing import ScriptedChatModel

__all__ = [
    "BASELINES",
    "PEERS",
    "SYSTEMS",
    "ReplayAgent",
    "SystemRun",
    "TrimMiddleware",
    "Tuning",
    "build_system",
    "langmem_available",
    "make_tools",
]

SYSTEMS: tuple[str, ...] = ("wm_langgraph", "wm_no_guards", "langmem", "langchain")
PEERS: tuple[str, ...] = ("langmem", "langchain")
BASELINES: tuple[str, ...] = ("plain", "trimming")
"""Systems without a memory: the full history and trimming (the cost table's baselines)."""


def langmem_available() -> bool:
    """Whether LangMem is installed (optional extra ``bench``)."""
    try:
        import langmem.short_term  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------------------------------
# the agent: replays the scripted assistant turns and records what it was shown


class ReplayAgent:
    """Replays a session's assistant messages; records every input it receives.

    Attributes:
        model: The agent's chat model, a ``ScriptedChatModel`` answering from this replay.
    """

    def __init__(self) -> None:
        self._turn: Turn | None = None
        self._step = 0
        self._inputs: list[tuple[int, int, list[BaseMessage]]] = []
        self._lock = threading.Lock()
        self._record = True
        self.model = ScriptedChatModel(
            respond=self._reply, keep_ids=True, record_calls=False, name="bench-replay-agent"
        )

    def begin_turn(self, turn: Turn, *, record: bool = True) -> None:
        """Play ``turn`` on the next calls."""
        self._turn, self._step, self._record = turn, 0, record

    @property
    def inputs(self) -> list[tuple[int, int, list[BaseMessage]]]:
        """(turn, step, messages) for every recorded call."""
        return self._inputs

    def first_input(self, turn: int) -> list[BaseMessage] | None:
        """The messages the agent saw on the first call of ``turn``."""
        for t, step, messages in self._inputs:
            if t == turn and step == 0:
                return messages
        return None

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> AIMessage:
        """The turn's next scripted step (tool calls, then the answer); the replay decides
        which tools are called."""
        with self._lock:
            turn = self._turn
            if turn is None:
                raise RuntimeError("ReplayAgent: begin_turn() was not called")
            step = self._step
            self._step += 1
            if self._record:
                self._inputs.append((turn.index, step, list(messages)))
        if step < len(turn.steps):
            calls = [
                {"name": s.name, "args": dict(s.args), "id": s.call_id} for s in turn.steps[step]
            ]
            return AIMessage(content="", tool_calls=calls, id=f"ai-{turn.index}-{step}")
        return AIMessage(content=turn.answer, id=f"ai-{turn.index}-{step}")


def make_tools(session: Session) -> list[BaseTool]:
    """The coding agent's tools; each returns the scripted result of its call."""
    results = {s.call_id: s.result for t in session.turns for st in t.steps for s in st}
    names = sorted({s.name for t in session.turns for st in t.steps for s in st})
    docs = {
        "read_file": "Read a file of the repository.",
        "edit_file": "Apply a described change to a file.",
        "run_tests": "Run a test target.",
        "run_command": "Run a shell command.",
    }

    def make(name: str) -> BaseTool:
        def run(tool_call_id: Annotated[str, InjectedToolCallId], **_: Any) -> str:
            return results.get(tool_call_id, "(no output)")

        arg = {"read_file": "path", "edit_file": "path", "run_tests": "target"}.get(name, "command")
        fields: dict[str, Any] = {
            arg: (str, ...),
            "tool_call_id": (Annotated[str, InjectedToolCallId], ...),
        }
        if name == "edit_file":
            fields["change"] = (str, ...)
        schema = create_model(f"{name}_args", **fields)
        return StructuredTool.from_function(
            func=run, name=name, description=docs.get(name, name), args_schema=schema
        )

    return [make(n) for n in names]


# ------------------------------------------------------------------------------------------
# trimming


class TrimMiddleware(AgentMiddleware[Any, Any]):
    """Trims the model request with LangChain's ``trim_messages`` to ``usable`` tokens by
    ``count`` (the state keeps every message): the newest messages, starting on a user
    message, the system message kept."""

    def __init__(self, usable: int, count: Callable[[list[BaseMessage]], int]) -> None:
        super().__init__()
        self.usable = usable
        self.count = count

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The request with its messages trimmed."""
        trimmed = self.trimmed(request.messages, request.system_message)
        return handler(request.override(messages=trimmed))

    def trimmed(
        self, messages: Sequence[BaseMessage], system_message: BaseMessage | None = None
    ) -> list[BaseMessage]:
        """The messages this middleware sends for ``messages`` (and the system message)."""
        system = [system_message] if system_message else []
        room = self.usable - self.count(system)
        return trim_messages(
            list(messages),
            strategy="last",
            token_counter=self.count,
            max_tokens=room,
            start_on="human",
            include_system=True,
        )


# ------------------------------------------------------------------------------------------
# one system ready to run


@dataclass
class Tuning:
    """Compaction settings, chosen so that every system compacts about equally often.

    Attributes:
        chunk_tokens: New tokens between two compactions (wm_langgraph: pending tokens outside
            the recent window; LangMem: max_tokens_before_summary).
        keep_messages: Recent messages kept verbatim (wm_langgraph keep window; LangChain keep).
        chunk_messages: LangChain's trigger, in messages on top of ``keep_messages`` (its
            token trigger counts the summary too, so it would fire ever more often as the
            summary grows; a message trigger keeps the cadence comparable).
        token_budget: wm_langgraph's context budget (its WM layer gets min(15% of it, 8,000)).
        every_turn: Compact after every turn (bloat runs).
        window: When set, every system works inside this context window: wm_langgraph's
            ``token_budget``; LangMem's ``max_tokens`` is its usable part and its summary budget
            the size target wm_langgraph holds its WM to; LangChain also summarises once its
            context passes the usable part. ``None``: the peers' own generous defaults.
    """

    chunk_tokens: int = 1200
    keep_messages: int = 10
    chunk_messages: int = 24
    token_budget: int = 80_000
    every_turn: bool = False
    window: int | None = None

    @property
    def budget(self) -> int:
        """wm_langgraph's ``token_budget`` (the window when one is set)."""
        return self.window or self.token_budget


def window_limits(window: int) -> tuple[int, int]:
    """(usable tokens, WM size target) of a context window, as wm_langgraph computes them."""
    from wm_langgraph.config import WorkingMemoryConfig
    from wm_langgraph.context.assemble import compute_budgets
    from wm_langgraph.document.compaction import size_contract

    cfg = WorkingMemoryConfig(token_budget=window)
    usable = compute_budgets(window, cfg.reserve_tokens, cfg.archive_memory_tokens).usable
    return usable, size_contract(usable, cfg.archive_memory_tokens).target


@dataclass
class SystemRun:
    """A compiled agent for one system, with accessors for what the benchmark reads."""

    name: str
    graph: Any
    agent: ReplayAgent
    summariser: BaseChatModel | None
    config: RunnableConfig
    compactions: Callable[[], int]
    memory_text: Callable[[], str]
    guards: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def play(self, turn: Turn, *, record: bool = True) -> str | None:
        """Run one turn through the graph; returns an error text instead of raising."""
        self.agent.begin_turn(turn, record=record)
        try:
            self.graph.invoke(
                {"messages": [HumanMessage(turn.user, id=f"u-{turn.index}")]}, self.config
            )
        except Exception as exc:  # a peer whose summariser raised: record, go on
            return f"{type(exc).__name__}: {exc}"
        return None


def _record_contexts(memory: Any, log: list[dict[str, int]]) -> None:
    """Log, for every model call, whether the WM was shown whole and whether it would have fit
    beside the newest turn (the measure of the context-size runs)."""
    from langchain_core.messages import HumanMessage as Human

    from wm_langgraph.context.assemble import SUMMARY_HEADER

    build = memory.build_context

    def recording(messages: Any, config: Any, **kwargs: Any) -> Any:
        context = build(messages, config, **kwargs)
        document = memory.get_working_memory(config)
        # a call whose input is the whole history needs no Working Memory: not a WM call
        if document and not context.whole_history:
            shown = context.messages
            start = max((i for i, m in enumerate(shown) if isinstance(m, Human)), default=0)
            newest = memory.count_tokens(shown[start:])
            whole = memory.count_tokens([Human(f"{SUMMARY_HEADER}\n\n{document.strip()}")])
            system = memory.count_tokens([context.system_message]) if context.system_message else 0
            log.append(
                {
                    "fits": int(whole + newest + system <= context.budgets.usable),
                    "complete": int(
                        context.wm_omitted == 0
                        and context.messages[:1] != []
                        and context.messages[0].text.startswith(SUMMARY_HEADER)
                    ),
                    "tokens": context.tokens,
                    "usable": context.budgets.usable,
                }
            )
        return context

    memory.build_context = recording


def build_system(
    name: str,
    session: Session,
    summariser: BaseChatModel | None,
    tuning: Tuning,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    store: BaseStore | None = None,
    thread_id: str = "bench",
    wm_overrides: dict[str, Any] | None = None,
) -> SystemRun:
    """Compile the agent graph of system ``name`` for ``session`` (``wm_overrides``: extra
    ``WorkingMemoryConfig`` fields for wm_langgraph)."""
    agent = ReplayAgent()
    tools = make_tools(session)
    saver = checkpointer if checkpointer is not None else InMemorySaver()
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}, "recursion_limit": 100}

    def ok_calls() -> int:
        assert summariser is not None
        return sum(1 for r in records_of(summariser) if r.outcome != "raised")

    if name in {"wm_langgraph", "wm_no_guards"}:
        from wm_langgraph.config import WorkingMemoryConfig
        from wm_langgraph.middleware import WorkingMemoryMiddleware

        wm_store = store if store is not None else InMemoryStore()
        ratio = 0.0 if tuning.every_turn else min(1.0, tuning.chunk_tokens / tuning.budget)
        cfg = WorkingMemoryConfig(
            token_budget=tuning.budget,
            commit_token_threshold_ratio=ratio,
            commit_keep_recent_count=tuning.keep_messages,
            background=False,
            guards=name == "wm_langgraph",
            **(wm_overrides or {}),
        )
        mw = WorkingMemoryMiddleware(model=summariser, config=cfg, store=wm_store)
        graph = create_agent(
            agent.model, tools, middleware=[mw], checkpointer=saver, store=wm_store
        )
        memory = mw.memory
        contexts: list[dict[str, int]] = []
        _record_contexts(memory, contexts)
        return SystemRun(
            name,
            graph,
            agent,
            summariser,
            config,
            compactions=lambda: len(memory.list_archives(config)),
            memory_text=lambda: memory.get_working_memory(config),
            guards=name == "wm_langgraph",
            extra={"memory": memory, "store": wm_store, "contexts": contexts},
        )
    if name == "langchain":
        keep = tuning.keep_messages
        trigger = keep + (1 if tuning.every_turn else tuning.chunk_messages)
        triggers: list[Any] = [("messages", trigger)]
        if tuning.window:
            triggers.append(("tokens", window_limits(tuning.window)[0]))
        mw_lc = SummarizationMiddleware(
            model=summariser,  # type: ignore[arg-type]
            trigger=triggers,
            keep=("messages", keep),
            trim_tokens_to_summarize=None,
        )
        graph = create_agent(agent.model, tools, middleware=[mw_lc], checkpointer=saver)

        def lc_summary() -> str:
            for m in graph.get_state(config).values.get("messages", []):
                if m.additional_kwargs.get("lc_source") == "summarization":
                    return str(m.text)
            return ""

        return SystemRun(name, graph, agent, summariser, config, ok_calls, lc_summary)
    if name == "langmem":
        from langgraph.prebuilt import create_react_agent
        from langgraph.prebuilt.chat_agent_executor import AgentState
        from langmem.short_term import SummarizationNode

        class LangMemState(AgentState):  # type: ignore[misc]
            context: dict[str, Any]

        chunk = 120 if tuning.every_turn else tuning.chunk_tokens
        usable, target = window_limits(tuning.window) if tuning.window else (60_000, 2_000)
        node = SummarizationNode(
            model=summariser,  # type: ignore[arg-type]
            max_tokens=usable,
            max_tokens_before_summary=chunk,
            max_summary_tokens=target,
            output_messages_key="llm_input_messages",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = create_react_agent(
                agent.model,
                tools,
                pre_model_hook=node,
                state_schema=LangMemState,
                checkpointer=saver,
            )

        def lm_summary() -> str:
            ctx = graph.get_state(config).values.get("context") or {}
            rs = ctx.get("running_summary")
            return str(rs.summary) if rs is not None else ""

        return SystemRun(name, graph, agent, summariser, config, ok_calls, lm_summary)
    if name == "plain":
        graph = create_agent(agent.model, tools, checkpointer=saver)
        return SystemRun(name, graph, agent, None, config, lambda: 0, lambda: "")
    if name == "trimming":
        from bench.cost import input_tokens

        usable = window_limits(tuning.window)[0] if tuning.window else 60_000
        trim = TrimMiddleware(usable, input_tokens)
        graph = create_agent(agent.model, tools, middleware=[trim], checkpointer=saver)
        return SystemRun(name, graph, agent, None, config, lambda: 0, lambda: "")
    raise ValueError(f"unknown system {name!r}; expected one of {(*SYSTEMS, *BASELINES)}")
