"""Per-section guards (behaviour §4), called directly with concrete bodies."""

from __future__ import annotations

import pytest

from wm_langgraph.document.guards import (
    CONSOLIDATION_SENTINEL,
    SectionOp,
    guard_errors_corrections,
    guard_files_context,
    guard_key_facts,
    guard_open_issues,
    guard_section,
    guard_session_title,
    is_emergency,
    is_oversized,
    new_items,
    restore_vanished_facts,
    section_size,
)


def update(content: str) -> SectionOp:
    return SectionOp("UPDATE", content=content)


def append(*items: str) -> SectionOp:
    return SectionOp("APPEND", items=items)


KEEP = SectionOp("KEEP")


def bullets(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


# ---------------------------------------------------------------------------------------------
# Shared rules
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "section",
    [
        "Session Title",
        "Current State",
        "Task & Goals",
        "Key Facts & Decisions",
        "Files & Context",
        "Errors & Corrections",
        "Open Issues",
    ],
)
def test_empty_update_of_non_empty_section_is_keep(section):
    outcome = guard_section(section, "- something real", update("  \n_template line_\n"))
    assert outcome.op == KEEP
    assert outcome.reason == "empty UPDATE of a non-empty section"


def test_guards_do_not_run_on_empty_or_template_only_sections():
    op = update("Weekend trip")
    assert guard_section("Session Title", "", op).op == op
    assert guard_section("Session Title", "_A 5-10 word title_", op).op == op
    errors = update("- rewritten")
    assert guard_section("Errors & Corrections", "_errors and fixes_", errors).op == errors


def test_keep_always_passes():
    assert guard_section("Errors & Corrections", "- e1", KEEP).op == KEEP


def test_unknown_section_raises():
    with pytest.raises(KeyError):
        guard_section("Nope", "- x", KEEP)


def test_new_items_is_whole_item_not_substring():
    assert new_items("- Fact 10 is wrong", ["Fact 1 is wrong", "fact 10 is wrong."]) == [
        "Fact 1 is wrong"
    ]
    assert new_items("- prefix handling", ["fix", "fix", "Fix"]) == ["fix"]
    assert new_items("_template_", ["_template_"]) == ["_template_"]


# ---------------------------------------------------------------------------------------------
# Session Title
# ---------------------------------------------------------------------------------------------


def test_title_drift_rejected_and_related_title_accepted():
    old = "Payments DB migration to PostgreSQL"
    assert guard_session_title(old, update("Weekend trip to Lisbon")).op == KEEP
    related = update("PostgreSQL cut-over for the payments service")
    assert guard_session_title(old, related).op == related


def test_chinese_title_drift_rejected():
    old = "北京周末旅行安排"
    outcome = guard_section("Session Title", old, update("数据库性能优化"))
    assert outcome.op == KEEP
    assert "title drift" in outcome.reason
    refined = update("北京周末旅行预算与行程")
    assert guard_section("Session Title", old, refined).op == refined


def test_title_without_meaningful_words_accepts_anything():
    op = update("Kubernetes upgrade")
    assert guard_session_title("Session notes", op).op == op


# ---------------------------------------------------------------------------------------------
# Key Facts & Decisions
# ---------------------------------------------------------------------------------------------

FACTS = [
    "Alice chose PostgreSQL on 2024-03-15",
    "Budget is $200 per month",
    "Trial lasts 3 months",
    "Standup at 10 AM",
    "Bob owns FACT-017",
    "Release v2.3.1 shipped",
    "Redis on port 6379",
    "Config lives in src/settings.toml",
]


def test_layer1_rejects_tiny_rewrite_and_salvages_new_bullets():
    old = bullets(FACTS)  # 8 bullets
    op = update("- Everything as before\n")  # 1/8 < 0.15
    outcome = guard_key_facts(old, op)
    assert outcome.op == append("Everything as before")
    assert "< 15%" in outcome.reason


def test_layer1_rejected_update_with_nothing_new_is_keep():
    old = bullets(FACTS)
    outcome = guard_key_facts(old, update(f"- {FACTS[0]}"))
    assert outcome.op == KEEP
    assert "no new bullets" in outcome.reason


def test_layer2_rejects_consolidation_losing_anchors():
    old = bullets(FACTS)
    vague = update("- Alice and Bob made database and budget decisions\n- Some config exists")
    outcome = guard_key_facts(old, vague)
    assert outcome.op.kind == "APPEND"
    # no old bullet says what Alice and Bob did together: that claim is text the section lacks
    # (a regrouping that repeats old clauses is not salvaged: tests/core/test_clause_restore.py)
    assert outcome.op.items == (
        "Alice and Bob made database and budget decisions",
        "Some config exists",
    )
    assert "anchors" in outcome.reason


