"""End to end: ``create_agent(..., middleware=[WorkingMemoryMiddleware(...)])`` over many turns."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import lookup_tool, thread_config
from tests.integrations.helpers import (
    agent_model,
    all_message_ids,
    assert_tool_pairs_intact,
    ids,
    wm_model,
)
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import SUMMARY_HEADER, compute_budgets
from wm_langgraph.errors import ConflictingMiddlewareError

lookup = lookup_tool(details=20)  # results large enough to move the counts


@tool
def fetch(key: str) -> str:
    """Fetch a large report."""
    return f"report {key}: " + " ".join(f"row{i}" for i in range(240))


def build(config: WorkingMemoryConfig, *, tools: list[Any], calls_per_turn: int = 1, **mw: Any):
    store = InMemoryStore()
    writer = mw.pop("writer", None) or wm_model()
    middleware = WorkingMemoryMiddleware(writer, config=config, store=store, **mw)
    model = agent_model(tool=tools[0].name, calls_per_turn=calls_per_turn)
    agent = create_agent(
        model, tools, middleware=[middleware], checkpointer=InMemorySaver(), store=store
    )
    return agent, middleware, model, writer


PADDING = " (the billing service context)" * 40
"""Makes a few turns outgrow a 1,000-token budget: then the input carries the Working Memory
(while the whole history fits, the input is that history)."""


def check_nothing_lost(agent: Any, mw: WorkingMemoryMiddleware, config: dict[str, Any]) -> None:
    live = ids(agent.get_state(config).values["messages"])
    archived = [i for record in mw.memory.list_archives(config) for i in ids(record.messages)]
    assert len(archived) == len(set(archived)), "a message is in two archives"
    assert not set(archived) & set(live), "a message is both archived and live"
    assert all_message_ids(agent, config) == set(archived) | set(live)


def test_many_turns_commit_fold_and_assemble_without_touching_state():
    config = WorkingMemoryConfig(
        token_budget=1_000,
        commit_token_threshold_ratio=0.02,
        commit_keep_recent_count=4,
        background=False,
    )
    agent, mw, model, writer = build(config, tools=[lookup])
    thread = thread_config("t-many")
    for turn in range(8):
        # long turns: the history outgrows usable, so the input carries the Working Memory
        text = f"turn {turn}: remember FACT-{turn}; use lookup{PADDING}"
        out = agent.invoke({"messages": [HumanMessage(text)]}, thread)
        assert "working_memory" not in out  # private to the middleware
        assert isinstance(out["messages"][-1], AIMessage)
        assert out["messages"][-1].text.startswith("Answer to: turn")

    archives = mw.memory.list_archives(thread)
    assert len(archives) >= 2
    assert [a.seq for a in archives] == sorted(a.seq for a in archives)
    assert {a.status for a in archives} == {"done"}
    wm = mw.memory.get_working_memory(thread)
    archived_text = "\n".join(str(m.text) for a in archives for m in a.messages)
    for n in range(8):
        if f"FACT-{n}" in archived_text:
            assert f"FACT-{n}" in wm  # what left the live window is in the WM
    # the agent's own tool ran, and the archive tools were offered next to it
    state = agent.get_state(thread).values
    assert any(isinstance(m, ToolMessage) and m.name == "lookup" for m in state["messages"])
    offered = {t["function"]["name"] for t in model.bound[-1]["tools"]}
    assert {"lookup", "archive_expand", "archive_search"} <= offered
    # the meta value lives in the checkpoint, JSON-plain
    meta = state["working_memory"]
    assert json.loads(json.dumps(meta)) == meta
    assert meta["archives"] == [a.id for a in archives]
    # what the model saw last: system addition, the WM, then the live messages (saved state
    # itself has no summary message)
    seen = model.calls[-1].messages
    assert isinstance(seen[0], SystemMessage)
    assert isinstance(seen[1], HumanMessage)
    assert seen[1].text.startswith(SUMMARY_HEADER)
    assert "FACT-0" in seen[1].text
    assert not any(SUMMARY_HEADER in str(m.text) for m in state["messages"])
    newest_user = [m for m in seen if isinstance(m, HumanMessage)][-1]
    assert newest_user.text.startswith("turn 7")
    # the WM writer was asked for a forced update_working_memory call once a WM existed
    assert writer.bound
    assert writer.bound[-1]["tool_choice"] == "update_working_memory"
    check_nothing_lost(agent, mw, thread)


def test_schema_keeps_the_meta_out_of_input_and_output():
    agent, _, _, _ = build(WorkingMemoryConfig(background=False), tools=[lookup])
    assert "working_memory" not in agent.get_input_jsonschema()["properties"]
    assert "working_memory" not in agent.get_output_jsonschema()["properties"]


def test_user_system_prompt_is_kept_after_the_addition():
    config = WorkingMemoryConfig(
        token_budget=1_000,
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=0,
        background=False,
    )
    store = InMemoryStore()
    mw = WorkingMemoryMiddleware(wm_model(), config=config, store=store)
    model = agent_model()
    agent = create_agent(
        model,
        [lookup],
        system_prompt="You are the billing bot.",
        middleware=[mw],
        checkpointer=InMemorySaver(),
        store=store,
    )
    thread = thread_config("t-sys")
    # four long turns outgrow usable: the Working Memory and its addition are shown
    for n in range(1, 5):
        agent.invoke({"messages": [HumanMessage(f"turn FACT-{n}{PADDING}")]}, thread)
    system = model.calls[-1].messages[0]
    assert isinstance(system, SystemMessage)
    assert "You are the billing bot." in system.text
    assert system.text.index("You are the billing bot.") > 0  # the addition comes first


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_mid_turn_overflow_commits_inline_keeping_the_newest_turn(mode):
    config = WorkingMemoryConfig(
        token_budget=3_000,
        commit_token_threshold_ratio=1.0,  # after_turn alone would never commit here
        commit_keep_recent_count=10,
        background=True,  # the overflow commit is inline regardless
    )
    agent, mw, model, _ = build(config, tools=[fetch], calls_per_turn=4)
    thread = thread_config("t-overflow")

    def run(text: str) -> None:
        payload = {"messages": [HumanMessage(text)]}
        if mode == "sync":
            agent.invoke(payload, thread)
        else:
            asyncio.run(agent.ainvoke(payload, thread))

    for n in range(3):
        run(f"note FACT-{n}: " + "context " * 120)
    assert mw.memory.list_archives(thread) == []
    calls_before = len(model.calls)

    run("now use fetch for the big reports")

    archives = mw.memory.list_archives(thread)
    assert archives, "the tool loop outgrew the budget but nothing was committed"
    assert archives[0].status == "done"  # Phase 2 ran inline, before the next model call
    budgets = compute_budgets(
        config.token_budget, config.reserve_tokens, config.archive_memory_tokens
    )
    turn_calls = model.calls[calls_before:]
    assert len(turn_calls) == 5  # four tool calls and the answer
    for call in turn_calls:
        assert mw.memory.count_tokens(call.messages) <= budgets.usable
        assert any(m.text == "now use fetch for the big reports" for m in call.messages)
        assert_tool_pairs_intact(call.messages)
    assert any(SUMMARY_HEADER in str(m.text) for m in turn_calls[-1].messages)
    assert "FACT-0" in mw.memory.get_working_memory(thread)
    live = agent.get_state(thread).values["messages"]
    assert_tool_pairs_intact(live)
    assert any(m.text == "now use fetch for the big reports" for m in live)
    assert sum(isinstance(m, ToolMessage) for m in live) == 4
    check_nothing_lost(agent, mw, thread)
    mw.memory.close()


def test_async_agent_with_background_commits():
    config = WorkingMemoryConfig(
        token_budget=6_000,
        commit_token_threshold_ratio=0.02,
        commit_keep_recent_count=2,
        background=True,
    )
    agent, mw, _, _ = build(config, tools=[lookup])
    thread = thread_config("t-async")

    async def run() -> None:
        for turn in range(5):
            await agent.ainvoke(
                {"messages": [HumanMessage(f"turn {turn}: FACT-{turn}; use lookup")]}, thread
            )

    asyncio.run(run())
    assert mw.memory.wait(thread, timeout=30)
    archives = mw.memory.list_archives(thread)
    assert archives
    assert {a.status for a in archives} == {"done"}
    assert "FACT-0" in mw.memory.get_working_memory(thread)
    check_nothing_lost(agent, mw, thread)
    mw.memory.close()


def test_threads_are_separate():
    config = WorkingMemoryConfig(
        token_budget=6_000,
        commit_token_threshold_ratio=0.0,
        background=False,
        commit_keep_recent_count=0,
    )
    agent, mw, _, _ = build(config, tools=[lookup])
    agent.invoke({"messages": [HumanMessage("alpha FACT-1")]}, thread_config("a"))
    agent.invoke({"messages": [HumanMessage("beta FACT-2")]}, thread_config("b"))
    assert "FACT-1" in mw.memory.get_working_memory(thread_config("a"))
    assert "FACT-2" not in mw.memory.get_working_memory(thread_config("a"))
    assert "FACT-2" in mw.memory.get_working_memory(thread_config("b"))


def test_names_are_configurable_and_must_differ():
    store = InMemoryStore()
    one = WorkingMemoryMiddleware(wm_model(), store=store, name="wm_one")
    two = WorkingMemoryMiddleware(wm_model(), store=store, name="wm_two")
    assert one.name == "wm_one"
    agent = create_agent(agent_model(), [lookup], middleware=[one], checkpointer=InMemorySaver())
    assert "wm_one.before_model" in agent.get_graph().nodes
    with pytest.raises(ConflictingMiddlewareError, match="one agent"):  # one state value
        create_agent(agent_model(), [lookup], middleware=[one, two], checkpointer=InMemorySaver())
    with pytest.raises(AssertionError, match="duplicate"):
        create_agent(
            agent_model(), [lookup], middleware=[one, WorkingMemoryMiddleware(name="wm_one")]
        )


def test_bad_arguments_fail_at_once():
    with pytest.raises(ValueError, match="name"):
        WorkingMemoryMiddleware(name="  ")
    with pytest.raises(ValueError, match="node names"):
        WorkingMemoryMiddleware(name="wm:1")
    with pytest.raises(TypeError):
        WorkingMemoryMiddleware(config={"token_budget": 10})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        WorkingMemoryMiddleware(no_such_option=1)
    existing = WorkingMemoryMiddleware(wm_model()).memory
    with pytest.raises(ValueError, match="not both"):
        WorkingMemoryMiddleware(memory=existing, store=InMemoryStore())
    shared = WorkingMemoryMiddleware(memory=existing)
    assert shared.memory is existing


def test_hooks_outside_an_agent_explain_themselves():
    mw = WorkingMemoryMiddleware(wm_model())
    with pytest.raises(RuntimeError, match="create_agent"):
        mw.after_agent({"messages": [HumanMessage("x")]}, None)  # type: ignore[arg-type]


def test_a_fork_sees_its_own_branch_memory_not_the_abandoned_one():
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0, commit_keep_recent_count=0, background=False
    )
    agent, mw, model, _ = build(config, tools=[lookup])
    thread = thread_config("t-fork")
    for n in range(3):
        agent.invoke({"messages": [HumanMessage(f"turn FACT-{n}")]}, thread)
    assert "FACT-2" in mw.memory.get_working_memory(thread)
    fork_point = next(
        snap
        for snap in agent.get_state_history(thread)
        if snap.values.get("working_memory", {}).get("archives") == ["archive_001"]
        and snap.next == ()
    )
    agent.invoke({"messages": [HumanMessage("fork turn")]}, fork_point.config)
    # the fork's history fits: it is the input, the fork's own turns only
    seen = "\n".join(str(m.text) for m in model.calls[-1].messages)
    assert "FACT-0" in seen
    assert "FACT-1" not in seen  # turns 2 and 3 never happened on this branch
    assert "FACT-2" not in seen
    assert SUMMARY_HEADER not in seen


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_archive_tools_through_create_agent_stay_in_their_thread(mode):
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0, commit_keep_recent_count=0, background=False
    )
    agent, mw, _, _ = build(config, tools=[lookup])

    def run(text: str, thread: str) -> None:
        payload = {"messages": [HumanMessage(text)]}
        if mode == "sync":
            agent.invoke(payload, thread_config(thread))
        else:
            asyncio.run(agent.ainvoke(payload, thread_config(thread)))

    for n in range(2):
        run(f"B private FACT-20{n}", "B")
    run("A note FACT-1", "A")

    def tool_result(thread: str, text: str) -> str:
        run(text, thread)
        newest = mw.memory.list_archives(thread_config(thread))[-1]  # keep 0: the turn is archived
        (result,) = [m for m in newest.messages if isinstance(m, ToolMessage)]
        return str(result.text)

    foreign = tool_result("A", 'call archive_expand {"archive_id": "archive_002"}')
    assert foreign.startswith("Refused")
    assert "private" not in foreign
    malformed = tool_result("A", 'call archive_expand {"archive_id": "archive 1; DROP"}')
    assert malformed.startswith("Refused")
    own = tool_result("A", 'call archive_search {"query": "fact-1"}')
    assert "[archive_001 · message 1/2 · user]\nA note FACT-1" in own
    assert tool_result("A", 'call archive_search {"query": "private"}').startswith("No match")
    assert "B private FACT-201" in tool_result(
        "B", 'call archive_expand {"archive_id": "archive_002"}'
    )
