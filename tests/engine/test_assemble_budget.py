"""Budget-aware assemble (a WM capped at its share even when everything fitted was cut
needlessly in small windows): the WM layer's share is a floor, and a cap only when the layers
compete; a WM that must be cut loses the oldest items of every section evenly."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

from tests.engine._size_support import (
    fact_agent,
    faithful_writer,
    path_of,
    tool_results,
    user_message,
)
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryState
from wm_langgraph.context.assemble import SUMMARY_HEADER, assemble_context, compute_budgets
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.messages import message_tokens

ADDITION = "The [Session History Summary] is compressed; trust the active messages."


def count(message: BaseMessage) -> int:
    return message_tokens(message, counter=len)


def big_wm(items: int = 30) -> str:
    return render_working_memory(
        {
            "Session Title": "Migrate billing to Postgres",
            "Current State": "Schema migrated; backfill running.",
            "Task & Goals": "\n".join(f"- goal {i} " + "g" * 30 for i in range(items // 3)),
            "Key Facts & Decisions": "\n".join(f"- fact {i} " + "f" * 40 for i in range(items)),
            "Files & Context": "\n".join(f"- src/m_{i}.py: " + "p" * 30 for i in range(items)),
            "Errors & Corrections": "\n".join(f"- error {i} " + "e" * 40 for i in range(items)),
            "Open Issues": "\n".join(f"- issue {i} " + "o" * 30 for i in range(items // 3)),
        }
    )


def turn(n: int, size: int = 10) -> list[BaseMessage]:
    pad = "x" * size
    return [
        HumanMessage(f"question {n} {pad}", id=f"h{n}"),
        AIMessage(
            f"calling {pad}",
            tool_calls=[{"name": "lookup", "args": {"n": n}, "id": f"c{n}"}],
            id=f"a{n}",
        ),
        ToolMessage(f"result {n} {pad}", tool_call_id=f"c{n}", id=f"t{n}"),
        AIMessage(f"answer {n} {pad}", id=f"f{n}"),
    ]


def run(**overrides: Any) -> Any:
    args: dict[str, Any] = {
        "system_message": None,
        "working_memory": "",
        "pending_messages": [],
        "live_messages": [],
        "token_budget": 20_000,
        "reserve_tokens": 0,
        "archive_memory_tokens": 8_000,
        "count": count,
        "system_addition": ADDITION,
    }
    args.update(overrides)
    return assemble_context(**args)


def summary_of(ctx: Any) -> str:
    first = ctx.messages[0] if ctx.messages else None
    if first is None or not first.text.startswith(SUMMARY_HEADER):
        return ""
    return str(first.text)


def test_wm_larger_than_its_share_is_shown_whole_when_everything_fits() -> None:
    document = big_wm()
    ctx = run(working_memory=document, live_messages=turn(1))
    assert count(HumanMessage(document)) > ctx.budgets.archive  # bigger than the 15% share
    assert summary_of(ctx) == f"{SUMMARY_HEADER}\n\n{document.strip()}"
    assert ctx.tokens <= ctx.budgets.usable
    assert ctx.wm_omitted == 0


def test_competing_layers_wm_keeps_its_share_older_raw_turns_go_first() -> None:
    document = big_wm()
    live = [m for n in range(1, 40) for m in turn(n, size=120)]
    ctx = run(working_memory=document, live_messages=live)
    summary = summary_of(ctx)
    assert summary
    assert ctx.tokens <= ctx.budgets.usable
    # the WM keeps at least its share; raw messages fill the rest, oldest turns dropped
    assert count(ctx.messages[0]) >= ctx.budgets.archive - 60
    assert ctx.dropped > 0
    assert ctx.messages[-4:] == turn(39, size=120)
    # whatever the raw turns leave over goes to the WM (no idle room bigger than one turn)
    per_turn = sum(count(m) for m in turn(1, size=120))
    assert ctx.budgets.usable - ctx.tokens < per_turn + 60


def test_a_wm_within_its_share_stays_whole_while_older_raw_turns_go() -> None:
    document = big_wm(items=6)
    live = [m for n in range(1, 60) for m in turn(n, size=120)]
    ctx = run(working_memory=document, live_messages=live)
    assert count(HumanMessage(document)) < ctx.budgets.archive
    assert summary_of(ctx) == f"{SUMMARY_HEADER}\n\n{document.strip()}"
    assert ctx.dropped > 0


def _kept_items(summary: str) -> dict[str, list[str]]:
    body = summary.split("# Working Memory", 1)[1]
    parsed = parse_working_memory("# Working Memory" + body)
    return {
        name: [ln for ln in parsed[name].splitlines() if ln.strip() and "archive_search" not in ln]
        for name in SECTIONS
    }


def test_cut_is_even_across_sections_oldest_first_never_a_whole_section() -> None:
    document = big_wm(items=30)
    original = {
        n: [ln for ln in b.splitlines() if ln.strip()]
        for n, b in parse_working_memory(document).items()
    }
    newest = turn(1, size=10)
    whole = count(HumanMessage(f"{SUMMARY_HEADER}\n\n{document}"))
    budget = sum(count(m) for m in newest) + count_system() + whole // 2
    ctx = run(working_memory=document, live_messages=newest, token_budget=window_for(budget))
    summary = summary_of(ctx)
    assert summary
    assert ctx.tokens <= ctx.budgets.usable
    assert ctx.wm_omitted > 0
    kept = _kept_items(summary)
    shares = []
    for name in SECTIONS:
        lines = original[name]
        assert kept[name], f"{name} was cut whole"
        assert kept[name] == lines[len(lines) - len(kept[name]) :]  # the newest items stay
        if len(lines) > 1:
            shares.append(len(kept[name]) / len(lines))
    assert max(shares) - min(shares) < 0.25  # every section keeps about the same share
    assert "archive_search" in summary
    assert re.search(r"\b\d+ older items?\b", summary)


def count_system() -> int:
    return count(run(working_memory=big_wm()).system_message)


def cut_step(document: str) -> int:
    """The most one step of a cut can remove: the largest item with its section's marker."""
    marker = HumanMessage("[… 99 older items omitted; archive_search finds them …]")
    largest = max(count(HumanMessage(line)) for line in document.splitlines() if line.strip())
    return max(80, largest + count(marker))


