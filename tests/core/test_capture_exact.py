"""Exact both ways (issue: capture): a consolidation that keeps every anchor is accepted as is,
a value the conversation never held is not salvaged, ``[resolved]`` needs the conversation,
the title refuses invisible characters and is bounded, and a genuine restore marker that a
writer folded and unfolded again is not taken for a forged one.

Each case failed on main before the change that fixed it.
"""

from __future__ import annotations

from wm_langgraph.document import merge_working_memory, parse_working_memory, render_working_memory
from wm_langgraph.document.guards import DROPPED_MARKER, RESTORED_MARKER
from wm_langgraph.document.guards.title import MAX_TITLE_CHARS
from wm_langgraph.document.sections import section_items

OPEN = "Open Issues"
FACTS = "Key Facts & Decisions"
TITLE = "Session Title"
ERRORS = "Errors & Corrections"


def _doc(**sections: str) -> str:
    names = {"title": TITLE, "facts": FACTS, "issues": OPEN, "errors": ERRORS}
    return render_working_memory({names[k]: v for k, v in sections.items()})


def _section(text: str, name: str) -> str:
    return parse_working_memory(text)[name]


def _update(section: str, content: str) -> dict[str, dict[str, str]]:
    return {section: {"op": "UPDATE", "content": content}}


def _decision(result: object, section: str) -> str:
    return next(d.reason for d in result.decisions if d.section == section)  # type: ignore[attr-defined]


# --- a consolidation that keeps every anchor -----------------------------------------------------


def test_a_consolidation_whose_subject_heads_the_bullet_is_not_restored():
    old = _doc(
        facts=(
            "- Priya picked linocut over etching for the workshop\n"
            "- Tomasz has 3 cats, Miso and Pepper and Soba"
        )
    )
    new = (
        "- Priya booked the print studio on 2031-06-02; picked linocut over etching for the "
        "workshop\n"
        "- Tomasz moved to Tartu in 2030 for his teaching post; 3 cats, Miso and Pepper and Soba"
    )
    result = merge_working_memory(old, _update(FACTS, new), conversation="Priya Tomasz Tartu")
    body = _section(result.text, FACTS)
    assert RESTORED_MARKER not in body
    assert section_items(body) == section_items(new)


def test_a_subject_left_to_another_bullet_still_restores():
    # the clause without its subject is in a bullet about someone else: not the same fact
    old = _doc(
        facts="- Priya picked linocut over etching\n- Priya lives in Riga\n- Tomasz lives in Tartu"
    )
    new = "- Tomasz lives in Tartu; picked linocut over etching\n- Priya lives in Riga"
    body = _section(merge_working_memory(old, _update(FACTS, new)).text, FACTS)
    assert RESTORED_MARKER in body


# --- a value the conversation never contained ---------------------------------------------------


def test_a_miscopied_value_is_not_salvaged_as_a_fact():
    old = _doc(facts="- Staging DB listens on port 5432\n- Ticket FACT-017 tracks the rollout")
    new = "- Staging DB listens on port 5423\n- Ticket FACT-071 tracks the rollout"
    conversation = "user: please keep the staging notes current; the rollout moves to Friday"
    result = merge_working_memory(old, _update(FACTS, new), conversation=conversation)
    body = _section(result.text, FACTS)
    assert "5423" not in body
    assert "FACT-071" not in body
    assert "5432" in body
    assert "FACT-017" in body
    assert "not in the conversation" in _decision(result, FACTS)


def test_a_value_the_conversation_holds_is_still_salvaged():
    old = _doc(facts="- Staging DB listens on port 5432\n- Ticket FACT-017 tracks the rollout")
    new = "- Staging DB listens on port 5433 from now on\n- Ticket FACT-099 tracks the hotfix"
    conversation = "user: staging moved to port 5433; the hotfix is FACT-099"
    body = _section(
        merge_working_memory(old, _update(FACTS, new), conversation=conversation).text, FACTS
    )
    assert "5433" in body
    assert "FACT-099" in body


def test_an_accepted_update_does_not_retire_a_value_for_one_never_said():
    old = _doc(
        facts="- Staging DB listens on port 5432\n- Deploy window is Friday 18:00\n"
        "- Owner is Halvard\n- Region eu-north-1"
    )
    new = (
        "- Staging DB listens on port 5423\n- Deploy window is Friday 18:00\n"
        "- Owner is Halvard\n- Region eu-north-1"
    )
    result = merge_working_memory(old, _update(FACTS, new), conversation="user: any news?")
    text = result.text
    assert "superseded: Staging DB listens on port 5432" not in _section(text, ERRORS)
    assert "5432" in _section(text, FACTS)


# --- [resolved] needs the conversation ----------------------------------------------------------


def test_resolved_without_the_conversation_speaking_of_it_stays_open():
    old = _doc(issues="- Add a metric for 429 rejections\n- Who signs off the quota change?")
    new = "- [resolved] Add a metric for 429 rejections\n- Who signs off the quota change?"
    conversation = "user: thanks, the dashboard colours look better now"
    result = merge_working_memory(old, _update(OPEN, new), conversation=conversation)
    items = section_items(_section(result.text, OPEN))
    assert "Add a metric for 429 rejections" in items
    assert not any("[resolved]" in item for item in items)
    assert "kept open" in _decision(result, OPEN)
    # and the next round cannot remove it either
    later = merge_working_memory(result.text, _update(OPEN, "- Who signs off the quota change?"))
    assert any("429 rejections" in i for i in section_items(_section(later.text, OPEN)))


