"""Design §3: one test per invariant, driven through the public engine."""

import random
import re
import threading

from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.engine._support import (
    FACT_RE,
    agent_model,
    assert_nothing_lost,
    build_agent,
    folded_text,
    is_update_call,
    prior_text,
    user,
    wm_document,
)
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.phase1.window import pending_tokens_of
from wm_langgraph.state import archive_aware_add_messages
from wm_langgraph.testing import ScriptedChatModel

SMALL = WorkingMemoryConfig(token_budget=3000, commit_keep_recent_count=5, background=False)


def _apply(state, update):
    return {
        "messages": archive_aware_add_messages(state["messages"], update.get("messages", [])),
        "working_memory": update.get("working_memory", state.get("working_memory")),
    }


def test_1_nothing_is_lost_through_commits_compaction_failures_and_retries(writer, memory):
    rng = random.Random(7)
    wm = memory(writer.model, config=SMALL.replace(max_consecutive_failures=2))
    cfg = {"configurable": {"thread_id": "inv1"}}
    state = {"messages": []}
    sent = []
    for i in range(1, 80):
        writer.mode = rng.choice(["ok", "ok", "ok", "raise", "no_tool_call", "garbage_args"])
        sent.append(user(i).text)
        state = _apply(state, {"messages": [user(i), AIMessage(f"ack {i}")]})
        hook = wm.compact if rng.random() < 0.1 else wm.after_turn
        state = _apply(state, hook(state, cfg))
        if rng.random() < 0.1:
            wm.resume(cfg, wait=True)
        assert_nothing_lost(wm, cfg, state["messages"], sent)
    writer.mode = "ok"
    wm.resume(cfg, wait=True)
    assert all(a.status == "done" for a in wm.list_archives(cfg))
    text = wm.get_working_memory(cfg)
    archived = {
        f for a in wm.list_archives(cfg) for m in a.messages for f in FACT_RE.findall(m.text)
    }
    assert archived <= set(FACT_RE.findall(text))


def _on_timeline(wm, cfg, state):
    timeline = state["working_memory"]["archives"]
    records = wm._archives.get_archives(cfg["configurable"]["thread_id"], timeline)
    assert [r.id for r in records] == timeline
    return [m for r in records for m in r.messages]


def test_1_and_5_hold_under_edits_removals_resends_system_messages_and_forks(writer, memory):
    """Direct hook calls (a hand-built state, the meta in it) with random state operations
    between turns; every step checked: each user message of the branch live or archived once
    on the branch's timeline, in order; pending_tokens equal to a rebuild; records immutable."""
    rng = random.Random(11)
    wm = memory(writer.model, config=SMALL)
    cfg = {"configurable": {"thread_id": "inv1-ops"}}
    state = {"messages": [SystemMessage("the system prompt", id="sys")]}
    sent: list[str] = []
    branches: list[tuple[dict, list[str]]] = []
    digests: dict[str, str] = {}
    for i in range(1, 120):
        op = rng.choice(["turn"] * 4 + ["edit", "remove", "resend", "system", "fork", "compact"])
        live = [m for m in state["messages"] if isinstance(m, HumanMessage)]
        archived = _on_timeline(wm, cfg, state) if "working_memory" in state else []
        extra: list = []
        if op == "edit" and live:
            target = rng.choice(live)
            extra = [
                HumanMessage(f"{target.text} edited " + "x " * rng.randint(0, 300), id=target.id)
            ]
        elif op == "remove" and live:
            target = rng.choice(live)
            extra = [RemoveMessage(id=target.id)]
            sent.remove(target.id)
        elif op == "resend" and archived:
            extra = rng.sample(archived, min(3, len(archived)))
            if rng.random() < 0.5:  # or ask to remove one of them from the archive
                extra.append(RemoveMessage(id=rng.choice(archived).id))
        elif op == "system":
            extra = [SystemMessage(f"note {i}", id=f"s{i}")]
        elif op == "fork" and branches:
            state, sent = rng.choice(branches)
            sent = list(sent)
        message = user(i).model_copy(update={"id": f"u{i}"})
        sent.append(message.id)
        state = _apply(state, {"messages": [*extra, message, AIMessage(f"ack {i}", id=f"a{i}")]})
        hook = wm.compact if op == "compact" else wm.after_turn
        state = _apply(state, hook(state, cfg))
        branches.append((state, list(sent)))
        # the checks
        archived = _on_timeline(wm, cfg, state)
        everything = [m.id for m in archived] + [m.id for m in state["messages"]]
        assert len(everything) == len(set(everything)), f"step {i} ({op}): twice"
        assert [x for x in everything if x.startswith("u")] == sent, f"step {i} ({op})"
        assert not any(isinstance(m, RemoveMessage) for m in state["messages"])
        meta = state["working_memory"]
        rebuilt = pending_tokens_of(state["messages"], meta["keep_recent_count"], wm._count_message)
        assert meta["pending_tokens"] == rebuilt, f"step {i} ({op}): accounting"
        ns = wm._archives.namespace("inv1-ops", "archives")
        for item in wm.store.search(ns, limit=10_000):
            assert digests.setdefault(item.key, item.value["digest"]) == item.value["digest"]
    assert state["messages"][0].id == "sys"


