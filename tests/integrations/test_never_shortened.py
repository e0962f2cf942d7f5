"""Nothing is shortened in place (SPEC §11): an item is never cut with "…" so that a name,
number or identifier is lost; what does not fit moves out whole (searchable) and the document
says so.

Reported: a personal-assistant chat, the default writer, then ``compact``: an item ended in "…"
and had lost "pier 3" ("The ferry … leaves on Saturday at 7:15 from the harbour terminal, the
boat for our group is …"): the capture check added the statement cut at 20 words. Played as a
new user would, on ``create_agent`` and ``create_react_agent``, at a budget small enough that
the size contract must move items out."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.deploy._agents import PATHS, agent_with, hooks_for, memory_of
from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemoryConfig
from wm_langgraph.document.compaction import moved_count
from wm_langgraph.document.sections import parse_working_memory, section_items
from wm_langgraph.testing import OfflineAgentModel

FERRY = (
    "The ferry to the island leaves on Saturday at 7:15 from the harbour terminal, the boat "
    "for our group is the blue one at pier 3 next to the fish market."
)
FACTS = (
    "I'm allergic to penicillin, please remember that.",
    "My dentist appointment is on 14 March at 9:30 with the new hygienist.",
    FERRY,
    "My sister Lena lands at Schiphol on Friday at 18:40 on flight KL 1002 and I promised to "
    "pick her up with the car from the short-stay parking.",
    "We booked the cabin in Hallstatt for 5 nights starting on 2 August and paid a deposit of "
    "300 euros to the owner, a lovely woman called Ilse.",
    "Remind me that the car insurance renewal is due on 30 April and the broker is called Mats.",
)


def _turns() -> list[str]:
    filler = (
        "Also, note number {n}: the neighbour's cat Pip visited again at {h} pm and I gave it "
        "water near the back door of the house."
    )
    return [*FACTS, *(filler.format(n=n, h=n % 12 + 1) for n in range(len(FACTS), 24))]


@pytest.mark.parametrize("path", PATHS)
def test_after_compact_no_item_is_cut_and_what_does_not_fit_moved_out_whole(path: str) -> None:
    config = WorkingMemoryConfig(token_budget=4_000, background=False)
    hooks = hooks_for(path, config, OfflineWorkingMemoryModel())
    agent = agent_with(
        hooks, saver=InMemorySaver(), store=InMemoryStore(), model=OfflineAgentModel(), tools=()
    )
    run = thread_config(f"never-cut-{path}")
    for text in _turns():
        agent.invoke({"messages": [HumanMessage(text)]}, run)
    memory = memory_of(hooks)
    agent.update_state(run, memory.compact(agent.get_state(run).values, run))
    memory.wait(run)
    document = memory.get_working_memory(run)
    sections = parse_working_memory(document)
    # Current State is not an item that keeps anything: a pointer to the latest statement,
    # rewritten every round (SPEC §11: it keeps nothing).
    items = [
        i for name, body in sections.items() if name != "Current State" for i in section_items(body)
    ]
    assert not [i for i in items if "…" in i]  # nothing cut (no message had an ellipsis)
    moved = [text for _, _, text in memory.moved_items(run)]
    assert any("pier 3" in i for i in [*items, *moved])  # kept whole, here or moved out
    if moved:
        assert moved_count(document) >= len(moved)  # and the document says so
    for text in moved:
        assert "…" not in text
