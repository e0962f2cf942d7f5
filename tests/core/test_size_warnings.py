"""The size target drives the consolidation reminders (issue 11): a document over its target
gets warnings for the sections holding more than their share, even below the fixed limits."""

from __future__ import annotations

from wm_langgraph import render_working_memory, section_size_warnings
from wm_langgraph.core.tokens import count_tokens


def _doc(facts: int, files: int) -> str:
    return render_working_memory(
        {
            "Session Title": "Port inventory",
            "Current State": "Recording ports.",
            "Key Facts & Decisions": "\n".join(
                f"- FACT-{i:03d}: node-{i} listens on port {9000 + i}" for i in range(facts)
            ),
            "Files & Context": "\n".join(f"- src/pkg_{i}/mod.py: read" for i in range(files)),
            "Errors & Corrections": "\n".join(f"- error {i} fixed" for i in range(20)),
        }
    )


def test_no_target_keeps_the_fixed_thresholds() -> None:
    document = _doc(facts=20, files=10)
    assert section_size_warnings(document) == ""


def test_a_document_over_its_target_warns_the_sections_over_their_share() -> None:
    document = _doc(facts=20, files=10)
    target = count_tokens(document) // 2
    block = section_size_warnings(document, target_tokens=target)
    assert block.startswith("<section_size_warnings>")
    assert "- Key Facts & Decisions:" in block
    assert f"target {target:,} tokens" in block
    assert "Errors & Corrections" not in block  # append-only: never asked to consolidate
    assert "Session Title" not in block


def test_a_document_within_its_target_gets_no_warning() -> None:
    document = _doc(facts=20, files=10)
    assert section_size_warnings(document, target_tokens=count_tokens(document) + 1) == ""