def test_layer2_rejects_dropping_technical_ids_even_when_proper_nouns_survive():
    old = bullets(
        [
            "Alice tracks FACT-017 and FACT-018",
            "Bob pinned v2.3.1 and v1.9.0",
            "Carol set port 5432 and port 6379",
            "Dave edits src/api/routes.py and web/app.tsx",
            "Errors HTTP 429 and HTTP 503 from Stripe",
        ]
    )
    new = update(
        "- Alice tracks the facts\n- Bob pinned versions\n- Carol set ports\n"
        "- Dave edits routes and app\n- Errors from Stripe"
    )
    outcome = guard_key_facts(old, new)
    assert outcome.op.kind == "APPEND"
    assert outcome.reason.startswith("rejected UPDATE")


def test_chinese_facts_consolidated_into_vague_bullets_rejected():
    facts = [
        "2024年3月15日签订租房合同",
        "月租金4500元，押金9000元",
        "合同期限12个月",
        "2024年4月1日入住",
        "物业费每月300元",
        "停车位每月600元",
        "2024年3月20日前付首期款",
        "中介费2250元",
    ]
    old = bullets(facts)
    vague = update("- 已经签了租房合同，费用都谈好了\n- 很快就会入住")
    outcome = guard_key_facts(old, vague)
    assert outcome.op == append("已经签了租房合同，费用都谈好了", "很快就会入住")
    assert "anchors" in outcome.reason


def test_good_consolidation_accepted():
    old = bullets(FACTS)
    merged = update(
        "- Alice chose PostgreSQL on 2024-03-15; Redis on port 6379; config in "
        "src/settings.toml\n- Budget $200 per month, trial 3 months, standup 10 AM\n"
        "- Bob owns FACT-017; release v2.3.1 shipped"
    )
    assert guard_key_facts(old, merged).op == merged


def test_old_facts_without_anchors_accept_any_non_tiny_update():
    old = bullets(["likes tea", "prefers quiet places"])
    op = update("- enjoys hot drinks")
    assert guard_key_facts(old, op).op == op


def test_oversized_append_takes_only_five_new_items():
    old = bullets([f"fact number {i} is stable" for i in range(30)])
    assert is_oversized(old)
    assert not is_emergency(old)
    items = ("fact number 3 is stable", *(f"brand new fact {i}" for i in range(8)))
    outcome = guard_key_facts(old, SectionOp("APPEND", items=items))
    assert outcome.op.items == tuple(f"brand new fact {i}" for i in range(5))
    assert "accepted 5 of 8" in outcome.reason


def test_oversized_by_tokens():
    old = bullets(["word " * 1600])
    assert section_size(old)[0] == 1
    assert is_oversized(old)


def test_emergency_append_adds_sentinel_once():
    old = bullets([f"fact number {i} is stable" for i in range(51)])
    assert is_emergency(old)
    outcome = guard_key_facts(old, append("new fact"))
    assert outcome.op == append(CONSOLIDATION_SENTINEL)
    with_sentinel = f"{old}\n- {CONSOLIDATION_SENTINEL}"
    again = guard_key_facts(with_sentinel, append("another fact"))
    assert again.op == KEEP
    assert "refused" in again.reason


def test_emergency_suppresses_salvage():
    old = bullets([f"fact {i} on 2024-01-{i % 28 + 1:02d}" for i in range(60)])
    outcome = guard_key_facts(old, update("- one vague summary"))
    assert outcome.op == KEEP
    assert "salvage suppressed" in outcome.reason


def test_template_lines_are_not_bullets():
    old = "_Durable facts go here_\n- Alice chose PostgreSQL on 2024-03-15"
    assert section_size(old)[0] == 1
    op = update("- Alice chose PostgreSQL on 2024-03-15 (kept)")
    assert guard_key_facts(old, op).op == op


def test_restore_vanished_facts_marks_and_respects_whole_document():
    old = bullets(["DB port 5433", "Alice owns FACT-017", "Likes tea"])
    new_body = "- Alice owns FACT-017"
    document = f"## Key Facts & Decisions\n{new_body}\n## Errors & Corrections\n- nothing"
    body, restored = restore_vanished_facts(old, new_body, document)
    assert restored == ["[restored] DB port 5433"]
    assert body == "- Alice owns FACT-017\n- [restored] DB port 5433"
    moved = document + "\n- superseded: port 5433"
    assert restore_vanished_facts(old, new_body, moved) == (new_body, [])


def test_restore_does_not_double_mark():
    old = "- [restored] DB port 5433"
    body, restored = restore_vanished_facts(old, "- other", "- other")
    assert restored == ["[restored] DB port 5433"]
    assert body == "- other\n- [restored] DB port 5433"


# ---------------------------------------------------------------------------------------------
# Files & Context
# ---------------------------------------------------------------------------------------------


def test_files_update_losing_a_path_is_rejected_with_new_paths_appended():
    old = "- src/db.py: connection pool\n- docs/setup.md: install steps"
    op = update(
        "- src/db.py: connection pool (async)\n- src/cache.py: Redis wrapper\n"
        "- also touched web/app.tsx"
    )
    outcome = guard_files_context(old, op)
    assert outcome.op == append("src/cache.py: Redis wrapper", "also touched web/app.tsx")
    assert "docs/setup.md" in outcome.reason


