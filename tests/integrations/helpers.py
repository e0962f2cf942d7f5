"""Shared pieces of the integration tests: a scripted WM model, an agent script, checks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, render_working_memory
from wm_langgraph.testing import ScriptedChatModel, tool_reply

FACT_RE = re.compile(r"FACT-\d+")
UPDATE_TOOL = "update_working_memory"


def _facts(messages: Sequence[BaseMessage]) -> list[str]:
    text = "\n".join(str(m.text) for m in messages)
    inner = re.search(r"<messages>(.*)</messages>", text, re.S)
    return sorted(set(FACT_RE.findall(inner.group(1) if inner else text)), key=_num)


def _num(fact: str) -> int:
    return int(fact.split("-")[1])


def wm_model(
    *, title: str = "Billing service setup", retitle: str | None = None
) -> ScriptedChatModel:
    """A WM writer: create -> a full document listing the FACT-n tokens of the folded messages;
    update -> one tool call appending them (and, with ``retitle``, an unrelated new title that
    the title guard must refuse)."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        facts = _facts(messages)
        if tools:
            ops: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
            ops["Key Facts & Decisions"] = {"op": "APPEND", "items": facts or ["nothing new"]}
            ops["Current State"] = {"op": "UPDATE", "content": f"Folded {len(facts)} facts."}
            if retitle is not None:
                ops["Session Title"] = {"op": "UPDATE", "content": retitle}
            return tool_reply(UPDATE_TOOL, {"sections": ops})
        bullets = "\n".join(f"- {f}" for f in facts) or "- none yet"
        return render_working_memory(
            {
                "Session Title": title,
                "Current State": f"Folded {len(facts)} facts.",
                "Task & Goals": "- Set up billing",
                "Key Facts & Decisions": bullets,
                "Files & Context": "",
                "Errors & Corrections": "",
                "Open Issues": "",
            }
        )

    return ScriptedChatModel(respond=reply)


def agent_model(*, tool: str = "lookup", calls_per_turn: int = 1) -> ScriptedChatModel:
    """The agent: on a user message containing ``use <tool>`` it calls ``tool`` until the turn
    has ``calls_per_turn`` results, then answers; otherwise it answers at once. Any message
    ``call <name> <json>`` makes it call that tool with those arguments once."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        user = str(messages[start].text)
        done = sum(isinstance(m, ToolMessage) for m in messages[start:])
        explicit = re.search(r"call (\w+) (\{.*\})", user)
        if explicit and done == 0:
            import json

            return tool_reply(explicit.group(1), json.loads(explicit.group(2)))
        if f"use {tool}" in user and done < calls_per_turn:
            return tool_reply(tool, {"key": f"k{done}"})
        return f"Answer to: {user[:40]}"

    return ScriptedChatModel(respond=reply)


def ids(messages: Iterable[BaseMessage]) -> list[str]:
    return [str(m.id) for m in messages]


def assert_tool_pairs_intact(messages: Sequence[BaseMessage]) -> None:
    """Every ToolMessage follows the AIMessage that called it, in the same sequence."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            open_calls |= {str(tc["id"]) for tc in message.tool_calls}
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, f"orphan tool result {message.tool_call_id}"


def all_message_ids(graph: Any, config: dict[str, Any]) -> set[str]:
    """Every message id that ever was in the thread's state (over the checkpoint history)."""
    seen: set[str] = set()
    for snapshot in graph.get_state_history(config):
        seen |= set(ids(snapshot.values.get("messages", [])))
    return seen


class CollectingTracer(BaseTracer):
    """Keeps every finished run (the whole tree) in memory; no LangSmith, no network."""

    def __init__(self) -> None:
        super().__init__()
        self.collected: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        return None

    def _end_trace(self, run: Run) -> None:
        self.collected.append(run)
        super()._end_trace(run)

    def named(self, name: str) -> list[Run]:
        return [r for r in self.collected if r.name == name]

    def parent_of(self, run: Run) -> Run | None:
        by_id: dict[UUID, Run] = {r.id: r for r in self.collected}
        return by_id.get(run.parent_run_id) if run.parent_run_id else None


def quiet_agent() -> ScriptedChatModel:
    """An agent model that answers every turn with "Noted." (no tool calls)."""
    return ScriptedChatModel(respond=lambda messages, tools, tool_choice: "Noted.")


def middleware_agent(writer: BaseChatModel, config: WorkingMemoryConfig) -> tuple[Any, Any]:
    """``create_agent`` + ``WorkingMemoryMiddleware`` over ``writer``, no tools: (graph, memory)."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from wm_langgraph import WorkingMemoryMiddleware

    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(writer, config=config, store=store)
    graph = create_agent(
        quiet_agent(), [], middleware=[middleware], checkpointer=InMemorySaver(), store=store
    )
    return graph, middleware.memory


def react_agent(writer: BaseChatModel, config: WorkingMemoryConfig) -> tuple[Any, Any]:
    """``create_react_agent`` with the memory's hooks over ``writer``, no tools."""
    import warnings

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from wm_langgraph.memory import WorkingMemory

    wm = WorkingMemory(writer, config=config, store=InMemoryStore())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        graph = create_react_agent(
            quiet_agent(),
            [],
            pre_model_hook=wm.pre_model_hook,
            post_model_hook=wm.post_model_hook,
            checkpointer=InMemorySaver(),
            store=wm.store,
            version="v2",
        )
    return graph, wm