def window_for(usable: int) -> int:
    total = usable
    while compute_budgets(total, 0, 8_000).usable < usable:
        total += 1
    return total


@settings(max_examples=60, deadline=None)
@given(
    items=st.integers(1, 40),
    live_turns=st.integers(1, 30),
    pad=st.integers(0, 300),
    budget=st.integers(300, 30_000),
    share=st.integers(0, 8_000),
)
def test_wm_is_whole_whenever_everything_fits_and_keeps_its_floor(
    items: int, live_turns: int, pad: int, budget: int, share: int
) -> None:
    document = big_wm(items)
    live = [m for n in range(live_turns) for m in turn(n, size=pad)]
    ctx = run(
        working_memory=document,
        live_messages=live,
        token_budget=budget,
        archive_memory_tokens=share,
    )
    whole = count(HumanMessage(f"{SUMMARY_HEADER}\n\n{document.strip()}"))
    # the system message with the addition (a WM that finds no room takes it along: the
    # input's own system message is then smaller)
    system = count_system()
    raw = sum(count(m) for m in live)
    available = ctx.budgets.usable - system
    if whole + raw <= available:
        assert summary_of(ctx) == f"{SUMMARY_HEADER}\n\n{document.strip()}"
        assert ctx.dropped == 0
    newest = sum(count(m) for m in turn(live_turns - 1, size=pad))
    if min(whole, ctx.budgets.archive) + newest <= available and summary_of(ctx):
        # the cut removes whole items, each leaving its section's marker: the floor holds up to
        # one such step (found: items=2, share=523 — the last step removes 104 tokens)
        assert count(ctx.messages[0]) >= min(whole, ctx.budgets.archive) - cut_step(document)


# ------------------------------------------------------------------ the reported 8k case


def _fact_graph(memory: WorkingMemory, seen: list[list[BaseMessage]]) -> Any:
    model = fact_agent()

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(state["llm_input_messages"])
        return {"messages": [model.invoke(state["llm_input_messages"])]}

    def tools(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": tool_results(state["messages"][-1])}

    def route(state: dict[str, Any]) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "after_turn"

    builder = StateGraph(WorkingMemoryState)
    builder.add_node("assemble", memory.assemble)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_node("after_turn", memory.after_turn)
    builder.add_edge(START, "assemble")
    builder.add_edge("assemble", "agent")
    builder.add_conditional_edges("agent", route, ["tools", "after_turn"])
    builder.add_edge("tools", "assemble")
    builder.add_edge("after_turn", END)
    return builder.compile(checkpointer=InMemorySaver(), store=memory.store)


def test_reported_8k_case_the_model_sees_every_fact_and_path() -> None:
    memory = WorkingMemory(
        faithful_writer(),
        config=WorkingMemoryConfig(token_budget=8_000, background=False),
        store=InMemoryStore(),
    )
    seen: list[list[BaseMessage]] = []
    graph = _fact_graph(memory, seen)
    config: Any = {"configurable": {"thread_id": "t8k"}}
    for i in range(1, 201):
        graph.invoke({"messages": [user_message(i)]}, config)
    graph.invoke({"messages": [HumanMessage("Turn 999. Where do we stand?")]}, config)
    shown = seen[-1]
    text = "\n".join(m.text for m in shown)
    assert memory.count_tokens(shown) <= 6_800
    facts = [f"FACT-{i:03d}" for i in range(1, 201)]
    paths = [path_of(i) for i in range(5, 201, 5)]
    assert [f for f in facts if f not in text] == []
    assert [p for p in paths if p not in text] == []
    stored = memory.get_working_memory(config)
    assert f"{SUMMARY_HEADER}\n\n{stored.strip()}" in [m.text for m in shown]
