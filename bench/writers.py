"""The Working Memory writers of the size runs, by name, and a registry to add more.

Each entry makes a fresh chat model for one run from the session (and a seed). The scripted
summarisers come from :mod:`bench.models`; the two flooding writers wrap the faithful one's
script (:class:`FloodingWriter`, answering for a ``wm_langgraph.testing.ScriptedChatModel``) and,
on every ``FLOOD_EVERY``-th call, return a 200 KB document (a 200 KB Current State) or 10,000
new items (APPENDed to Task & Goals, a section no guard limits); ``offline`` is the package's
heuristic model. A later row (a real model, say) is one :func:`register_writer` call.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from bench.data import Session
from bench.models import CAPTURE_TOOL, ScriptedSummariser, make_model, make_summariser
from wm_langgraph.document.sections import parse_working_memory, render_working_memory
from wm_langgraph.testing import ScriptedChatModel

__all__ = ["FLOOD_EVERY", "SIZE_WRITERS", "FloodingWriter", "WriterFactory", "register_writer"]

FLOOD_EVERY = 10
"""A flooding writer floods on every this-many-th call (faithful on the others)."""

WriterFactory = Callable[[Session, int], BaseChatModel]

_WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "labore",
    "dolore",
    "magna",
    "aliqua",
    "enim",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
]


class FloodingWriter:
    """Wraps a writer's script; every ``every``-th document call floods the document (``kind``:
    blob | ops). The ``respond`` function of a flooding writer model, see :data:`SIZE_WRITERS`."""

    def __init__(
        self, base: ScriptedSummariser, kind: str, every: int = FLOOD_EVERY, seed: int = 0
    ) -> None:
        self.base = base
        self.kind = kind
        self.every = every
        self.seed = seed
        self._calls = 0
        self._rng = random.Random(seed)

    def _blob(self) -> str:
        words = [self._rng.choice(_WORDS) for _ in range(34_000)]
        return " ".join(words)[:200_000]

    def __call__(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> AIMessage:
        """The base's answer, flooded on every ``every``-th create or update call (the capture
        check's follow-ups are answered, not counted: how many a round makes depends on the
        check, not on the writer)."""
        message = self.base(messages, tools, tool_choice)
        names = {t.get("function", {}).get("name") for t in tools or [] if isinstance(t, dict)}
        if CAPTURE_TOOL in names:
            return message
        self._calls += 1
        if self._calls % self.every:
            return message
        n = self._calls
        goals = [f"step {n}.{i}: look at widget {n}-{i}" for i in range(10_000)]
        if message.tool_calls:
            call = dict(message.tool_calls[0])
            sections = dict(call["args"].get("sections", {}))
            if self.kind == "blob":
                sections["Current State"] = {"op": "UPDATE", "content": self._blob()}
            else:
                sections["Task & Goals"] = {"op": "APPEND", "items": goals}
            call["args"] = {"sections": sections}
            return AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]
        bodies = parse_working_memory(message.text)
        if self.kind == "blob":
            bodies["Current State"] = self._blob()
        else:
            bodies["Task & Goals"] += "\n" + "\n".join(f"- {g}" for g in goals)
        return AIMessage(content=render_working_memory(bodies))


def _scripted(behaviour: str) -> WriterFactory:
    return lambda session, seed: make_model(behaviour, session.items, seed=seed)


def _flooding(kind: str) -> WriterFactory:
    def make(session: Session, seed: int) -> BaseChatModel:
        base = make_summariser("faithful", session.items, seed=seed)
        flooding = FloodingWriter(base=base, kind=kind, seed=seed)
        return ScriptedChatModel(
            respond=flooding, keep_ids=True, record_calls=False, name=f"bench-flooding-{kind}"
        )

    return make


def _offline(session: Session, seed: int) -> BaseChatModel:
    from wm_langgraph import OfflineWorkingMemoryModel

    return OfflineWorkingMemoryModel()


SIZE_WRITERS: dict[str, WriterFactory] = {
    "faithful": _scripted("faithful"),
    "drifting": _scripted("drifting"),
    "sloppy": _scripted("sloppy"),
    "bloating": _scripted("bloating"),
    "200 KB document": _flooding("blob"),
    "10,000 ops": _flooding("ops"),
    "offline model": _offline,
}
"""Writer name -> factory, in report order."""


def register_writer(name: str, factory: WriterFactory) -> None:
    """Add a writer to the size runs (e.g. a real model); it gets its own row."""
    if name in SIZE_WRITERS:
        raise ValueError(f"a writer named {name!r} is already registered")
    SIZE_WRITERS[name] = factory
