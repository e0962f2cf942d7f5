"""End to end: ``create_react_agent`` pre/post model hooks and hand-built ``StateGraph`` nodes."""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.store.memory import InMemoryStore

from tests.common import lookup_tool, thread_config
from tests.integrations.helpers import (
    agent_model,
    all_message_ids,
    assert_tool_pairs_intact,
    ids,
    wm_model,
)
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import SUMMARY_HEADER
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.state import WorkingMemoryState

lookup = lookup_tool(details=20)  # results large enough to move the counts


def check_nothing_lost(graph: Any, wm: WorkingMemory, config: RunnableConfig) -> None:
    live = ids(graph.get_state(config).values["messages"])
    archived = [i for record in wm.list_archives(config) for i in ids(record.messages)]
    assert len(archived) == len(set(archived))
    assert not set(archived) & set(live)
    assert all_message_ids(graph, config) == set(archived) | set(live)


PADDING = " (the billing service context) " * 40
"""Makes a few turns outgrow a 1,000-token budget: then the input carries the Working Memory
(while the whole history fits, the input is that history)."""


def _memory(store: InMemoryStore, **settings: Any) -> WorkingMemory:
    """The WM these tests share: the scripted writer and a 6,000-token budget."""
    config = WorkingMemoryConfig(**{"token_budget": 6_000, **settings})
    return WorkingMemory(wm_model(), config=config, store=store)


def test_create_react_agent_with_pre_and_post_model_hooks():
    from langgraph.prebuilt import create_react_agent

    store = InMemoryStore()
    wm = _memory(
        store,
        token_budget=1_000,
        commit_token_threshold_ratio=0.02,
        commit_keep_recent_count=4,
        background=False,
    )
    model = agent_model()
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # create_react_agent is deprecated in favour of create_agent
        agent = create_react_agent(
            model,
            [lookup, *wm.tools],
            pre_model_hook=wm.pre_model_hook,
            post_model_hook=wm.post_model_hook,
            checkpointer=InMemorySaver(),
            store=store,
            version="v2",
        )
    thread = thread_config("react")
    for turn in range(7):
        out = agent.invoke(
            {"messages": [HumanMessage(f"turn {turn}: FACT-{turn}; use lookup{PADDING}")]}, thread
        )
        last = out["messages"][-1]
        assert isinstance(last, AIMessage)
        assert not last.tool_calls
        assert last.text.startswith(f"Answer to: turn {turn}")
    archives = wm.list_archives(thread)
    assert len(archives) >= 2
    assert {a.status for a in archives} == {"done"}
    assert "FACT-0" in wm.get_working_memory(thread)
    seen = model.calls[-1].messages
    assert isinstance(seen[0], SystemMessage)
    assert seen[1].text.startswith(SUMMARY_HEADER)
    assert seen[-1].text.startswith("wiki entry") or seen[-2].text.startswith("turn 6")
    assert_tool_pairs_intact(agent.get_state(thread).values["messages"])
    check_nothing_lost(agent, wm, thread)


def _state_graph(wm: WorkingMemory, model: Any, store: InMemoryStore) -> Any:
    tools = [lookup, *wm.tools]
    bound = model.bind_tools(tools)

    def agent(state: WorkingMemoryState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["llm_input_messages"])]}

    builder = StateGraph(WorkingMemoryState)
    builder.add_node("assemble", wm.assemble)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_node("after_turn", wm.after_turn)
    builder.add_edge(START, "assemble")
    builder.add_edge("assemble", "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "after_turn"})
    builder.add_edge("tools", "assemble")
    builder.add_edge("after_turn", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def test_state_graph_with_assemble_and_after_turn_nodes_then_compact():
    store = InMemoryStore()
    wm = _memory(
        store,
        token_budget=1_000,
        commit_token_threshold_ratio=0.02,
        commit_keep_recent_count=4,
        background=True,
    )
    model = agent_model()
    graph = _state_graph(wm, model, store)
    thread = thread_config("graph")
    for turn in range(6):
        text = f"turn {turn}: FACT-{turn}; use lookup{PADDING}"
        graph.invoke({"messages": [HumanMessage(text)]}, thread)
        assert wm.wait(thread, timeout=30)
    archives = wm.list_archives(thread)
    assert len(archives) >= 2
    assert "FACT-0" in wm.get_working_memory(thread)
    values = graph.get_state(thread).values
    assert values["working_memory"]["archives"] == [a.id for a in archives]
    assert model.calls[-1].messages[1].text.startswith(SUMMARY_HEADER)
    check_nothing_lost(graph, wm, thread)

    # compact: everything archived and folded in, nothing live; the next turn starts from the WM
    update = wm.compact(values, thread)
    graph.update_state(thread, update, as_node="after_turn")
    assert graph.get_state(thread).values["messages"] == []
    wm_text = wm.get_working_memory(thread)
    assert "FACT-5" in wm_text
    graph.invoke({"messages": [HumanMessage("what do we know?")]}, thread)
    seen = model.calls[-1].messages
    assert seen[1].text.startswith(SUMMARY_HEADER)
    assert "FACT-5" in seen[1].text
    check_nothing_lost(graph, wm, thread)
    wm.close()


def test_state_graph_async_invocations():
    import asyncio

    store = InMemoryStore()
    wm = _memory(
        store, commit_token_threshold_ratio=0.0, background=False, commit_keep_recent_count=2
    )
    graph = _state_graph(wm, agent_model(), store)
    thread = thread_config("graph-async")

    async def run() -> None:
        for turn in range(3):
            await graph.ainvoke({"messages": [HumanMessage(f"a{turn} FACT-{turn}")]}, thread)

    asyncio.run(run())
    assert [a.status for a in wm.list_archives(thread)] == ["done"] * len(wm.list_archives(thread))
    assert "FACT-0" in wm.get_working_memory(thread)
    check_nothing_lost(graph, wm, thread)


def test_tools_in_a_graph_only_see_their_own_thread():
    store = InMemoryStore()
    wm = _memory(
        store, commit_token_threshold_ratio=0.0, commit_keep_recent_count=0, background=False
    )
    graph = _state_graph(wm, agent_model(), store)
    for n in range(3):
        graph.invoke({"messages": [HumanMessage(f"B secret FACT-10{n}")]}, thread_config("B"))
    graph.invoke({"messages": [HumanMessage("A note FACT-1")]}, thread_config("A"))
    assert len(wm.list_archives(thread_config("B"))) == 3
    assert len(wm.list_archives(thread_config("A"))) == 1

    def ask(thread: str, text: str) -> ToolMessage:
        graph.invoke({"messages": [HumanMessage(text)]}, thread_config(thread))
        # the turn was archived at its end (keep 0): read the tool result from there
        newest = wm.list_archives(thread_config(thread))[-1]
        (result,) = [m for m in newest.messages if isinstance(m, ToolMessage)]
        return result

    foreign = ask("A", 'call archive_expand {"archive_id": "archive_003"}')  # B has one
    assert foreign.text.startswith("Refused")
    assert "FACT-10" not in foreign.text
    own = ask("A", 'call archive_expand {"archive_id": "archive_001"}')
    assert "FACT-1" in own.text
    assert "secret" not in own.text
    path = ask("A", 'call archive_expand {"archive_id": "../B/archive_001"}')
    assert path.text.startswith("Refused")
    assert "path" in path.text
    search = ask("A", 'call archive_search {"query": "secret"}')
    assert search.text.startswith("No match")
    search_b = ask("B", 'call archive_search {"query": "secret"}')
    assert all(f"[archive_00{n} · message 1/2 · user]" in search_b.text for n in (1, 2, 3))
