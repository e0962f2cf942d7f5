"""merge_working_memory: ops -> guarded document + decisions (behaviour §3.5, §4), concrete
cases."""

from __future__ import annotations

import random
import re

import pytest

from wm_langgraph.document import (
    SECTIONS,
    GuardDecision,
    merge_working_memory,
    parse_working_memory,
    render_working_memory,
)
from wm_langgraph.document.guards import CONSOLIDATION_SENTINEL
from wm_langgraph.document.sections import section_items
from wm_langgraph.document.text import extract_anchors

KEY_FACTS = "- DB port 5433\n- Alice owns FACT-017\n- Bob owns FACT-018\n- v2.3.1 out 2024-03-15"
NEW_FACTS = "- DB port 5432\n- Alice owns FACT-017\n- Bob owns FACT-018\n- v2.3.1 out 2024-03-15"
OLD = render_working_memory(
    {
        "Session Title": "Payments service migration to PostgreSQL",
        "Current State": "Schema ported; data copy pending.",
        "Task & Goals": "- Move payments off MySQL",
        "Key Facts & Decisions": KEY_FACTS,
        "Files & Context": "- src/db.py: connection\n- docs/setup.md",
        "Errors & Corrections": "- Fact 10 was wrong",
        "Open Issues": "- Budget for Q3 unclear\n- Who reviews the PR?",
    }
)


def decision(result, section) -> GuardDecision:
    return next(d for d in result.decisions if d.section == section)


def test_all_keep_returns_the_same_document():
    result = merge_working_memory(OLD, {name: {"op": "KEEP"} for name in SECTIONS})
    assert result.text == OLD
    assert [(d.section, d.requested, d.applied, d.reason) for d in result.decisions] == [
        (name, "KEEP", "KEEP", "") for name in SECTIONS
    ]


def test_update_and_append_applied_with_empty_reasons():
    ops = {
        "Current State": {"op": "UPDATE", "content": "Data copied; cut-over Friday."},
        "Task & Goals": {"op": "APPEND", "items": ["Keep latency under 50 ms"]},
        "Errors & Corrections": {"op": "append", "items": ["Fact 1 was wrong too"]},
    }
    result = merge_working_memory(OLD, ops)
    expected = OLD.replace(
        "Schema ported; data copy pending.", "Data copied; cut-over Friday."
    ).replace("- Move payments off MySQL", "- Move payments off MySQL\n- Keep latency under 50 ms")
    expected = expected.replace(
        "- Fact 10 was wrong", "- Fact 10 was wrong\n- Fact 1 was wrong too"
    )
    assert result.text == expected
    assert decision(result, "Current State") == GuardDecision(
        "Current State", "UPDATE", "UPDATE", ""
    )
    assert decision(result, "Errors & Corrections").applied == "APPEND"
    assert decision(result, "Errors & Corrections").reason == ""
    assert decision(result, "Session Title") == GuardDecision(
        "Session Title", "MISSING", "KEEP", "no op for this section"
    )


def test_every_guard_in_one_round():
    ops = {
        "Session Title": {"op": "UPDATE", "content": "Weekend trip"},
        "Key Facts & Decisions": {
            "op": "UPDATE",
            "content": NEW_FACTS,
        },
        "Files & Context": {
            "op": "UPDATE",
            "content": "- src/db.py: connection pool\n- src/new.py: new module",
        },
        "Errors & Corrections": {"op": "UPDATE", "content": "- Fact 1 was wrong"},
        "Open Issues": {"op": "UPDATE", "content": "- [resolved] Budget for Q3 unclear: $500"},
    }
    result = merge_working_memory(OLD, ops)
    assert result.text == render_working_memory(
        {
            "Session Title": "Payments service migration to PostgreSQL",
            "Current State": "Schema ported; data copy pending.",
            "Task & Goals": "- Move payments off MySQL",
            # the corrected port is current; the old one is retired, not restored as current
            "Key Facts & Decisions": NEW_FACTS,
            "Files & Context": "- src/db.py: connection\n- docs/setup.md\n- src/new.py: new module",
            "Errors & Corrections": (
                "- Fact 10 was wrong\n- Fact 1 was wrong\n- superseded: DB port 5433"
            ),
            "Open Issues": (
                "- [resolved] Budget for Q3 unclear: $500\n"
                "- [silently dropped, restored] Who reviews the PR?"
            ),
        }
    )
    applied = {d.section: (d.requested, d.applied) for d in result.decisions}
    assert applied["Session Title"] == ("UPDATE", "KEEP")
    assert applied["Key Facts & Decisions"] == ("UPDATE", "UPDATE")
    assert applied["Files & Context"] == ("UPDATE", "APPEND")
    assert applied["Errors & Corrections"] == ("UPDATE", "APPEND")
    assert applied["Open Issues"] == ("UPDATE", "UPDATE")
    assert all(d.reason for d in result.decisions if d.section != "Current State")


