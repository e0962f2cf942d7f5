"""The room a fitted-down Working Memory frees goes to the fill (docs/budgets.md, "The split").

Reported in conv-47 at 8k: one oversized Key Facts bullet made assemble leave the item out
after the fill's room was computed with the whole document, so ~1,430 tokens of the input
stayed empty. Once every pending and live message is shown, the input counts at least what
trimming the same history sends (``S``, at most ``usable``) minus one turn and the fill's
marker: the fill stops at a turn boundary, nothing else leaves room empty. Trimming itself
sends at least ``usable`` minus one turn, so the input is within two turns (and the marker) of
``min(history, usable)``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from tests.engine._support import (
    histories,
    quarter_count,
    quarter_total,
    trimmed,
    turn_sizes,
)
from wm_langgraph.context.assemble import AssembledContext, assemble_context, fill_marker


def _assembled(case: dict[str, Any], system: SystemMessage | None) -> AssembledContext:
    return assemble_context(
        system_message=system,
        working_memory=case["wm"],
        pending_messages=case["pending"],
        live_messages=case["live"],
        token_budget=case["budget"],
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=quarter_count,
        system_addition="Working Memory: read the summary below.",
        folded_messages=case["folded"],
        folded_sizes=[quarter_count(m) for m in case["folded"]],
        whole_history=True,
    )


def _floor(case: dict[str, Any], system: SystemMessage | None, usable: int) -> int:
    """``min(history, S)`` minus the largest turn (and the fill's marker: room too small for
    the marker and a turn stays empty)."""
    history: list[BaseMessage] = ([system] if system is not None else []) + case["history"]
    trimming = quarter_total(trimmed(system, case["history"], usable))
    turn = max(turn_sizes(case["history"])) + quarter_count(fill_marker())
    return min(quarter_total(history), trimming) - turn


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_once_every_turn_is_shown_the_input_is_within_one_turn_of_trimming(
    case: dict[str, Any],
) -> None:
    _check(case)


@st.composite
def _oversized(draw: Any) -> dict[str, Any]:
    """The reported shape: a chat of short turns, mostly folded, a Working Memory whose oldest
    Key Facts item (the first a cut takes) is large, in a budget about its size."""
    history: list[BaseMessage] = []
    for t in range(draw(st.integers(10, 60))):
        history.append(HumanMessage("u " * draw(st.integers(1, 60)), id=f"u{t}"))
        history.append(AIMessage("a " * draw(st.integers(1, 60)), id=f"f{t}"))
    live = 2 * draw(st.integers(1, 4))
    items = [f"- fact {k} " + "w " * 15 for k in range(draw(st.integers(0, 20)))]
    big = "v " * draw(st.integers(100, 3_000))
    wm = "# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n" + "\n".join(
        [f"- big fact {big}", *items]
    )
    pending = 2 * draw(st.integers(0, 2))
    return {
        "history": history,
        "folded": history[: -live - pending],
        "pending": history[-live - pending : -live],
        "live": history[-live:],
        "wm": wm,
        "system": draw(st.sampled_from([None, "You are careful."])),
        "budget": int(len(wm) / 4 / draw(st.floats(0.2, 1.2))),
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_oversized())
def test_the_room_an_oversized_item_frees_goes_to_the_fill(case: dict[str, Any]) -> None:
    _check(case)


def _check(case: dict[str, Any]) -> None:
    system = SystemMessage(case["system"]) if case["system"] else None
    context = _assembled(case, system)
    shown = {m.id for m in context.all_messages}
    if not {m.id for m in case["pending"] + case["live"]} <= shown:
        return  # turns were dropped for the Working Memory's share: no fill is possible
    assert context.tokens >= _floor(case, system, context.budgets.usable)


def test_an_oversized_item_left_out_gives_its_room_to_the_fill() -> None:
    """The reported shape: a Working Memory with one bullet far larger than the rest, over
    the room the pending and live messages leave; the cut leaves the bullet out, and the
    fill takes what it frees."""
    history: list[BaseMessage] = []
    for t in range(40):
        history.append(HumanMessage(f"q{t} " + "u " * 60, id=f"u{t}"))
        history.append(AIMessage(f"a{t} " + "a " * 60, id=f"f{t}"))
    items = [f"- fact {k} " + "w " * 15 for k in range(20)]
    items.insert(3, "- big fact " + "v " * 3_000)
    wm = "# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n" + "\n".join(items)
    case = {
        "history": history,
        "folded": history[:70],
        "pending": [],
        "live": history[70:],
        "wm": wm,
        "budget": 2_000,
    }
    context = _assembled(case, None)
    assert context.wm_omitted  # the bullet does not fit
    assert context.tokens >= _floor(case, None, context.budgets.usable)
