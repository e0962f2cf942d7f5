"""The memory inside subgraphs, langgraph-supervisor and langgraph-swarm.

A parent graph re-sends its whole message history to a sub-agent every turn. Before, the
sub-agent's model input grew with the conversation (85 -> 1,434 tokens over 12 turns; under
the supervisor 3, 10, 19 ... 54 messages) and the same messages were archived again and again.
Over 30 turns each agent's model input must stay bounded (never over ``usable``, no longer
growing once the agent's own history outgrew it, and never showing a message twice), and no
message may be archived twice. While an agent's history fits, its input is that history
(behaviour §7.4), so the budget is small enough for the history to outgrow it early.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.integrations.helpers import wm_model
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.testing import ScriptedChatModel, tool_reply

TURNS = 30
CONFIG = WorkingMemoryConfig(
    token_budget=1_500,
    commit_token_threshold_ratio=0.05,
    commit_keep_recent_count=4,
    reserve_tokens=0,
    background=False,
    # The input sizes below show that the memory bounds the live messages; the verbatim fill
    # would fill the budget with folded turns on purpose.
    verbatim_fill=False,
)


def _newest_human(messages: list[BaseMessage]) -> tuple[int, str]:
    index = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    return index, str(messages[index].text)


def _answerer(label: str, handoffs: Callable[[str], str | None] | None = None) -> ScriptedChatModel:
    """An agent model: hands off when ``handoffs(user text)`` names a tool (once per turn),
    otherwise answers with a sentence that quotes the user's FACT."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        start, text = _newest_human(messages)
        target = handoffs(text) if handoffs else None
        called = any(isinstance(m, ToolMessage) for m in messages[start:])
        if target and not called:
            return tool_reply(target, {})
        return f"{label} answers: {text} — recorded with details " + "x " * 20

    return ScriptedChatModel(respond=reply)


USABLE = compute_budgets(CONFIG.tokens, CONFIG.reserve_tokens, CONFIG.archive_memory_tokens).usable

_NOTED_RE = re.compile(r"FACT-\d+, the server build-\d+\.example\.com")


def _writer() -> ScriptedChatModel:
    """The WM writer: ``wm_model``'s, but it notes each turn's whole fact (the FACT id and its
    server), as a faithful writer does, so the capture check has nothing to add."""
    inner = wm_model()

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        answer = inner.invoke(messages) if not tools else inner.bind_tools(tools).invoke(messages)
        prompt = "\n".join(str(m.text) for m in messages)
        block = prompt.split("<messages>")[-1]
        noted = list(dict.fromkeys(_NOTED_RE.findall(block)))
        if answer.tool_calls and noted:
            args = answer.tool_calls[0]["args"]
            items = args["sections"]["Key Facts & Decisions"].get("items", [])
            ids = {n.split(",")[0] for n in noted}
            items = [i for i in items if i not in ids] + noted  # the whole fact, once
            args["sections"]["Key Facts & Decisions"] = {"op": "APPEND", "items": items}
            return tool_reply(answer.tool_calls[0]["name"], args)
        if not tools and noted:
            return str(answer.text).replace(
                "## Files & Context", "\n".join(f"- {n}" for n in noted) + "\n\n## Files & Context"
            )
        return answer

    return ScriptedChatModel(respond=reply)


def _turn_text(n: int) -> str:
    return f"turn {n}: remember FACT-{n}, the server build-{n}.example.com"


def _input_sizes(model: ScriptedChatModel, mw: WorkingMemoryMiddleware) -> list[int]:
    return [mw.memory.count_tokens(call.messages) for call in model.calls]


def _assert_bounded(sizes: list[int], what: str) -> None:
    assert len(sizes) >= TURNS // 3, f"{what}: the agent ran too rarely ({len(sizes)})"
    third = len(sizes) // 3
    early, late = max(sizes[third : 2 * third]), max(sizes[2 * third :])
    assert max(sizes) <= USABLE, f"{what}: model input over usable: {sizes}"
    assert late <= early * 1.25 + 50, f"{what}: model input keeps growing: {sizes}"


def _assert_shown_once(model: ScriptedChatModel, what: str) -> None:
    """No input shows a user turn twice (a re-sent history is not shown again)."""
    for call in model.calls:
        turns = [str(m.text) for m in call.messages if isinstance(m, HumanMessage)]
        turns = [t for t in turns if t.startswith("turn ")]
        assert len(turns) == len(set(turns)), f"{what}: a turn shown twice: {turns}"


