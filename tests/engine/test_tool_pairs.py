"""compact while a tool call is unanswered (a graph interrupted before its tools node).

A graph interrupted before its tools node holds an AI message whose tool calls have no results
yet. A compaction then must not archive that AI message: its results arrive after it, and a
ToolMessage without its call in the model input is rejected by OpenAI-style APIs. Assemble also
never hands the model a tool result whose call it does not show.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph.message import add_messages

from tests.engine._paths import PATHS, make
from tests.engine._support import user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.phase1.window import safe_split

CONFIG = WorkingMemoryConfig(token_budget=8000, commit_keep_recent_count=2, background=False)


def assert_every_result_follows_its_call(messages: list[BaseMessage]) -> None:
    called: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            called |= {str(tc["id"]) for tc in message.tool_calls}
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in called, f"orphan tool result {message.tool_call_id}"


@pytest.mark.parametrize("kind", PATHS)
def test_compact_while_a_tool_call_waits_keeps_the_call_live(kind):
    driver = make(kind, CONFIG, tool_every=3, interrupt_before=["tools"])
    cfg = {"configurable": {"thread_id": f"open-call-{kind}"}}
    driver.invoke([user(1)], cfg)
    driver.invoke([user(2)], cfg)
    driver.invoke([user(3)], cfg)  # the agent calls read_file; the graph stops before tools
    snapshot = driver.graph.get_state(cfg)
    assert snapshot.next == ("tools",)
    open_call = snapshot.values["messages"][-1]
    assert isinstance(open_call, AIMessage)
    assert open_call.tool_calls
    driver.graph.update_state(
        cfg, driver.wm.compact(snapshot.values, cfg), as_node=driver.model_node
    )
    live = driver.live(cfg)
    assert [m.id for m in live][-1] == open_call.id, "the unanswered call was archived"
    assert driver.wm.list_archives(cfg), "everything else was archived"
    driver.invoke(None, cfg)  # resume: the tools run, the model answers
    for prompt in driver.prompts():
        assert_every_result_follows_its_call(prompt)
    for _ in range(2):
        driver.invoke([user(4)], cfg)
    for prompt in driver.prompts():
        assert_every_result_follows_its_call(prompt)


def test_a_tool_result_whose_call_is_archived_never_reaches_the_model(writer, memory):
    wm = memory(writer.model, config=CONFIG)
    cfg = {"configurable": {"thread_id": "orphan"}}
    call = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}])
    state = {"messages": add_messages([], [HumanMessage("read a.py"), call])}
    # an old archive holds the call (written before the split kept open calls live)
    wm.compact({"messages": state["messages"][:1]}, cfg)
    result = ToolMessage("print('a')", tool_call_id="c1", id="t1")
    context = wm.build_context([*state["messages"][1:2], result], cfg)
    assert_every_result_follows_its_call(context.all_messages)
    lone = wm.build_context([result, HumanMessage("and now?")], cfg)
    assert_every_result_follows_its_call(lone.all_messages)
    assert not any(isinstance(m, ToolMessage) for m in lone.all_messages)


def test_the_split_never_archives_an_unanswered_call():
    call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}], id="a")
    messages = [HumanMessage("x", id="h"), call]
    assert safe_split(messages, 2) == 1
    assert safe_split([call], 1) == 0
    answered = [*messages, ToolMessage("r", tool_call_id="c1", id="t")]
    assert safe_split(answered, 3) == 3
    # an abandoned call (the conversation went on without its result) may be archived
    abandoned = [*messages, HumanMessage("never mind", id="h2")]
    assert safe_split(abandoned, 3) == 3
