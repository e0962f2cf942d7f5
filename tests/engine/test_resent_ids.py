"""Re-sent ids of archived messages (issue 10, case 6, first half).

A parent graph (a subgraph's caller, a supervisor) or a client that re-sends the whole history
every turn hands the engine messages whose ids are already archived. They are recognised by id
on the state's own timeline, removed from the live state again, and never archived a second
time; the model does not see them twice.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from tests.engine._paths import PATHS, archived_ids, conversation_ids, make
from tests.engine._support import user
from wm_langgraph.engine.config import WorkingMemoryConfig

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
        assert "turn 1:" not in prompt, "the model saw an archived message again"
        assert prompt.count(f"turn {i}:") == 1