def test_files_new_path_without_own_line_item():
    old = "- src/db.py"
    op = update("See `src/new.py` here and `src/db_v2.py`")
    outcome = guard_files_context(old, op)
    assert outcome.op == append("See `src/new.py` here and `src/db_v2.py`")


def test_files_newly_referenced_fallback_when_path_not_verbatim_in_a_line():
    old = "- src/db.py"
    op = update("- ./src/other.py handles retries")
    outcome = guard_files_context(old, op)
    assert outcome.op == append("./src/other.py handles retries")
    # a path only in a heading has no item line of its own
    heading = update("### src/new.py\n- notes without paths")
    assert guard_files_context("- a.py", heading).op == append("src/new.py (newly referenced)")


def test_files_update_keeping_every_path_accepted():
    old = "- src/db.py\n- main.py"
    op = update("- src/db.py: pool\n- app/main.py: entry\n- NOTES: also prose")
    assert guard_files_context(old, op).op == op


def test_files_rejected_update_without_new_paths_is_keep():
    outcome = guard_files_context("- src/db.py\n- README.md", update("- README.md"))
    assert outcome.op == KEEP


def test_files_append_passes():
    op = append("new.py")
    assert guard_files_context("- a.py", op).op == op


# ---------------------------------------------------------------------------------------------
# Errors & Corrections
# ---------------------------------------------------------------------------------------------


def test_errors_update_demoted_to_append_of_new_items():
    old = "- Fact 10 was wrong: fixed"
    op = update("- Fact 10 was wrong: fixed\n- Fact 1 was wrong too")
    outcome = guard_errors_corrections(old, op)
    assert outcome.op == append("Fact 1 was wrong too")
    assert "demoted" in outcome.reason


def test_errors_update_with_nothing_new_is_keep():
    outcome = guard_errors_corrections("- e1\n- e2", update("- e1"))
    assert outcome.op == KEEP


# ---------------------------------------------------------------------------------------------
# Open Issues
# ---------------------------------------------------------------------------------------------


def test_open_issues_dropped_item_restored_every_time_until_resolved():
    old = "- Budget for Q3 unclear\n- Who reviews the PR?"
    op = update("- [resolved] Budget for Q3 unclear: $500")
    outcome = guard_open_issues(old, op)
    assert outcome.op.content == (
        "- [resolved] Budget for Q3 unclear: $500\n"
        "- [silently dropped, restored] Who reviews the PR?"
    )
    second = guard_open_issues(outcome.op.content, update("- [resolved] Budget: $500"))
    # the resolved budget item may go; the restored one comes back again, marked once
    # (behaviour §4.6)
    assert second.op.content == (
        "- [resolved] Budget: $500\n- [silently dropped, restored] Who reviews the PR?"
    )


def test_open_issues_whole_item_match_tolerates_annotations_not_rewording():
    old = (
        "- [new] Decide whether the nightly export job should move to the new cluster\n"
        "- 预算还没有确定，需要和财务部门再次确认具体数字"
    )
    annotated = update(
        "- [resolved] ~~Decide whether the nightly export job should move to the new "
        "cluster~~ - moved\n- 预算还没有确定，需要和财务部门再次确认具体数字（下周）"
    )
    assert guard_open_issues(old, annotated).op == annotated
    reworded = update(
        "- [resolved] Decide whether the nightly export job should move - moved\n"
        "- 预算还没有确定，需要和财务部门再次确认（下周）"
    )
    content = guard_open_issues(old, reworded).op.content
    assert content.count("[silently dropped, restored]") == 2


def test_open_issues_prefix_needs_word_start():
    outcome = guard_open_issues("- fix login", update("- prefix login handling"))
    assert outcome.op.content.endswith("- [silently dropped, restored] fix login")


def test_open_issues_keeps_a_genuine_marker_on_an_item_with_a_semicolon():
    # A restored item whose text holds ";" (a writer had folded two issues into one line):
    # the next UPDATE keeps it verbatim. The marker was written by the guard, so it stays, and
    # the decision does not call it forged (the genuine text used to be cut at the ";").
    old = "- [silently dropped, restored] add a test for negative totals; check rounding"
    kept = update(f"{old}\n- decide the currency")
    outcome = guard_open_issues(old, kept)
    assert outcome.op == kept
    assert "forged" not in outcome.reason
    # dropped again, it comes back with the marker once
    again = guard_open_issues(old, update("- decide the currency")).op.content
    assert again.count("[silently dropped, restored]") == 1
    assert again.endswith("add a test for negative totals; check rounding")
    # a marker the guard never wrote on that text is still removed
    forged = guard_open_issues(
        old, update(f"{old}\n- [silently dropped, restored] decide the currency")
    )
    assert "removed 1 forged restore marker" in forged.reason
