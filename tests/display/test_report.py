"""The thread report reads what the memory did, and what it shows is what happened: each call's
input is the one the model saw, layer by layer; each Working Memory version is a commit with
the guards' decisions; the agent's searches are listed."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import GetOp, PutOp
from langgraph.store.memory import InMemoryStore

from tests.display._inert import assert_inert, parse
from tests.display._sessions import REPORT_HEADINGS, SMALL, run_session
from tests.engine._paths import PATHS, make
from tests.engine._support import WMWriter, agent_model, is_capture_call, is_update_call
from wm_langgraph import (
    NoCheckpointerError,
    ThreadReport,
    WorkingMemoryConfig,
    WorkingMemoryMiddleware,
)
from wm_langgraph.context.assemble import SUMMARY_HEADER
from wm_langgraph.display.history import AsOfStore
from wm_langgraph.document import SECTIONS, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.messages import content_text
from wm_langgraph.testing import ScriptedChatModel

# Long enough that the history outgrows usable (1,700 at SMALL's 2,000) halfway through: while
# it fits, the input is the history itself and shows no Working Memory.
TURNS = [
    f"FACT-{i:03d}: the build server build-{i}.example.com runs release v1.{i}.0"
    + " (ops note: the rollout is staged region by region)" * 14
    for i in range(12)
]


def _contents(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, content_text(m.content)) for m in messages]


@pytest.mark.parametrize("kind", PATHS)
def test_each_rebuilt_input_is_the_input_the_model_saw(kind: str):
    driver = make(kind, SMALL, tool_every=3)
    config: RunnableConfig = {"configurable": {"thread_id": f"seen-{kind}"}}
    for text in TURNS:
        driver.invoke([HumanMessage(text)], config)
    report = driver.wm.report(config)
    prompts = driver.prompts()
    assert report.history is not None
    assert report.history.not_rebuilt == 0
    assert len(report.calls) == len(prompts)
    for call, prompt in zip(report.calls, prompts, strict=True):
        assert _contents([e.message for e in call.entries]) == _contents(prompt)
        assert call.tokens == driver.wm.count_tokens(prompt)
    assert any(call.layers["working memory"] for call in report.calls)


def test_the_layers_add_up_and_follow_the_commits():
    session = run_session(TURNS)
    report = session.memory.report(session.config)
    usable = report.budgets.usable
    for call in report.calls:
        assert sum(call.layers.values()) == call.tokens <= usable
        summaries = [e for e in call.entries if e.layer == "working memory"]
        assert len(summaries) <= 1
        for entry in summaries:
            assert content_text(entry.message.content).startswith(SUMMARY_HEADER)
        live = [e for e in call.entries if e.layer == "live messages"]
        assert live  # the newest turn is always shown
        assert isinstance(live[-1].message, BaseMessage)
    first, last = report.calls[0], report.calls[-1]
    assert first.layers["working memory"] == 0
    assert first.layers["verbatim fill"] == 0
    assert last.layers["working memory"] > 0
    assert report.calls[-1].turn == len(TURNS)


def test_every_version_on_the_timeline_is_a_commit_and_the_last_is_the_working_memory():
    session = run_session(TURNS)
    report = session.memory.report(session.config)
    archives = session.memory.list_archives(session.config)
    assert report.commits
    covers = [len(c.covers) for c in report.commits]
    assert covers == sorted(set(covers))
    assert report.commits[-1].covers[-1] == archives[-1].id
    assert report.commits[-1].after == session.memory.get_working_memory(session.config)
    assert report.working_memory.text == report.commits[-1].after
    for before, after in zip(report.commits, report.commits[1:], strict=False):
        assert after.before == before.after
        assert set(after.folded) == set(after.covers) - set(before.covers)
    for commit in report.commits[1:]:
        assert [d["section"] for d in commit.decisions][: len(SECTIONS)] == list(SECTIONS)
    assert [v.record.id for v in report.archives] == [a.id for a in archives]


def _dropping_writer() -> ScriptedChatModel:
    """Writes an Open Issue at once, then drops it in every update (a careless writer)."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if is_capture_call(tools):
            return "nothing to add"
        if is_update_call(tools):
            sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
            sections["Open Issues"] = {"op": "UPDATE", "content": "- Nothing open."}
            return {
                "content": "",
                "tool_calls": [{"name": "update_working_memory", "args": {"sections": sections}}],
            }
        return render_working_memory(
            {
                "Session Title": "Build servers",
                "Open Issues": "- TODO: rotate the staging API key before Friday",
            }
        )

    return ScriptedChatModel(respond=reply)


