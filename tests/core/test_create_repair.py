"""Create replies of a real small model (Qwen2.5-Coder-0.5B-Instruct under llama.cpp): repaired
to seven top-level sections or rejected, never accepted in their broken shape.

The replies below are what the model wrote (shortened where noted). ``create_prompt_v1.md`` is
the create prompt it was given at the time, so the echo of that prompt's own text is recognised.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.document.create_repair import repair_created_document, template_lines
from wm_langgraph.testing import ScriptedChatModel
from wm_langgraph.writer.generate import GenerationError, generate_create, validate_created_document
from wm_langgraph.writer.prompts import load_prompt

PROMPT_V1 = (Path(__file__).parent / "data" / "create_prompt_v1.md").read_text(encoding="utf-8")

CONVERSATION = (
    "user: Please fix the failing test in tests/test_orders.py; the API is in src/orders/api.py.\n"
    "tool run_tests: FAILED tests/test_orders.py::test_total - AssertionError: expected 42.50\n"
)

# Fenced, the value on the header line, the prompt's own "## Rules" copied.
FENCED_COLON_RULES = """```markdown
# Working Memory

## Session Title: Fixing the order total test in the orders API
## Current State: The test tests/test_orders.py::test_total fails; format_total is next.
## Task & Goals: Make tests/test_orders.py pass.
## Key Facts & Decisions:
- The API lives in src/orders/api.py.
## Files & Context:
- tests/test_orders.py: the failing test.
## Errors & Corrections:
- AssertionError: expected 42.50, got 42.5 in test_total.
## Open Issues:

## Rules

1. Carry the earlier notes forward: everything in them that is still true stays in the new document, moved into the right section if the earlier notes had another layout. When the messages change or contradict an earlier fact, write the current value and record the old one in Errors & Corrections.
5. Invent nothing. Write only what the earlier notes or the messages say or directly imply; mark uncertainty as such.
```"""  # noqa: E501


def _sections(text: str) -> dict[str, str]:
    return parse_working_memory(text)


def test_fenced_colon_headed_reply_with_copied_rules_is_repaired() -> None:
    reply = FENCED_COLON_RULES
    document = validate_created_document(reply, template=PROMPT_V1, source=CONVERSATION)
    sections = _sections(document)
    assert sections["Session Title"] == "Fixing the order total test in the orders API"
    assert sections["Current State"].startswith("The test tests/test_orders.py::test_total fails")
    assert sections["Task & Goals"] == "Make tests/test_orders.py pass."
    assert sections["Key Facts & Decisions"] == "- The API lives in src/orders/api.py."
    assert "AssertionError: expected 42.50" in sections["Errors & Corrections"]
    assert "Rules" not in document
    assert "Carry the earlier notes forward" not in document
    assert "###" not in document


def test_nested_and_labelled_headers_come_to_the_top_level() -> None:
    reply = (
        "Here is the Working Memory:\n\n# Working Memory\n\n"
        "### Session Title\nOrders API total formatting fix\n\n"
        "#### Current State\nThe fix is in review.\n\n"
        "**Task & Goals:** Make the orders tests pass.\n\n"
        "- **Key Facts & Decisions**: Python 3.11, FastAPI 0.110.\n\n"
        "Files & Context:\n- src/orders/api.py: format_total\n"
    )
    sections = _sections(validate_created_document(reply, source=CONVERSATION))
    assert sections["Session Title"] == "Orders API total formatting fix"
    assert sections["Current State"] == "The fix is in review."
    assert sections["Task & Goals"] == "Make the orders tests pass."
    assert sections["Key Facts & Decisions"] == "Python 3.11, FastAPI 0.110."
    assert sections["Files & Context"] == "- src/orders/api.py: format_total"
    assert "Here is the Working Memory" not in validate_created_document(reply)


def test_a_reply_that_only_copies_the_prompt_is_rejected() -> None:
    # What the model wrote for its first create call: the prompt from the skeleton on, verbatim.
    for template in (PROMPT_V1, load_prompt("create")):
        start = template.index("# Working Memory")
        inputs = template.find("<prior_summary>", start)
        echo = template[start : inputs if inputs > 0 else None]
        with pytest.raises(GenerationError, match="no content"):
            validate_created_document(echo, template=template, source=CONVERSATION)


def test_copied_section_descriptions_do_not_become_items() -> None:
    reply = (
        "# Working Memory\n\n## Session Title\nOrders API total formatting fix\n\n"
        "## Current State\n"
        "- **Current State**: 2 to 5 sentences describing where things stand right now: what was "
        "just done, what is in progress or waiting, and the next step. A snapshot, not a list of "
        "facts.\nThe test fails.\n"
    )
    sections = _sections(validate_created_document(reply, template=PROMPT_V1))
    assert sections["Current State"] == "The test fails."


def test_reworded_template_lines_and_a_second_title_are_dropped() -> None:
    # What the model wrote for a prompt whose skeleton carried italic description lines.
    reply = (
        "```markdown\n## Working Memory\n\n## Session Title\n"
        "One line, 5 to 10 words, naming this session's subject_\n## Current State\n"
        "Two to five sentences: what was just done, what is waiting, the next step_\n```"
    )
    template = (
        "## Session Title\n_one line, 5 to 10 words, naming this session's subject_\n"
        "## Current State\n_2 to 5 sentences: what was just done, what is waiting, the next step_\n"
    )
    with pytest.raises(GenerationError, match="no content"):
        validate_created_document(reply, template=template, source=CONVERSATION)


def test_a_template_line_the_conversation_contains_is_content() -> None:
    line = "5. Invent nothing. Write only what the earlier notes or the messages say or directly imply; mark uncertainty as such."  # noqa: E501
    reply = f"## Session Title\nReviewing our prompt\n\n## Key Facts & Decisions\n{line}\n"
    document = validate_created_document(reply, template=PROMPT_V1, source=f"user: {line[3:]}")
    assert "Invent nothing" in _sections(document)["Key Facts & Decisions"]


def test_html_entities_are_unescaped_unless_the_conversation_has_them() -> None:
    reply = (
        "## Session Title\nFixing the orders API&#39;s total\n\n"
        "## Task &amp; Goals\nKeep `&lt;div&gt;` markup &amp; the &quot;total&quot; field.\n"
    )
    source = "tool read_file: <p>&lt;div&gt;</p>"
    sections = _sections(validate_created_document(reply, source=source))
    assert sections["Session Title"] == "Fixing the orders API's total"
    assert sections["Task & Goals"] == 'Keep `&lt;div&gt;` markup & the "total" field.'


def test_the_create_path_repairs_what_the_model_replies() -> None:
    model = ScriptedChatModel(replies=[FENCED_COLON_RULES])
    document = generate_create(model, prior="", messages_text=CONVERSATION, prompt=PROMPT_V1)
    assert _sections(document)["Session Title"] == "Fixing the order total test in the orders API"
    assert "Carry the earlier notes forward" not in document


def test_template_lines_skip_the_skeleton_and_placeholders() -> None:
    lines = template_lines(load_prompt("create"))
    assert "## session title" not in lines
    assert not any("{{" in line for line in lines)
    assert all(f"## {name}".casefold() not in lines for name in SECTIONS)


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 ./-", min_size=1, max_size=30)
_BODY = st.lists(_WORD.map(lambda w: f"- item {w}"), max_size=4).map("\n".join)


@given(st.fixed_dictionaries(dict.fromkeys(SECTIONS, _BODY)))
def test_a_well_formed_document_passes_unchanged(bodies: dict[str, str]) -> None:
    document = render_working_memory(bodies)
    assert repair_created_document(document, template=load_prompt("create")) == document


def test_drop_echoed_lines_filters_update_ops_but_keeps_what_the_source_said():
    from wm_langgraph.document.create_repair import drop_echoed_lines
    from wm_langgraph.writer.prompts import load_prompt

    template = load_prompt("update")
    copied = next(line.strip() for line in template.splitlines() if line.startswith("KEEP copies"))
    ops = {
        "Current State": {"op": "UPDATE", "content": f"Exporter migrated.\n{copied}"},
        "Key Facts & Decisions": {"op": "APPEND", "items": [copied, "Port 6543", 7]},
        "Open Issues": "KEEP",
    }
    out, dropped = drop_echoed_lines(ops, template=template, source="")
    assert out["Current State"]["content"] == "Exporter migrated."
    assert out["Key Facts & Decisions"]["items"] == ["Port 6543", 7]
    assert out["Open Issues"] == "KEEP"
    assert dropped == {"Current State": 1, "Key Facts & Decisions": 1}
    # a line the conversation itself contains is content
    kept, none = drop_echoed_lines(ops, template=template, source=f"user: {copied}")
    assert none == {}
    assert kept == ops


def test_a_reworded_prompt_line_that_keeps_a_long_run_of_it_is_echo():
    """A real writer began Files & Context with the update prompt's size-warning caption in its
    own words around a verbatim run of it; a line that shares a short phrase stays."""
    from wm_langgraph.document.create_repair import drop_echoed_lines
    from wm_langgraph.writer.prompts import load_prompt

    template = load_prompt("update")
    echoes = [
        "The session has grown too large (an empty block means every section is within its limits)",
        "- Note: sections that have grown too large (an empty block means …)",
    ]
    content = "\n".join(["src/orders/api.py", *echoes, "- docs/limits.md: the section limits"])
    ops = {"Files & Context": {"op": "UPDATE", "content": content}}
    out, dropped = drop_echoed_lines(ops, template=template, source="")
    assert out["Files & Context"]["content"] == (
        "src/orders/api.py\n- docs/limits.md: the section limits"
    )
    assert dropped == {"Files & Context": 2}
    # the conversation said it: content, not echo
    kept, none = drop_echoed_lines(ops, template=template, source="\n".join(echoes))
    assert none == {}
    assert kept == ops
