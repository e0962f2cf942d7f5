"""A client that numbers its message ids and restarts at ``u1`` (a page reload) sends a new
message under an id the memory has archived already. Without the memory LangGraph replaces the
old message and the model sees the new one; with it the new message must still be kept, shown
to the model and archived under an identity of its own, and the decision logged. A re-send of
the very same message stays recognised (never shown or archived twice).
"""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import HumanMessage

from tests.engine._paths import PATHS, archived_ids, conversation_ids, make
from tests.engine._support import all_archived, user
from wm_langgraph.config import WorkingMemoryConfig

EVERY_TURN = WorkingMemoryConfig(
    token_budget=3000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)
NEW = "NEW: please cancel order 77 right now"


def _with_id(message: HumanMessage, message_id: str) -> HumanMessage:
    return message.model_copy(update={"id": message_id})


@pytest.mark.parametrize("kind", PATHS)
def test_a_new_message_under_a_reused_id_is_shown_kept_and_archived(kind, caplog):
    driver = make(kind, EVERY_TURN)
    cfg = {"configurable": {"thread_id": f"reused-{kind}"}}
    for i in range(1, 5):
        driver.invoke([_with_id(user(i), f"u{i}")], cfg)
    assert "u1" in archived_ids(driver, cfg)

    with caplog.at_level(logging.INFO, logger="wm_langgraph"):
        driver.invoke([HumanMessage(NEW, id="u1")], cfg)
    prompt = "\n".join(str(m.text) for m in driver.prompts()[-1])
    assert NEW in prompt, "the model never saw the new message"
    assert "reused" in caplog.text
    assert NEW not in caplog.text

    for i in range(6, 10):  # more turns: the new message is archived in its turn
        driver.invoke([_with_id(user(i), f"v{i}")], cfg)
    archived = all_archived(driver.wm, cfg)
    texts = [str(m.text) for m in archived] + [str(m.text) for m in driver.live(cfg)]
    assert NEW in texts, "the new message was stored nowhere"
    assert sum(str(m.text).startswith("turn 1:") for m in archived) == 1  # the old one intact
    everything = archived_ids(driver, cfg) + conversation_ids(driver.live(cfg))
    assert len(everything) == len(set(everything)), "two messages under one identity"


@pytest.mark.parametrize("kind", PATHS)
def test_an_identical_resend_of_an_archived_message_stays_recognised(kind):
    driver = make(kind, EVERY_TURN)
    cfg = {"configurable": {"thread_id": f"same-{kind}"}}
    first = _with_id(user(1), "u1")
    for i in range(1, 5):
        driver.invoke([_with_id(user(i), f"u{i}")], cfg)
    driver.invoke([first, _with_id(user(5), "u5")], cfg)
    prompt = "\n".join(str(m.text) for m in driver.prompts()[-1])
    # at most once: the verbatim fill may show the archived original, never a second copy
    assert prompt.count("turn 1:") <= 1
    assert "u1" not in conversation_ids(driver.live(cfg))
    everything = archived_ids(driver, cfg) + conversation_ids(driver.live(cfg))
    assert len(everything) == len(set(everything))
