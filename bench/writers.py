"""The Working Memory writers of the size runs, by name, and a registry to add more.

Each entry makes a fresh chat model for one run from the session (and a seed). The scripted
summarisers come from :mod:`bench.models`; the two flooding writers wrap the faithful one and,
on every ``FLOOD_EVERY``-th call, return a 200 KB document (a 200 KB Current State) or 10,000
new items (APPENDed to Task & Goals, a section no guard limits); ``offline`` is the package's
heuristic model. A later row (a real model, say) is one :func:`register_writer` call.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

from bench.data import Session
from bench.models import make_model
from wm_langgraph.document.sections import parse_working_memory, render_working_memory

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


class FloodingWriter(BaseChatModel):
    """Wraps a writer; every ``every``-th call floods the document (``kind``: blob | ops)."""

    base: BaseChatModel
    kind: str
    every: int = FLOOD_EVERY
    seed: int = 0
    model_config = ConfigDict(arbitrary_types_allowed=True)

    _calls: int = PrivateAttr(default=0)
    _rng: random.Random = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        self._rng = random.Random(self.seed)

    @property
    def _llm_type(self) -> str:
        return f"bench-flooding-{self.kind}"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools in OpenAI format (passed on to the wrapped writer)."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)  # type: ignore[return-value]

    def _blob(self) -> str:
        words = [self._rng.choice(_WORDS) for _ in range(34_000)]
        return " ".join(words)[:200_000]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._calls += 1
        result = self.base._generate(messages, stop=stop, **kwargs)
        if self._calls % self.every:
            return result
        message = result.generations[0].message
        assert isinstance(message, AIMessage)
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
            message = AIMessage(content="", tool_calls=[call])  # type: ignore[list-item]
        else:
            bodies = parse_working_memory(message.text)
            if self.kind == "blob":
                bodies["Current State"] = self._blob()
            else:
                bodies["Task & Goals"] += "\n" + "\n".join(f"- {g}" for g in goals)
            message = AIMessage(content=render_working_memory(bodies))
        return ChatResult(generations=[ChatGeneration(message=message)])


def _scripted(behaviour: str) -> WriterFactory:
    return lambda session, seed: make_model(behaviour, session.items, seed=seed)


def _flooding(kind: str) -> WriterFactory:
    def make(session: Session, seed: int) -> BaseChatModel:
        base = make_model("faithful", session.items, seed=seed)
        return FloodingWriter(base=base, kind=kind, seed=seed)

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
