"""Never more than trimming where the memory repeats what trimming shows (docs/budgets.md,
"Two rules of the input size"): over random histories (varied message sizes, tool calls with
parallel results, system prompts, a Working Memory of any size, archives folded or pending),
an input that shows folded turns verbatim counts at most what LangChain's ``trim_messages``
sends of the same history at the same ``usable`` with the same counter; while the history
fits, the input is that history."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from tests.engine._support import histories, quarter_count, quarter_total, trimmed
from wm_langgraph.context.assemble import FILL_HEADER, SUMMARY_HEADER, assemble_context

_count = quarter_count
_total = quarter_total
_trimmed = trimmed


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_the_input_never_counts_more_than_trimming_and_is_the_history_while_it_fits(
    case: dict[str, Any],
) -> None:
    system = SystemMessage(case["system"]) if case["system"] else None
    context = assemble_context(
        system_message=system,
        working_memory=case["wm"],
        pending_messages=case["pending"],
        live_messages=case["live"],
        token_budget=case["budget"],
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=_count,
        system_addition="Working Memory: read the summary below.",
        folded_messages=case["folded"],
        folded_sizes=[_count(m) for m in case["folded"]],
        whole_history=True,  # every archived message is given
    )
    ours = context.all_messages
    assert _total(ours) == context.tokens
    usable = context.budgets.usable
    history = ([system] if system is not None else []) + case["history"]
    if _total(history) <= usable:
        assert [m.id for m in ours] == [m.id for m in history]
        assert _total(ours) == _total(history)
        return
    trimmed = _trimmed(system, case["history"], usable)
    if any(m.text.startswith(FILL_HEADER) for m in ours):
        # the memory repeats folded turns verbatim: never more than trimming sends
        assert _total(ours) <= _total(trimmed)
    # the newest user message is always shown (when it is not folded into the memory)
    newest = [m for m in case["pending"] + case["live"] if isinstance(m, HumanMessage)]
    if newest:
        assert newest[-1].id in {m.id for m in ours}
    # tool pairs stay whole: every shown result's call is shown, and every shown call's results
    shown_calls = {c["id"] for m in ours if isinstance(m, AIMessage) for c in m.tool_calls}
    shown_results = {m.tool_call_id for m in ours if isinstance(m, ToolMessage)}
    assert shown_results <= shown_calls
    assert shown_calls <= shown_results or any("truncated" in m.text for m in ours)
    assert sum(1 for m in ours if m.text.startswith(SUMMARY_HEADER)) <= 1


def test_a_user_message_between_parallel_results_does_not_cap_the_newest_turn() -> None:
    """Trimming may start on a user message sent between the results of parallel tool calls
    (a suffix the memory never cuts at: it would separate a call from its result), far under
    ``usable``. Trimming's size bounds only the verbatim fill: the newest turn's tool outputs
    are cut only as far as ``usable`` needs, not down to trimming's size."""
    older = [HumanMessage("u " * 50, id="h0"), AIMessage("a " * 50, id="f0")]
    newest: list[BaseMessage] = [
        HumanMessage("start", id="h1"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "f", "args": {}, "id": "p1"},
                {"name": "f", "args": {}, "id": "p2"},
            ],
            id="a1",
        ),
        ToolMessage("r " * 2_000, tool_call_id="p1", id="t1"),
        HumanMessage("also check the other one", id="h2"),
        ToolMessage("r " * 200, tool_call_id="p2", id="t2"),
        AIMessage("done", id="f1"),
    ]
    budget = 1_000  # usable 850: less than the newest turn, more than the part from h2 on
    context = assemble_context(
        system_message=None,
        working_memory="# Working Memory\n\n## Session Title\nT\n",
        pending_messages=[],
        live_messages=newest,
        token_budget=budget,
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=_count,
        system_addition="Working Memory: read the summary below.",
        folded_messages=older,
        folded_sizes=[_count(m) for m in older],
        whole_history=True,
    )
    usable = context.budgets.usable
    trimmed = _trimmed(None, older + newest, usable)
    assert [m.id for m in trimmed] == ["h2", "t2", "f1"]  # trimming starts on the interjection
    assert {m.id for m in newest} <= {m.id for m in context.all_messages}
    assert _total(trimmed) < context.tokens <= usable
    assert context.tokens > usable - 50  # the tool output is cut only as far as usable needs
