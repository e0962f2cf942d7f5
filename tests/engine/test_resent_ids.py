"""Re-sent ids of archived messages.

A parent graph (a subgraph's caller, a supervisor) or a client that re-sends the whole history
every turn hands the engine messages whose ids are already archived. They are recognised by id
on the state's own timeline, removed from the live state again, and never archived a second
time; the model does not see them twice.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, RemoveMessage

from tests.engine._paths import PATHS, archived_ids, conversation_ids, make
from tests.engine._support import user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.phase1.window import pending_tokens_of

EVERY_TURN = WorkingMemoryConfig(
    token_budget=3000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)


def _with_id(message: HumanMessage, message_id: str) -> HumanMessage:
    return message.model_copy(update={"id": message_id})


@pytest.mark.parametrize("kind", PATHS)
def test_a_resent_archived_message_is_recognised_and_never_archived_twice(kind):
    driver = make(kind, EVERY_TURN)
    cfg = {"configurable": {"thread_id": f"resend-{kind}"}}
    history = [_with_id(user(i), f"m-{i}") for i in range(1, 5)]
    for message in history:
        driver.invoke([message], cfg)
    assert "m-1" in archived_ids(driver, cfg)
    for i in range(5, 9):  # the caller re-sends everything it ever sent, every turn
        history.append(_with_id(user(i), f"m-{i}"))
        driver.invoke(list(history), cfg)
        archived = archived_ids(driver, cfg)
        live = conversation_ids(driver.live(cfg))
        everything = archived + live
        assert len(everything) == len(set(everything)), "archived twice, or archived and live"
        assert [i for i in everything if i.startswith("m-")] == [m.id for m in history]
        prompt = "\n".join(m.text for m in driver.prompts()[-1])
        # an archived message may come back only once, as the verbatim fill shows it
        for j in range(1, i + 1):
            assert prompt.count(f"turn {j}:") <= 1, "the model saw an archived message again"
        assert prompt.count(f"turn {i}:") == 1


# -- RemoveMessage of an archived id -----------------------------------------------------------


def _found(driver, cfg, query: str) -> bool:
    search = next(t for t in driver.wm.tools if t.name == "archive_search")
    return not str(search.invoke({"query": query}, cfg)).startswith("No match")


@pytest.mark.parametrize("kind", PATHS)
def test_removing_an_archived_message_hides_it_and_never_fails_the_turn(kind):
    driver = make(kind, EVERY_TURN, tolerant=True)
    cfg = {"configurable": {"thread_id": f"remove-archived-{kind}"}}
    for i in range(1, 5):
        driver.invoke([_with_id(user(i), f"m-{i}")], cfg)
    assert {"m-1", "m-2"} <= set(archived_ids(driver, cfg))
    assert _found(driver, cfg, "turn 1:")
    # as the input of a turn, and as a manual state update
    driver.invoke([RemoveMessage(id="m-1"), _with_id(user(5), "m-5")], cfg)
    driver.graph.update_state(
        cfg, {"messages": [RemoveMessage(id="m-2")]}, as_node=driver.last_node
    )
    driver.invoke([RemoveMessage(id="no-such-id"), _with_id(user(6), "m-6")], cfg)
    live = driver.live(cfg)
    assert not any(isinstance(m, RemoveMessage) for m in live)  # requests carried out
    assert not _found(driver, cfg, "turn 1:")
    assert not _found(driver, cfg, "turn 2:")
    assert _found(driver, cfg, "turn 3:")
    everything = archived_ids(driver, cfg) + conversation_ids(live)
    assert len(everything) == len(set(everything))
    assert "m-1" in everything  # the record stays verbatim: archives are immutable
    for prompt in driver.prompts()[-2:]:
        assert not any(isinstance(m, RemoveMessage) for m in prompt)
        assert "turn 1:" not in "\n".join(m.text for m in prompt)
    values = driver.values(cfg)
    keep = values["working_memory"]["keep_recent_count"]
    assert values["working_memory"]["pending_tokens"] == pending_tokens_of(
        values["messages"], keep, driver.wm._count_message
    )


def test_langgraphs_own_reducer_raises_where_ours_does_not():
    from langgraph.graph.message import add_messages

    from wm_langgraph import archive_aware_add_messages

    live = [HumanMessage("a", id="a")]
    with pytest.raises(ValueError, match="doesn't exist"):
        add_messages(live, [RemoveMessage(id="archived")])
    merged = archive_aware_add_messages(live, [RemoveMessage(id="archived")])
    assert [m.id for m in merged] == ["a", "archived"]
    assert isinstance(merged[-1], RemoveMessage)
    # the hook's RemoveMessage of the request takes it out again; a live id is removed as usual
    assert archive_aware_add_messages(merged, [RemoveMessage(id="archived")]) == live
    assert archive_aware_add_messages(live, [RemoveMessage(id="a")]) == []