def test_superseded_value_moved_to_errors_is_a_clean_update():
    ops = {
        "Key Facts & Decisions": {
            "op": "UPDATE",
            "content": NEW_FACTS,
        },
        "Errors & Corrections": {"op": "APPEND", "items": ["superseded: DB port 5433"]},
    }
    result = merge_working_memory(OLD, ops)
    sections = parse_working_memory(result.text)
    assert sections["Key Facts & Decisions"] == NEW_FACTS
    assert "superseded: DB port 5433" in sections["Errors & Corrections"]
    assert decision(result, "Key Facts & Decisions").reason == ""


def test_small_correction_without_superseded_record_is_rejected_and_salvaged():
    old = render_working_memory({"Key Facts & Decisions": "- DB port 5433\n- Alice owns FACT-017"})
    content = "- DB port 5432\n- Alice owns FACT-017"
    ops = {"Key Facts & Decisions": {"op": "UPDATE", "content": content}}
    result = merge_working_memory(old, ops)
    assert parse_working_memory(result.text)["Key Facts & Decisions"] == (
        "- DB port 5433\n- Alice owns FACT-017\n- DB port 5432"
    )
    d = decision(result, "Key Facts & Decisions")
    assert (d.requested, d.applied) == ("UPDATE", "APPEND")
    assert "port 5433" in d.reason


def test_bad_ops_are_keep_and_never_raise():
    weird = [None, [], "KEEP", 42, {"sections": "x"}, {"Session Title": object()}, {1: 2}]
    for ops in weird:
        result = merge_working_memory(OLD, ops)  # type: ignore[arg-type]
        assert result.text == OLD
        assert [d.applied for d in result.decisions] == ["KEEP"] * 7
    requested = [d.requested for d in merge_working_memory(OLD, [1]).decisions]  # type: ignore[arg-type]
    assert requested == ["INVALID"] * 7
    assert [d.requested for d in merge_working_memory(OLD, None).decisions] == ["MISSING"] * 7


@pytest.mark.parametrize(
    ("op", "requested", "reason"),
    [
        (3.5, "INVALID", "op is not an object (float)"),
        ("nonsense", "NONSENSE", "unknown op 'nonsense'"),
        ({"op": "DELETE"}, "DELETE", "unknown op 'DELETE'"),
        ({"content": "x"}, "INVALID", "op object has no string 'op' field"),
        ({"op": "UPDATE"}, "UPDATE", "UPDATE without string content"),
        ({"op": "UPDATE", "content": ["x"]}, "UPDATE", "UPDATE without string content"),
        ({"op": "APPEND", "items": 5}, "APPEND", "APPEND without an items list"),
        (["op", "KEEP"], "INVALID", "op is not an object (list)"),
    ],
)
def test_malformed_section_ops_fall_back_to_keep(op, requested, reason):
    result = merge_working_memory(OLD, {"Current State": op})
    assert result.text == OLD
    assert decision(result, "Current State") == GuardDecision(
        "Current State", requested, "KEEP", reason
    )


def test_bare_string_and_wrapper_and_loose_section_names():
    ops = {"sections": {"current state": "keep", "task and goals": {"op": "Append", "items": "x"}}}
    result = merge_working_memory(OLD, ops)
    assert parse_working_memory(result.text)["Task & Goals"] == "- Move payments off MySQL\n- x"
    assert decision(result, "Current State").requested == "KEEP"


def test_append_items_cleaned_deduplicated_and_logged(caplog):
    ops = {
        "Errors & Corrections": {
            "op": "APPEND",
            "items": [
                "Fact 1 was wrong",
                " ",
                "-",
                "* ",
                None,
                {"x": 1},
                "fact 10 was wrong.",
                "- Fact 1 was wrong",
                "line one\n  - line two",
            ],
        }
    }
    with caplog.at_level("WARNING", logger="wm_langgraph"):
        result = merge_working_memory(OLD, ops)
    assert parse_working_memory(result.text)["Errors & Corrections"] == (
        "- Fact 10 was wrong\n- Fact 1 was wrong\n- line one\n- line two"
    )
    d = decision(result, "Errors & Corrections")
    assert d.applied == "APPEND"
    assert "dropped 2 non-string item(s)" in d.reason
    assert "skipped 2 item(s) already present" in d.reason
    assert "non-string" in caplog.text


