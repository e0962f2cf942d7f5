"""Every display is inert with hostile text: script tags, a ``</style>`` that would end the
stylesheet, quotes that would break out of an attribute, terminal escape sequences, NUL and
other controls, bidi overrides, lone surrogates, huge texts. Each shows the text as text."""

from __future__ import annotations

import html as html_module

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.display._inert import HOSTILE, assert_inert, parse
from tests.display._sessions import run_session
from wm_langgraph import WorkingMemoryConfig
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.display import ArchiveView, CommitView, ModelInputView
from wm_langgraph.display.markup import STYLE, fragment, page, text
from wm_langgraph.display.model_input import InputEntry
from wm_langgraph.display.working_memory import working_memory_view
from wm_langgraph.document import count_tokens, render_working_memory
from wm_langgraph.storage.archives import ArchiveRecord

PAYLOAD = " | ".join(HOSTILE)
"""Every hostile text in one."""


def _visible(parsed_text: str) -> None:
    """The hostile texts are shown, as text, with their controls as visible escapes."""
    assert '" onmouseover="alert(1)" x="' in parsed_text
    assert "</style><script>alert(1)</script><style>" in parsed_text
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in parsed_text
    assert "nul\\x00byte" in parsed_text
    assert "\\u202eexe.txt" in parsed_text
    assert "&lt;already escaped&gt;" in parsed_text  # shown as typed, not decoded


def test_a_whole_session_of_hostile_text_gives_an_inert_report_and_inert_parts():
    turns = [f"note {i}: {PAYLOAD}" for i in range(8)]
    session = run_session(
        turns,
        tool_output=f"page: {PAYLOAD}",
        search=PAYLOAD,
        thread_id='t"<script>',
    )
    report = session.memory.report(session.config)
    assert report.commits
    assert report.calls
    assert report.searches
    for markup in (report.html, report._repr_html_()):
        parsed = assert_inert(markup)
        _visible(parsed.text)
    parts = [report.working_memory, *report.commits, *report.archives, *report.calls]
    for part in parts:
        assert_inert(part._repr_html_())
    archive_text = parse(report.archives[0]._repr_html_()).text
    _visible(archive_text)
    assert 't"<script>' in parse(report.html).text  # the thread id, as text


def _hostile_commit() -> CommitView:
    before = render_working_memory({"Open Issues": f"- keep {PAYLOAD}"})
    after = render_working_memory(
        {"Key Facts & Decisions": f"- [restored] {PAYLOAD}", "Open Issues": f"- new {PAYLOAD}"}
    )
    decision = {"section": f"Open Issues{PAYLOAD}", "requested": PAYLOAD, "applied": "KEEP"}
    return CommitView(
        number=2,
        covers=(PAYLOAD, "archive_002"),
        folded=(PAYLOAD,),
        before=before,
        after=after,
        info={
            "branch": PAYLOAD,
            "fallback": PAYLOAD,
            "decisions": [
                {**decision, "reason": PAYLOAD},
                {"section": "Open Issues", "requested": "UPDATE", "applied": PAYLOAD},
            ],
            "capture": [
                {"kind": PAYLOAD, "text": PAYLOAD, "section": PAYLOAD, "fate": PAYLOAD},
                {
                    "kind": "fact",
                    "text": PAYLOAD,
                    "section": "x",
                    "fate": "skipped",
                    "reason": PAYLOAD,
                },
            ],
            "artifact_trail": [PAYLOAD],
            "error_trail": [PAYLOAD],
            "code_items": {"Open Issues": [f"new {PAYLOAD}"], PAYLOAD: PAYLOAD},
        },
        moved=((PAYLOAD, f"keep {PAYLOAD}"),),
        created_at=PAYLOAD,
    )


def test_a_commit_with_hostile_decisions_fates_trails_and_items_is_inert():
    parsed = assert_inert(_hostile_commit()._repr_html_())
    _visible(parsed.text)


