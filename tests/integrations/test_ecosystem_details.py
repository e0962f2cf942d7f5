"""The smaller points of living beside the ecosystem (tracing, stores, the CLI).

- Background commits are root runs of their own; they used to lose the caller's tags and
  metadata, so LangSmith users could not link them to the thread's trace.
- The writer's runs carry the metadata LangChain uses to mark middleware-internal model calls.
- With ``InMemoryStore(index=...)`` every meta record and archive was embedded, though nothing
  searches them semantically.
- ``wm-langgraph inspect`` listed the long-term namespace as a thread.
"""

from __future__ import annotations

import io
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware.internal_call_transformer import INTERNAL_CALL_METADATA_KEY
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.integrations.helpers import CollectingTracer, agent_model, wm_model
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryMiddleware, open_sqlite
from wm_langgraph.cli._inspect import inspect_db

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000, commit_token_threshold_ratio=0.0, commit_keep_recent_count=2
)


def test_background_commits_keep_the_callers_tags_and_metadata_and_the_internal_marker(lookup):
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN)  # background Phase 2
    agent = create_agent(
        agent_model(),
        [lookup],
        middleware=[mw],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
    )
    tracer = CollectingTracer()
    config: Any = {
        "configurable": {"thread_id": "linked"},
        "callbacks": [tracer],
        "tags": ["support-bot"],
        "metadata": {"session": "s-42"},
    }
    for n in range(1, 4):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    assert mw.memory.wait(config, timeout=30)
    commits = tracer.named("wm.commit")
    assert commits
    for run in commits:
        assert run.parent_run_id is None  # a root run of its own
        assert "support-bot" in (run.tags or [])
        assert run.metadata["session"] == "s-42"
        assert run.metadata["thread_id"] == "linked"
        assert run.metadata["lc_source"] == "wm_langgraph"
        assert INTERNAL_CALL_METADATA_KEY in run.metadata
    writer_calls = [r for r in tracer.collected if r.run_type == "llm" and r.name.startswith("wm.")]
    assert writer_calls
    assert all(INTERNAL_CALL_METADATA_KEY in r.metadata for r in writer_calls)


def test_an_indexed_store_embeds_only_the_archived_message_texts(lookup):
    # behaviour §7.6: archive_search's semantic half embeds the archived messages' texts; the
    # archive records, WM versions, meta and index records stay unembedded.
    embedded: list[str] = []

    def embed(texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    store = InMemoryStore(index={"dims": 4, "embed": embed})
    mw = WorkingMemoryMiddleware(
        wm_model(), config=EVERY_TURN.replace(background=False), store=store
    )
    agent = create_agent(
        agent_model(), [lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store
    )
    config: Any = {"configurable": {"thread_id": "indexed"}}
    for n in range(1, 5):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    archives = mw.memory.list_archives(config)
    assert archives
    texts = {str(m.text) for r in archives for m in r.messages if str(m.text).strip()}
    assert embedded
    assert set(embedded) <= texts
    assert not any(t.startswith("# Session Title") for t in embedded)


def test_inspect_does_not_list_the_long_term_namespace_as_a_thread(tmp_path):
    db = str(tmp_path / "lt.sqlite")
    with open_sqlite(db) as (_saver, store):
        memory = WorkingMemory(
            wm_model(),
            config=EVERY_TURN.replace(background=False, long_term_memory=True),
            store=store,
        )
        config: Any = {"configurable": {"thread_id": "t-1", "user_id": "ann"}}
        memory.compact({"messages": [HumanMessage("FACT-1 is true")]}, config)
        assert memory.search_long_term(config)
    out, err = io.StringIO(), io.StringIO()
    assert inspect_db(db, thread_id=None, as_json=False, out=out, err=err) == 0
    listed = out.getvalue()
    assert "t-1" in listed
    assert "long_term" not in listed
    assert "1 thread(s)" in listed