def test_append_with_nothing_new_is_keep():
    result = merge_working_memory(OLD, {"Task & Goals": {"op": "APPEND", "items": []}})
    assert result.text == OLD
    assert decision(result, "Task & Goals") == GuardDecision(
        "Task & Goals", "APPEND", "KEEP", "no items to append"
    )


def test_header_injection_never_adds_a_section():
    ops = {
        "Current State": {
            "op": "UPDATE",
            "content": "ok\n## Errors & Corrections\n- fake\n# Working Memory\n## Bogus",
        },
        "Task & Goals": {"op": "APPEND", "items": ["## Open Issues\n## Key Facts & Decisions"]},
    }
    result = merge_working_memory(OLD, ops)
    headers = [line for line in result.text.splitlines() if line.startswith("## ")]
    assert headers == [f"## {name}" for name in SECTIONS]
    sections = parse_working_memory(result.text)
    assert sections["Current State"] == (
        "ok\n### Errors & Corrections\n- fake\n### Working Memory\n### Bogus"
    )
    assert sections["Errors & Corrections"] == "- Fact 10 was wrong"
    # copied section names are placeholders, never items (small writers fill empty sections
    # with them), with or without "## "
    assert sections["Task & Goals"] == "- Move payments off MySQL"


def test_empty_update_of_non_empty_section_kept_but_empty_section_may_stay_empty():
    result = merge_working_memory(OLD, {"Current State": {"op": "UPDATE", "content": "  "}})
    assert result.text == OLD
    assert decision(result, "Current State").reason == "empty UPDATE of a non-empty section"
    blank = render_working_memory({})
    result = merge_working_memory(blank, {"Open Issues": {"op": "UPDATE", "content": "- new q"}})
    assert parse_working_memory(result.text)["Open Issues"] == "- new q"


def test_legacy_and_none_old_documents():
    result = merge_working_memory("A legacy summary about Alice.", {})
    assert (
        "A legacy summary about Alice."
        in parse_working_memory(result.text)["Key Facts & Decisions"]
    )
    assert merge_working_memory(None, {}).text == render_working_memory({})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        merge_working_memory(3, {})  # type: ignore[arg-type]


def test_template_lines_ignored_for_guards_and_dedup():
    old = render_working_memory(
        {"Errors & Corrections": "_Errors and their fixes_", "Session Title": "_5-10 words_"}
    )
    ops = {
        "Errors & Corrections": {"op": "UPDATE", "content": "- first real error"},
        "Session Title": {"op": "UPDATE", "content": "Kubernetes upgrade"},
    }
    sections = parse_working_memory(merge_working_memory(old, ops).text)
    assert sections["Errors & Corrections"] == "- first real error"
    assert sections["Session Title"] == "Kubernetes upgrade"


def test_key_facts_emergency_sentinel_through_merge():
    facts = "\n".join(f"- fact number {i} is stable" for i in range(55))
    old = render_working_memory({"Key Facts & Decisions": facts})
    ops = {"Key Facts & Decisions": {"op": "APPEND", "items": ["yet another fact"]}}
    once = merge_working_memory(old, ops)
    body = parse_working_memory(once.text)["Key Facts & Decisions"]
    assert body == f"{facts}\n- {CONSOLIDATION_SENTINEL}"
    twice = merge_working_memory(once.text, ops)
    assert twice.text == once.text


def test_guards_false_applies_ops_as_asked():
    ops = {
        "Session Title": {"op": "UPDATE", "content": "Weekend trip"},
        "Errors & Corrections": {"op": "UPDATE", "content": "- rewritten"},
        "Open Issues": {"op": "UPDATE", "content": "- only this"},
    }
    sections = parse_working_memory(merge_working_memory(OLD, ops, guards=False).text)
    assert sections["Session Title"] == "Weekend trip"
    assert sections["Errors & Corrections"] == "- rewritten"
    assert sections["Open Issues"] == "- only this"


