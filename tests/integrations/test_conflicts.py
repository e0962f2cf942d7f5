"""Other middleware in the same agent.

LangChain's ``SummarizationMiddleware`` removes old messages and puts its summary in their place
before the memory has archived them: they ended in neither the WM, the model input nor an
archive, without a word. Now ``create_agent`` refuses the pair, naming the conflict, before
anything ran (and a summary that reaches the hooks another way fails the run); a user's own
``RemoveMessage`` stays a normal operation. ``LLMToolSelectorMiddleware`` used to
drop the archive tools silently.
"""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import LLMToolSelectorMiddleware, SummarizationMiddleware
from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.integrations.helpers import agent_model, ids, wm_model
from wm_langgraph import ConflictingMiddlewareError, WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.testing import ScriptedChatModel, tool_reply

CONFIG = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.5,  # the memory would commit late: the summariser is first
    commit_keep_recent_count=4,
    background=False,
)


@pytest.mark.parametrize("summariser_first", [True, False])
def test_summarization_middleware_beside_the_memory_is_refused_when_the_agent_is_built(
    summariser_first, lookup
):
    summariser = SummarizationMiddleware(
        model=ScriptedChatModel(replies=["Earlier: some notes."], repeat_last=True),
        trigger=("messages", 6),
        keep=("messages", 2),
    )
    mw = WorkingMemoryMiddleware(wm_model(), config=CONFIG)
    middleware = [summariser, mw] if summariser_first else [mw, summariser]
    with pytest.raises(ConflictingMiddlewareError, match="SummarizationMiddleware"):
        create_agent(
            agent_model(),
            [lookup],
            middleware=middleware,
            checkpointer=InMemorySaver(),
            store=InMemoryStore(),
        )


def test_a_summary_that_reaches_the_hooks_anyway_fails_the_run_at_once(lookup):
    """The run-time check stays for summaries the build-time check cannot see (another graph
    node, a client writing one into the state)."""
    mw = WorkingMemoryMiddleware(wm_model(), config=CONFIG)
    agent = create_agent(
        agent_model(),
        [lookup],
        middleware=[mw],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
    )
    config = thread_config("summ-runtime")
    agent.invoke({"messages": [HumanMessage("note FACT-1")]}, config)
    summary = HumanMessage(
        "Here is a summary of the conversation to date:\n\nnotes",
        additional_kwargs={"lc_source": "summarization"},
    )
    with pytest.raises(ConflictingMiddlewareError, match="SummarizationMiddleware"):
        agent.invoke({"messages": [summary, HumanMessage("note FACT-2")]}, config)


def test_a_users_own_remove_message_stays_a_normal_operation(lookup):
    every_turn = CONFIG.replace(commit_keep_recent_count=2, commit_token_threshold_ratio=0.0)
    mw = WorkingMemoryMiddleware(wm_model(), config=every_turn)
    agent = create_agent(
        agent_model(),
        [lookup],
        middleware=[mw],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
    )
    config = thread_config("user-remove")
    agent.invoke({"messages": [HumanMessage("note FACT-1")]}, config)
    agent.invoke({"messages": [HumanMessage("note FACT-2 (wrong, delete me)")]}, config)
    wrong = [m for m in agent.get_state(config).values["messages"] if "delete me" in m.text]
    agent.update_state(config, {"messages": [RemoveMessage(id=str(wrong[0].id))]})
    for n in range(3, 12):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
    archived = [m for r in mw.memory.list_archives(config) for m in r.messages]
    assert archived
    assert str(wrong[0].id) not in ids(archived)
    assert "FACT-1" in " ".join(str(m.text) for m in archived)


def test_a_tool_selector_listed_first_does_not_take_the_archive_tools_away(lookup):
    selector_model = ScriptedChatModel(
        replies=[tool_reply("ToolSelectionResponse", {"tools": ["lookup"]})], repeat_last=True
    )
    mw = WorkingMemoryMiddleware(wm_model(), config=CONFIG)
    model = agent_model()
    agent = create_agent(
        model,
        [lookup],
        middleware=[LLMToolSelectorMiddleware(model=selector_model, max_tools=1), mw],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
    )
    agent.invoke({"messages": [HumanMessage("hello")]}, thread_config("selector"))
    bound = {t["function"]["name"] for t in model.bound[-1]["tools"]}
    assert {"archive_expand", "archive_search"} <= bound
