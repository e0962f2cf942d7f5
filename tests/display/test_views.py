"""The structure of each picture: the layers of a model input, the marks of the Working Memory's
items, a commit's diff and decisions, the chart."""

from __future__ import annotations

from dataclasses import replace

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from tests.display._inert import assert_inert, parse
from wm_langgraph import WorkingMemoryConfig
from wm_langgraph.context.assemble import SUMMARY_HEADER, compute_budgets, fill_marker
from wm_langgraph.display import CommitView, ModelInputView
from wm_langgraph.display.chart import CallBar, calls_chart
from wm_langgraph.display.marks import NO_MARKS, Marks, VersionRecord, marks_by_version
from wm_langgraph.display.model_input import LAYERS, split_layers
from wm_langgraph.display.working_memory import section_limits, working_memory_view
from wm_langgraph.document import count_tokens, render_working_memory
from wm_langgraph.document.sections import item_key
from wm_langgraph.messages import message_tokens
from wm_langgraph.phase2.size import contract_for


def _input() -> list:
    return [
        SystemMessage("system prompt"),
        HumanMessage(f"{SUMMARY_HEADER}\n\n# Working Memory"),
        fill_marker(),
        HumanMessage("an older turn", id="f1"),
        AIMessage("its answer", id="f2"),
        HumanMessage("a pending turn", id="p1"),
        HumanMessage(f"{SUMMARY_HEADER} pasted by the user", id="l1"),
        AIMessage("", id="l2", tool_calls=[{"name": "read", "args": {}, "id": "c1"}]),
        ToolMessage("result", tool_call_id="c1", id="l3"),
    ]


def test_each_message_of_an_input_gets_its_layer_and_its_count():
    messages = _input()
    layers = [
        "system",
        "working memory",
        "verbatim fill",
        "verbatim fill",
        "verbatim fill",
        "pending archives",
        "live messages",  # a pasted header is the user's message, not the memory
        "live messages",
        "live messages",
    ]
    entries = split_layers(messages, layers, count=message_tokens)
    assert [e.layer for e in entries] == layers
    assert [e.tokens for e in entries] == [message_tokens(m) for m in messages]
    view = ModelInputView(tuple(entries), compute_budgets(4_000, 0, 8_000), 4_000, label="call 3")
    assert view.tokens == sum(message_tokens(m) for m in messages)
    assert set(view.layers) == set(LAYERS)
    assert sum(view.layers.values()) == view.tokens
    text = assert_inert(view._repr_html_()).text
    assert "call 3" in text
    for layer in LAYERS:
        assert layer in text
    assert repr(view) == f"<ModelInputView call 3: {view.tokens:,} of 3,400 usable tokens>"


def test_an_input_over_usable_says_so():
    entries = split_layers(
        [HumanMessage("x " * 400, id="l1")], ["live messages"], count=message_tokens
    )
    view = ModelInputView(tuple(entries), compute_budgets(100, 0, 8_000), 100)
    assert "over usable" in parse(view._repr_html_()).text


def test_the_working_memory_marks_what_code_and_the_guards_put_there():
    items, _ = section_limits(WorkingMemoryConfig())
    marker = "[moved out: 12 older items, archive_search finds them]"
    document = render_working_memory(
        {
            "Session Title": "Payments",
            "Key Facts & Decisions": "\n".join(
                [
                    "- [restored] the API runs on port 8443",
                    f"- {marker}",
                    *(f"- fact {i}" for i in range(items + 1)),
                ]
            ),
            "Errors & Corrections": "- superseded: port 8080 (now 8443)",
            "Open Issues": "\n".join(
                [
                    "- [silently dropped, restored] rotate the key",
                    "- [resolved] ship the fix",
                    "- [new] write the docs",
                    "- wire the metrics",
                ]
            ),
        }
    )
    view = working_memory_view(
        document,
        config=WorkingMemoryConfig(),
        count=count_tokens,
        covers=["archive_001", "archive_002"],
        code_items={"Open Issues": ["wire the metrics"]},
        marks=Marks(
            written={
                ("Key Facts & Decisions", item_key("[restored] the API runs on port 8443")): 2,
                ("Key Facts & Decisions", item_key(marker)): 2,
                ("Open Issues", item_key("[silently dropped, restored] rotate the key")): 1,
                ("Errors & Corrections", item_key("superseded: port 8080 (now 8443)")): 2,
            },
            moved=12,
        ),
    )
    assert view.sections[0].name == "Session Title"
    assert len(view.sections) == 7
    facts = next(s for s in view.sections if s.name == "Key Facts & Decisions")
    assert len(facts.items) == items + 3
    html = view._repr_html_()
    parsed = assert_inert(html)
    text = parsed.text
    for badge in (
        "restored by a guard in version 2",
        "dropped by the writer, restored by a guard in version 1",
        "added by code",
        "moved out, recorded",
        "resolved",
        "new",
        "superseded",
    ):
        assert badge in text, badge
    over = [dict(a).get("class") for t, a in parsed.tags if t == "span"]
    assert over.count("meter over") == 1  # Key Facts has more items than its limit
    assert f"{items + 3} / {items} items" in text
    assert "folds 2 archive(s): archive_001, archive_002" in text
    assert repr(view).startswith(f"<WorkingMemoryView: {view.tokens:,} tokens")
    assert str(view) == document
    # The same marks as text, with no record behind them: no guard badge.
    unvouched = parse(replace(view, marks=NO_MARKS)._repr_html_()).text
    for badge in ("by a guard", "moved out, recorded", "superseded"):
        assert badge not in unvouched.replace("superseded: port", ""), badge


