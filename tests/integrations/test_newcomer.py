"""A newcomer's path: what a first user meets, on the integration paths they take.

Budgets from the agent model's profile and impossible budgets refused with a fix; the writer
chosen explicitly (a chat model or a ``"provider:model"`` string) and its fallbacks and
failures said; ``SummarizationMiddleware`` refused when the agent is built; the whole
transcript for a UI and commit events in the streams; the current Working Memory under a fixed
store key; an in-process store when the graph has an ``InMemorySaver`` and no store.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore

from tests.common import lookup, thread_config
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import (
    ConflictingMiddlewareError,
    NoStoreError,
    WorkingMemory,
    WorkingMemoryAgentState,
    WorkingMemoryConfig,
    WorkingMemoryMiddleware,
    WorkingMemoryReactState,
)
from wm_langgraph.config import DEFAULT_ARCHIVE_MEMORY_TOKENS
from wm_langgraph.testing import ScriptedChatModel

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)


def _agent(mw: WorkingMemoryMiddleware, *, model: Any = None, **kwargs: Any) -> Any:
    kwargs.setdefault("checkpointer", InMemorySaver())
    kwargs.setdefault("store", InMemoryStore())
    return create_agent(model or agent_model(), [lookup], middleware=[mw], **kwargs)


def _say(agent: Any, config: Any, *texts: str) -> None:
    for text in texts:
        agent.invoke({"messages": [HumanMessage(text)]}, config)


def _profiled(window: int | None) -> ScriptedChatModel:
    model = agent_model()
    if window is not None:
        model.profile = {"max_input_tokens": window}
    return model


# -- budgets ----------------------------------------------------------------------------------


def test_a_reply_reserve_of_the_whole_budget_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"reserve_tokens=60,000.*token_budget=50,000") as info:
        WorkingMemoryConfig(token_budget=50_000, reserve_tokens=60_000)
    assert "Lower reserve_tokens" in str(info.value)
    with pytest.raises(ValueError, match="reserve_tokens"):
        WorkingMemoryConfig(token_budget=4_000, reserve_tokens=4_000)


def test_an_archive_layer_larger_than_the_usable_budget_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"archive_memory_tokens=100,000") as info:
        WorkingMemoryConfig(token_budget=4_000, archive_memory_tokens=100_000)
    assert "lower archive_memory_tokens to at most 3,400" in str(info.value)


def test_the_defaults_still_fit_small_budgets():
    for budget in (256, 2_000, 4_000, 39_999, 40_000, 128_000):
        assert WorkingMemoryConfig(token_budget=budget).tokens == budget
    assert WorkingMemoryConfig(token_budget=4_000, archive_memory_tokens=3_400).tokens == 4_000


@pytest.mark.parametrize(
    "bad", [("fraction", 0), ("fraction", 1.5), ("fraction", float("nan")), ("tokens", 5), (0.5,)]
)
def test_a_bad_fraction_is_refused(bad):
    with pytest.raises(ValueError, match="fraction"):
        WorkingMemoryConfig(token_budget=bad)


def test_create_agent_resolves_a_fractional_budget_from_the_agent_models_profile():
    mw = WorkingMemoryMiddleware(
        wm_model(), config=WorkingMemoryConfig(token_budget=("fraction", 0.5), background=False)
    )
    agent = _agent(mw, model=_profiled(12_000))
    assert mw.memory.config.token_budget == 6_000
    config = thread_config("fraction")
    _say(agent, config, "note FACT-1: the build runs on build-1.example.com")
    assert agent.get_state(config).values["messages"]


def test_a_fraction_without_a_profile_fails_when_the_agent_is_built():
    mw = WorkingMemoryMiddleware(
        wm_model(), config=WorkingMemoryConfig(token_budget=("fraction", 0.8))
    )
    with pytest.raises(ValueError, match=r"max_input_tokens"):
        _agent(mw, model=_profiled(None))


def test_a_resolved_fraction_that_collides_says_so():
    settings = WorkingMemoryConfig(token_budget=("fraction", 0.5), reserve_tokens=30_000)
    with pytest.raises(ValueError, match=r"reserve_tokens=30,000.*48,000-token input window"):
        _agent(WorkingMemoryMiddleware(wm_model(), config=settings), model=_profiled(48_000))


def test_hooks_resolve_a_fraction_from_agent_model_and_refuse_to_run_without_it():
    settings = WorkingMemoryConfig(token_budget=("fraction", 0.25))
    memory = WorkingMemory(wm_model(), config=settings, agent_model=_profiled(40_000))
    assert memory.config.token_budget == 10_000
    unresolved = WorkingMemory(wm_model(), config=settings)
    agent = create_react_agent(
        agent_model(),
        [lookup],
        pre_model_hook=unresolved.pre_model_hook,
        post_model_hook=unresolved.post_model_hook,
        state_schema=WorkingMemoryReactState,
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        version="v2",
    )
    with pytest.raises(ValueError, match="agent_model="):
        agent.invoke({"messages": [HumanMessage("hi")]}, thread_config("unresolved"))


# -- the writer -------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:A test tried to use socket")  # ChatOpenAI probes options
def test_a_provider_model_string_builds_the_writer(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    from langchain_openai import ChatOpenAI

    memory = WorkingMemory("openai:gpt-4.1-mini")
    assert isinstance(memory.model, ChatOpenAI)
    assert memory.model.model_name == "gpt-4.1-mini"
    mw = WorkingMemoryMiddleware("openai:gpt-4.1-nano")
    assert isinstance(mw.memory.model, ChatOpenAI)
    with pytest.raises(ValueError, match="name a model"):
        WorkingMemory("  ")
    with pytest.raises(ValueError, match="no-such-provider"):
        WorkingMemory("no-such-provider:model")
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="gpt-4o"):
        WorkingMemory("openai:gpt-4o")  # the client needs a key: said at once
    with pytest.raises(TypeError, match="provider:model"):
        WorkingMemory(42)  # type: ignore[arg-type]


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and text in r.getMessage()
    ]


def test_the_offline_fallback_writer_is_said_once_at_warning(caplog, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.INFO, logger="wm_langgraph")
    mw = WorkingMemoryMiddleware(config=EVERY_TURN)
    agent = _agent(mw)
    _say(agent, thread_config("offline"), *(f"note FACT-{n}" for n in range(1, 5)))
    assert mw.memory.get_working_memory(thread_config("offline"))
    said = _warnings(caplog, "heuristic offline writer")
    assert len(said) == 1
    assert "model=" in said[0]


class _AnthropicAgent(ScriptedChatModel):
    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {**super()._get_ls_params(stop=stop, **kwargs), "ls_provider": "anthropic"}


@pytest.mark.filterwarnings("ignore:A test tried to use socket")  # ChatOpenAI probes options
def test_a_default_writer_from_another_provider_than_the_agents_is_said_once(caplog, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    caplog.set_level(logging.INFO, logger="wm_langgraph")
    mw = WorkingMemoryMiddleware()  # no commit below: the default writer is never called
    agent = _agent(mw, model=_AnthropicAgent(replies=["ok"], repeat_last=True))
    _say(agent, thread_config("providers"), "hello", "again")
    said = _warnings(caplog, "provider openai")
    assert len(said) == 1
    assert "anthropic" in said[0]
    assert "model=" in said[0]


def test_the_phase2_failure_warning_names_the_exception_and_its_message(caplog):
    caplog.set_level(logging.INFO, logger="wm_langgraph")
    broken = ScriptedChatModel(
        replies=[ConnectionRefusedError(111, "Connection refused")], repeat_last=True
    )
    mw = WorkingMemoryMiddleware(broken, config=EVERY_TURN)
    agent = _agent(mw)
    _say(agent, thread_config("refused"), *(f"note FACT-{n}" for n in range(1, 4)))
    said = _warnings(caplog, "Phase 2 failed")
    assert said
    assert "ConnectionRefusedError" in said[0]
    assert "Connection refused" in said[0]


# -- the conflicting summariser ---------------------------------------------------------------


@pytest.mark.parametrize("summariser_first", [True, False])
def test_summarization_middleware_is_refused_when_the_agent_is_built(summariser_first):
    summariser = SummarizationMiddleware(
        model=ScriptedChatModel(replies=["Earlier: notes."], repeat_last=True),
        trigger=("messages", 6),
    )
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
    middleware = [summariser, mw] if summariser_first else [mw, summariser]
    with pytest.raises(ConflictingMiddlewareError, match="SummarizationMiddleware"):
        create_agent(
            agent_model(),
            [lookup],
            middleware=middleware,
            checkpointer=InMemorySaver(),
            store=InMemoryStore(),
        )


# -- transcript and commit events -------------------------------------------------------------


def test_the_transcript_is_the_whole_conversation_in_order_paged():
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
    agent = _agent(mw, state_schema=WorkingMemoryAgentState)
    config = thread_config("transcript")
    notes = [f"note FACT-{n}: server build-{n}.example.com" for n in range(1, 7)]
    _say(agent, config, *notes)
    live = agent.get_state(config).values["messages"]
    assert len(live) < 12, "nothing was archived: the test shows nothing"
    page = mw.memory.transcript(config)
    users = [m.text for m in page.messages if isinstance(m, HumanMessage)]
    assert users == notes
    assert page.total == len(page.messages) == 12
    assert page.next_offset is None
    first = mw.memory.transcript(config, limit=5)
    second = mw.memory.transcript(config, offset=5, limit=5)
    third = mw.memory.transcript(config, offset=10, limit=5)
    assert (first.next_offset, second.next_offset, third.next_offset) == (5, 10, None)
    assert [m.id for m in first.messages + second.messages + third.messages] == [
        m.id for m in page.messages
    ]
    same = mw.memory.transcript(config, state=agent.get_state(config).values)
    assert [m.id for m in same.messages] == [m.id for m in page.messages]
    # A message removed after it was archived leaves the transcript too.
    archived = mw.memory.list_archives(config)[0].messages[0]
    agent.update_state(config, {"messages": [RemoveMessage(id=str(archived.id))]})
    _say(agent, config, "note FACT-7")
    after = mw.memory.transcript(config)
    assert archived.id not in [m.id for m in after.messages]
    assert [m.text for m in after.messages if isinstance(m, HumanMessage)] == [
        *notes[1:],
        "note FACT-7",
    ]
    again = asyncio.run(mw.memory.atranscript(config, offset=1, limit=2))
    assert [m.id for m in again.messages] == [m.id for m in after.messages[1:3]]


def test_commits_show_in_the_custom_stream_and_in_astream_events():
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
    agent = _agent(mw)
    config = thread_config("events")
    custom: list[Any] = []
    for n in range(1, 4):
        custom.extend(
            agent.stream(
                {"messages": [HumanMessage(f"note FACT-{n}")]}, config, stream_mode="custom"
            )
        )
    starts = [c for c in custom if c.get("type") == "wm_commit_start"]
    ends = [c for c in custom if c.get("type") == "wm_commit_end"]
    assert starts
    assert len(starts) == len(ends)
    assert starts[0]["archive_ids"] == ends[0]["archive_ids"] == ["archive_001"]
    assert starts[0]["messages"] > 0
    assert starts[0]["background"] is False
    assert ends[0]["phase2"] == "done"

    async def events() -> list[Any]:
        return [
            (event["name"], event["data"])
            async for event in agent.astream_events(
                {"messages": [HumanMessage("note FACT-9")]}, config, version="v2"
            )
            if event["event"] == "on_custom_event"
        ]

    seen = asyncio.run(events())
    assert [name for name, _ in seen] == ["wm_commit_start", "wm_commit_end"]
    assert seen[1][1]["phase2"] == "done"


# -- the store ---------------------------------------------------------------------------------


def test_the_current_working_memory_is_under_the_latest_key():
    store = InMemoryStore()
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
    agent = _agent(mw, store=store)
    config = thread_config("latest")
    _say(agent, config, *(f"note FACT-{n}" for n in range(1, 6)))
    latest = store.get(("wm_langgraph", "latest", "wm"), "latest")
    assert latest is not None
    assert latest.value["text"] == mw.memory.get_working_memory(config)
    versions = list(store.search(("wm_langgraph", "latest", "wm"), limit=100))
    newest = max(versions, key=lambda i: len(i.value["covers"]))
    assert latest.value["covers"] == newest.value["covers"]


def test_an_in_memory_saver_without_a_store_gets_an_in_process_store_said_once(caplog):
    caplog.set_level(logging.INFO, logger="wm_langgraph")
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
    agent = _agent(mw, store=None)
    config = thread_config("nostore-inmemory")
    _say(agent, config, *(f"note FACT-{n}" for n in range(1, 5)))
    assert "FACT-1" in mw.memory.get_working_memory(config)
    assert len(mw.memory.list_archives(config)) >= 2
    assert len(_warnings(caplog, "InMemoryStore that lives as long as")) == 1


def test_a_persistent_checkpointer_without_a_store_still_raises(tmp_path):
    connection = sqlite3.connect(tmp_path / "agent.sqlite", check_same_thread=False)
    try:
        mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)
        agent = _agent(mw, checkpointer=SqliteSaver(connection), store=None)
        with pytest.raises(NoStoreError, match=r"store="):
            _say(agent, thread_config("nostore-sqlite"), "hello")
    finally:
        connection.close()


# -- properties -------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(budget=st.integers(256, 10_000_000))
def test_property_the_defaults_fit_every_budget_and_an_explicit_overlarge_layer_never_does(budget):
    config = WorkingMemoryConfig(token_budget=budget)
    usable = budget - min(budget, max((15 * budget + 99) // 100, 20_000 if budget >= 40_000 else 0))
    assert config.tokens == budget
    # The default's own value (8,000) reads as "not set" and scales down with the budget (found:
    # budget 9,411, usable 7,999): an explicit layer one token larger than usable, but not 8,000.
    overlarge = usable + 1 if usable + 1 != DEFAULT_ARCHIVE_MEMORY_TOKENS else usable + 2
    with pytest.raises(ValueError, match="archive_memory_tokens"):
        WorkingMemoryConfig(token_budget=budget, archive_memory_tokens=overlarge)
    if budget >= 40_000:
        with pytest.raises(ValueError, match="reserve_tokens"):
            WorkingMemoryConfig(token_budget=budget, reserve_tokens=budget)


@settings(max_examples=100, deadline=None)
@given(window=st.integers(1_000, 2_000_000), fraction=st.floats(0.01, 1.0))
def test_property_a_fraction_resolves_to_that_share_of_the_window(window, fraction):
    config = WorkingMemoryConfig(token_budget=("fraction", fraction))
    resolved = config.for_model(_profiled(window))  # the defaults fit any resolved budget
    assert resolved.tokens == max(256, int(window * fraction))
    assert resolved.replace(token_budget=resolved.tokens) == resolved


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(
    turns=st.integers(1, 9),
    keep=st.integers(0, 4),
    page=st.integers(1, 7),
    removed=st.integers(0, 3),
)
def test_property_the_transcript_is_every_message_sent_minus_the_removed_in_order(
    turns, keep, page, removed
):
    settings_ = EVERY_TURN.replace(commit_keep_recent_count=keep)
    mw = WorkingMemoryMiddleware(wm_model(), config=settings_)
    agent = _agent(mw, state_schema=WorkingMemoryAgentState)
    config = thread_config(f"prop-{turns}-{keep}-{page}-{removed}")
    notes = [f"note FACT-{n}" for n in range(1, turns + 1)]
    _say(agent, config, *notes)
    gone = [m for r in mw.memory.list_archives(config) for m in r.messages][:removed]
    if gone:
        agent.update_state(config, {"messages": [RemoveMessage(id=str(m.id)) for m in gone]})
        _say(agent, config, "note FACT-last")
        notes.append("note FACT-last")
    whole = mw.memory.transcript(config)
    users = [m.text for m in whole.messages if isinstance(m, HumanMessage)]
    gone_texts = {m.text for m in gone if isinstance(m, HumanMessage)}
    assert users == [n for n in notes if n not in gone_texts]
    assert not {m.id for m in gone} & {m.id for m in whole.messages}
    paged, offset = [], 0
    while True:
        part = mw.memory.transcript(config, offset=offset, limit=page)
        paged.extend(part.messages)
        if part.next_offset is None:
            break
        offset = part.next_offset
    assert [m.id for m in paged] == [m.id for m in whole.messages]


def test_a_state_graph_and_a_react_agent_get_the_store_events_and_transcript_too():
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    from wm_langgraph import WorkingMemoryState

    memory = WorkingMemory(wm_model(), config=EVERY_TURN)

    def model_node(state: WorkingMemoryState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"ok {len(state['llm_input_messages'])}")]}

    builder = StateGraph(WorkingMemoryState)
    builder.add_node("assemble", memory.assemble)
    builder.add_node("model", model_node)
    builder.add_node("after_turn", memory.after_turn)
    builder.add_edge(START, "assemble")
    builder.add_edge("assemble", "model")
    builder.add_edge("model", "after_turn")
    builder.add_edge("after_turn", END)
    graph = builder.compile(checkpointer=InMemorySaver())  # no store: an in-process one
    config = thread_config("graph-path")
    events: list[Any] = []
    for n in range(1, 5):
        message = {"messages": [HumanMessage(f"note FACT-{n}")]}
        events.extend(graph.stream(message, config, stream_mode="custom"))
    assert [e["type"] for e in events][:2] == ["wm_commit_start", "wm_commit_end"]
    page = memory.transcript(config)
    assert [m.text for m in page.messages if isinstance(m, HumanMessage)] == [
        f"note FACT-{n}" for n in range(1, 5)
    ]

    react_memory = WorkingMemory(wm_model(), config=EVERY_TURN)
    react = create_react_agent(
        agent_model(),
        [lookup],
        pre_model_hook=react_memory.pre_model_hook,
        post_model_hook=react_memory.post_model_hook,
        state_schema=WorkingMemoryReactState,
        checkpointer=InMemorySaver(),
        version="v2",
    )
    config = thread_config("react-path")
    events = []
    for n in range(1, 5):
        message = {"messages": [HumanMessage(f"note FACT-{n}")]}
        events.extend(react.stream(message, config, stream_mode="custom"))
    assert "wm_commit_start" in [e["type"] for e in events]
    texts = [m.text for m in react_memory.transcript(config).messages]
    assert [t for t in texts if t.startswith("note")] == [f"note FACT-{n}" for n in range(1, 5)]
