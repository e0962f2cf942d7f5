"""The size target drives the consolidation reminders: a document over its target
gets warnings for the sections holding more than their share, even below the section limits.
These tests hold the limits at the seed's (``SEED_LIMITS``) to see the target's own warnings; the
limits that follow the target are tested in ``test_section_limits.py``."""

from __future__ import annotations

from wm_langgraph.document import render_working_memory
from wm_langgraph.document.guards import SEED_LIMITS
from wm_langgraph.document.protocol import section_size_warnings as _warnings
from wm_langgraph.document.tokens import count_tokens


def section_size_warnings(document: str, **kwargs: int) -> str:
    return _warnings(document, limits=SEED_LIMITS, **kwargs)


def _doc(facts: int, files: int, errors: int = 20) -> str:
    return render_working_memory(
        {
            "Session Title": "Port inventory",
            "Current State": "Recording ports.",
            "Key Facts & Decisions": "\n".join(
                f"- FACT-{i:03d}: node-{i} listens on port {9000 + i}" for i in range(facts)
            ),
            "Files & Context": "\n".join(f"- src/pkg_{i}/mod.py: read" for i in range(files)),
            "Errors & Corrections": "\n".join(f"- error {i} fixed" for i in range(errors)),
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


def test_warnings_start_early_with_warn_from() -> None:
    document = _doc(facts=20, files=10)
    size = count_tokens(document)
    target = size + 50  # the document is within its target, but close to it
    assert section_size_warnings(document, target_tokens=target) == ""
    block = section_size_warnings(document, target_tokens=target, warn_from=size - 1)
    assert "- Key Facts & Decisions:" in block
    assert f"close to its target of {target:,} tokens" in block
    assert "Errors & Corrections" not in block
    assert section_size_warnings(document, target_tokens=target, warn_from=size + 1) == ""


def test_the_update_prompt_warns_a_document_close_to_its_target() -> None:
    from wm_langgraph.document.protocol import TARGET_WARN_SHARE
    from wm_langgraph.writer.prompts import render_update_prompt

    document = _doc(facts=7, files=2, errors=0)  # under every target's limits (8 bullets)
    size = count_tokens(document)
    near = int(size / ((1 + TARGET_WARN_SHARE) / 2))  # the document is ~95% of this target
    prompt = render_update_prompt(working_memory=document, messages="", size_target=near)
    assert "- Key Facts & Decisions:" in prompt
    assert "close to its target" in prompt
    far = int(size / (TARGET_WARN_SHARE - 0.2))
    prompt = render_update_prompt(working_memory=document, messages="", size_target=far)
    assert "- Key Facts & Decisions:" not in prompt
