"""Edits and removals of live messages (update_state with a live id, RemoveMessage): accounting
stays exact.

Design §3.5: ``pending_tokens`` always equals a rebuild from the messages. An in-place edit
(a message re-sent with the id of a live one and new content) and a ``RemoveMessage`` of a live
message change the live messages behind the accounting's back; the next hook sees it and the
meta equals a rebuild again, while only the changed messages are tokenised (every unchanged one
is a token-cache hit).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, RemoveMessage

from tests.engine._paths import PATHS, make
from tests.engine._support import user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.phase1.window import account_messages, pending_tokens_of, rebuild_meta
from wm_langgraph.state import empty_meta

NO_COMMIT = WorkingMemoryConfig(
    token_budget=200_000, commit_keep_recent_count=2, background=False
)  # threshold 100k tokens: nothing is committed, the messages stay live


def _msg(i: int) -> HumanMessage:
    return user(i).model_copy(update={"id": f"m-{i}"})


def _rebuilt(driver, cfg) -> int:
    values = driver.values(cfg)
    keep = values["working_memory"]["keep_recent_count"]
    return pending_tokens_of(values["messages"], keep, driver.wm._count_message)


@pytest.mark.parametrize("kind", PATHS)
def test_an_in_place_edit_keeps_pending_tokens_equal_to_a_rebuild(kind):
    driver = make(kind, NO_COMMIT)
    cfg = {"configurable": {"thread_id": f"edit-{kind}"}}
    for i in range(1, 6):
        driver.invoke([_msg(i)], cfg)
    before = driver.values(cfg)["working_memory"]["pending_tokens"]
    assert before == _rebuilt(driver, cfg)
    edited = HumanMessage("turn 1 (rewritten): " + "a much longer text " * 400, id="m-1")
    driver.graph.update_state(cfg, {"messages": [edited]}, as_node=driver.last_node)
    driver.invoke([_msg(6)], cfg)
    meta = driver.values(cfg)["working_memory"]
    assert meta["pending_tokens"] == _rebuilt(driver, cfg)
    assert meta["pending_tokens"] > before + 1000
    # an edit that shrinks a message, through the next turn's input itself
    driver.invoke([HumanMessage("short now", id="m-1"), _msg(7)], cfg)
    assert driver.values(cfg)["working_memory"]["pending_tokens"] == _rebuilt(driver, cfg)


@pytest.mark.parametrize("kind", PATHS)
def test_removing_a_live_message_keeps_pending_tokens_equal_to_a_rebuild(kind):
    driver = make(kind, NO_COMMIT)
    cfg = {"configurable": {"thread_id": f"remove-{kind}"}}
    for i in range(1, 7):
        driver.invoke([_msg(i)], cfg)
    driver.graph.update_state(
        cfg,
        {"messages": [RemoveMessage(id="m-2"), RemoveMessage(id="m-3")]},
        as_node=driver.last_node,
    )
    driver.invoke([_msg(7)], cfg)
    values = driver.values(cfg)
    assert "m-2" not in [m.id for m in values["messages"]]
    assert values["working_memory"]["pending_tokens"] == _rebuilt(driver, cfg)
    # removing one of the recent window (the newest answer) too
    newest = values["messages"][-1].id
    driver.graph.update_state(
        cfg, {"messages": [RemoveMessage(id=newest)]}, as_node=driver.last_node
    )
    driver.invoke([_msg(8)], cfg)
    assert driver.values(cfg)["working_memory"]["pending_tokens"] == _rebuilt(driver, cfg)


def test_accounting_tokenises_only_the_changed_and_the_new_messages():
    from wm_langgraph.messages import MessageTokenCache

    seen: list[str] = []

    def raw(message):
        seen.append(str(message.id))
        return len(message.text) + 1

    count = MessageTokenCache(raw)
    messages = [_msg(i) for i in range(1, 200)]
    meta = account_messages(empty_meta(10), messages, count)
    seen.clear()
    edited = [*messages]
    edited[3] = HumanMessage("edited", id="m-4")
    del edited[7]
    edited.append(_msg(500))
    meta = account_messages(meta, edited, count)
    assert sorted(seen) == ["m-4", "m-500"]
    assert meta == rebuild_meta(edited, 10, count)