def test_2_lineage_each_fold_starts_from_the_previous_wm_in_archive_order(writer, memory):
    gate = threading.Lock()
    seen = []
    script = writer.model.respond

    def gated(messages, tools, tool_choice):
        with gate:
            prompt = messages[-1].text
            turns = [int(n) for n in re.findall(r"turn (\d+):", folded_text(prompt))]
            seen.append((set(FACT_RE.findall(prior_text(prompt))), turns))
            return script(messages, tools, tool_choice)

    config = SMALL.replace(background=True, commit_token_threshold_ratio=0.0)
    wm = memory(ScriptedChatModel(respond=gated), config=config)
    graph = build_agent(wm, agent_model(), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "inv2"}}
    with gate:  # hold the model while commits queue up behind the first job
        for i in range(1, 25):
            graph.invoke({"messages": [user(i)]}, cfg)
    assert wm.wait(cfg, timeout=30)
    assert len(seen) >= 2
    numbers = [n for _, turns in seen for n in turns]
    assert numbers == list(range(1, numbers[-1] + 1))  # in order, none skipped or twice
    so_far = set()
    for prior, turns in seen:
        assert prior == so_far  # each fold starts from exactly what the previous ones wrote
        so_far |= {f"FACT-{n:03d}" for n in turns}
    archived = {
        f for a in wm.list_archives(cfg) for m in a.messages for f in FACT_RE.findall(m.text)
    }
    assert archived == so_far


def test_3_guards_keep_errors_paths_and_open_issues(memory):
    def careless(messages, tools, tool_choice):
        if not is_update_call(tools):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Falcon service migration"
            body["Key Facts & Decisions"] = "- FACT-001 port 5432"
            body["Files & Context"] = "- src/falcon/db.py - connection pool"
            body["Errors & Corrections"] = "- ImportError in db.py fixed by pinning psycopg 3.2"
            body["Open Issues"] = "- flaky test_pool on CI"
            return render_working_memory(body)
        wiped = {name: {"op": "UPDATE", "content": "- nothing here"} for name in SECTIONS}
        wiped["Session Title"] = {"op": "UPDATE", "content": "Cooking recipes"}
        return {
            "content": "",
            "tool_calls": [{"name": "update_working_memory", "args": {"sections": wiped}}],
        }

    wm = memory(ScriptedChatModel(respond=careless), config=SMALL)
    cfg = {"configurable": {"thread_id": "inv3"}}
    wm.compact({"messages": [user(1)]}, cfg)
    wm.compact({"messages": [user(2)]}, cfg)
    doc = parse_working_memory(wm.get_working_memory(cfg))
    assert "Falcon" in doc["Session Title"]
    assert "src/falcon/db.py" in doc["Files & Context"]
    assert "ImportError in db.py" in doc["Errors & Corrections"]
    assert "flaky test_pool" in doc["Open Issues"]
    assert "5432" in wm.get_working_memory(cfg)
    decisions = wm.list_archives(cfg)[1].metadata["decisions"]
    assert any(d["requested"] != d["applied"] for d in decisions)