def _assert_archived_once(mw: WorkingMemoryMiddleware, config: dict[str, Any]) -> None:
    records = mw.memory.list_archives(config)
    assert records, "nothing was archived"
    archived = [str(m.id) for r in records for m in r.messages]
    assert len(archived) == len(set(archived)), "a message was archived twice"


@pytest.mark.parametrize("own_checkpointer", [False, True], ids=["inherited", "own"])
def test_a_create_agent_subgraph_node_stays_bounded_and_archives_once(own_checkpointer, lookup):
    mw = WorkingMemoryMiddleware(_writer(), config=CONFIG)
    model = _answerer("worker")
    worker = create_agent(
        model, [lookup], middleware=[mw], checkpointer=True if own_checkpointer else None
    )
    builder = StateGraph(MessagesState)
    builder.add_node("worker", worker)
    builder.add_edge(START, "worker")
    graph = builder.compile(checkpointer=InMemorySaver(), store=InMemoryStore())
    config: Any = {"configurable": {"thread_id": f"sub-{own_checkpointer}"}}
    for n in range(1, TURNS + 1):
        graph.invoke({"messages": [HumanMessage(_turn_text(n))]}, config)
    _assert_bounded(_input_sizes(model, mw), "subgraph")
    _assert_shown_once(model, "subgraph")
    _assert_archived_once(
        mw, thread_config(config["configurable"]["thread_id"], checkpoint_ns="worker")
    )
    assert "FACT-1" in mw.memory.get_working_memory(
        thread_config(config["configurable"]["thread_id"], checkpoint_ns="worker")
    )


def test_under_langgraph_supervisor_the_research_agent_stays_bounded(lookup):
    from langgraph_supervisor import create_supervisor

    mw = WorkingMemoryMiddleware(_writer(), config=CONFIG)
    research_model = _answerer("research")
    research = create_agent(research_model, [lookup], middleware=[mw], name="research_expert")

    def supervise(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return tool_reply("transfer_to_research_expert", {})
        return AIMessage(content="The research expert has answered.")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the supervisor builds on create_react_agent
        workflow = create_supervisor(
            [research], model=ScriptedChatModel(respond=supervise), output_mode="full_history"
        )
        graph = workflow.compile(checkpointer=InMemorySaver(), store=InMemoryStore())
    config: Any = {"configurable": {"thread_id": "supervised"}}
    for n in range(1, TURNS + 1):
        graph.invoke({"messages": [HumanMessage(_turn_text(n))]}, config)
    _assert_bounded(_input_sizes(research_model, mw), "supervisor's research agent")
    _assert_shown_once(research_model, "supervisor's research agent")
    _assert_archived_once(mw, thread_config("supervised", checkpoint_ns="research_expert"))


def test_under_langgraph_swarm_each_agent_stays_bounded_and_has_its_own_memory(lookup):
    from langgraph_swarm import create_handoff_tool, create_swarm

    def hands_to(other: str) -> Callable[[str], str | None]:
        return lambda text: f"transfer_to_{other}" if f"for {other}" in text else None

    memories = {
        name: WorkingMemoryMiddleware(_writer(), config=CONFIG) for name in ("alice", "bob")
    }
    models = {
        "alice": _answerer("alice", hands_to("bob")),
        "bob": _answerer("bob", hands_to("alice")),
    }
    agents = [
        create_agent(
            models[name],
            [lookup, create_handoff_tool(agent_name=other)],
            middleware=[memories[name]],
            name=name,
        )
        for name, other in (("alice", "bob"), ("bob", "alice"))
    ]
    graph = create_swarm(agents, default_active_agent="alice").compile(
        checkpointer=InMemorySaver(), store=InMemoryStore()
    )
    config: Any = {"configurable": {"thread_id": "swarm"}}
    for n in range(1, TURNS + 1):
        target = "bob" if n % 4 == 0 else "alice" if n % 4 == 2 else "whoever"
        graph.invoke({"messages": [HumanMessage(f"{_turn_text(n)} (for {target})")]}, config)
    for name in ("alice", "bob"):
        _assert_bounded(_input_sizes(models[name], memories[name]), f"swarm agent {name}")
        _assert_shown_once(models[name], f"swarm agent {name}")
        _assert_archived_once(memories[name], thread_config("swarm", checkpoint_ns=name))
    alice_ids = {
        str(m.id)
        for r in memories["alice"].memory.list_archives(
            thread_config("swarm", checkpoint_ns="alice")
        )
        for m in r.messages
    }
    bob_records = memories["bob"].memory.list_archives(thread_config("swarm", checkpoint_ns="bob"))
    assert alice_ids
    assert bob_records  # each agent reads its own memory (namespaces by graph)
