"""Guards that are exact — measured failures and the owner's decisions, at merge level.

Each test of a measured failure reproduces a case seen on main (it failed there); the decision
tests pin behaviour §4.6 (open issues leave only by resolution; durable sections).
"""

from __future__ import annotations

from wm_langgraph.document import merge_working_memory, parse_working_memory, render_working_memory
from wm_langgraph.document.guards import DROPPED_MARKER, RESTORED_MARKER
from wm_langgraph.document.sections import section_items

OPEN = "Open Issues"
FACTS = "Key Facts & Decisions"
STATE = "Current State"
ERRORS = "Errors & Corrections"


def _doc(**sections: str) -> str:
    names = {
        "title": "Session Title",
        "state": STATE,
        "goals": "Task & Goals",
        "facts": FACTS,
        "files": "Files & Context",
        "errors": ERRORS,
        "issues": OPEN,
    }
    return render_working_memory({names[k]: v for k, v in sections.items()})


def _section(text: str, name: str) -> str:
    return parse_working_memory(text)[name]


def _update(section: str, content: str) -> dict[str, dict[str, str]]:
    return {section: {"op": "UPDATE", "content": content}}


# --- whole-item matching for open issues -------------------------------------------------------


def test_todo_1_is_not_kept_by_todo_10():
    old = _doc(issues="- TODO 1\n- TODO 10")
    text = merge_working_memory(old, _update(OPEN, "- TODO 10")).text
    items = section_items(_section(text, OPEN))
    assert f"{DROPPED_MARKER} TODO 1" in items
    assert "TODO 10" in items


def test_an_item_inside_a_longer_word_is_not_kept():
    old = _doc(issues="- fix login\n- Fact 1 unclear")
    new = "- prefix login handling\n- Fact 12 unclear"
    items = section_items(_section(merge_working_memory(old, _update(OPEN, new)).text, OPEN))
    assert f"{DROPPED_MARKER} fix login" in items
    assert f"{DROPPED_MARKER} Fact 1 unclear" in items


def test_an_annotated_or_resolved_item_is_still_the_item():
    old = _doc(issues="- Who reviews the PR?\n- TODO 1\n- Budget for Q3 unclear")
    new = (
        "- **Who reviews the PR?** (asked Ana)\n"
        "- [resolved] TODO 1: done in #42\n"
        "- [new] Budget for Q3 unclear — finance to confirm"
    )
    result = merge_working_memory(old, _update(OPEN, new))
    assert _section(result.text, OPEN) == new
    assert next(d for d in result.decisions if d.section == OPEN).reason == ""


# --- decision: open issues leave only by resolution --------------------------------------------


def test_a_dropped_issue_is_restored_every_time_with_one_marker():
    text = _doc(issues="- deploy blocked by TLS cert\n- TODO 2")
    for _ in range(4):
        text = merge_working_memory(text, _update(OPEN, "- TODO 2")).text
        items = section_items(_section(text, OPEN))
        assert items == ["TODO 2", f"{DROPPED_MARKER} deploy blocked by TLS cert"]


def test_a_resolved_issue_may_leave_on_a_later_update():
    text = _doc(issues="- deploy blocked by TLS cert\n- TODO 2")
    text = merge_working_memory(
        text, _update(OPEN, "- [resolved] deploy blocked by TLS cert\n- TODO 2")
    ).text
    assert "[resolved] deploy blocked by TLS cert" in _section(text, OPEN)
    result = merge_working_memory(text, _update(OPEN, "- TODO 2"))
    assert section_items(_section(result.text, OPEN)) == ["TODO 2"]
    assert next(d for d in result.decisions if d.section == OPEN).applied == "UPDATE"


def test_a_restored_then_resolved_issue_may_leave():
    text = _doc(issues="- deploy blocked by TLS cert\n- TODO 2")
    text = merge_working_memory(text, _update(OPEN, "- TODO 2")).text  # restored, marked
    text = merge_working_memory(
        text,
        _update(OPEN, f"- TODO 2\n- [resolved] {DROPPED_MARKER} deploy blocked by TLS cert"),
    ).text
    text = merge_working_memory(text, _update(OPEN, "- TODO 2")).text
    assert section_items(_section(text, OPEN)) == ["TODO 2"]


def test_an_issue_moved_to_errors_as_a_fix_may_leave():
    old = _doc(issues="- deploy blocked by TLS cert\n- TODO 2", errors="- e1")
    ops = {
        **_update(OPEN, "- TODO 2"),
        ERRORS: {
            "op": "APPEND",
            "items": ["deploy blocked by TLS cert — fixed: renewed the certificate"],
        },
    }
    text = merge_working_memory(old, ops).text
    assert section_items(_section(text, OPEN)) == ["TODO 2"]
    assert "deploy blocked by TLS cert" in _section(text, ERRORS)