def test_chinese_session_end_to_end():
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
    old = render_working_memory(
        {
            "Session Title": "上海租房合同与搬家安排",
            "Key Facts & Decisions": "\n".join(f"- {f}" for f in facts),
        }
    )
    ops = {
        "Session Title": {"op": "UPDATE", "content": "Python 性能优化"},
        "Key Facts & Decisions": {"op": "UPDATE", "content": "- 合同已签，费用谈妥\n- 很快入住"},
    }
    result = merge_working_memory(old, ops)
    sections = parse_working_memory(result.text)
    assert sections["Session Title"] == "上海租房合同与搬家安排"
    assert sections["Key Facts & Decisions"].splitlines() == [
        *(f"- {f}" for f in facts),
        "- 合同已签，费用谈妥",
        "- 很快入住",
    ]
    assert [d.applied for d in result.decisions][:4] == ["KEEP", "KEEP", "KEEP", "APPEND"]


# ---------------------------------------------------------------------------------------------
# The 30% hole: a careless model that drops 30% of Key Facts on every rewrite
# ---------------------------------------------------------------------------------------------


def _fact(i: int) -> str:
    return f"FACT-{i:03d}: ticket owner confirmed on 2024-{i % 12 + 1:02d}-{i % 27 + 1:02d}"


def _lossy_rounds(*, guards: bool, rounds: int = 25, seed: int = 7) -> tuple[str, set[str]]:
    """Run the lossy model; return the final document and every FACT id that was ever in
    Key Facts after a merge (facts refused at the door in emergency size never entered)."""
    rng = random.Random(seed)
    facts = [_fact(i) for i in range(12)]
    doc = render_working_memory(
        {
            "Session Title": "Ticket audit",
            "Key Facts & Decisions": "\n".join(f"- {f}" for f in facts),
        }
    )
    entered: set[str] = set()
    next_id = 12
    for _ in range(rounds):
        current = section_items(parse_working_memory(doc)["Key Facts & Decisions"])
        entered |= {m.group() for item in current for m in re.finditer(r"FACT-\d+", item)}
        kept = [item for item in current if rng.random() >= 0.3]
        fresh = [_fact(next_id), _fact(next_id + 1)]
        next_id += 2
        content = "\n".join(f"- {item}" for item in [*kept, *fresh])
        doc = merge_working_memory(
            doc, {"Key Facts & Decisions": {"op": "UPDATE", "content": content}}, guards=guards
        ).text
    return doc, entered


def test_lossy_model_for_25_rounds_keeps_every_anchored_fact():
    doc, entered = _lossy_rounds(guards=True)
    assert len(entered) > 40
    body = parse_working_memory(doc)["Key Facts & Decisions"]
    missing = sorted(
        fact_id for fact_id in entered if fact_id.casefold() not in extract_anchors(body)
    )
    assert missing == []


def test_lossy_model_without_guards_loses_facts():
    doc, entered = _lossy_rounds(guards=False)
    body = parse_working_memory(doc)["Key Facts & Decisions"]
    lost = [fact_id for fact_id in entered if fact_id not in body]
    assert len(lost) > len(entered) // 2


# ---------------------------------------------------------------------------------------------
# A changed value is retired to Errors & Corrections, not restored as if current
# ---------------------------------------------------------------------------------------------


def _kf_update(facts: str, content: str, **sections: str):
    old = render_working_memory({"Session Title": "Billing", "Key Facts & Decisions": facts})
    if sections:
        old = render_working_memory(
            {"Session Title": "Billing", "Key Facts & Decisions": facts, **sections}
        )
    return merge_working_memory(
        old, {"Key Facts & Decisions": {"op": "UPDATE", "content": content}}
    )


def test_corrected_port_is_retired_not_restored():
    facts = (
        "- Staging database: port 5433\n- Alice owns FACT-017\n- Bob owns FACT-018\n"
        "- v2.3.1 shipped on 2024-03-15"
    )
    content = facts.replace("port 5433", "port 5432")
    result = _kf_update(facts, content)
    sections = parse_working_memory(result.text)
    assert sections["Key Facts & Decisions"] == content
    assert sections["Errors & Corrections"] == "- superseded: Staging database: port 5433"
    kf = decision(result, "Key Facts & Decisions")
    assert (kf.requested, kf.applied) == ("UPDATE", "UPDATE")
    assert "superseded" in kf.reason
    errors = decision(result, "Errors & Corrections")
    assert (errors.requested, errors.applied) == ("MISSING", "APPEND")
    assert "recorded 1 superseded" in errors.reason


