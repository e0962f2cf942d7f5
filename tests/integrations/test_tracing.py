"""The commit pipeline and the WM model calls appear as named, tagged runs with guard metadata.

A ``BaseTracer`` subclass in ``config["callbacks"]`` captures the run tree offline (what
LangSmith would receive), so no network and no LangSmith account are needed.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tracers.schemas import Run
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import lookup
from tests.integrations.helpers import CollectingTracer, agent_model, wm_model
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig

UNRELATED_TITLE = "Gardening tips for tomatoes"


def _agent(background: bool) -> tuple[Any, WorkingMemoryMiddleware]:
    store = InMemoryStore()
    mw = WorkingMemoryMiddleware(
        wm_model(title="Billing service setup", retitle=UNRELATED_TITLE),
        config=WorkingMemoryConfig(
            token_budget=6_000,
            commit_token_threshold_ratio=0.0,  # commit every turn
            commit_keep_recent_count=0,
            background=background,
        ),
        store=store,
    )
    agent = create_agent(
        agent_model(), [lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store
    )
    return agent, mw


def _ancestors(tracer: CollectingTracer, run: Run) -> list[Run]:
    chain = []
    parent = tracer.parent_of(run)
    while parent is not None:
        chain.append(parent)
        parent = tracer.parent_of(parent)
    return chain


def test_inline_commit_runs_are_named_tagged_and_carry_guard_decisions():
    agent, mw = _agent(background=False)
    tracer = CollectingTracer()
    config: Any = {"configurable": {"thread_id": "traced"}, "callbacks": [tracer]}
    agent.invoke({"messages": [HumanMessage("start FACT-1; use lookup")]}, config)
    agent.invoke({"messages": [HumanMessage("more FACT-2; use lookup")]}, config)

    commits = tracer.named("wm.commit")
    assert len(commits) == 2
    archive_ids = [a.id for a in mw.memory.list_archives(config)]
    for commit, archive_id in zip(commits, archive_ids, strict=True):
        assert {"wm_langgraph", "nostream"} <= set(commit.tags or [])
        assert commit.metadata["thread_id"] == "traced"
        assert commit.metadata["wm_archive_ids"] == [archive_id]
        assert commit.error is None

    (create,) = tracer.named("wm.create")
    (update,) = tracer.named("wm.update")
    assert commits[0] in _ancestors(tracer, create)
    assert commits[1] in _ancestors(tracer, update)
    for model_run in (create, update):
        assert {"wm_langgraph", "nostream"} <= set(model_run.tags or [])
        assert model_run.metadata["thread_id"] == "traced"
    # the update run is the model call itself, with the update tool bound and forced
    assert update.run_type == "llm"
    params = update.extra["invocation_params"]
    assert params["tool_choice"] == "update_working_memory"
    assert [t["function"]["name"] for t in params["tools"]] == ["update_working_memory"]
    # the pipeline's nodes are visible inside the commit run
    inside = {r.name for r in _descendants(tracer, commits[1])}
    assert {"prepare", "update", "guard_merge", "save"} <= inside

    guards = [r for r in tracer.named("wm.guards") if commits[1] in _ancestors(tracer, r)]
    assert guards
    decisions = guards[0].metadata["guard_decisions"]
    title = next(d for d in decisions if d["section"] == "Session Title")
    assert title["requested"] == "UPDATE"
    assert title["applied"] == "KEEP"
    assert title["reason"]
    facts = next(d for d in decisions if d["section"] == "Key Facts & Decisions")
    assert facts["applied"] == "APPEND"
    # and the refused title really was kept
    assert "Billing service setup" in mw.memory.get_working_memory(config)
    assert UNRELATED_TITLE not in mw.memory.get_working_memory(config)


def _descendants(tracer: CollectingTracer, run: Run) -> list[Run]:
    return [r for r in tracer.collected if run in _ancestors(tracer, r)]


def test_wm_model_output_is_kept_out_of_message_streaming():
    agent, _ = _agent(background=False)
    config: Any = {"configurable": {"thread_id": "streamed"}}
    streamed: list[Any] = []
    for turn in range(2):
        for chunk, _meta in agent.stream(
            {"messages": [HumanMessage(f"turn {turn} FACT-{turn}")]}, config, stream_mode="messages"
        ):
            streamed.append(chunk)
    assert any(isinstance(c, AIMessage) and "Answer to" in c.text for c in streamed)
    assert not any("# Working Memory" in str(c.text) for c in streamed)
    assert not any(
        tc["name"] == "update_working_memory"
        for c in streamed
        if isinstance(c, AIMessage)
        for tc in c.tool_calls
    )


def test_background_commits_trace_as_their_own_runs_linked_to_the_thread():
    agent, mw = _agent(background=True)
    tracer = CollectingTracer()
    config: Any = {"configurable": {"thread_id": "bg"}, "callbacks": [tracer]}
    agent.invoke({"messages": [HumanMessage("start FACT-1")]}, config)
    assert mw.memory.wait(config, timeout=30)
    (commit,) = tracer.named("wm.commit")
    assert commit.parent_run_id is None  # a root run of its own, not inside the agent's turn
    assert commit.metadata["thread_id"] == "bg"
    assert commit.metadata["wm_archive_ids"] == [mw.memory.list_archives(config)[0].id]
    mw.memory.close()