def test_an_archive_with_hostile_messages_abstract_and_error_is_inert():
    messages = [
        HumanMessage(PAYLOAD, id="h1"),
        AIMessage(
            PAYLOAD,
            id="a1",
            tool_calls=[{"name": PAYLOAD, "args": {PAYLOAD: PAYLOAD}, "id": "c1"}],
        ),
        ToolMessage(PAYLOAD, tool_call_id="c1", name=PAYLOAD, id="t1"),
    ]
    record = ArchiveRecord(
        id=PAYLOAD,
        seq=1,
        status="failed",
        messages=messages,
        message_count=3,
        token_count=10,
        abstract=PAYLOAD,
        metadata={"error": PAYLOAD, "deferred": True},
        created_at=PAYLOAD,
    )
    parsed = assert_inert(ArchiveView(record)._repr_html_())
    _visible(parsed.text)


def test_a_working_memory_and_a_model_input_with_hostile_text_are_inert():
    document = render_working_memory(
        {"Session Title": PAYLOAD, "Open Issues": f"- [silently dropped, restored] {PAYLOAD}"}
    )
    view = working_memory_view(
        document,
        config=WorkingMemoryConfig(),
        count=count_tokens,
        covers=[PAYLOAD],
        code_items={"Open Issues": [PAYLOAD]},
        title=PAYLOAD,
    )
    _visible(assert_inert(view._repr_html_()).text)
    entries = tuple(
        InputEntry(layer, HumanMessage(PAYLOAD, id=f"m{i}"), 7)
        for i, layer in enumerate(("working memory", "live messages"))
    )
    model_input = ModelInputView(
        entries, compute_budgets(8_000, 0, 8_000), 8_000, label=PAYLOAD, note=PAYLOAD
    )
    _visible(assert_inert(model_input._repr_html_()).text)


def test_a_legacy_summary_is_shown_escaped():
    view = working_memory_view(PAYLOAD, config=WorkingMemoryConfig(), count=count_tokens)
    _visible(assert_inert(view._repr_html_()).text)


def test_huge_texts_are_cut_with_a_visible_note_and_the_report_stays_small():
    huge = "word " * 40_000  # 200,000 characters
    session = run_session([f"first {huge}", "second", "third", "fourth", "fifth"])
    report = session.memory.report(session.config)
    markup = report.html
    assert len(markup) < 150_000
    assert "more characters not shown" in parse(markup).text
    for part in (*report.archives, *report.calls):
        assert len(part._repr_html_()) < 100_000


def test_a_view_of_many_messages_shows_a_bounded_number():
    messages = [HumanMessage(f"message {i}", id=f"m{i}") for i in range(1_000)]
    record = ArchiveRecord(
        id="archive_001", seq=1, status="done", messages=messages, message_count=1_000
    )
    shown = ArchiveView(record)._repr_html_()
    assert "message 199" in shown
    assert "message 200" not in shown
    assert "800 more messages not shown" in parse(shown).text


@given(st.text(), st.integers(min_value=0, max_value=50))
def test_text_is_inert_for_any_string(value: str, limit: int):
    shown = text(value, limit)
    assert not set(shown) & set("<>\"'")
    back = html_module.unescape(shown)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in back)
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in back)
    if len(value) <= limit and value.isprintable():
        assert back == value


def test_fragment_and_page_wrap_one_scoped_stylesheet():
    body = f"<p>{text(PAYLOAD)}</p>"
    assert_inert(fragment(body))
    doc = page(PAYLOAD, body)
    assert_inert(doc)
    assert "Content-Security-Policy" in doc
    assert "default-src 'none'" in doc
    assert "<title>" + text(PAYLOAD, 200) + "</title>" in doc


def test_every_rule_of_the_stylesheet_is_scoped_to_the_display():
    selectors = [
        selector.strip()
        for rule in STYLE.split("}")
        if rule.strip()
        for selector in rule.split("{")[0].split(",")
    ]
    assert selectors
    assert all(s.startswith(".wmv") for s in selectors), selectors
