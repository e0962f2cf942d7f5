"""assemble: three layers, budgets enforced, whole turns trimmed oldest-first, tool pairs kept."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from wm_langgraph.context.assemble import (
    SUMMARY_HEADER,
    Budgets,
    assemble_context,
    compute_budgets,
    fit_working_memory,
)
from wm_langgraph.document.sections import parse_working_memory, render_working_memory
from wm_langgraph.messages import message_tokens

ADDITION = "The [Session History Summary] is compressed; trust the active messages."


def count(message: BaseMessage) -> int:
    """Characters as tokens: exact and fast, so budgets in tests are easy to reason about."""
    return message_tokens(message, counter=len)


def wm(**bodies: str) -> str:
    names = {
        "title": "Session Title",
        "state": "Current State",
        "goals": "Task & Goals",
        "facts": "Key Facts & Decisions",
        "files": "Files & Context",
        "errors": "Errors & Corrections",
        "issues": "Open Issues",
    }
    return render_working_memory({names[k]: v for k, v in bodies.items()})


SMALL_WM = wm(title="Fix login crash", state="Patch written, tests pending.", facts="- DB is PG 16")


def assemble(**overrides: object) -> object:
    args: dict[str, object] = {
        "system_message": None,
        "working_memory": "",
        "pending_messages": [],
        "live_messages": [],
        "token_budget": 128_000,
        "reserve_tokens": 20_000,
        "archive_memory_tokens": 8_000,
        "count": count,
        "system_addition": ADDITION,
    }
    args.update(overrides)
    return assemble_context(**args)  # type: ignore[arg-type]


def window_for(usable: int) -> int:
    """The smallest token_budget (with reserve_tokens=0) whose usable part is ``usable``."""
    total = usable
    while compute_budgets(total, 0, 8_000).usable < usable:
        total += 1
    return total


def turn(n: int, size: int = 10) -> list[BaseMessage]:
    """A user turn with one tool round trip; ``size`` pads every message."""
    pad = "x" * size
    return [
        HumanMessage(f"question {n} {pad}", id=f"h{n}"),
        AIMessage(
            f"calling {pad}",
            tool_calls=[{"name": "lookup", "args": {"n": n}, "id": f"c{n}"}],
            id=f"a{n}",
        ),
        ToolMessage(f"result {n} {pad}", tool_call_id=f"c{n}", id=f"t{n}"),
        AIMessage(f"answer {n} {pad}", id=f"f{n}"),
    ]


# ---------------------------------------------------------------------------- budgets


@pytest.mark.parametrize(
    ("total", "reserve", "archive", "expected"),
    [
        (128_000, 20_000, 8_000, Budgets(reserved=20_000, usable=108_000, archive=8_000)),
        (200_000, 20_000, 8_000, Budgets(reserved=30_000, usable=170_000, archive=8_000)),
        (40_000, 20_000, 8_000, Budgets(reserved=20_000, usable=20_000, archive=3_000)),
        (30_000, 20_000, 8_000, Budgets(reserved=4_500, usable=25_500, archive=3_825)),
        # an explicit reserve is honoured below 40,000 too, never below 15%
        (6_000, 1_000, 2_000, Budgets(reserved=1_000, usable=5_000, archive=750)),
        (6_000, 500, 2_000, Budgets(reserved=900, usable=5_100, archive=765)),
        (30_000, 10_000, 8_000, Budgets(reserved=10_000, usable=20_000, archive=3_000)),
        (50_000, 60_000, 8_000, Budgets(reserved=50_000, usable=0, archive=0)),
        (10, 20_000, 8_000, Budgets(reserved=2, usable=8, archive=1)),
        (128_000, 0, 500, Budgets(reserved=19_200, usable=108_800, archive=500)),
    ],
)
def test_compute_budgets(total: int, reserve: int, archive: int, expected: Budgets) -> None:
    assert compute_budgets(total, reserve, archive) == expected


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((0, 0, 0), "token_budget"),
        ((True, 0, 0), "token_budget"),
        ((1000, -1, 0), "reserve_tokens"),
        ((1000, 0, 1.5), "archive_memory_tokens"),
    ],
)
def test_compute_budgets_rejects_bad_values(args: tuple[object, ...], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        compute_budgets(*args)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- layers and order


def test_no_memory_no_addition_and_system_message_passes_unchanged() -> None:
    system = SystemMessage("You are a coding agent.", id="sys")
    live = turn(1)
    ctx = assemble(system_message=system, live_messages=live)
    assert ctx.system_message is system
    assert ctx.messages == live
    assert ctx.all_messages == [system, *live]
    assert ctx.dropped == 0
    assert ctx.tokens == sum(count(m) for m in ctx.all_messages)


def test_no_system_message_at_all_gives_none() -> None:
    ctx = assemble(live_messages=[HumanMessage("hi")])
    assert ctx.system_message is None
    assert [m.text for m in ctx.all_messages] == ["hi"]


def test_three_layers_in_order_with_addition_merged_into_one_system_message() -> None:
    system = SystemMessage("You are a coding agent.")
    pending = turn(1)
    live = turn(2)
    ctx = assemble(
        system_message=system, working_memory=SMALL_WM, pending_messages=pending, live_messages=live
    )
    assert ctx.system_message is not None
    assert ctx.system_message.content == f"{ADDITION}\n\nYou are a coding agent."
    summary = ctx.messages[0]
    assert isinstance(summary, HumanMessage)
    assert summary.text.startswith(SUMMARY_HEADER + "\n\n# Working Memory")
    assert "- DB is PG 16" in summary.text
    assert ctx.messages[1:] == [*pending, *live]
    assert sum(isinstance(m, SystemMessage) for m in ctx.all_messages) == 1
    assert ctx.dropped == 0


def test_pending_without_wm_gets_addition_but_no_summary_message() -> None:
    ctx = assemble(pending_messages=turn(1), live_messages=turn(2))
    assert ctx.system_message is not None
    assert ctx.system_message.content == ADDITION
    assert not any(m.text.startswith(SUMMARY_HEADER) for m in ctx.messages)


def test_system_messages_inside_live_are_folded_not_duplicated() -> None:
    system = SystemMessage("Base prompt.")
    live = [SystemMessage("Base prompt."), *turn(1), SystemMessage("Extra rule."), *turn(2)]
    ctx = assemble(system_message=system, working_memory=SMALL_WM, live_messages=live)
    assert ctx.system_message is not None
    assert ctx.system_message.content == f"{ADDITION}\n\nBase prompt.\n\nExtra rule."
    assert not any(isinstance(m, SystemMessage) for m in ctx.messages)
    assert ctx.messages[1:] == [*turn(1), *turn(2)]
    assert ctx.dropped == 0


def test_a_single_live_system_message_without_memory_is_used_unchanged() -> None:
    own = SystemMessage("Only me.")
    ctx = assemble(live_messages=[own, HumanMessage("hi")])
    assert ctx.system_message is own


def test_block_list_system_content_is_kept_as_blocks() -> None:
    blocks = [{"type": "text", "text": "Cached prompt", "cache_control": {"type": "ephemeral"}}]
    system = SystemMessage(content=blocks)  # type: ignore[arg-type]
    ctx = assemble(system_message=system, working_memory=SMALL_WM, live_messages=turn(1))
    assert ctx.system_message is not None
    assert ctx.system_message.content == [{"type": "text", "text": ADDITION}, *blocks]


def test_inputs_are_not_modified() -> None:
    live = turn(1, size=5000)
    snapshot = [m.model_copy(deep=True) for m in live]
    assemble(live_messages=live, token_budget=3_000, reserve_tokens=0)
    assert live == snapshot


# ---------------------------------------------------------------------------- WM budget


def _big_wm() -> str:
    return wm(
        title="Migrate billing to Postgres",
        state="Schema migrated; backfill running. Next: verify totals.",
        goals="\n".join(f"- goal {i} " + "g" * 40 for i in range(20)),
        facts="\n".join(f"- fact {i} " + "f" * 60 for i in range(60)),
        files="\n".join(f"- src/module_{i}.py: " + "p" * 40 for i in range(40)),
        errors="\n".join(f"- error {i} " + "e" * 50 for i in range(30)),
        issues="- [new] totals differ by 0.3%\n- flaky CI on arm64",
    )


def test_wm_cut_when_the_layers_compete_keeps_title_and_each_sections_newest_items() -> None:
    document = _big_wm()
    live = [m for n in range(1, 80) for m in turn(n, size=400)]
    ctx = assemble(
        working_memory=document,
        live_messages=live,
        token_budget=window_for(20_000),
        reserve_tokens=0,
        archive_memory_tokens=2_500,
    )
    assert ctx.budgets.archive == 2_500
    summary = ctx.messages[0]
    assert ctx.wm_omitted > 0
    assert count(summary) > 2_000  # the share is kept, cut as little as needed (whole items)
    assert ctx.tokens <= ctx.budgets.usable
    body = summary.text.removeprefix(SUMMARY_HEADER + "\n\n")
    sections = parse_working_memory(body.split("\n\n", 1)[1])
    original = parse_working_memory(document)
    for name in ("Session Title", "Current State"):
        assert sections[name] == original[name]
    assert "older items omitted; archive_search finds them" in sections["Files & Context"]
    # whole items only: every kept line is a line of the original document
    original_lines = set(document.splitlines())
    for line in body.splitlines():
        assert line in original_lines or "archive_search" in line or not line.strip()
    # sections lose their oldest items first
    assert "src/module_39.py" in body
    assert "src/module_0.py" not in body


def test_fit_working_memory_edge_cases() -> None:
    assert fit_working_memory("", 1000, count) == (None, 0)
    assert fit_working_memory(SMALL_WM, 0, count) == (None, 0)
    message, omitted = fit_working_memory(SMALL_WM, 10_000, count)
    assert message is not None
    assert omitted == 0
    assert fit_working_memory(_big_wm(), 50, count) == (None, 0)  # not even the skeleton fits
    legacy = "\n".join(f"line {i} of an old summary" for i in range(100))
    cut, omitted = fit_working_memory(legacy, 600, count)
    assert cut is not None
    assert count(cut) <= 600
    assert omitted > 0
    assert "line 0 of an old summary" in cut.text


# ---------------------------------------------------------------------------- trimming


def test_whole_turns_dropped_oldest_first_pending_before_live_wm_kept() -> None:
    pending = turn(1, size=400) + turn(2, size=400)
    live = turn(3, size=400) + turn(4, size=400)
    per_turn = sum(count(m) for m in turn(3, size=400))
    full = assemble(working_memory=SMALL_WM, pending_messages=pending, live_messages=live)
    budget_for_two_turns = full.tokens - 2 * per_turn + 10
    ctx = assemble(
        working_memory=SMALL_WM,
        pending_messages=pending,
        live_messages=live,
        token_budget=window_for(budget_for_two_turns),
        reserve_tokens=0,
    )
    assert ctx.tokens <= ctx.budgets.usable
    assert ctx.messages[0].text.startswith(SUMMARY_HEADER)  # WM ahead of older raw messages
    assert ctx.messages[1:] == live
    assert ctx.dropped == len(pending)


def test_turn_boundaries_never_split_tool_pairs_even_across_user_messages() -> None:
    weird = [
        HumanMessage("start", id="h0"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "a", "args": {}, "id": "p1"},
                {"name": "b", "args": {}, "id": "p2"},
            ],
            id="ai0",
        ),
        ToolMessage("r1 " + "z" * 500, tool_call_id="p1", id="t1"),
        HumanMessage("interjection", id="h1"),  # a user message between parallel results
        ToolMessage("r2 " + "z" * 500, tool_call_id="p2", id="t2"),
        AIMessage("done", id="ai1"),
    ]
    live = [*weird, *turn(5)]
    newest = sum(count(m) for m in turn(5))
    ctx = assemble(
        live_messages=live,
        token_budget=window_for(newest + count(weird[-1]) + 50),
        reserve_tokens=0,
    )
    ids = [m.id for m in ctx.messages]
    assert ids == [m.id for m in turn(5)]
    assert ctx.dropped == len(weird)


def test_newest_turn_kept_and_wm_cut_when_both_do_not_fit() -> None:
    live = turn(1, size=300) + turn(2, size=2_000)
    newest = sum(count(m) for m in turn(2, size=2_000))
    document = _big_wm()
    budget = newest + 700
    ctx = assemble(
        working_memory=document,
        live_messages=live,
        token_budget=window_for(budget),
        reserve_tokens=0,
        archive_memory_tokens=100_000,
    )
    assert ctx.tokens <= ctx.budgets.usable
    assert ctx.messages[-4:] == turn(2, size=2_000)
    assert ctx.messages[0].text.startswith(SUMMARY_HEADER)
    assert count(ctx.messages[0]) <= budget - newest
    assert ctx.dropped == 4


def test_last_resort_truncates_tool_output_of_the_newest_turn_keeping_the_user_message() -> None:
    huge = "HEAD " + "data " * 20_000 + " TAIL"
    live = [
        *turn(1),
        HumanMessage("summarise the log", id="hq"),
        AIMessage("", tool_calls=[{"name": "cat", "args": {"f": "log"}, "id": "k"}], id="ak"),
        ToolMessage(huge, tool_call_id="k", id="tk"),
        AIMessage("reading", id="ar"),
    ]
    ctx = assemble(
        working_memory=SMALL_WM, live_messages=live, token_budget=5_000, reserve_tokens=0
    )
    assert ctx.tokens <= ctx.budgets.usable
    assert [m.id for m in ctx.messages] == ["hq", "ak", "tk", "ar"]  # no WM left, no old turn
    tool = ctx.messages[2]
    assert "characters truncated to fit the context window …]" in tool.text
    assert tool.text.startswith("HEAD")
    assert tool.text.endswith("TAIL")
    assert ctx.tokens > ctx.budgets.usable - 100  # cut no more than needed
    assert live[-2].text == huge  # the caller's message is untouched


def test_user_message_larger_than_the_budget_is_still_sent_over_budget() -> None:
    giant = HumanMessage("please read: " + "w" * 10_000, id="g")
    ctx = assemble(live_messages=[*turn(1), giant], token_budget=2_000, reserve_tokens=0)
    assert ctx.messages == [giant]
    assert ctx.tokens > ctx.budgets.usable  # documented last resort: never drop the request


def test_conversation_without_user_message_is_one_protected_turn() -> None:
    live = [AIMessage("hello " * 50), AIMessage("again")]
    ctx = assemble(live_messages=live, token_budget=100, reserve_tokens=0)
    assert ctx.messages == live


# ---------------------------------------------------------------------------- properties


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """Random (pending, live) with tool rounds and parallel calls; the split between them is
    tool-pair safe, as commit makes it."""
    messages: list[BaseMessage] = []
    ids = iter(range(10_000))

    def text() -> str:
        return "w" * draw(st.integers(0, 150))

    safe_splits = [0]
    for _ in range(draw(st.integers(1, 6))):
        messages.append(HumanMessage(text(), id=f"m{next(ids)}"))
        safe_splits.append(len(messages))
        for _ in range(draw(st.integers(0, 3))):
            calls = draw(st.integers(0, 3))
            call_ids = [f"c{next(ids)}" for _ in range(calls)]
            messages.append(
                AIMessage(
                    text(),
                    tool_calls=[
                        {"name": "t", "args": {"k": i}, "id": c} for i, c in enumerate(call_ids)
                    ],
                    id=f"m{next(ids)}",
                )
            )
            order = draw(st.permutations(call_ids))
            messages.extend(ToolMessage(text(), tool_call_id=c, id=f"m{next(ids)}") for c in order)
            safe_splits.append(len(messages))
    split = draw(st.sampled_from(safe_splits))
    return messages[:split], messages[split:]


def _newest_turn(messages: list[BaseMessage]) -> list[BaseMessage]:
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    return messages[last_user:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation=conversations(),
    wm_kind=st.sampled_from(["none", "small", "big"]),
    with_system=st.booleans(),
    token_budget=st.one_of(st.integers(1, 4_000), st.integers(4_000, 60_000)),
    reserve_tokens=st.integers(0, 30_000),
    archive_tokens=st.integers(0, 5_000),
)
def test_assemble_properties(
    conversation: tuple[list[BaseMessage], list[BaseMessage]],
    wm_kind: str,
    with_system: bool,
    token_budget: int,
    reserve_tokens: int,
    archive_tokens: int,
) -> None:
    pending, live = conversation
    everything = [*pending, *live]
    system = SystemMessage("You are helpful.") if with_system else None
    ctx = assemble_context(
        system_message=system,
        working_memory={"none": "", "small": SMALL_WM, "big": _big_wm()}[wm_kind],
        pending_messages=pending,
        live_messages=live,
        token_budget=token_budget,
        reserve_tokens=reserve_tokens,
        archive_memory_tokens=archive_tokens,
        count=count,
        system_addition=ADDITION,
    )
    usable = ctx.budgets.usable
    assert ctx.tokens == sum(count(m) for m in ctx.all_messages)

    summary = [m for m in ctx.messages if m.text.startswith(SUMMARY_HEADER)]
    raw = [m for m in ctx.messages if not m.text.startswith(SUMMARY_HEADER)]
    assert summary in ([], [ctx.messages[0]])
    document = {"none": "", "small": SMALL_WM, "big": _big_wm()}[wm_kind]
    whole = count(HumanMessage(f"{SUMMARY_HEADER}\n\n{document.strip()}")) if document else 0
    system_size = count(ctx.system_message) if ctx.system_message is not None else 0
    available = usable - system_size
    if summary:
        # the WM gets what the raw messages leave, and at least its share of it while the
        # newest turn does not need the room
        assert count(summary[0]) <= max(0, available - sum(count(m) for m in raw))
    # with the addition that comes with a shown summary (without a summary it is left out)
    addition = SystemMessage(ADDITION + ("\n\nYou are helpful." if with_system else ""))
    if document and whole + sum(count(m) for m in everything) <= usable - count(addition):
        assert summary
        assert summary[0].text == f"{SUMMARY_HEADER}\n\n{document.strip()}"

    # order preserved: the kept messages are a suffix of the input, same ids in the same order
    ids = [m.id for m in everything]
    kept_ids = [m.id for m in raw]
    assert kept_ids == ids[len(ids) - len(kept_ids) :]
    assert ctx.dropped == len(everything) - len(raw)

    # the newest user message and every step after it are always there
    newest = _newest_turn(everything)
    assert kept_ids[-len(newest) :] == [m.id for m in newest]

    # tool pairs are never split
    calls = {c["id"] for m in raw if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in raw if isinstance(m, ToolMessage)}
    assert calls == results

    # the budget holds whenever the system message and the newest turn alone fit
    system_size = count(ctx.system_message) if ctx.system_message is not None else 0
    if system_size + sum(count(m) for m in newest) <= usable:
        assert ctx.tokens <= usable
        assert all(
            a is b for a, b in zip(raw, everything[len(everything) - len(raw) :], strict=True)
        )
    elif ctx.tokens > usable:
        # over budget only as the documented last resort: just the newest turn, nothing else
        assert kept_ids == [m.id for m in newest]
        assert not summary


def test_default_system_addition_is_the_shipped_system_prompt() -> None:
    from wm_langgraph.writer.prompts import load_prompt

    ctx = assemble(
        system_message=SystemMessage("Own prompt."),
        working_memory=SMALL_WM,
        live_messages=turn(1),
        system_addition=None,
    )
    assert ctx.system_message is not None
    assert ctx.system_message.content == f"{load_prompt('system').strip()}\n\nOwn prompt."
    assert SUMMARY_HEADER in load_prompt("system")


def test_last_resort_cuts_the_largest_parallel_tool_outputs_first() -> None:
    small = ToolMessage("small result", tool_call_id="s", id="ts")
    live = [
        HumanMessage("compare the logs", id="hq"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "cat", "args": {"f": "a"}, "id": "a"},
                {"name": "cat", "args": {"f": "b"}, "id": "b"},
                {"name": "cat", "args": {"f": "s"}, "id": "s"},
            ],
            id="ak",
        ),
        ToolMessage("A" * 30_000, tool_call_id="a", id="ta"),
        ToolMessage("B" * 9_000, tool_call_id="b", id="tb"),
        small,
    ]
    ctx = assemble(live_messages=live, token_budget=window_for(12_000), reserve_tokens=0)
    assert ctx.tokens <= ctx.budgets.usable
    assert ctx.tokens > ctx.budgets.usable - 100
    by_id = {m.id: m for m in ctx.messages}
    assert by_id["ts"] is small
    assert "characters truncated" in by_id["ta"].text
    assert "characters truncated" in by_id["tb"].text
    assert abs(count(by_id["ta"]) - count(by_id["tb"])) < 100  # one common cap
