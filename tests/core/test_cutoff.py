"""A reply cut off at the output limit (small writers reach it often; a cut reply used to lose
its complete part or be taken for KEEP): what is salvaged, what is reported unreadable, and
that nothing of a cut is silently taken for KEEP."""

from __future__ import annotations

import json

import pytest

from wm_langgraph.document import SECTIONS, parse_update_arguments
from wm_langgraph.document.arguments import complete_part, strip_runaway
from wm_langgraph.document.protocol import read_update_arguments

KEEP = {"op": "KEEP"}


def test_a_cut_off_paragraph_update_keeps_its_text() -> None:
    # the complete part used to be dropped whole
    raw = '{"sections": {"Current State": {"op": "UPDATE", "content": "Partial text'
    assert parse_update_arguments(raw) == {
        "Current State": {"op": "UPDATE", "content": "Partial text"}
    }


def test_a_cut_off_list_update_keeps_its_complete_lines() -> None:
    raw = (
        '{"sections": {"Open Issues": {"op": "UPDATE", "content": '
        '"- TODO rotate the key\\n- [resolved] flaky test\\n- still need to bac'
    )
    assert parse_update_arguments(raw) == {
        "Open Issues": {"op": "UPDATE", "content": "- TODO rotate the key\n- [resolved] flaky test"}
    }


def test_a_cut_off_append_keeps_its_complete_items() -> None:
    raw = (
        '{"sections": {"Session Title": {"op": "KEEP"}, "Errors & Corrections": '
        '{"op": "APPEND", "items": ["HTTP 429 fixed by backoff", "pytest failed on test_ord'
    )
    reading = read_update_arguments(raw)
    assert reading.ops == {
        "Session Title": KEEP,
        "Errors & Corrections": {"op": "APPEND", "items": ["HTTP 429 fixed by backoff"]},
    }
    assert reading.cut == "Errors & Corrections"
    assert not reading.complete


def test_sections_a_cut_reply_never_reached_are_unreadable_not_keep() -> None:
    ops = dict.fromkeys(SECTIONS, KEEP)
    ops["Open Issues"] = {"op": "APPEND", "items": ["[new] the nightly job times out"]}
    text = json.dumps({"sections": ops})
    cut = text.index('"Errors & Corrections"')
    reading = read_update_arguments(text[:cut])
    assert set(reading.ops) == set(SECTIONS[:5])
    assert reading.unreadable == ("Errors & Corrections", "Open Issues")
    assert not reading.complete


def test_a_whole_reply_that_omits_a_section_means_keep_and_is_not_retried() -> None:
    reading = read_update_arguments(
        {"sections": {"Current State": {"op": "UPDATE", "content": "x"}}}
    )
    assert reading.complete
    assert reading.unreadable == ()


def test_a_present_but_unreadable_value_is_reported_an_unknown_op_is_keep() -> None:
    reading = read_update_arguments(
        {
            "sections": {
                "Open Issues": {"op": "UPDATE", "content": 42},
                "Errors & Corrections": {"op": "DELETE"},
                "Current State": {"op": "KEEP"},
            }
        }
    )
    assert reading.ops == {"Current State": KEEP}
    assert reading.unreadable == ("Open Issues",)


def test_the_provider_saying_cut_off_makes_missing_sections_unreadable() -> None:
    args = {"sections": {"Session Title": KEEP, "Current State": KEEP}}
    assert read_update_arguments(args).unreadable == ()
    reading = read_update_arguments(args, cut_off=True)
    assert not reading.complete
    assert reading.unreadable == SECTIONS[2:]


def test_a_cut_inside_an_op_name_or_a_section_key_is_unreadable() -> None:
    reading = read_update_arguments('{"sections": {"Session Title": {"op": "KEEP"}, "Open Iss')
    assert reading.ops == {"Session Title": KEEP}
    assert "Open Issues" in reading.unreadable
    reading = read_update_arguments('{"sections": {"Open Issues": {"op": "UPD')
    assert reading.ops == {}
    assert "Open Issues" in reading.unreadable


def test_a_looping_tail_is_not_salvaged_as_content() -> None:
    raw = '{"sections": {"Current State": {"op": "UPDATE", "content": "Tests pass. 1' + "1" * 500
    assert parse_update_arguments(raw) == {
        "Current State": {"op": "UPDATE", "content": "Tests pass."}
    }
    raw = '{"sections": {"Key Facts & Decisions": {"op": "APPEND", "items": ["Port 5432"'
    raw += ', "KEEP"' * 200 + ', "KE'
    assert parse_update_arguments(raw) == {
        "Key Facts & Decisions": {"op": "APPEND", "items": ["Port 5432"]}
    }


def test_a_cut_inside_an_escape_keeps_only_decoded_text() -> None:
    raw = '{"sections": {"Current State": {"op": "UPDATE", "content": "caf\\u00'
    assert parse_update_arguments(raw) == {"Current State": {"op": "UPDATE", "content": "caf"}}
    raw = '{"sections": {"Current State": {"op": "UPDATE", "content": "ok \\ud83d\\ude0'
    assert parse_update_arguments(raw) == {"Current State": {"op": "UPDATE", "content": "ok"}}


def test_the_regex_salvage_keeps_a_cut_body_too() -> None:
    raw = 'sections: Current State: op: UPDATE, content: "first line\nsecond li'
    assert parse_update_arguments(raw) == {
        "Current State": {"op": "UPDATE", "content": "first line"}
    }


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("plain words", "plain words"),
        ("Tests pass. " + "12" * 40 + "1", "Tests pass."),
        ("a, b, " + "KEEP, " * 20 + "KE", "a, b"),
        ("x" * 10, "x" * 10),  # too short to be a loop
        ("", ""),
    ],
)
def test_strip_runaway(text: str, kept: str) -> None:
    assert strip_runaway(text) == kept


def test_complete_part_rules() -> None:
    assert complete_part("Current State", "All green") == "All green"
    assert complete_part("Session Title", "Billing migration") == "Billing migration"
    assert complete_part("Key Facts & Decisions", "- Port 54") is None
    assert complete_part("Key Facts & Decisions", "- Port 5432\n- Chose Post") == "- Port 5432"
    assert complete_part("Current State", "One.\nTwo, and") == "One."
    assert complete_part("Current State", "   ") is None
