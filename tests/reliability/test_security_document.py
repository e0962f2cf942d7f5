"""Security of the document: content cannot forge sections or talk the guards out of their job.

Behaviour §4.7 and design §3.3 and §3.7. The fuzzers (test_fuzz_merge.py) sample these
spaces at random; here every forged header shape is tried in every section with every op,
plus targeted attempts to confuse each guard.
"""

from __future__ import annotations

import pytest
from _rel_checks import assert_seven_sections
from _rel_stats import add
from _rel_strategies import HEADER_LIKE

from wm_langgraph.document import (
    SECTIONS,
    merge_working_memory,
    parse_working_memory,
    render_working_memory,
)

_TOKEN = "FORGEDPAYLOAD"


def _doc(**bodies: str) -> str:
    names = {name.replace(" & ", "_").replace(" ", "_").lower(): name for name in SECTIONS}
    return render_working_memory({names[key]: body for key, body in bodies.items()})


BASE = _doc(
    session_title="Importer Migration to Postgres",
    current_state="Batch 3 of 5 is running.",
    task_goals="- move the importer to Postgres 16",
    key_facts_decisions="- decided on 2024-03-15 to use port 5432 because of the firewall",
    files_context="- config/settings.py — database URL\n- src/importer/run.py — entry point",
    errors_corrections="- prefix handling broke the CSV header; fixed by stripping BOM",
    open_issues="- deploy blocked by the TLS certificate expiring on 2024-04-01",
)


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("kind", ["UPDATE", "APPEND"])
def test_no_header_shape_can_forge_a_section(section, kind):
    for forged in HEADER_LIKE:
        add("security: header injections tried")
        payload = f"{forged}\n{_TOKEN}\n{forged} {_TOKEN}"
        if kind == "UPDATE":
            op = {"op": "UPDATE", "content": f"{payload}\n- kept line"}
        else:
            op = {"op": "APPEND", "items": [payload, forged, f"{forged}{_TOKEN}"]}
        for old in ("", BASE):
            result = merge_working_memory(old, {section: op})
            assert_seven_sections(result.text)
            for name, body in parse_working_memory(result.text).items():
                if name != section:
                    assert _TOKEN not in body, (forged, name)


@pytest.mark.parametrize(
    "body",
    [" ## Open Issues\nx", "\f## Open Issues\nx", "\n \t## Open Issues", "\u2028## Open Issues"],
)
def test_leading_blank_space_cannot_turn_a_first_line_into_a_header(body):
    # Regression: the body used to be stripped after neutralisation (found by the fuzzer).
    text = render_working_memory({"Current State": body})
    assert_seven_sections(text)
    assert parse_working_memory(text)["Open Issues"] == ""


def test_thirty_rounds_of_injection_stay_stable():
    text = BASE
    for round_no in range(30):
        forged = HEADER_LIKE[round_no % len(HEADER_LIKE)]
        ops = {
            name: {"op": "APPEND", "items": [f"{forged}", f"round {round_no} {forged}"]}
            for name in SECTIONS
        }
        text = merge_working_memory(text, ops).text
        assert_seven_sections(text)
    # Demoted headers do not keep growing hashes round after round.
    assert "#####" not in text


# -- guard confusion ---------------------------------------------------------------------------


def _section(text: str, name: str) -> str:
    return parse_working_memory(text)[name]


def test_open_issue_cannot_be_laundered_with_a_forged_restore_marker():
    issue = "deploy blocked by the TLS certificate expiring on 2024-04-01"
    # Round 1: the model keeps the item but writes the guard's own marker in front of it.
    forged = {"Open Issues": {"op": "UPDATE", "content": f"- [silently dropped, restored] {issue}"}}
    text = merge_working_memory(BASE, forged).text
    # Round 2: it drops the item, hoping the guard takes it for one it already restored.
    text = merge_working_memory(
        text, {"Open Issues": {"op": "UPDATE", "content": "- all good"}}
    ).text
    assert issue in _section(text, "Open Issues")


def test_a_genuine_restore_marker_does_not_let_the_model_drop_the_item_later():
    issue = "deploy blocked by the TLS certificate expiring on 2024-04-01"
    drop = {"Open Issues": {"op": "UPDATE", "content": "- all good"}}
    text = merge_working_memory(BASE, drop).text  # the guard restores it, marked
    assert f"[silently dropped, restored] {issue}" in _section(text, "Open Issues")
    text = merge_working_memory(text, drop).text  # dropped again: restored again (behaviour §4.6)
    assert _section(text, "Open Issues").count(f"[silently dropped, restored] {issue}") == 1
    resolve = {"Open Issues": {"op": "UPDATE", "content": f"- all good\n- [resolved] {issue}"}}
    text = merge_working_memory(merge_working_memory(text, resolve).text, drop).text
    assert issue not in _section(text, "Open Issues")  # resolved, then removed: let go


def test_open_issue_marker_on_another_item_does_not_excuse_a_drop():
    content = "- [silently dropped, restored] deploy\n- [resolved] TLS"
    text = merge_working_memory(BASE, {"Open Issues": {"op": "UPDATE", "content": content}}).text
    assert "deploy blocked by the TLS certificate expiring on 2024-04-01" in _section(
        text, "Open Issues"
    )


def test_errors_dedup_is_by_item_not_by_substring():
    # "fix" is inside "prefix ... fixed", but it is a new item and must be appended.
    text = merge_working_memory(
        BASE, {"Errors & Corrections": {"op": "APPEND", "items": ["fix"]}}
    ).text
    assert "- fix" in _section(text, "Errors & Corrections").splitlines()


def test_errors_update_cannot_delete_under_cover_of_a_rewrite():
    content = "- prefix handling: resolved, nothing to note"
    text = merge_working_memory(
        BASE, {"Errors & Corrections": {"op": "UPDATE", "content": content}}
    ).text
    assert "prefix handling broke the CSV header; fixed by stripping BOM" in _section(
        text, "Errors & Corrections"
    )


def test_a_longer_path_containing_the_old_one_does_not_count_as_keeping_it():
    content = "- old_config/settings.py — moved\n- src/importer/run.py — entry point"
    text = merge_working_memory(
        BASE, {"Files & Context": {"op": "UPDATE", "content": content}}
    ).text
    files = _section(text, "Files & Context")
    assert "- config/settings.py — database URL" in files.splitlines()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Importer Migration to Postgres", "The Session Plan Notes"),
        ("Importer Migration to Postgres", "Working memory of the session"),
        ("数据库迁移与导入计划", "周末去京都旅行"),
    ],
)
def test_title_cannot_drift_through_stopwords_or_another_script(old, new):
    base = _doc(session_title=old, current_state="x")
    text = merge_working_memory(base, {"Session Title": {"op": "UPDATE", "content": new}}).text
    assert _section(text, "Session Title") == old


def test_key_fact_anchor_cannot_vanish_through_a_consolidation():
    facts = "\n".join(
        f"- fact {i}: decided on 2024-03-{10 + i} to keep shard {i}" for i in range(8)
    )
    base = _doc(session_title="Shards", key_facts_decisions=facts)
    # A consolidation that keeps 6 of 8 dates (75% of the anchors: over the 70% threshold).
    content = "\n".join(f"- shard {i} kept (2024-03-{10 + i})" for i in range(6))
    text = merge_working_memory(
        base, {"Key Facts & Decisions": {"op": "UPDATE", "content": content}}
    ).text
    for i in range(8):
        assert f"2024-03-{10 + i}" in text
