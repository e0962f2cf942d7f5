"""Never more than no memory when the history fits (behaviour §7.4): while the whole history
(archived and live) fits ``usable``, the model input is what the same agent without any memory
sends, message for message and token for token; once the history outgrows ``usable``, the
Working Memory takes its room and the input stays inside ``usable``. On the three paths."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool

from tests.engine._paths import PATHS, make, make_plain
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import FILL_HEADER, SUMMARY_HEADER, compute_budgets
from wm_langgraph.testing import ScriptedChatModel

CONFIG = WorkingMemoryConfig(
    token_budget=3_000,
    commit_token_threshold_ratio=0.1,  # commits long before the history outgrows usable
    commit_keep_recent_count=2,
    background=False,
)
USABLE = compute_budgets(3_000, CONFIG.reserve_tokens, CONFIG.archive_memory_tokens).usable
SYSTEM = SystemMessage("You are the release assistant. Answer briefly.", id="sys")


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "line of code " * 12


def scripted_agent() -> ScriptedChatModel:
    """The same replies, with the same ids, for every instance: every third user turn the
    agent reads two files first (parallel calls), then answers."""
    state = {"turn": 0, "step": 0}

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if isinstance(messages[-1], HumanMessage):
            state["turn"] += 1
            state["step"] = 0
        n, step = state["turn"], state["step"]
        state["step"] += 1
        if n % 3 == 0 and step == 0:
            calls = [
                {"name": "read_file", "args": {"path": f"src/mod_{n}_{i}.py"}, "id": f"c{n}-{i}"}
                for i in range(2)
            ]
            return {"content": "", "tool_calls": calls, "id": f"ai-{n}-{step}"}
        return {"content": f"Noted turn {n}, " + "and more " * 10, "id": f"ai-{n}-{step}"}

    return ScriptedChatModel(respond=reply, keep_ids=True)


def _ask(i: int) -> HumanMessage:
    return HumanMessage(f"turn {i}: the release of v1.{i} goes out " + "soon " * 20, id=f"u{i}")


def _shape(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What a provider is sent of each message (message ids are not sent)."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        calls = [(c["name"], c["args"], c["id"]) for c in getattr(m, "tool_calls", None) or []]
        call_id = m.tool_call_id if isinstance(m, ToolMessage) else None
        out.append((type(m).__name__, m.content, calls, call_id, m.name))
    return out


@pytest.mark.parametrize("kind", PATHS)
def test_the_input_is_what_no_memory_sends_until_the_history_outgrows_usable(kind: str) -> None:
    ours = make(kind, CONFIG, model=scripted_agent(), tools=[read_file])
    plain_model = scripted_agent()
    plain = make_plain(kind, plain_model, [read_file])
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"fits-{kind}"}}
    fitting_with_memory = 0
    for i in range(1, 31):
        messages: list[BaseMessage] = [SYSTEM, _ask(i)] if i == 1 else [_ask(i)]
        ours.invoke(messages, cfg)
        plain.invoke({"messages": messages}, cfg)
        sent = plain_model.calls[-1].messages
        if ours.wm.count_tokens(sent) <= USABLE and ours.wm.get_working_memory(cfg):
            fitting_with_memory += 1
    assert fitting_with_memory >= 3, "no Working Memory existed while the history still fitted"
    ours_inputs = ours.prompts()
    plain_inputs = [c.messages for c in plain_model.calls]
    assert len(ours_inputs) == len(plain_inputs)
    first_over = None
    for n, (mine, theirs) in enumerate(zip(ours_inputs, plain_inputs, strict=True)):
        size = ours.wm.count_tokens(mine)
        assert size <= USABLE, f"call {n}: {size} > {USABLE}"
        if ours.wm.count_tokens(theirs) <= USABLE:
            assert _shape(mine) == _shape(theirs), f"call {n}: not what no memory sends"
            assert size == ours.wm.count_tokens(theirs)
            assert not any(m.text.startswith((SUMMARY_HEADER, FILL_HEADER)) for m in mine)
        elif first_over is None:
            first_over = n
            # one message over: the Working Memory takes its room
            assert any(m.text.startswith(SUMMARY_HEADER) for m in mine), f"call {n}: no WM"
    assert first_over is not None, "the history never outgrew usable"


@pytest.mark.parametrize("kind", PATHS)
def test_a_history_that_fits_shows_no_system_addition(kind: str) -> None:
    ours = make(kind, CONFIG, model=scripted_agent(), tools=[read_file])
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"fits-system-{kind}"}}
    for i in range(1, 9):
        ours.invoke([SYSTEM, _ask(i)] if i == 1 else [_ask(i)], cfg)
    assert ours.wm.list_archives(cfg), "no commit: the case is not exercised"
    prompt = ours.prompts()[-1]
    assert isinstance(prompt[0], SystemMessage)
    assert prompt[0].text == SYSTEM.text
    assert isinstance(prompt[-1], HumanMessage | ToolMessage | AIMessage)
