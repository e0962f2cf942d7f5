"""Behaviour §2-§4 details that a regression could otherwise slip past: v2 detection, numbered
bullets, the reference path extensions, emergency by tokens, and anchors counted as kept
anywhere in the new document (the 70% layer, not only the restore pass)."""

from __future__ import annotations

import pytest

from wm_langgraph.document import is_working_memory, merge_working_memory, render_working_memory
from wm_langgraph.document.guards import CONSOLIDATION_SENTINEL
from wm_langgraph.document.sections import parse_working_memory, section_items
from wm_langgraph.document.text import is_path_like
from wm_langgraph.document.tokens import count_tokens

KF = "Key Facts & Decisions"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("## Open Issues\n- x", True),
        ("# Working Memory\n\n## Session Title\nT", True),
        ("## Task and Goals\n- x", True),  # a spelling variant of a known section
        ("## Summary\nWe talked about the launch.", False),  # legacy: no known header
        ("Plain prose summary, no headers at all.", False),
        ("### Open Issues\n- nested heading is not a section", False),
        ("", False),
        (None, False),
        (42, False),
    ],
)
def test_v2_detection_needs_one_of_the_seven_headers(text, expected):
    assert is_working_memory(text) is expected


def test_numbered_and_starred_bullets_are_items():
    body = "1. first\n2) second\n- third\n* fourth\nplain line\n\n_template line_\n### heading"
    assert section_items(body) == ["first", "second", "third", "fourth", "plain line"]


@pytest.mark.parametrize(
    "name", ["deploy.ps1", "build.cmd", "run.bat", "app.ini", "setup.cfg", "main.rs", "main.go"]
)
def test_reference_extensions_are_paths_and_protected(name):
    assert is_path_like(name)
    old = render_working_memory({"Files & Context": f"- {name}: release script"})
    result = merge_working_memory(
        old, {"Files & Context": {"op": "UPDATE", "content": "- release handled by CI"}}
    )
    assert name in parse_working_memory(result.text)["Files & Context"]
    decision = next(d for d in result.decisions if d.section == "Files & Context")
    assert decision.applied != "UPDATE"


def test_emergency_by_tokens_alone_refuses_ordinary_appends():
    # Ten long bullets: few items, but more than twice the 1,500-token threshold.
    bullets = [f"- Fact {i}: " + " ".join(f"word{i}x{j}" for j in range(160)) for i in range(10)]
    body = "\n".join(bullets)
    assert len(section_items(body)) < 25
    assert count_tokens(body) > 3_000
    old = render_working_memory({KF: body})
    result = merge_working_memory(old, {KF: {"op": "APPEND", "items": ["brand new fact"]}})
    new_body = parse_working_memory(result.text)[KF]
    assert "brand new fact" not in new_body
    assert CONSOLIDATION_SENTINEL in new_body


def test_anchors_moved_to_errors_count_as_kept_for_the_coverage_layer():
    # Both anchored values change; the model records the old ones as superseded. Every old
    # anchor is still in the document, so this is a clean update (not rejected and salvaged,
    # which would leave 5433 and FACT-017 in Key Facts as if current).
    old = render_working_memory(
        {KF: "- The database listens on port 5433\n- The release ticket is FACT-017"}
    )
    ops = {
        KF: {
            "op": "UPDATE",
            "content": "- The database listens on port 5432\n- The release ticket is FACT-018",
        },
        "Errors & Corrections": {
            "op": "APPEND",
            "items": ["superseded: port 5433 (now 5432)", "superseded: FACT-017 (now FACT-018)"],
        },
    }
    result = merge_working_memory(old, ops)
    facts = parse_working_memory(result.text)[KF]
    assert "5433" not in facts
    assert "FACT-017" not in facts
    assert "5432" in facts
    assert "FACT-018" in facts
    decision = next(d for d in result.decisions if d.section == KF)
    assert decision.applied == "UPDATE"
    assert "rejected" not in decision.reason
