"""The cost table's measures (bench/cost.py): a writer's calls and tokens, pooled rows, and the
calls where a system's input equals no memory's."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool

from bench.cost import (
    CostRow,
    WriterMeter,
    cost_lines,
    equal_while_it_fits,
    input_tokens,
    metered,
    pool,
)
from wm_langgraph.messages import message_tokens
from wm_langgraph.testing import ScriptedChatModel


@tool
def save(text: str) -> str:
    """Save a text."""
    return text


def _writer() -> ScriptedChatModel:
    return ScriptedChatModel(
        respond=lambda m, t, c: {
            "content": "",
            "tool_calls": [{"name": "save", "args": {"text": "the billing move is done"}}],
        }
    )


def test_the_meter_counts_the_prompt_the_bound_tools_and_the_reply() -> None:
    meter = WriterMeter()
    model = metered(_writer(), meter)
    prompt = [SystemMessage("You write notes."), HumanMessage("note the billing move")]
    plain = model.invoke(prompt)
    bound = model.bind_tools([save]).invoke(prompt)
    figures = meter.figures()
    assert figures["calls"] == 2
    # the bound call's prompt counts its tool schema on top of the messages
    assert figures["prompt"] > 2 * input_tokens(prompt)
    assert figures["output"] == message_tokens(plain) + message_tokens(bound)
    assert message_tokens(bound) > message_tokens(AIMessage(""))  # the tool call's arguments


def test_metering_keeps_the_models_own_callbacks() -> None:
    first, second = WriterMeter(), WriterMeter()
    model = metered(metered(_writer(), first), second)
    model.invoke("hello")
    assert first.figures()["calls"] == second.figures()["calls"] == 1


def test_input_equals_no_memory_only_on_the_calls_whose_history_fits() -> None:
    full = [100, 200, 300, 400]
    ours = [100, 200, 290, 300]
    assert equal_while_it_fits([(ours, full)], 250) == (2, 2)
    assert equal_while_it_fits([([100, 201, 290, 300], full)], 250) == (1, 2)
    assert equal_while_it_fits([([100], full)], 250) == (0, 0)  # other calls: not compared


def test_pooled_rows_and_the_table() -> None:
    runs = [
        {"tokens": [100, 300], "turns": 2, "writer": {"calls": 1, "prompt": 500, "output": 50}},
        {"tokens": [200], "turns": 1, "writer": {"calls": 0, "prompt": 0, "output": 0}},
    ]
    row = pool("wm_langgraph @ 8k", "wm_langgraph", runs)
    assert (row.calls, row.tokens, row.turns, row.mean) == (3, 600, 3, 200.0)
    assert row.writer == {"calls": 1, "prompt": 500, "output": 50}
    nothing = {"calls": 0, "prompt": 0, "output": 0}
    baseline = CostRow("trimming @ 8k", "trimming", 2, 500, 2, nothing)
    lines = cost_lines([row, baseline])
    assert lines[2] == "| wm_langgraph @ 8k | 3 | 200 | 600 | 0.33 | 167 | 17 | 383 |"
    assert lines[3] == "| trimming @ 8k | 2 | 250 | 500 | - | - | - | 250 |"
    assert pool("x", "full", [{"tokens": [], "turns": 0}]).mean == 0.0