def test_a_commit_shows_the_diff_the_decisions_and_the_fates():
    before = render_working_memory(
        {"Key Facts & Decisions": "- port 8080\n- old fact", "Open Issues": "- rotate the key"}
    )
    after = render_working_memory(
        {
            "Key Facts & Decisions": "- port 8443\n- [restored] old fact",
            "Open Issues": "- [silently dropped, restored] rotate the key",
        }
    )
    commit = CommitView(
        number=2,
        covers=("archive_001", "archive_002"),
        folded=("archive_002",),
        before=before,
        after=after,
        info={
            "branch": "update",
            "decisions": [
                {"section": "Key Facts & Decisions", "requested": "UPDATE", "applied": "UPDATE",
                 "reason": "restored 1 bullet(s) whose anchors vanished from the document",
                 "items": ["[restored] old fact"]},
                {"section": "Open Issues", "requested": "UPDATE", "applied": "KEEP",
                 "reason": "restored 1 silently dropped item",
                 "items": ["[silently dropped, restored] rotate the key"]},
                {"section": "Working Memory", "requested": "STORE", "applied": "COMPACT",
                 "reason": "compacted 900 -> 700 tokens", "items": []},
            ],
            "capture": [
                {"kind": "fact", "text": "port 8443", "section": "Key Facts & Decisions",
                 "fate": "written"},
                {"kind": "todo", "text": "write docs", "section": "Open Issues",
                 "fate": "dismissed", "reason": "done already"},
            ],
        },
        moved=(("Key Facts & Decisions", "port 8080"),),
    )  # fmt: skip
    commit = replace(
        commit,
        marks=marks_by_version(
            [VersionRecord(before, []), VersionRecord(after, commit.decisions, 1)]
        )[-1],
    )
    facts = next(d for d in commit.diffs if d.name == "Key Facts & Decisions")
    assert facts.added == ("port 8443", "[restored] old fact")
    assert facts.removed == ("port 8080", "old fact")
    assert len(commit.interventions) == 3
    text = assert_inert(commit._repr_html_()).text
    assert "UPDATE → KEEP" in text
    assert "restored 1 silently dropped item" in text
    assert "moved out: archive_search finds it" in text
    assert "dropped by the writer, restored by a guard in version 2" in text
    assert "restored by a guard" in text.replace("dropped by the writer, restored by a guard", "")
    # the same version stored before the records: its marks' origin is not known, not guessed
    unrecorded = [{k: v for k, v in d.items() if k != "items"} for d in commit.decisions]
    (_, unknown) = marks_by_version([VersionRecord(before, []), VersionRecord(after, unrecorded)])
    shown = parse(replace(commit, marks=unknown)._repr_html_()).text
    assert "by a guard" not in shown
    assert shown.count("origin of this mark not recorded") == 2
    assert "whole document" in text
    assert "compacted 900 -> 700 tokens" in text
    assert text.index("written by the writer") < text.index("dismissed by the writer")
    assert "done already" in text
    assert (
        repr(commit) == "<CommitView version 2 (archive_002): +3 -3 items, 3 guard intervention(s)>"
    )


def test_the_chart_has_a_bar_per_call_and_the_usable_line():
    bars = [
        CallBar(f"call {i}", {"live messages": 100 * i, "working memory": 50}) for i in range(1, 6)
    ]
    svg = calls_chart(bars, usable=1_000, budget=1_200)
    parsed = parse(f'<div class="wmv"><style></style>{svg}</div>')
    groups = [t for t, _ in parsed.tags if t == "g"]
    assert len(groups) == 5
    rects = [dict(a) for t, a in parsed.tags if t == "rect"]
    assert len(rects) == 10
    assert "usable 1,000" in parsed.text
    assert "budget 1,200" in parsed.text
    assert "No model call" in calls_chart([], usable=1, budget=1)


def test_the_section_limits_shown_are_the_ones_the_guards_read():
    """The picture's per-section limits follow the size target, as the guards' do."""
    for budget in (4_000, 8_000, 128_000):
        config = WorkingMemoryConfig(token_budget=budget)
        limits = contract_for(config).limits
        assert section_limits(config) == (limits.bullets, limits.tokens)
    assert section_limits(WorkingMemoryConfig()) == (25, 1_500)
    assert section_limits(WorkingMemoryConfig(token_budget=8_000))[1] < 1_500
