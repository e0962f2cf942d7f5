"""create_react_agent with pre_model_hook / post_model_hook and no custom state schema."""

import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.engine._support import agent_model, assert_nothing_lost, user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _agent(wm, model, checkpointer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            model,
            [read_file],
            pre_model_hook=wm.pre_model_hook,
            post_model_hook=wm.post_model_hook,
            checkpointer=checkpointer,
            version="v2",
        )


@pytest.mark.parametrize("background", [True, False])
def test_react_agent_commits_over_many_invocations_and_loses_nothing(background, writer, memory):
    config = WorkingMemoryConfig(
        token_budget=3000, commit_keep_recent_count=4, background=background
    )
    wm = memory(writer.model, config=config)
    agent_llm = agent_model(tool_every=3, parallel=2)
    graph = _agent(wm, agent_llm, InMemorySaver())
    cfg = {"configurable": {"thread_id": f"react-{background}"}}
    sent = []
    for i in range(1, 41):
        sent.append(user(i).text)
        out = graph.invoke({"messages": [user(i)]}, cfg)
        assert isinstance(out["messages"][-1], AIMessage)
    assert wm.wait(cfg, timeout=30)
    archives = wm.list_archives(cfg)
    assert len(archives) >= 2
    assert all(a.status == "done" for a in archives)
    assert_nothing_lost(wm, cfg, out["messages"], sent)
    assert "FACT-001" in wm.get_working_memory(cfg)
    # the model saw the summary, not the archived turns
    last_prompt = agent_llm.calls[-1].messages
    assert any("[Session History Summary]" in m.text for m in last_prompt)
    assert not any("turn 1:" in m.text for m in last_prompt)
    # tool results always follow their call in every prompt the model saw
    for call in agent_llm.calls:
        answered = {m.tool_call_id for m in call.messages if isinstance(m, ToolMessage)}
        for m in call.messages:
            if isinstance(m, AIMessage):
                assert {tc["id"] for tc in m.tool_calls} <= answered


def test_react_agent_mid_turn_overflow_commits_and_keeps_the_turn(writer, memory):
    config = WorkingMemoryConfig(
        token_budget=2000, commit_keep_recent_count=10_000, background=False
    )
    wm = memory(writer.model, config=config)
    graph = _agent(wm, agent_model(tool_every=1, parallel=3), InMemorySaver())
    cfg = {"configurable": {"thread_id": "overflow"}}
    sent = []
    for i in range(1, 16):
        sent.append(user(i).text)
        out = graph.invoke({"messages": [user(i)]}, cfg)
    archives = wm.list_archives(cfg)
    assert archives  # the keep window alone would never have committed
    assert_nothing_lost(wm, cfg, out["messages"], sent)
    assert isinstance(out["messages"][0], HumanMessage)  # the newest turn stayed whole


def test_missing_thread_or_checkpointer_is_a_clear_error(writer):
    wm = WorkingMemory(writer.model, store=InMemoryStore())
    with pytest.raises(ValueError, match="checkpointer"):
        _agent(wm, agent_model(), None).invoke(
            {"messages": [user(1)]}, {"configurable": {"thread_id": "x"}}
        )
    with pytest.raises(ValueError, match="thread_id"):
        _agent(wm, agent_model(), InMemorySaver()).invoke({"messages": [user(1)]})
