"""A tool result the assistant only relays is tool data, on the paths users take.

Found on the bench: after a tool printed `feature/billing-106`, the assistant's "Done:
feature/billing-106" was a statement of its own for the capture check (the writer was asked
about it, then code added it) and a path it named for the artifact trail (Files & Context got
it). A relayed line gives neither; the assistant's own sentence about the same result is a
statement the writer is asked about, but names no path either: paths come from what the session
did (SPEC §10), and the assistant's prose is not that.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel, tool_reply

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

CONFIG = WorkingMemoryConfig(
    token_budget=8_000,
    commit_token_threshold_ratio=0.02,
    commit_keep_recent_count=2,
    background=False,
)
BRANCH = "feature/billing-106"
PAD = " and so on" * 40
CAPTURE = "capture_working_memory"
UPDATE = "update_working_memory"


@tool
def current_branch() -> str:
    """The git branch the working tree is on."""
    return BRANCH


class Writer:
    """Writes a document without the branch; records every capture follow-up prompt and
    dismisses whatever it is asked about."""

    def __init__(self) -> None:
        self.capture_prompts: list[str] = []
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        prompt = messages[-1].text
        names = {t.get("function", {}).get("name") for t in tools or []}
        if CAPTURE in names:
            self.capture_prompts.append(prompt)
            return "Nothing to add."
        if UPDATE in names:
            return tool_reply(UPDATE, {"sections": {name: {"op": "KEEP"} for name in SECTIONS}})
        return render_working_memory(
            {"Session Title": "Billing branch checks", "Current State": "Checking branches."}
        )


def _agent_reply(said: str) -> ScriptedChatModel:
    def respond(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return said
        if isinstance(last, HumanMessage) and "check the branch" in last.text:
            return tool_reply("current_branch", {})
        return "Noted."

    return ScriptedChatModel(respond=respond)


def _middleware(writer: Writer, said: str) -> tuple[Any, WorkingMemory]:
    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(writer.model, config=CONFIG, store=store)
    agent = create_agent(
        _agent_reply(said),
        [current_branch],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        store=store,
    )
    return agent, middleware.memory


def _react(writer: Writer, said: str) -> tuple[Any, WorkingMemory]:
    wm = WorkingMemory(writer.model, config=CONFIG, store=InMemoryStore())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(
            _agent_reply(said),
            [current_branch],
            pre_model_hook=wm.pre_model_hook,
            post_model_hook=wm.post_model_hook,
            checkpointer=InMemorySaver(),
            store=wm.store,
            version="v2",
        )
    return agent, wm


def _state_graph(writer: Writer, said: str) -> tuple[Any, WorkingMemory]:
    from tests.engine._support import build_agent

    wm = WorkingMemory(writer.model, config=CONFIG, store=InMemoryStore())
    graph = build_agent(
        wm,
        _agent_reply(said),
        checkpointer=InMemorySaver(),
        store=wm.store,
        tools=ToolNode([current_branch]),
    )
    return graph, wm


BUILDERS = pytest.mark.parametrize(
    "build", [_middleware, _react, _state_graph], ids=["middleware", "react", "stategraph"]
)


def _play(build: Any, said: str, thread: str) -> tuple[Writer, WorkingMemory, dict[str, Any]]:
    writer = Writer()
    agent, wm = build(writer, said)
    config = thread_config(thread)
    turns = [
        "turn 0: hello" + PAD,
        "Please check the branch.",
        *(f"turn {i}" + PAD for i in (2, 3, 4, 5)),
    ]
    for text in turns:
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    wm.wait(config)
    assert len(wm.list_archives(config)) >= 2
    return writer, wm, config


def _fates(wm: WorkingMemory, config: dict[str, Any]) -> list[dict[str, str]]:
    return [
        fate
        for record in wm.list_archives(config)
        for fate in (record.metadata or {}).get("capture") or []
    ]


@BUILDERS
def test_a_relayed_tool_line_is_neither_asked_about_nor_listed(build: Any) -> None:
    writer, wm, config = _play(build, f"Done: {BRANCH}", f"relay-{build.__name__}")
    assert not any(BRANCH in prompt for prompt in writer.capture_prompts)
    assert not any(BRANCH in fate["text"] for fate in _fates(wm, config))
    files = parse_working_memory(wm.get_working_memory(config))["Files & Context"]
    assert BRANCH not in files


@BUILDERS
def test_the_assistant_s_own_sentence_is_asked_about_but_names_no_path(build: Any) -> None:
    said = f"You are on {BRANCH}, which holds the fix for INV-4471."
    writer, wm, config = _play(build, said, f"own-{build.__name__}")
    assert any("INV-4471" in prompt for prompt in writer.capture_prompts)
    files = parse_working_memory(wm.get_working_memory(config))["Files & Context"]
    assert BRANCH not in files
