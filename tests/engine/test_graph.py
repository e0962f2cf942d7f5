"""Full graph runs (level 2): a StateGraph agent with assemble / after_turn wired in, a
scripted tool-calling model and a checkpointer, many turns on one thread."""

import asyncio

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.engine._support import (
    FACT_RE,
    SimulatedCrash,
    WMWriter,
    agent_model,
    assert_nothing_lost,
    build_agent,
    user,
)
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.sqlite import open_sqlite

SMALL = WorkingMemoryConfig(token_budget=3000, commit_keep_recent_count=6)


def _facts(text):
    return set(FACT_RE.findall(text))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_many_turns_commit_in_the_background_and_lose_nothing(mode, writer, memory):
    wm = memory(writer.model, config=SMALL)
    graph = build_agent(wm, agent_model(tool_every=4, parallel=2), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": f"many-{mode}"}}
    sent = []
    for i in range(1, 61):
        sent.append(user(i).text)
        if mode == "invoke":
            out = graph.invoke({"messages": [user(i)]}, cfg)
        else:
            out = asyncio.run(graph.ainvoke({"messages": [user(i)]}, cfg))
    assert wm.wait(cfg, timeout=30)
    archives = wm.list_archives(cfg)
    assert len(archives) >= 3
    assert [a.seq for a in archives] == list(range(1, len(archives) + 1))
    assert all(a.status == "done" for a in archives)
    assert_nothing_lost(wm, cfg, out["messages"], sent)
    assert len(out["messages"]) < 30  # the checkpoint stays small
    archived_facts = {f for a in archives for m in a.messages for f in _facts(m.text)}
    assert archived_facts <= _facts(wm.get_working_memory(cfg))
    assert out["working_memory"]["archives"] == [a.id for a in archives]


def test_the_model_sees_memory_instead_of_old_turns_and_stays_in_budget(writer, memory):
    wm = memory(writer.model, config=SMALL.replace(background=False))
    agent = agent_model()
    graph = build_agent(wm, agent, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "budget"}}
    # 60 turns: more than the budget holds verbatim (what fits is shown as the fill, §9)
    for i in range(1, 61):
        out = graph.invoke({"messages": [user(i)]}, cfg)
    last_prompt = agent.calls[-1].messages
    assert "[Session History Summary]" in last_prompt[1].text
    assert "FACT-001" in last_prompt[1].text
    assert all("turn 1:" not in m.text for m in last_prompt[2:])
    assert wm.count_tokens(out["llm_input_messages"]) <= 3000 - 450  # budget minus the 15% reserve


def test_explicit_compaction_between_turns(writer, memory):
    wm = memory(writer.model, config=SMALL)
    graph = build_agent(wm, agent_model(), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "compact"}}
    sent = []
    for i in range(1, 5):
        sent.append(user(i).text)
        graph.invoke({"messages": [user(i)]}, cfg)
    state = graph.get_state(cfg).values
    graph.update_state(cfg, wm.compact(state, cfg))
    after = graph.get_state(cfg).values
    assert after["messages"] == []
    assert _facts(wm.get_working_memory(cfg)) == {f"FACT-{i:03d}" for i in range(1, 5)}
    sent.append(user(5).text)
    out = graph.invoke({"messages": [user(5)]}, cfg)
    assert_nothing_lost(wm, cfg, out["messages"], sent)


