"""A long invented two-person chat, replayed as an agent conversation: the user's turns are the
human messages, the other speaker's are the agent model's replies (as the LoCoMo replay does).

Every session opens with its date line (``[7:05 pm on 14 June, 2023] Hey Ben! …``), and each
turn states one or two facts a person would ask about later: trips, classes, pets, purchases,
plans, with names, places, numbers and relative dates. Seeded, so a failure replays.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.deploy._agents import Hooks, agent_with, memory_of
from wm_langgraph.testing import ScriptedChatModel

__all__ = ["chat_turns", "play_chat"]

_NAMES = ("Priya", "Owen", "Marta", "Kenji", "Lucia", "Tomas", "Aiko", "Ravi", "Nadia", "Felix")
_PLACES = ("Porto", "Bergen", "Ghent", "Lisbon", "Kyoto", "Tallinn", "Cusco", "Oslo", "Brno")
_PETS = ("Miso", "Pixel", "Biscuit", "Juniper", "Pepper", "Toffee")
_HOBBIES = ("pottery", "climbing", "chess", "violin", "linocut", "sailing", "baking", "running")
_THINGS = ("a red kayak", "an old Leica camera", "a sourdough starter", "a vintage bike")


def _statement(rng: random.Random) -> str:
    place, name, hobby = rng.choice(_PLACES), rng.choice(_NAMES), rng.choice(_HOBBIES)
    pet, thing, k = rng.choice(_PETS), rng.choice(_THINGS), rng.randint(2, 40)
    return rng.choice(
        (
            f"Last week I went to {place} with my friend {name} and we stayed {k} days at a "
            "place near the old harbour.",
            f"I finally signed up for a {hobby} class yesterday, it runs every Tuesday for "
            f"{k} weeks.",
            f"My cousin {name} adopted a puppy named {pet} and she sends me photos every morning.",
            f"Next month I'm going to visit {place} for a {hobby} festival with {name}.",
            f"I bought {thing} for {k * 10} dollars at a flea market in {place}.",
            f"We decided to move the book club to Thursdays because {name} works late on Mondays.",
            f"I've been doing {hobby} for {k} years now, since my teacher {name} showed me.",
            f"My favourite book this year is about a lighthouse keeper in {place}, {name} "
            "recommended it.",
        )
    )


def chat_turns(*, seed: int = 0, sessions: int = 12, per_session: int = 12) -> list[str]:
    """The chat's turns in order, the user's first (even positions) and the other speaker's."""
    rng = random.Random(seed)
    day = date(2023, 5, 8)
    turns: list[str] = []
    for s in range(sessions):
        day += timedelta(days=rng.randint(3, 20))
        stamp = f"[7:{s % 60:02d} pm on {day.day} {day.strftime('%B')}, {day.year}]"
        for i in range(per_session):
            text = _statement(rng)
            if rng.random() < 0.4:
                text += " " + _statement(rng)
            if i == 0:
                text = f"{stamp} Hey Ben! {text}"
            elif i == 1:
                text = f"Hi Ana! {text}"
            turns.append(text)
    return turns


def play_chat(hooks: Hooks, thread: str, turns: list[str]) -> str:
    """Play ``turns`` through an agent built on ``hooks`` (the agent model replies with the
    other speaker's turns) and return the Working Memory once Phase 2 is done."""
    replies = iter(turns[1::2])

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> str:
        return next(replies)

    agent = agent_with(
        hooks,
        saver=InMemorySaver(),
        store=InMemoryStore(),
        model=ScriptedChatModel(respond=reply),
        tools=(),
    )
    config = thread_config(thread)
    for text in turns[::2]:
        agent.invoke({"messages": [("user", text)]}, config)
    memory = memory_of(hooks)
    memory.wait(config)
    return memory.get_working_memory(config)