def test_an_issue_mentioned_only_in_current_state_is_restored():
    old = _doc(issues="- deploy blocked by TLS cert\n- TODO 2")
    ops = {**_update(OPEN, "- TODO 2"), **_update(STATE, "deploy blocked by TLS cert.")}
    assert DROPPED_MARKER in _section(merge_working_memory(old, ops).text, OPEN)


def test_a_model_cannot_resolve_an_issue_by_writing_the_marker_on_another_item():
    old = _doc(issues="- deploy blocked by TLS cert\n- TODO 2")
    text = merge_working_memory(old, _update(OPEN, "- [resolved] deploy\n- TODO 2")).text
    assert f"{DROPPED_MARKER} deploy blocked by TLS cert" in section_items(_section(text, OPEN))


# --- durable sections (owner decision, behaviour §4.6) -----------------------------------------


FACT_LINES = "- FACT-017 ships first\n- Redis 7 for the cache\n- port 5432 for Postgres"


def test_an_anchor_kept_only_in_current_state_is_restored():
    old = _doc(state="Working on it.", facts=FACT_LINES)
    ops = {
        **_update(FACTS, "- Redis 7 for the cache\n- port 5432 for Postgres"),
        **_update(STATE, "Checking FACT-017 next."),
    }
    text = merge_working_memory(old, ops).text
    facts = _section(text, FACTS)
    assert f"{RESTORED_MARKER} FACT-017 ships first" in section_items(facts)
    # round 2 rewrites Current State without it: the fact is still in Key Facts
    text = merge_working_memory(text, _update(STATE, "Something else entirely.")).text
    assert "FACT-017" in _section(text, FACTS)


def test_an_anchor_kept_in_a_durable_section_counts_as_kept():
    old = _doc(facts=FACT_LINES, errors="- e1")
    ops = {
        **_update(FACTS, "- Redis 7 for the cache\n- port 5432 for Postgres"),
        ERRORS: {"op": "APPEND", "items": ["superseded: FACT-017 ships first"]},
    }
    text = merge_working_memory(old, ops).text
    assert RESTORED_MARKER not in _section(text, FACTS)


def test_current_state_does_not_excuse_a_layer2_anchor_loss():
    # Three of four bullets' anchors survive only in Current State: < 70% in durable sections.
    old = _doc(facts="- FACT-017 Ana\n- FACT-018 Bob\n- FACT-019 Eve\n- FACT-020 Joe")
    ops = {
        **_update(FACTS, "- FACT-020 Joe"),
        **_update(STATE, "FACT-017 Ana, FACT-018 Bob, FACT-019 Eve pending."),
    }
    result = merge_working_memory(old, ops)
    decision = next(d for d in result.decisions if d.section == FACTS)
    assert decision.applied != "UPDATE"
    assert all(f"FACT-0{n}" in _section(result.text, FACTS) for n in (17, 18, 19, 20))


# --- the title guard: heading-like titles, grounding (behaviour §4.1) --------------------------


def test_a_heading_like_old_title_is_judged_by_its_words():
    for heading in ("### Billing service migration", "# Billing service migration"):
        old = _doc(title=heading)
        result = merge_working_memory(old, _update("Session Title", "HACKED"))
        assert "Billing service migration" in _section(result.text, "Session Title")
        assert next(d for d in result.decisions if d.section == "Session Title").applied == "KEEP"
        ok = merge_working_memory(old, _update("Session Title", "Billing migration: cut-over"))
        assert _section(ok.text, "Session Title") == "Billing migration: cut-over"


def test_the_title_refuses_append():
    old = _doc(title="Billing service migration")
    ops = {"Session Title": {"op": "APPEND", "items": ["Tests passed.", "More notes"]}}
    result = merge_working_memory(old, ops)
    assert _section(result.text, "Session Title") == "Billing service migration"
    decision = next(d for d in result.decisions if d.section == "Session Title")
    assert (decision.requested, decision.applied) == ("APPEND", "KEEP")
    assert "APPEND" in decision.reason


def test_an_empty_title_takes_the_first_appended_line_as_its_title():
    ops = {"Session Title": {"op": "APPEND", "items": ["Billing service migration", "junk"]}}
    text = merge_working_memory(_doc(state="x"), ops).text
    assert _section(text, "Session Title") == "Billing service migration"


def test_a_title_must_share_words_with_the_conversation():
    conversation = "[user]\nPlease help me add retries to the webhook sender in billing.py"
    leaked = _update("Session Title", "Migrating the billing service from MySQL to Postgres")
    grounded = _update("Session Title", "Webhook sender retries")
    # an empty title: a title sharing a word ("billing") with the conversation is accepted,
    # one that shares none is refused
    result = merge_working_memory(_doc(state="x"), leaked, conversation=conversation)
    assert _section(result.text, "Session Title").startswith("Migrating the billing")
    invented = _update("Session Title", "Migrating the payments service from MySQL to Postgres")
    result = merge_working_memory(_doc(state="x"), invented, conversation=conversation)
    assert _section(result.text, "Session Title") == ""
    decision = next(d for d in result.decisions if d.section == "Session Title")
    assert decision.applied == "KEEP"
    assert "conversation" in decision.reason
    text = merge_working_memory(_doc(state="x"), grounded, conversation=conversation).text
    assert _section(text, "Session Title") == "Webhook sender retries"