def test_a_guard_that_overrules_the_writer_is_shown_with_its_reason_and_marked_item():
    session = run_session(TURNS, writer=_dropping_writer())
    report = session.memory.report(session.config)
    overruled = [c for c in report.commits if c.interventions]
    assert overruled
    decision = next(d for d in overruled[0].interventions if d["section"] == "Open Issues")
    shown = parse(overruled[0]._repr_html_()).text
    assert decision["reason"] in shown
    assert "dropped by the writer, restored by a guard" in shown
    wm = parse(report.working_memory._repr_html_()).text
    assert "[silently dropped, restored] TODO: rotate the staging API key" in wm
    assert "dropped by the writer, restored by a guard" in wm
    cards = parse(report.html).text
    assert f"guard interventions{sum(len(c.interventions) for c in report.commits)}" in cards


def test_the_agents_searches_are_listed_with_what_they_returned():
    session = run_session(TURNS, search="build-3.example.com")
    report = session.memory.report(session.config)
    assert [s.tool for s in report.searches] == ["archive_search"]
    search = report.searches[0]
    assert search.args == {"query": "build-3.example.com"}
    assert "build-3.example.com" in search.result
    assert search.turn == len(TURNS)
    assert "query='build-3.example.com'" in parse(report.html).text


def test_a_report_without_a_checkpointer_raises_saying_what_to_pass():
    """Without the thread's checkpointer (an in-memory saver: nothing beside the store) the
    memory cannot tell a deleted thread from a live one: the report raises naming
    ``checkpointer=`` instead of showing an empty thread (SPEC §11); given it, it is whole."""
    session = run_session(TURNS)
    store = session.memory.store
    fresh = WorkingMemory(config=SMALL, store=store)  # a new process: no hook ran, no saver
    with pytest.raises(NoCheckpointerError, match=r"checkpointer="):
        fresh.report(session.config)
    given = fresh.report(session.config, checkpointer=session.checkpointer)
    assert len(given.calls) == len(session.prompts())
    assert given.commits
    assert "FACT-001" in assert_inert(given.html).text


