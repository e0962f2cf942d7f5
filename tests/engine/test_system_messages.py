"""System messages added every turn (agents that add a note per turn must neither lose
the notes nor outgrow the budget).

Policy: the system message at the head of the live messages is the thread's system prompt (never
counted, never archived, always in the prompt). Every later system message is conversation:
counted in the accounting and archived with its turn like any other message; in the model input
only the newest one is shown, folded into the leading system message with the system prompt.
So a thread that adds a system message every turn stays inside ``token_budget``.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from tests.engine._paths import PATHS, archived_ids, make
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.phase1.window import account_messages, conversation, pending_tokens_of
from wm_langgraph.state import empty_meta

BUDGET = WorkingMemoryConfig(token_budget=4000, background=False)
TURNS = 300


def _clock(i: int) -> SystemMessage:
    return SystemMessage(f"Clock: it is now tick {i}. " + "context " * 25, id=f"sys-{i}")


def _ask(i: int) -> HumanMessage:
    return HumanMessage(f"turn {i}: remember FACT-{i:03d} " + "detail " * 20, id=f"m-{i}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", PATHS)
def test_a_system_message_every_turn_keeps_the_prompt_inside_the_budget(kind):
    driver = make(kind, BUDGET)
    cfg = {"configurable": {"thread_id": f"system-{kind}"}}
    usable = compute_budgets(4000, BUDGET.reserve_tokens, BUDGET.archive_memory_tokens).usable
    pinned = SystemMessage("You are the billing assistant. RULE-ALPHA.", id="sys-prompt")
    driver.invoke([pinned, _clock(0), _ask(0)], cfg)
    sent = ["sys-prompt", "sys-0", "m-0"]
    for i in range(1, TURNS):
        driver.invoke([_clock(i), _ask(i)], cfg)
        sent += [f"sys-{i}", f"m-{i}"]
        prompt = driver.prompts()[-1]
        assert driver.wm.count_tokens(prompt) <= usable, f"turn {i}: over the budget"
        system = prompt[0]
        assert isinstance(system, SystemMessage)
        assert "RULE-ALPHA" in system.text  # the system prompt is always there
        assert f"tick {i}." in system.text  # the newest system message too
        assert f"tick {i - 1}." not in system.text
        assert sum(isinstance(m, SystemMessage) for m in prompt) == 1
    live = driver.live(cfg)
    assert live[0].id == "sys-prompt"
    assert (
        sum(isinstance(m, SystemMessage) for m in live) < 40
    )  # archived with their turns (not 300)
    kept = archived_ids(driver, cfg) + [str(m.id) for m in live[1:]]
    expected = [i for i in sent if i != "sys-prompt"]
    assert [i for i in kept if i.startswith(("sys", "m-"))] == expected  # nothing lost, once
    assert "sys-prompt" not in archived_ids(driver, cfg)


def test_later_system_messages_are_counted_the_head_one_is_not():
    def count(m):
        return len(m.text)

    head = SystemMessage("rules", id="s0")
    later = SystemMessage("a note that counts", id="s1")
    messages = [head, HumanMessage("x", id="h1"), later, AIMessage("y", id="a1")]
    assert conversation(messages) == messages[1:]
    meta = account_messages(empty_meta(0), messages, count)
    assert meta["pending_tokens"] == pending_tokens_of(messages, 0, count) == 1 + 18 + 1