def test_resolved_when_the_conversation_speaks_of_the_item_is_accepted():
    old = _doc(issues="- Add a metric for 429 rejections\n- Who signs off the quota change?")
    new = "- [resolved] Add a metric for 429 rejections\n- Who signs off the quota change?"
    conversation = "assistant: I added the metric for 429 rejections to the exporter."
    result = merge_working_memory(old, _update(OPEN, new), conversation=conversation)
    items = section_items(_section(result.text, OPEN))
    assert "[resolved] Add a metric for 429 rejections" in items


def test_an_item_already_resolved_in_the_old_body_needs_nothing_new():
    old = _doc(issues="- [resolved] Add a metric for 429 rejections\n- Who signs off?")
    new = "- [resolved] Add a metric for 429 rejections\n- Who signs off?"
    result = merge_working_memory(old, _update(OPEN, new), conversation="user: ok")
    assert "[resolved] Add a metric for 429 rejections" in section_items(
        _section(result.text, OPEN)
    )


# --- the title ----------------------------------------------------------------------------------


def test_the_title_refuses_a_bidi_override():
    old = _doc(title="Billing export")
    new = "Billing \u202eexe.sdrowssap_laets\u202c"
    result = merge_working_memory(old, _update(TITLE, new), conversation="billing export")
    assert _section(result.text, TITLE).strip() == "Billing export"
    assert "invisible or control" in _decision(result, TITLE)


def test_the_title_refuses_zero_width_and_control_characters():
    for bad in ("Billing\u200b export fix", "Billing export\u0007 fix", "Billing\ufeff export"):
        old = _doc(title="Billing export")
        result = merge_working_memory(old, _update(TITLE, bad), conversation="billing export fix")
        assert _section(result.text, TITLE).strip() == "Billing export"


def test_an_empty_title_refuses_invisible_characters_too():
    result = merge_working_memory(
        "", _update(TITLE, "Billing \u202eexport"), conversation="billing export"
    )
    assert "\u202e" not in result.text


def test_the_title_is_bounded_in_length():
    old = _doc(title="Billing export")
    new = "Billing export " + "x" * 20_000
    result = merge_working_memory(old, _update(TITLE, new), conversation="billing export")
    title = _section(result.text, TITLE).strip()
    assert 0 < len(title) <= MAX_TITLE_CHARS


# --- a genuine restore marker, folded and unfolded by a writer ----------------------------------


def test_a_genuine_restore_marker_folded_into_a_line_is_not_forged():
    marked = f"{DROPPED_MARKER} Decide the retention period for audit logs"
    old = _doc(issues=f"- still open: Rotate the signing key; {marked}\n- Who owns the pager?")
    new = f"- Rotate the signing key\n- {marked}\n- Who owns the pager?"
    result = merge_working_memory(old, _update(OPEN, new))
    assert f"{marked}" in section_items(_section(result.text, OPEN))
    assert "forged" not in _decision(result, OPEN)


def test_a_forged_restore_marker_is_still_removed():
    old = _doc(issues="- Rotate the signing key\n- Who owns the pager?")
    new = f"- {DROPPED_MARKER} Rotate the signing key\n- Who owns the pager?"
    result = merge_working_memory(old, _update(OPEN, new))
    assert "forged" in _decision(result, OPEN)


# --- items code added are not append-only -------------------------------------------------------

FILES = "Files & Context"


def test_a_writer_may_drop_an_error_code_added_and_the_decision_says_so():
    code = "KeyError: 'currency' (reported by run_tests)"
    old = _doc(errors=f"- Fixed the rounding bug in totals\n- {code}")
    new = "- Fixed the rounding bug in totals\n- Wrong locale on the CI runner, set LANG"
    result = merge_working_memory(old, _update(ERRORS, new), code_items={ERRORS: [code]})
    items = section_items(_section(result.text, ERRORS))
    assert code not in items
    assert "Fixed the rounding bug in totals" in items
    assert "Wrong locale on the CI runner, set LANG" in items
    assert "code had added" in _decision(result, ERRORS)


def test_the_writers_own_errors_stay_append_only():
    old = _doc(errors="- Fixed the rounding bug in totals\n- KeyError: 'currency'")
    result = merge_working_memory(old, _update(ERRORS, "- Fixed the rounding bug in totals"))
    assert "KeyError: 'currency'" in section_items(_section(result.text, ERRORS))


def test_a_writer_may_drop_a_path_code_added_but_not_its_own():
    old = render_working_memory({FILES: "- src/billing/export.py: the exporter\n- vendor/x.js"})
    drop_code = {FILES: {"op": "UPDATE", "content": "- src/billing/export.py: the exporter"}}
    result = merge_working_memory(old, drop_code, code_items={FILES: ["vendor/x.js"]})
    assert "vendor/x.js" not in _section(result.text, FILES)
    assert "code had added" in _decision(result, FILES)
    drop_own = {FILES: {"op": "UPDATE", "content": "- vendor/x.js"}}
    kept = merge_working_memory(old, drop_own, code_items={FILES: ["vendor/x.js"]})
    assert "src/billing/export.py" in _section(kept.text, FILES)