def test_failures_keep_archives_visible_and_the_next_success_folds_them(writer, memory):
    wm = memory(writer.model, config=SMALL.replace(background=False))
    graph = build_agent(wm, agent_model(), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "fail"}}
    i = 0
    while len(wm.list_archives(cfg)) < 1:
        i += 1
        graph.invoke({"messages": [user(i)]}, cfg)
    good = wm.get_working_memory(cfg)
    writer.mode = "raise"
    while len(wm.list_archives(cfg)) < 2:
        i += 1
        out = graph.invoke({"messages": [user(i)]}, cfg)
    assert wm.get_working_memory(cfg) == good  # never worse, never a placeholder
    failed = wm.list_archives(cfg)[1]
    assert failed.status == "failed"
    prompt_text = "\n".join(m.text for m in out["llm_input_messages"])
    assert all(m.text in prompt_text for m in failed.messages if isinstance(m, HumanMessage))
    writer.mode = "ok"
    while len(wm.list_archives(cfg)) < 3:
        i += 1
        graph.invoke({"messages": [user(i)]}, cfg)
    assert [a.status for a in wm.list_archives(cfg)] == ["done"] * 3
    folded = {f for a in wm.list_archives(cfg) for m in a.messages for f in _facts(m.text)}
    assert folded <= _facts(wm.get_working_memory(cfg))


def test_restart_on_sqlite_continues_the_thread_and_resumes_an_interrupted_phase2(tmp_path):
    path = tmp_path / "agent.sqlite"
    cfg = {"configurable": {"thread_id": "restart"}}
    sent = []
    writer = WMWriter()
    with open_sqlite(path) as (checkpointer, store):
        wm = WorkingMemory(writer.model, config=SMALL, store=store)
        graph = build_agent(wm, agent_model(), checkpointer=checkpointer, store=store)
        i = 0
        while len(wm.list_archives(cfg)) < 1:
            i += 1
            sent.append(user(i).text)
            graph.invoke({"messages": [user(i)]}, cfg)
        assert wm.wait(cfg, timeout=30)
        writer.mode = "crash"  # the process "dies" inside the next Phase 2 model call
        while len(wm.list_archives(cfg)) < 2:
            i += 1
            sent.append(user(i).text)
            graph.invoke({"messages": [user(i)]}, cfg)
        assert wm.wait(cfg, timeout=30)
        assert [a.status for a in wm.list_archives(cfg)] == ["done", "pending"]
        wm.close()

    writer2 = WMWriter()
    with open_sqlite(path) as (checkpointer, store):
        # a read before the new process's first run knows the thread's checkpointer only when
        # it is given (a StateGraph's memory does not see the graph being compiled)
        wm2 = WorkingMemory(writer2.model, config=SMALL, store=store, checkpointer=checkpointer)
        graph2 = build_agent(wm2, agent_model(), checkpointer=checkpointer, store=store)
        assert [a.status for a in wm2.list_archives(cfg)] == ["done", "pending"]
        i += 1
        sent.append(user(i).text)
        out = graph2.invoke({"messages": [user(i)]}, cfg)
        assert wm2.wait(cfg, timeout=30)
        assert all(a.status == "done" for a in wm2.list_archives(cfg))
        assert_nothing_lost(wm2, cfg, out["messages"], sent)
        folded = {f for a in wm2.list_archives(cfg) for m in a.messages for f in _facts(m.text)}
        assert folded <= _facts(wm2.get_working_memory(cfg))
        assert writer2.model.calls  # the resumed fold ran on the new process's model
        wm2.close()


def test_simulated_crash_is_a_base_exception():
    assert not issubclass(SimulatedCrash, Exception)


def test_commits_stay_out_of_message_streaming(writer, memory):
    wm = memory(writer.model, config=SMALL.replace(background=False))
    graph = build_agent(wm, agent_model(), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "stream"}}
    streamed = []
    for i in range(1, 50):
        chunks = graph.stream({"messages": [user(i)]}, cfg, stream_mode="messages", subgraphs=True)
        for _namespace, (message, _meta) in chunks:
            streamed.append(message)
    assert writer.model.calls  # commits happened during the streamed turns
    assert streamed
    wm_replies = {c.reply.id for c in writer.model.calls if c.reply is not None}
    assert not wm_replies & {m.id for m in streamed}  # the WM writer's output is never streamed
    assert not any(getattr(m, "tool_calls", None) for m in streamed)