def test_changed_place_in_a_chat_is_retired_and_the_rest_kept():
    facts = (
        "- Owen lives in Ghent\n- Owen pays 900 euros rent a month\n"
        "- Aiko's chess tournament on 2024-01-08\n- Constraint: Owen cannot drive"
    )
    content = facts.replace("Ghent", "Porto")
    result = _kf_update(facts, content, **{"Errors & Corrections": "- Fact 10 was wrong"})
    sections = parse_working_memory(result.text)
    assert sections["Key Facts & Decisions"] == content
    assert sections["Errors & Corrections"] == (
        "- Fact 10 was wrong\n- superseded: Owen lives in Ghent"
    )


def test_chinese_corrected_value_is_retired():
    facts = "- 数据库端口是5433\n- 张伟负责FACT-017\n- 2024年3月15日发布v2.3.1\n- 月租金4500元"
    content = facts.replace("5433", "5432")
    result = _kf_update(facts, content)
    sections = parse_working_memory(result.text)
    assert sections["Key Facts & Decisions"] == content
    assert sections["Errors & Corrections"] == "- superseded: 数据库端口是5433"


def test_consolidated_bullet_retires_the_changed_clause_and_restores_the_rest():
    facts = (
        "- Staging database: port 5433; Bob owns FACT-018\n- Alice owns FACT-017\n"
        "- v2.3.1 shipped on 2024-03-15\n- Carol runs the standup at 10 AM\n"
        "- Budget is $200 per month\n- Dana joined on 2024-04-02"
    )
    content = (
        "- Staging database: port 5432\n- Alice owns FACT-017\n- v2.3.1 shipped on 2024-03-15\n"
        "- Carol runs the standup at 10 AM\n- Budget is $200 per month\n- Dana joined on 2024-04-02"
    )
    sections = parse_working_memory(_kf_update(facts, content).text)
    assert sections["Key Facts & Decisions"] == f"{content}\n- [restored] Bob owns FACT-018"
    assert sections["Errors & Corrections"] == "- superseded: Staging database: port 5433"


@pytest.mark.parametrize(
    ("facts", "content"),
    [
        # another ticket in the same shape is another fact, not a new value
        (
            "- FACT-017: owner is Alice\n- Standup at 10 AM\n- Redis on port 6379",
            "- FACT-020: owner is Alice\n- Standup at 10 AM\n- Redis on port 6379",
        ),
        # the same kind of fact about someone else
        (
            "- Owen has 31 houseplants\n- Owen lives in Ghent\n- Aiko trains 6 hours a week",
            "- Aiko has 40 houseplants\n- Owen lives in Ghent\n- Aiko trains 6 hours a week",
        ),
    ],
)
def test_vanished_fact_without_a_changed_value_is_restored(facts, content):
    sections = parse_working_memory(_kf_update(facts, content).text)
    dropped = facts.splitlines()[0]
    assert sections["Key Facts & Decisions"] == f"{content}\n- [restored] {dropped[2:]}"
    assert sections["Errors & Corrections"] == ""


# ---------------------------------------------------------------------------------------------
# Rules and decisions without names or numbers are restored too
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dropped",
    [
        "Constraint: never push directly to main; always open a pull request",
        "Constraint: tests must never call the real payment gateway",
        "Decision: a token bucket instead of a fixed window counter because it smooths bursts",
        "Owen is allergic to peanuts",
        "不要直接推送到主分支",
    ],
)
def test_dropped_rule_or_decision_is_restored(dropped):
    kept = "- Alice owns FACT-017\n- Redis on port 6379\n- v2.3.1 shipped on 2024-03-15"
    result = _kf_update(f"- {dropped}\n{kept}", kept)
    assert parse_working_memory(result.text)["Key Facts & Decisions"] == (
        f"{kept}\n- [restored] {dropped}"
    )


def test_reworded_rule_is_not_restored():
    facts = "- Never push directly to main\n- Alice owns FACT-017\n- Redis on port 6379"
    content = "- Don't push to main; use a PR\n- Alice owns FACT-017\n- Redis on port 6379"
    assert parse_working_memory(_kf_update(facts, content).text)["Key Facts & Decisions"] == (
        content
    )


def test_bare_header_markers_in_a_body_cannot_open_a_section():
    # Behaviour §2.2 splits on lines beginning with "## "; a nameless "## " line must not survive
    # in a body either, or a literal parser would count eight sections.
    result = merge_working_memory(
        "", {"Current State": {"op": "UPDATE", "content": "ok\n## \n##\tOpen Issues\n##"}}
    )
    breaks = [line for line in result.text.splitlines() if line.startswith("## ")]
    assert breaks == [f"## {name}" for name in SECTIONS]
    assert "ok" in parse_working_memory(result.text)["Current State"]
