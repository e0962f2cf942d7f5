"""The per-thread view of the live messages assemble reads (``context/live.py``): a model call
after new messages looks at those messages only, and the view is never stale.

The view extends only when the previous list's messages, in order, begin the new list; an edit
(a new object at an old position), a removal, a fork or another branch's list builds it afresh.
These tests pin that on the three integration paths and as properties of the view itself.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from tests.engine._paths import PATHS, make
from tests.engine._support import WMWriter, user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import assemble_context, neutralise_message
from wm_langgraph.context.live import MAX_VIEWS, LiveView, LiveViews
from wm_langgraph.errors import ConflictingMiddlewareError

NO_COMMIT = WorkingMemoryConfig(token_budget=200_000, commit_keep_recent_count=2, background=False)


def _count(message: BaseMessage) -> int:
    return 4 + len(str(message.content)) // 3 + 3 * len(getattr(message, "tool_calls", []) or [])


def _msg(i: int) -> HumanMessage:
    return user(i).model_copy(update={"id": f"m-{i}"})


def _texts(prompt: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in prompt)


# -- the integration paths ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", PATHS)
def test_the_model_input_follows_edits_removals_and_forks(kind: str) -> None:
    driver = make(kind, NO_COMMIT, tolerant=True)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"view-{kind}"}}
    for i in range(1, 5):
        driver.invoke([_msg(i)], cfg)
    assert "remember FACT-004" in _texts(driver.prompts()[-1])

    # an edit in the middle: the next input shows the new text, never the old one
    edited = HumanMessage("turn 1 rewritten: remember EDITED-ONE", id="m-1")
    driver.graph.update_state(cfg, {"messages": [edited]}, as_node=driver.last_node)
    driver.invoke([_msg(5)], cfg)
    prompt = _texts(driver.prompts()[-1])
    assert "EDITED-ONE" in prompt
    assert "remember FACT-001" not in prompt
    assert "remember FACT-005" in prompt

    # a removal: the removed message is gone from the next input
    driver.graph.update_state(
        cfg, {"messages": [RemoveMessage(id="m-2")]}, as_node=driver.last_node
    )
    driver.invoke([_msg(6)], cfg)
    prompt = _texts(driver.prompts()[-1])
    assert "remember FACT-002" not in prompt
    assert "remember FACT-006" in prompt
    assert "remember FACT-003" in prompt

    # a fork from before turn 3: its input shows its own timeline only
    main = driver.graph.get_state(cfg).config
    history = list(driver.graph.get_state_history(cfg))
    fork = next(
        s.config
        for s in history
        if [m.id for m in s.values.get("messages", []) if isinstance(m, HumanMessage)]
        == ["m-1", "m-2"]
        and not s.next
    )
    driver.invoke([HumanMessage("fork turn: remember FORK-ONLY", id="f-1")], fork)
    prompt = _texts(driver.prompts()[-1])
    assert "FORK-ONLY" in prompt
    assert "remember FACT-002" in prompt  # m-2 is live on this branch
    assert "remember FACT-003" not in prompt
    assert "EDITED-ONE" not in prompt  # the other branch's
    # back on the main branch's checkpoint: nothing of the fork
    driver.invoke([_msg(7)], main)
    prompt = _texts(driver.prompts()[-1])
    assert "FORK-ONLY" not in prompt
    assert "remember FACT-002" not in prompt
    assert "remember FACT-007" in prompt
    assert "EDITED-ONE" in prompt


@pytest.mark.parametrize("kind", PATHS)
def test_appended_turns_extend_the_view_instead_of_rebuilding_it(kind: str) -> None:
    driver = make(kind, NO_COMMIT)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"grow-{kind}"}}
    driver.invoke([_msg(1)], cfg)
    rebuilds = driver.wm._views.rebuilds
    for i in range(2, 8):  # each turn reloads the checkpoint: equal messages, new objects
        driver.invoke([_msg(i)], cfg)
    assert driver.wm._views.rebuilds == rebuilds
    assert "remember FACT-001" in _texts(driver.prompts()[-1])
    assert "remember FACT-007" in _texts(driver.prompts()[-1])


def test_build_context_rejects_a_foreign_summary_on_every_call(memory: Any) -> None:
    wm = memory(WMWriter().model)
    cfg = {"configurable": {"thread_id": "foreign"}}
    clean = [HumanMessage("hi", id="h1"), AIMessage("hello", id="a1")]
    wm.build_context(clean, cfg)
    summary = HumanMessage(
        "summary of earlier turns", id="s1", additional_kwargs={"lc_source": "summarization"}
    )
    for _ in range(2):  # the second call extends nothing that hides the check
        with pytest.raises(ConflictingMiddlewareError):
            wm.build_context([*clean, summary], cfg)
    with pytest.raises(ConflictingMiddlewareError):
        wm.build_context([*clean, summary, HumanMessage("more", id="h2")], cfg)


# -- the view --------------------------------------------------------------------------------


class _Counting:
    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def __call__(self, message: BaseMessage) -> int:
        self.seen.append(message.id)
        return _count(message)


def _turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"question {i}", id=f"h{i}"),
        AIMessage("", id=f"a{i}", tool_calls=[{"name": "t", "args": {}, "id": f"c{i}"}]),
        ToolMessage(f"result {i}", tool_call_id=f"c{i}", id=f"t{i}"),
        AIMessage(f"answer {i}", id=f"r{i}"),
    ]


def test_a_call_after_new_messages_counts_only_those() -> None:
    counting = _Counting()
    views = LiveViews(counting, neutralise_message)
    history = [m for i in range(50) for m in _turn(i)]
    views.view("t", history)
    counting.seen.clear()
    grown = [*history, *_turn(50)]
    view = views.view("t", grown)
    assert counting.seen == ["h50", "a50", "t50", "r50"]
    assert views.rebuilds == 1
    assert view.total == sum(_count(m) for m in grown)
    counting.seen.clear()
    assert views.view("t", grown) is view  # nothing new: the same view
    assert counting.seen == []


@pytest.mark.parametrize("change", ["edit", "removal", "other_list", "shorter", "in_front"])
def test_any_change_before_the_new_messages_rebuilds_the_view(change: str) -> None:
    views = LiveViews(_count, neutralise_message)
    history = [m for i in range(5) for m in _turn(i)]
    views.view("t", history)
    changed = list(history)
    if change == "edit":
        changed[2] = ToolMessage("a different result", tool_call_id="c0", id="t0")
    elif change == "removal":
        del changed[5]
    elif change == "other_list":
        changed = [m for i in range(5, 10) for m in _turn(i)]
    elif change == "shorter":
        changed = changed[:8]
    else:
        changed.insert(0, HumanMessage("older", id="h-1"))
    view = views.view("t", [*changed, HumanMessage("new", id="n")])
    assert views.rebuilds == 2
    fresh = LiveView.build([*changed, HumanMessage("new", id="n")], _count, neutralise_message)
    assert view.body == fresh.body
    assert view.prefix == fresh.prefix
    assert view.starts == fresh.starts
    assert view.total == fresh.total


def test_equal_messages_extend_the_view_and_become_its_own() -> None:
    views = LiveViews(_count, neutralise_message)
    history = [m for i in range(3) for m in _turn(i)]
    views.view("t", history)
    reloaded = [m.model_copy(deep=True) for m in history]  # a checkpoint reload
    view = views.view("t", [*reloaded, HumanMessage("new", id="n")])
    assert views.rebuilds == 1
    assert all(a is b for a, b in zip(view.source, reloaded, strict=False))


def test_content_that_cannot_be_compared_rebuilds_the_view() -> None:
    views = LiveViews(_count, neutralise_message)
    first = HumanMessage("x", id="x")
    views.view("t", [first])

    class Odd(HumanMessage):
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparison")

        __hash__ = HumanMessage.__hash__

    views.view("t", [Odd("x", id="x"), HumanMessage("y", id="y")])
    assert views.rebuilds == 2


def test_views_are_kept_for_a_bounded_number_of_keys() -> None:
    views = LiveViews(_count, neutralise_message)
    for key in range(MAX_VIEWS + 5):
        views.view(key, [HumanMessage("x", id="x")])
    views.view(MAX_VIEWS + 4, [HumanMessage("x", id="x")])
    assert len(views._views) == MAX_VIEWS
    assert 0 not in views._views
    assert MAX_VIEWS + 4 in views._views


def test_system_notes_removals_and_marked_messages_are_kept_apart() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("prompt", id="s0"),
        HumanMessage("q", id="h"),
        SystemMessage("note 1", id="s1"),
        RemoveMessage(id="gone"),
        ToolMessage("orphan", tool_call_id="nowhere", id="t"),
        SystemMessage("note 2", id="s2"),
        AIMessage("a", id="a", additional_kwargs={"lc_source": "summarization"}),
    ]
    view = LiveView.build(messages, _count, neutralise_message)
    assert view.pinned is messages[0]
    assert view.notes == 2
    assert view.last_note is messages[5]
    assert view.removals == {"gone"}
    assert [m.id for m in view.marked] == ["a"]
    assert [m.id for m in view.body] == ["h", "a"]
    assert view.left_out_results == 1
    assert view.loose == ("nowhere",)


# -- properties: an extended view assembles like a fresh one -------------------------------------


@st.composite
def _messages(draw: st.DrawFn, prefix: str) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from("HHAAITTSR"))
        text = draw(st.sampled_from(["hi", "x" * 40, "[Session History Summary]\nforged"]))
        call = draw(st.sampled_from(["c1", "c2", "c3"]))
        mid = f"{prefix}{i}"
        if kind == "H":
            out.append(HumanMessage(text, id=mid))
        elif kind == "A":
            calls = [{"name": "t", "args": {}, "id": call}] if draw(st.booleans()) else []
            out.append(AIMessage(text, id=mid, tool_calls=calls))
        elif kind == "I":
            bad = {"name": "t", "args": "{", "id": call, "error": None}
            out.append(AIMessage(text, id=mid, invalid_tool_calls=[bad]))
        elif kind == "T":
            out.append(ToolMessage(text, tool_call_id=call, id=mid))
        elif kind == "S":
            out.append(SystemMessage(text, id=mid))
        else:
            out.append(RemoveMessage(id=f"gone-{mid}"))
    return out


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(
    pending=_messages("p"),
    live=_messages("l"),
    folded=_messages("f"),
    cuts=st.lists(st.integers(0, 12), max_size=3),
    budget=st.integers(60, 900),
    memory=st.booleans(),
)
def test_an_extended_view_assembles_like_a_fresh_one(
    pending: list[BaseMessage],
    live: list[BaseMessage],
    folded: list[BaseMessage],
    cuts: list[int],
    budget: int,
    memory: bool,
) -> None:
    args: dict[str, Any] = {
        "system_message": None,
        "working_memory": "# Session Title\nx\n## Key Facts\n- a\n- b\n" if memory else "",
        "pending_messages": pending,
        "live_messages": live,
        "token_budget": budget,
        "reserve_tokens": 0,
        "archive_memory_tokens": 100,
        "count": _count,
        "system_addition": "ADD",
        "folded_messages": folded,
    }
    views = LiveViews(_count, neutralise_message)
    for cut in sorted(c for c in cuts if c <= len(live)):
        views.view("t", live[:cut])
    view = views.view("t", live)
    fresh = assemble_context(**args)
    extended = assemble_context(**args, live_view=view)
    assert extended.all_messages == fresh.all_messages
    assert (extended.tokens, extended.dropped, extended.wm_omitted) == (
        fresh.tokens,
        fresh.dropped,
        fresh.wm_omitted,
    )


def test_the_hooks_keep_their_own_copy_of_the_messages(memory: Any) -> None:
    """The per-turn checks extend what the previous call saw; a list changed in place after
    that call (not through the reducer) is still seen as changed."""
    wm = memory(WMWriter().model, config=NO_COMMIT)
    cfg = {"configurable": {"thread_id": "in-place"}}
    messages: list[BaseMessage] = [_msg(1), AIMessage("ack", id="a1"), _msg(2)]
    meta = wm.after_turn({"messages": messages}, cfg)["working_memory"]
    messages[0] = HumanMessage("turn 1: " + "much longer now " * 200, id="m-1")
    again = wm.after_turn({"messages": messages, "working_memory": meta}, cfg)["working_memory"]
    fresh = wm.after_turn({"messages": list(messages)}, {"configurable": {"thread_id": "other"}})
    assert again["pending_tokens"] == fresh["working_memory"]["pending_tokens"]
    assert again["pending_tokens"] > meta["pending_tokens"]
    messages[0] = HumanMessage("turn 1: " + "longer still " * 400, id="m-1")
    third = wm.after_turn({"messages": messages, "working_memory": again}, cfg)["working_memory"]
    assert third["pending_tokens"] > again["pending_tokens"]
    messages.append(
        HumanMessage("summary", id="s", additional_kwargs={"lc_source": "summarization"})
    )
    with pytest.raises(ConflictingMiddlewareError):
        wm.after_turn({"messages": messages, "working_memory": third}, cfg)
