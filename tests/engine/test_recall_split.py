"""The split of the budget between the Working Memory and the recalled layer (docs/budgets.md,
"The split of the budget"): the Working Memory is shown whole first and the recall takes the
room it leaves, but the recall keeps a floor (``recall_floor``: 15% of ``usable``, at most its
cap) that a large Working Memory is cut for, down to its own share.

Reported on LoCoMo conv-26 at 4k: the recall for the chat's last message kept its whole layer
(30% of ``usable``) before the Working Memory, so a WM that fitted beside a smaller layer was
cut by a quarter, and with it the answers it held (final-input coverage 66.1% -> 60.1% on the
development pair).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from tests.engine._support import histories, quarter_count, quarter_total, trimmed
from wm_langgraph.config import recall_room
from wm_langgraph.context.assemble import (
    SUMMARY_HEADER,
    AssembledContext,
    assemble_context,
    compute_budgets,
    recall_floor,
)
from wm_langgraph.context.recalled import RecallCandidate, Recalled, pack_recalled

ADDITION = "Working Memory: read the summary below."


def _moved(k: int, words: int) -> RecallCandidate:
    """A hit no other layer shows (an item moved out of the Working Memory)."""
    return RecallCandidate(
        record=Recalled(None, 0, None, 10.0 - k / 100),
        kind="moved",
        text=f"recalled item {k} " + "z " * words,
        section="Key Facts & Decisions",
    )


def _assembled(
    case: dict[str, Any], candidates: list[RecallCandidate], recall_tokens: int
) -> AssembledContext:
    system = SystemMessage(case["system"]) if case["system"] else None
    return assemble_context(
        system_message=system,
        working_memory=case["wm"],
        pending_messages=case["pending"],
        live_messages=case["live"],
        token_budget=case["budget"],
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=quarter_count,
        system_addition=ADDITION,
        folded_messages=case["folded"],
        folded_sizes=[quarter_count(m) for m in case["folded"]],
        whole_history=True,
        recall=lambda: candidates,
        recall_tokens=recall_tokens,
    )


@st.composite
def _asked(draw: Any) -> tuple[dict[str, Any], list[RecallCandidate]]:
    """A random history whose newest message is the user's, with the recall's hits."""
    case = draw(histories())
    question = HumanMessage("q " * draw(st.integers(1, 40)), id="question")
    case = {**case, "live": [*case["live"], question], "history": [*case["history"], question]}
    sizes = draw(st.lists(st.integers(1, 300), max_size=12))
    return case, [_moved(k, n) for k, n in enumerate(sizes)]


def _summary_size(context: AssembledContext) -> int:
    return sum(
        quarter_count(m)
        for m, layer in zip(context.messages, context.layers, strict=True)
        if layer == "working memory"
    )


def _recalled_size(context: AssembledContext) -> int:
    return sum(
        quarter_count(m)
        for m, layer in zip(context.messages, context.layers, strict=True)
        if layer == "recalled"
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_asked())
def test_the_memory_is_whole_beside_the_recall_floor_and_the_recall_keeps_its_floor(
    asked: tuple[dict[str, Any], list[RecallCandidate]],
) -> None:
    case, candidates = asked
    usable = compute_budgets(case["budget"], 0, 8_000).usable
    recall_tokens = recall_room(usable, 2_000)
    context = _assembled(case, candidates, recall_tokens)
    assert context.tokens <= usable or context.wm_omitted == 0  # over only for a huge newest turn
    if context.whole_history or not case["wm"]:
        return
    live_ids = {m.id for m in case["pending"] + case["live"]}
    if not live_ids <= {m.id for m in context.messages}:
        return  # turns were dropped for the Working Memory's share: no recall, no fill
    system = SystemMessage(case["system"]) if case["system"] else None
    trimming = trimmed(system, case["history"], usable)
    if not any(isinstance(m, HumanMessage) for m in trimming):
        return  # trimming keeps no user message: the newest turn's own rules apply
    size = quarter_total(trimming)
    system_size = quarter_count(context.system_message) if context.system_message else 0
    kept = sum(
        quarter_count(m)
        for m, layer in zip(context.messages, context.layers, strict=True)
        if layer in ("pending archives", "live messages")
    )
    whole = quarter_count(HumanMessage(f"{SUMMARY_HEADER}\n\n{case['wm'].strip()}"))
    floor = recall_floor(usable, recall_tokens)
    # the Working Memory is shown whole when it fits beside the recall's floor under S ...
    if system_size + kept + whole + floor <= size:
        assert context.wm_omitted == 0
        assert _summary_size(context) == whole
    # ... and the recall keeps what its hits take of its floor (of what the WM's own share
    # leaves under S), whatever the Working Memory's size
    share = min(whole, context.budgets.archive)
    free = min(floor, size - system_size - kept - share)
    _, _, wanted = pack_recalled(candidates, free, quarter_count)
    assert _recalled_size(context) >= wanted


def _chat(turns: int) -> list[BaseMessage]:
    history: list[BaseMessage] = []
    for t in range(turns):
        history.append(HumanMessage(f"q{t} " + "u " * 60, id=f"u{t}"))
        history.append(AIMessage(f"a{t} " + "a " * 60, id=f"f{t}"))
    return history


def _memory(items: int) -> str:
    lines = "\n".join(f"- fact {k} " + "w " * 20 for k in range(items))
    return f"# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n{lines}"


def test_a_memory_that_fits_beside_the_floor_is_shown_whole_at_question_time() -> None:
    """The reported shape: a small window, a Working Memory of about two thirds of it, a recall
    with more hits than fit: the WM fits beside the recall's floor, not beside its whole
    layer. The WM is shown whole; the recall takes the room it leaves (its floor at least)."""
    history = _chat(120)
    question = HumanMessage("what did we say about the lake painting?", id="question")
    case = {
        "history": [*history, question],
        "folded": history[:236],
        "pending": [],
        "live": [*history[236:], question],
        "wm": _memory(190),
        "system": None,
        "budget": 4_000,
    }
    usable = compute_budgets(4_000, 0, 8_000).usable
    tokens = recall_room(usable, 2_000)
    context = _assembled(case, [_moved(k, 80) for k in range(20)], tokens)
    whole = quarter_count(HumanMessage(f"{SUMMARY_HEADER}\n\n{case['wm']}"))
    rest = quarter_total(case["live"]) + quarter_count(SystemMessage(ADDITION))
    floor = recall_floor(usable, tokens)
    assert rest + whole + floor <= usable - 100 < rest + whole + tokens  # the reported shape
    assert context.wm_omitted == 0
    assert _summary_size(context) == whole
    assert _recalled_size(context) >= floor
    assert context.tokens <= quarter_total(trimmed(None, case["history"], usable))


def test_a_memory_too_large_for_the_floor_is_cut_for_it() -> None:
    """A Working Memory larger than the window leaves the recall its floor: the WM is cut
    (whole items), not the recall crowded out."""
    history = _chat(120)
    question = HumanMessage("what did we say about the lake painting?", id="question")
    case = {
        "history": [*history, question],
        "folded": history[:236],
        "pending": [],
        "live": [*history[236:], question],
        "wm": _memory(300),
        "system": None,
        "budget": 4_000,
    }
    usable = compute_budgets(4_000, 0, 8_000).usable
    tokens = recall_room(usable, 2_000)
    context = _assembled(case, [_moved(k, 40) for k in range(20)], tokens)
    assert context.wm_omitted > 0
    floor = recall_floor(usable, tokens)
    assert floor - 60 <= _recalled_size(context)  # the floor, to within one hit
    assert context.tokens <= usable


def test_every_moved_item_the_search_finds_can_be_recalled() -> None:
    """Items moved out of the Working Memory have no archive, position or message id: they are
    told apart by their text (each was shown alone, the others taken for the same hit)."""
    hits = [_moved(k, 5) for k in range(3)]
    message, records, _ = pack_recalled(hits, 1_000, quarter_count)
    assert message is not None
    assert len(records) == 3
    assert all(f"recalled item {k} " in message.text for k in range(3))
    _, again, _ = pack_recalled([hits[0], hits[0]], 1_000, quarter_count)
    assert len(again) == 1  # the same item found twice is shown once
