"""Section thresholds that follow the Working Memory's size target, through the engine (issue 39,
SPEC §10): the update prompt's size warnings state the memory's own limits and the Key Facts
guard throttles at its own count, on create_agent and create_react_agent, at a small, the
default and a large memory."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from tests.common import thread_config
from tests.integrations.helpers import middleware_agent, react_agent
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.guards import SectionLimits
from wm_langgraph.document.sections import SECTIONS, render_working_memory
from wm_langgraph.phase2.size import contract_for
from wm_langgraph.testing import ScriptedChatModel, tool_reply

with warnings.catch_warnings():
    warnings.simplefilter("ignore")

UPDATE = "update_working_memory"
CAPTURE = "capture_working_memory"
FACTS = "Key Facts & Decisions"
NEW = 10


def _names(tools: Any) -> set[str]:
    return {t.get("function", {}).get("name") for t in tools or []}


class Writer:
    """Creates a Key Facts of ``start`` bullets, then APPENDs ``NEW`` new facts a round;
    records the update prompts; says nothing when the capture check asks."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.prompts: list[str] = []
        self.rounds = 0
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        names = _names(tools)
        if CAPTURE in names:
            return "Nothing to add."
        if UPDATE not in names:
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Node inventory"
            body[FACTS] = "\n".join(
                f"- FACT-{i:03d}: node-{i} listens on port {9000 + i}" for i in range(self.start)
            )
            return render_working_memory(body)
        self.prompts.append(messages[-1].text)
        self.rounds += 1
        items = [
            f"FACT-{self.rounds}{i:02d}: spare-{self.rounds}-{i} listens on port {7000 + i}"
            for i in range(NEW)
        ]
        ops: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
        ops[FACTS] = {"op": "APPEND", "items": items}
        return tool_reply(UPDATE, {"sections": ops})


def _middleware(writer: Any, config: WorkingMemoryConfig) -> tuple[Any, Any]:
    return middleware_agent(writer.model, config)


def _react(writer: Any, config: WorkingMemoryConfig) -> tuple[Any, Any]:
    return react_agent(writer.model, config)


MEMORIES = {
    "small": {"token_budget": 8_000},
    "default": {"token_budget": 128_000},
    "large": {"token_budget": 1_000_000, "archive_memory_tokens": 32_000},
}


def _run(build: Any, memory: str, start: int) -> tuple[Writer, list[dict[str, str]], SectionLimits]:
    config = WorkingMemoryConfig(
        **MEMORIES[memory],  # type: ignore[arg-type]
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=0,
        background=False,
    )
    writer = Writer(start)
    agent, wm = build(writer, config)
    thread = thread_config(f"limits-{memory}-{build.__name__}")
    for turn in range(2):
        agent.invoke({"messages": [HumanMessage(f"turn {turn}: carry on")]}, thread)
    wm.wait(thread)
    archives = wm.list_archives(thread)
    decisions = [d for d in archives[-1].metadata["decisions"] if d["section"] == FACTS]
    return writer, decisions, contract_for(config).limits


PATHS = pytest.mark.parametrize("build", [_middleware, _react], ids=["create_agent", "react"])


@PATHS
@pytest.mark.parametrize("memory", ["small", "default"])
def test_an_oversized_key_facts_is_warned_and_throttled_at_the_memorys_own_limits(
    build: Any, memory: str
) -> None:
    limits = contract_for(WorkingMemoryConfig(**MEMORIES[memory])).limits  # type: ignore[arg-type]
    writer, decisions, used = _run(build, memory, start=limits.bullets + 1)
    assert used == limits
    (prompt,) = writer.prompts
    line = f"(limits: {limits.bullets} bullets, {limits.tokens:,} tokens)"
    assert line in prompt
    assert f"target at most {limits.bullets} bullets" in prompt
    (decision,) = decisions
    assert f"accepted {limits.max_append} of {NEW} new items" in decision["reason"]
    if memory == "default":  # the seed's values, exactly
        assert line == "(limits: 25 bullets, 1,500 tokens)"
        assert "accepted 5 of 10" in decision["reason"]


@PATHS
def test_a_large_memory_is_neither_warned_nor_throttled_where_the_seed_would_be(
    build: Any,
) -> None:
    writer, decisions, limits = _run(build, "large", start=30)  # over the seed's 25 bullets
    assert limits.bullets > 30 + NEW
    (prompt,) = writer.prompts
    assert not re.search(r"\(limits: \d+ bullets", prompt)
    (decision,) = decisions
    assert decision["applied"] == "APPEND"
    assert "accepted" not in decision["reason"]