def test_4_no_tool_pair_is_split_at_any_archive_boundary_parallel_calls_included(writer):
    wm = WorkingMemory(
        writer.model,
        config=SMALL.replace(commit_token_threshold_ratio=0.0, commit_keep_recent_count=3),
        store=InMemoryStore(),
    )
    graph = build_agent(wm, agent_model(tool_every=2, parallel=3), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "inv4"}}
    for i in range(1, 30):
        out = graph.invoke({"messages": [user(i)]}, cfg)
    groups = [a.messages for a in wm.list_archives(cfg)] + [out["messages"]]
    assert len(groups) > 5
    for group in groups:
        calls = {tc["id"] for m in group if isinstance(m, AIMessage) for tc in m.tool_calls}
        results = {m.tool_call_id for m in group if isinstance(m, ToolMessage)}
        assert calls == results


def test_5_pending_tokens_always_equal_a_rebuild(writer, memory):
    wm = memory(writer.model, config=SMALL)
    graph = build_agent(wm, agent_model(tool_every=3, parallel=2), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "inv5"}}
    for i in range(1, 40):
        out = graph.invoke({"messages": [user(i)]}, cfg)
        meta = out["working_memory"]
        keep = meta["keep_recent_count"]
        assert meta["pending_tokens"] == pending_tokens_of(out["messages"], keep, wm._count_message)


def test_6_model_failures_never_make_the_wm_worse_and_the_breaker_stops_calls(memory):
    replies = {"mode": "ok"}

    def flaky(messages, tools, tool_choice):
        mode = replies["mode"]
        if mode == "ok":
            return wm_document(FACT_RE.findall(messages[-1].text))
        if mode == "empty":
            return ""
        if mode == "refuse":
            return "I'm sorry, I can't help with that."
        return RuntimeError("boom")

    model = ScriptedChatModel(respond=flaky)
    wm = memory(model, config=SMALL.replace(max_consecutive_failures=3))
    cfg = {"configurable": {"thread_id": "inv6"}}
    wm.compact({"messages": [user(1)]}, cfg)
    good = wm.get_working_memory(cfg)
    # An empty reply is no failure: the round's WM is extracted (and keeps what was there).
    replies["mode"] = "empty"
    wm.compact({"messages": [user(2)]}, cfg)
    extracted = wm.get_working_memory(cfg)
    assert "FACT-001" in good
    assert "FACT-001" in extracted
    assert wm.list_archives(cfg)[-1].metadata["fallback"] == "extractive"
    for i, mode in enumerate(["refuse", "raise", "raise"], start=3):
        replies["mode"] = mode
        wm.compact({"messages": [user(i)]}, cfg)
        assert wm.get_working_memory(cfg) == extracted
    calls = len(model.calls)
    wm.compact({"messages": [user(9)]}, cfg)
    assert len(model.calls) == calls  # paused: no call per commit to a dead model
    pending = [a for a in wm.list_archives(cfg) if a.status != "done"]
    assert len(pending) == 4
    context = wm.build_context([HumanMessage("and now?")], cfg)
    shown = "\n".join(m.text for m in context.messages)
    assert all(f"FACT-{i:03d}" in shown for i in (3, 4, 5, 9))


def test_7_the_document_always_has_exactly_seven_sections(memory):
    def injector(messages, tools, tool_choice):
        if not is_update_call(tools):
            return (
                "## Session Title\nX\n## Bogus\n## Key Facts & Decisions\n- a\n"
                "## Open Issues\n## Open Issues\n- dup"
            )
        sections = {
            name: {"op": "APPEND", "items": ["## Errors & Corrections", "# Working Memory", "ok"]}
            for name in SECTIONS
        }
        return {
            "content": "",
            "tool_calls": [{"name": "update_working_memory", "args": {"sections": sections}}],
        }

    wm = memory(ScriptedChatModel(respond=injector), config=SMALL)
    cfg = {"configurable": {"thread_id": "inv7"}}
    for i in range(1, 4):
        wm.compact({"messages": [user(i)]}, cfg)
        text = wm.get_working_memory(cfg)
        headers = [line for line in text.splitlines() if line.startswith("## ")]
        assert headers == [f"## {name}" for name in SECTIONS]
        assert render_working_memory(parse_working_memory(text)) == text