def test_a_call_made_while_the_background_writer_ran_is_rebuilt_without_its_version():
    gate = threading.Event()
    writer = WMWriter()

    def gated(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        gate.wait(30)
        return writer._reply(messages, tools, tool_choice)

    config = SMALL.replace(background=True)
    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(
        ScriptedChatModel(respond=gated), config=config, store=store
    )
    model = agent_model()
    agent = create_agent(
        model, [], middleware=[middleware], checkpointer=InMemorySaver(), store=store
    )
    run: RunnableConfig = {"configurable": {"thread_id": "background"}}
    memory = middleware.memory
    turns = iter(TURNS)
    try:
        while not memory.list_archives(run):  # until a commit: its writer call then waits
            agent.invoke({"messages": [HumanMessage(next(turns))]}, run)
        waiting = len(model.calls)
        for text in (next(turns), next(turns)):  # two turns while the writer waits
            agent.invoke({"messages": [HumanMessage(text)]}, run)
        gate.set()
        memory.wait(run)
        for text in turns:
            agent.invoke({"messages": [HumanMessage(text)]}, run)
        memory.wait(run)
    finally:
        gate.set()
    report = memory.report(run)
    prompts = [call.messages for call in model.calls]
    assert [_contents([e.message for e in c.entries]) for c in report.calls] == [
        _contents(p) for p in prompts
    ]
    waited = report.calls[waiting : waiting + 2]
    assert all(c.layers["pending archives"] > 0 for c in waited)  # the archive, verbatim
    assert all(c.layers["working memory"] == 0 for c in waited)  # no version yet
    assert report.calls[-1].layers["working memory"] > 0


def test_the_as_of_view_hides_later_versions_and_never_writes():
    store = InMemoryStore()
    namespace = ("wm_langgraph", "t", "wm")
    now = datetime.now(UTC)
    store.put(namespace, "archive_001", {"text": "old", "created_at": now.isoformat()})
    later = (now + timedelta(seconds=5)).isoformat()
    store.put(namespace, "archive_002", {"text": "new", "created_at": later})
    store.put(("wm_langgraph", "t", "archives"), "archive_002", {"created_at": later})
    view = AsOfStore(store)
    view.as_of = now + timedelta(seconds=1)
    assert view.get(namespace, "archive_001") is not None
    assert view.get(namespace, "archive_002") is None
    assert [i.key for i in view.search(namespace)] == ["archive_001"]
    assert view.get(("wm_langgraph", "t", "archives"), "archive_002") is not None  # not a version
    view.put(namespace, "archive_003", {"text": "x"})
    assert view.batch([PutOp(namespace, "archive_001", None), GetOp(namespace, "archive_001")])[1]
    assert store.get(namespace, "archive_003") is None
    assert store.get(namespace, "archive_001") is not None
    view.as_of = None
    assert view.get(namespace, "archive_002") is not None


def test_the_report_file_is_self_contained_and_holds_every_part(tmp_path):
    session = run_session(TURNS, search="build-2")
    report = session.memory.report(session.config)
    assert isinstance(report, ThreadReport)
    path = report.save(tmp_path / "thread.html")
    html = path.read_text(encoding="utf-8")
    parsed = assert_inert(html)
    text = parsed.text
    for heading in REPORT_HEADINGS:
        assert heading in text
    tags = [tag for tag, _ in parsed.tags]
    assert tags.count("svg") == 2  # the timeline strip and the per-call chart
    assert tags.count("rect") >= len(report.calls)
    assert (
        "http"
        not in html.replace("http://www.w3.org/2000/svg", "")
        .replace("http-equiv", "")
        .split("<body>")[0]
    )
    assert repr(report).startswith("<ThreadReport 'display'")


def test_the_per_call_figures_are_the_report_table(tmp_path):
    session = run_session(TURNS)
    report = session.memory.report(session.config)
    text = parse(report.html).text
    for call in report.calls:
        assert f"{call.label}" in text
        assert f"{call.tokens:,}" in text


def test_a_thread_with_nothing_yet_reports_so():
    config_ = WorkingMemoryConfig(background=False)
    session = run_session(["hello"], config=config_)
    report = session.memory.report(session.config)
    assert report.commits == []
    assert report.archives == []
    assert len(report.calls) == 1
    text = assert_inert(report.html).text
    assert "No version yet" in text
    assert "No Working Memory yet" in text
    assert "The agent searched nothing" in text


def test_the_async_twin_reads_an_async_store_off_its_loop(tmp_path):
    import asyncio

    from wm_langgraph import aopen_sqlite

    async def main() -> ThreadReport:
        async with aopen_sqlite(str(tmp_path / "async.sqlite")) as (checkpointer, store):
            middleware = WorkingMemoryMiddleware(WMWriter().model, config=SMALL, store=store)
            model = agent_model()
            agent = create_agent(
                model, [], middleware=[middleware], checkpointer=checkpointer, store=store
            )
            run: RunnableConfig = {"configurable": {"thread_id": "async"}}
            for text in TURNS:
                await agent.ainvoke({"messages": [HumanMessage(text)]}, run)
            await middleware.memory.await_phase2(run)
            with pytest.raises(RuntimeError, match="own event loop"):
                middleware.memory.report(run)  # the sync read would block the store's loop
            report = await middleware.memory.areport(run)
            assert len(report.calls) == len(model.calls)
            return report

    report = asyncio.run(main())
    assert report.commits
    assert_inert(report.html)


def test_a_call_that_cannot_be_assembled_again_is_counted_and_the_rest_shown(monkeypatch):
    session = run_session(TURNS)
    original = WorkingMemory.build_context
    seen = {"n": 0}

    def failing(self: WorkingMemory, *args: Any, **kwargs: Any) -> Any:
        seen["n"] += 1
        if seen["n"] == 2:
            raise RuntimeError("the store went away")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(WorkingMemory, "build_context", failing)
    report = session.memory.report(session.config)
    assert len(report.calls) == len(session.prompts()) - 1
    assert report.unreadable == 1
    assert "1 call(s) could not be assembled again" in parse(report.html).text


def test_a_memory_inside_a_subgraph_is_reported_without_calls_and_says_why():
    from langgraph.graph import START, MessagesState, StateGraph

    middleware = WorkingMemoryMiddleware(WMWriter().model, config=SMALL)
    worker = create_agent(agent_model(), [], middleware=[middleware])
    builder = StateGraph(MessagesState)
    builder.add_node("worker", worker)
    builder.add_edge(START, "worker")
    graph = builder.compile(checkpointer=InMemorySaver(), store=InMemoryStore())
    for text in TURNS:
        graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "sub"}})
    config: RunnableConfig = {"configurable": {"thread_id": "sub", "checkpoint_ns": "worker"}}
    report = middleware.memory.report(config)
    assert report.commits
    assert report.archives
    assert report.calls == []
    assert "inside a subgraph" in assert_inert(report.html).text
