"""No item of the Working Memory grows without bound (SPEC §11).

Reported on LoCoMo's conv-47 at 8k: one Key Facts bullet of 1,652 tokens, 113 clauses joined by
``;``. The offline writer's chat consolidation grouped every clause without a speaker's head (the
capture check's additions, restored clauses) into one bullet and joined more onto it each round.
An invented long chat shows the same shape (a 339-token Key Facts bullet at 4k before the fix);
every item must stay within the memory's item bound (``SectionLimits.item_tokens``) on both
agent paths. Title and Current State are one paragraph each, rewritten every round: nothing is
joined onto them, and the bound is about the list sections."""

from __future__ import annotations

import pytest

from tests.deploy._agents import PATHS, hooks_for
from tests.integrations._long_chat import chat_turns, play_chat
from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemoryConfig
from wm_langgraph.document.guards.key_facts import clauses
from wm_langgraph.document.sections import parse_working_memory, section_items
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.phase2.size import contract_for

LIST_SECTIONS = (
    "Task & Goals",
    "Key Facts & Decisions",
    "Files & Context",
    "Errors & Corrections",
    "Open Issues",
)


def over_the_bound(document: str, bound: int) -> list[str]:
    """The items of the list sections longer than ``bound`` (a single clause cannot be split
    without cutting it, so it is not counted)."""
    sections = parse_working_memory(document)
    return [
        item
        for name in LIST_SECTIONS
        for item in section_items(sections[name])
        if count_tokens(item) > bound and len(clauses(item)) > 1
    ]


@pytest.mark.parametrize("budget", [4_000, 8_000])
@pytest.mark.parametrize("path", PATHS)
def test_a_long_chat_keeps_every_item_within_the_bound(path: str, budget: int) -> None:
    config = WorkingMemoryConfig(token_budget=budget, background=False)
    bound = contract_for(config).limits.item_tokens
    document = play_chat(
        hooks_for(path, config, OfflineWorkingMemoryModel()), f"bound-{path}", chat_turns()
    )
    facts = section_items(parse_working_memory(document)["Key Facts & Decisions"])
    assert len(facts) > 10  # the chat was folded, and consolidated
    assert over_the_bound(document, bound) == []