def test_a_stable_title_refinement_is_grounded_by_the_old_document():
    old = _doc(title="Billing service migration")
    ops = _update("Session Title", "Billing service migration to Postgres")
    text = merge_working_memory(old, ops, conversation="[user]\nok, next step").text
    assert _section(text, "Session Title") == "Billing service migration to Postgres"


def test_without_a_conversation_the_title_guard_is_as_before():
    ops = _update("Session Title", "Anything at all")
    assert _section(merge_working_memory(_doc(state="x"), ops).text, "Session Title") == (
        "Anything at all"
    )


# --- header markers and placeholder items (behaviour §2.5) -------------------------------------


def test_items_starting_with_a_header_marker_are_not_stored_as_such():
    old = _doc(errors="- e1")
    ops = {
        ERRORS: {"op": "APPEND", "items": ["## Tests passed.", "### Lint clean", "  ## spaced"]},
        "Files & Context": {"op": "UPDATE", "content": "- ## src/app.py: entry point"},
    }
    text = merge_working_memory(old, ops).text
    assert "- ##" not in text
    assert section_items(_section(text, ERRORS)) == ["e1", "Tests passed.", "Lint clean", "spaced"]
    assert section_items(_section(text, "Files & Context")) == ["src/app.py: entry point"]


def test_placeholder_items_never_become_items():
    placeholders = ["None", "N/A", "-", "**None**", "(none)", "n/a.", "无", "暂无", "_None_"]
    ops = {
        OPEN: {"op": "APPEND", "items": placeholders},
        ERRORS: {"op": "UPDATE", "content": "\n".join(f"- {p}" for p in placeholders)},
        FACTS: {"op": "APPEND", "items": ["None", "Redis 7 for the cache"]},
    }
    text = merge_working_memory(_doc(state="x"), ops).text
    assert _section(text, OPEN) == ""
    assert _section(text, ERRORS) == ""
    assert section_items(_section(text, FACTS)) == ["Redis 7 for the cache"]


def test_a_placeholder_update_of_a_non_empty_section_keeps_it():
    old = _doc(issues="- TODO 2")
    text = merge_working_memory(old, _update(OPEN, "- **None**")).text
    assert section_items(_section(text, OPEN)) == ["TODO 2"]


def test_copied_template_lines_never_become_items():
    ops = {
        OPEN: {
            "op": "APPEND",
            "items": [
                "Open Issues",
                "**Open Issues**:",
                "[item]",
                "<unresolved question>",
                "TODO 3",
            ],
        }
    }
    text = merge_working_memory(_doc(state="x"), ops).text
    assert section_items(_section(text, OPEN)) == ["TODO 3"]


# --- a salvaged (truncated) op is judged like any other ----------------------------------------


def test_a_salvaged_partial_update_is_judged_by_the_guards():
    """phase2 salvages the complete lines of a cut-off UPDATE (core/_arguments.py); the guards
    then judge that op like any other: what the partial content lacks comes back."""
    old = _doc(issues="- TODO 1\n- TODO 2\n- TODO 3", facts=FACT_LINES)
    salvaged = {
        **_update(OPEN, "- TODO 1\n- TODO 2"),  # "- TODO 3" was cut off
        **_update(FACTS, "- FACT-017 ships first"),  # the rest was cut off
        **_update(STATE, "Partial text"),
    }
    text = merge_working_memory(old, salvaged).text
    assert f"{DROPPED_MARKER} TODO 3" in section_items(_section(text, OPEN))
    for anchor in ("FACT-017", "Redis 7", "port 5432"):
        assert anchor in _section(text, FACTS)
    assert _section(text, STATE) == "Partial text"


def test_a_bullets_anchors_do_not_depend_on_unicode_line_breaks():
    """Found by the lossy-rewrite property: section_items splits at U+0085 (as splitlines
    does), so "$\\x850B" was "0 b" in the section but "$0" in the document: a KEEP looked like
    a lost anchor."""
    from wm_langgraph.document.text import extract_anchors, missing_anchors

    bullet = "$\x850B"
    assert extract_anchors(bullet) == extract_anchors("$\n0B")
    old = _doc(facts=f"- Alice\n- Alice\n- {bullet}")
    text = merge_working_memory(old, _update(FACTS, "- Alice\n- Alice")).text
    facts = "\n".join(section_items(parse_working_memory(old)[FACTS]))
    assert missing_anchors(extract_anchors(facts, include_markers=False), text) == set()
