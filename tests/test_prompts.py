"""The shipped prompts: placeholders, tags, content rules, loading and rendering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wm_langgraph.document import SECTIONS, render_working_memory
from wm_langgraph.document.protocol import BULLET_THRESHOLD, EMPTY_SECTION_SIZE_WARNINGS
from wm_langgraph.writer import prompts as prompts_module
from wm_langgraph.writer.prompts import (
    NO_PRIOR_SUMMARY,
    PROMPT_PLACEHOLDERS,
    check_prompt,
    load_prompt,
    placeholders,
    render_create_prompt,
    render_prompt,
    render_update_prompt,
)

REPO_PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
NAMES = ("create", "update", "system")

# The tag each placeholder is wrapped in (the offline model and tracing rely on these).
TAGGED = {
    "prior_summary": "<prior_summary>\n{{prior_summary}}\n</prior_summary>",
    "messages": "<messages>\n{{messages}}\n</messages>",
    "working_memory": "<working_memory>\n{{working_memory}}\n</working_memory>",
    "section_size_warnings": "\n{{section_size_warnings}}\n",
}


@pytest.mark.parametrize("name", NAMES)
def test_prompt_has_exactly_its_documented_placeholders(name: str) -> None:
    text = load_prompt(name)  # type: ignore[arg-type]
    assert placeholders(text) == PROMPT_PLACEHOLDERS[name]
    assert check_prompt(name, text) == text  # type: ignore[arg-type]
    for placeholder in PROMPT_PLACEHOLDERS[name]:
        assert text.count("{{" + placeholder + "}}") == 1
        assert TAGGED[placeholder] in text
        # documented in the loader's module docstring
        assert "{{" + placeholder + "}}" in (prompts_module.__doc__ or "")
    # no stray braces that look like a placeholder with a typo
    assert re.findall(r"\{\{[^}]*\}\}", text) == [
        m.group(0) for m in re.finditer(r"\{\{[A-Za-z_]\w*\}\}", text)
    ]


@pytest.mark.parametrize("name", NAMES)
def test_loaded_text_is_the_repository_file(name: str) -> None:
    assert load_prompt(name) == (REPO_PROMPTS / f"{name}.md").read_text(encoding="utf-8")  # type: ignore[arg-type]


def test_unknown_prompt_name() -> None:
    with pytest.raises(ValueError, match="unknown prompt 'summary'"):
        load_prompt("summary")  # type: ignore[arg-type]


def test_create_prompt_substance() -> None:
    text = load_prompt("create")
    for name in SECTIONS:
        assert f"\n## {name}\n" in text
    assert "\n# Working Memory\n" in text
    for needle in (
        "2,000 tokens per section",
        "12,000 tokens",
        "Invent nothing",
        "13 November 2041",
        "language",
    ):
        assert needle in text


@pytest.mark.parametrize("name", ["create", "update"])
def test_prompts_carry_no_benchmark_date(name: str) -> None:
    # The relative-date example once used 8 May -> 7 May, the first date and a gold answer of
    # a public chat benchmark; examples must come from nowhere a benchmark could score.
    text = load_prompt(name)  # type: ignore[arg-type]
    assert "May" not in text
    assert "13 November 2041" in text


def test_create_prompt_does_not_offer_the_headers_alone_as_an_answer() -> None:
    text = load_prompt("create")
    assert "header line alone" not in text
    assert "never an answer" in text


def test_update_prompt_substance() -> None:
    text = load_prompt("update")
    for rule in range(5):
        assert f"## Rule {rule}" in text
    for name in SECTIONS:
        assert f"**{name}**" in text
    for needle in (
        "update_working_memory",
        "exactly once",
        "KEEP",
        "UPDATE",
        "APPEND",
        "[resolved]",
        "[new]",
    ):
        assert needle in text
    # the targets are the memory's own (they follow its size), stated by the size warnings
    assert "targets the warning gives" in text
    assert f"at most {BULLET_THRESHOLD} bullets" not in text


def test_system_prompt_substance() -> None:
    text = load_prompt("system")
    assert "[Session History Summary]" in text
    assert "trust the recent messages" in text
    assert "ask the user" in text


def test_render_prompt_replaces_each_placeholder() -> None:
    assert render_prompt("a {{x}} b {{y}} {{x}}", x="1", y="2") == "a 1 b 2 1"
    assert render_prompt("no placeholders") == "no placeholders"


def test_render_prompt_does_not_expand_placeholders_inside_values() -> None:
    out = render_prompt(
        "<m>{{messages}}</m><w>{{working_memory}}</w>",
        messages="see {{working_memory}}",
        working_memory="WM",
    )
    assert out == "<m>see {{working_memory}}</m><w>WM</w>"
    assert render_prompt("{{x}}", x=r"\1 \g<0>") == r"\1 \g<0>"


def test_render_prompt_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"no value for placeholder\(s\) \['messages'\]"):
        render_prompt("{{messages}} {{x}}", x="1")
    with pytest.raises(ValueError, match=r"not in the template \['extra'\]"):
        render_prompt("{{x}}", x="1", extra="2")
    with pytest.raises(TypeError, match="'x' must be a str"):
        render_prompt("{{x}}", x=3)  # type: ignore[arg-type]


def test_check_prompt_rejects_wrong_templates() -> None:
    with pytest.raises(ValueError, match=r"missing \['messages'\]"):
        check_prompt("create", "{{prior_summary}} only")
    with pytest.raises(ValueError, match=r"unknown \['wm'\]"):
        check_prompt("system", "{{wm}}")
    with pytest.raises(TypeError):
        check_prompt("update", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown prompt"):
        check_prompt("other", "")  # type: ignore[arg-type]


def test_render_create_prompt() -> None:
    out = render_create_prompt(prior_summary="   ", messages="user: hi {{prior_summary}}")
    assert f"<prior_summary>\n{NO_PRIOR_SUMMARY}\n</prior_summary>" in out
    assert "<messages>\nuser: hi {{prior_summary}}\n</messages>" in out
    out = render_create_prompt(
        prior_summary="old notes", messages="m", template="{{prior_summary}}|{{messages}}"
    )
    assert out == "old notes|m"


def test_render_update_prompt_with_and_without_warnings() -> None:
    small = render_working_memory({"Session Title": "Trip to Kyoto"})
    out = render_update_prompt(working_memory=small, messages="user: hello")
    assert f"<working_memory>\n{small}\n</working_memory>" in out
    assert f"\n{EMPTY_SECTION_SIZE_WARNINGS}\n" in out
    assert "{{" not in out
    big = render_working_memory(
        {"Open Issues": "\n".join(f"- issue {i}" for i in range(BULLET_THRESHOLD + 1))}
    )
    out = render_update_prompt(working_memory=big, messages="user: hello")
    block = re.search(r"<section_size_warnings>\n(.*?)\n</section_size_warnings>", out, re.S)
    assert block is not None
    assert block.group(1).startswith("- Open Issues: 26 bullets")


@pytest.mark.parametrize("name", ["create", "update"])
def test_prompts_carry_no_copyable_example_content(name: str) -> None:
    # A real small model copied the create prompt's example title ("Migrating the billing
    # service ...") into every new WM and the update prompt's example pattern bullet into Task &
    # Goals. The prompts describe what to write; they quote no sample content.
    text = load_prompt(name)  # type: ignore[arg-type]
    quoted = re.findall(r"\"([^\"\n]+)\"", text)
    assert [q for q in quoted if len(q.split()) >= 3] == []
    assert "Migrating the billing service" not in text
    assert "failures so far on 3 May and 9 May" not in text


def test_create_prompt_structure() -> None:
    # Its own parts are not `##` headers a model could copy into the document as sections, and
    # the conversation comes last: a small model given the skeleton last wrote it back empty,
    # and the fixed instructions first make a prefix that servers can cache across calls.
    text = load_prompt("create")
    skeleton = ["# Working Memory", *(f"## {name}" for name in SECTIONS)]
    assert [line for line in text.splitlines() if line.startswith("#")] == skeleton
    assert text.index("## Open Issues") < text.index("<prior_summary>") < text.index("<messages>")
    assert text.rstrip().splitlines()[-1].startswith("Now write the Working Memory")
