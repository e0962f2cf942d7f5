"""The update protocol: tool schemas, tolerant argument parsing, section-size warnings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_langgraph.document import (
    SECTIONS,
    UPDATE_WORKING_MEMORY_TOOL,
    parse_update_arguments,
    render_working_memory,
    section_size_warnings,
    update_tool_schema,
)
from wm_langgraph.document.json_repair import CUT_MARK
from wm_langgraph.document.protocol import (
    BULLET_THRESHOLD,
    EMPTY_SECTION_SIZE_WARNINGS,
    TOKEN_THRESHOLD,
    UPDATE_TOOL_NAME,
    section_size,
)

KEEP = {"op": "KEEP"}


def _walk(node: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}[{index}]")


def _objects(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, node)
        for path, node in _walk(schema)
        if isinstance(node, dict) and node.get("type") == "object"
    ]


# --------------------------------------------------------------------------- schema


def test_reference_tool_shape() -> None:
    tool = update_tool_schema()
    assert tool == UPDATE_WORKING_MEMORY_TOOL
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == UPDATE_TOOL_NAME == "update_working_memory"
    params = function["parameters"]
    assert params["required"] == ["sections"]
    assert params["additionalProperties"] is False
    sections = params["properties"]["sections"]
    assert list(sections["properties"]) == list(SECTIONS)
    assert sections["required"] == list(SECTIONS)
    assert sections["additionalProperties"] is False
    for name in SECTIONS:
        shapes = sections["properties"][name]["oneOf"]
        ops = [shape["properties"]["op"] for shape in shapes]
        assert ops == [
            {"type": "string", "enum": ["KEEP"]},
            {"type": "string", "enum": ["UPDATE"]},
            {"type": "string", "enum": ["APPEND"]},
        ]
        assert [shape["required"] for shape in shapes] == [
            ["op"],
            ["op", "content"],
            ["op", "items"],
        ]
        assert shapes[1]["properties"]["content"]["type"] == "string"
        assert shapes[2]["properties"]["items"] == {
            **shapes[2]["properties"]["items"],
            "type": "array",
            "items": {"type": "string"},
        }
    for path, node in _objects(tool):
        assert node.get("additionalProperties") is False, path


def test_update_tool_schema_returns_independent_copies() -> None:
    first = update_tool_schema()
    first["function"]["parameters"]["properties"].clear()
    assert update_tool_schema()["function"]["parameters"]["properties"]
    assert UPDATE_WORKING_MEMORY_TOOL["function"]["parameters"]["properties"]
    strict = update_tool_schema(strict=True)
    strict["function"]["name"] = "other"
    assert update_tool_schema(strict=True)["function"]["name"] == UPDATE_TOOL_NAME


def test_strict_tool_is_accepted_by_openai_strict_rules() -> None:
    tool = update_tool_schema(strict=True)
    assert tool["function"]["strict"] is True
    assert tool["function"]["name"] == UPDATE_TOOL_NAME
    for path, node in _walk(tool):
        if isinstance(node, dict):
            assert "oneOf" not in node, path
            assert "default" not in node, path
    objects = _objects(tool)
    assert len(objects) == 3 + len(SECTIONS)  # parameters, sections, each section, an abstract
    for path, node in objects:
        assert node["additionalProperties"] is False, path
        assert sorted(node["required"]) == sorted(node["properties"]), path
    abstracts = tool["function"]["parameters"]["properties"]["abstracts"]
    assert "null" in abstracts["type"]
    assert abstracts["items"]["required"] == ["archive_id", "abstract"]
    section = tool["function"]["parameters"]["properties"]["sections"]["properties"]["Open Issues"]
    assert section["properties"]["op"]["enum"] == ["KEEP", "UPDATE", "APPEND"]
    assert "null" in section["properties"]["content"]["type"]
    assert "null" in section["properties"]["items"]["type"]


# --------------------------------------------------------------------------- parsing

FULL_OPS: dict[str, dict[str, Any]] = {
    "Session Title": {"op": "KEEP"},
    "Current State": {"op": "UPDATE", "content": 'Deploying "v2.3.1"\n- step two'},
    "Task & Goals": {"op": "KEEP"},
    "Key Facts & Decisions": {"op": "APPEND", "items": ["Port is 5432", "Chose Postgres"]},
    "Files & Context": {"op": "KEEP"},
    "Errors & Corrections": {"op": "APPEND", "items": ["HTTP 429 fixed by backoff"]},
    "Open Issues": {"op": "UPDATE", "content": "- [resolved] flaky test"},
}


def _strict_form(ops: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "sections": {
            name: {"op": op["op"], "content": op.get("content"), "items": op.get("items")}
            for name, op in ops.items()
        }
    }


def test_reference_json_string_and_dict() -> None:
    args = {"sections": FULL_OPS}
    assert parse_update_arguments(json.dumps(args)) == FULL_OPS
    assert parse_update_arguments(args) == FULL_OPS
    assert list(parse_update_arguments(args)) == list(SECTIONS)


def test_strict_variant_parses_to_the_same_ops() -> None:
    assert parse_update_arguments(_strict_form(FULL_OPS)) == FULL_OPS
    assert parse_update_arguments(json.dumps(_strict_form(FULL_OPS))) == FULL_OPS


def test_strict_variant_payload_of_the_wrong_field_is_not_lost() -> None:
    ops = parse_update_arguments(
        {
            "sections": {
                "Key Facts & Decisions": {"op": "UPDATE", "content": None, "items": ["new"]},
                "Open Issues": {"op": "APPEND", "content": "- a\n- b", "items": None},
                "Current State": {"op": "UPDATE", "content": None, "items": None},
                "Session Title": {"op": "KEEP", "content": "ignored", "items": ["ignored"]},
            }
        }
    )
    assert ops == {
        "Session Title": KEEP,
        "Key Facts & Decisions": {"op": "APPEND", "items": ["new"]},
        "Open Issues": {"op": "APPEND", "items": ["a", "b"]},
    }


def test_raw_wrapper() -> None:
    assert parse_update_arguments({"raw": json.dumps({"sections": FULL_OPS})}) == FULL_OPS


def test_missing_sections_wrapper() -> None:
    assert parse_update_arguments(json.dumps(FULL_OPS)) == FULL_OPS
    assert parse_update_arguments(FULL_OPS) == FULL_OPS


def test_sections_wrapped_twice() -> None:
    assert parse_update_arguments({"sections": {"sections": FULL_OPS}}) == FULL_OPS
    assert parse_update_arguments({"args": {"sections": FULL_OPS}}) == FULL_OPS


def test_sections_json_encoded_twice() -> None:
    inner = json.dumps({"sections": FULL_OPS})
    assert parse_update_arguments(json.dumps(inner)) == FULL_OPS
    assert parse_update_arguments({"sections": json.dumps(FULL_OPS)}) == FULL_OPS


def test_truncated_json_keeps_complete_sections_and_the_complete_part_of_the_cut_one() -> None:
    # Behaviour §3.4 (owner decision): a cut-off UPDATE/APPEND keeps its complete lines/items.
    text = json.dumps({"sections": FULL_OPS})
    cut = text.index("step two")  # inside Current State's content string, on its 2nd line
    assert parse_update_arguments(text[:cut]) == {
        "Session Title": KEEP,
        "Current State": {"op": "UPDATE", "content": 'Deploying "v2.3.1"'},
    }
    cut = text.index("Chose Postgres") + 3  # inside the second APPEND item
    assert parse_update_arguments(text[:cut]) == {
        "Session Title": KEEP,
        "Current State": FULL_OPS["Current State"],
        "Task & Goals": KEEP,
        "Key Facts & Decisions": {"op": "APPEND", "items": ["Port is 5432"]},
    }
    cut = text.index("flaky test")  # a list section's only line: nothing of it is complete
    assert "Open Issues" not in parse_update_arguments(text[:cut])


def test_unescaped_newlines_inside_strings() -> None:
    text = '{"sections": {"Current State": {"op": "UPDATE", "content": "line one\nline two\tend"}}}'
    assert parse_update_arguments(text) == {
        "Current State": {"op": "UPDATE", "content": "line one\nline two\tend"}
    }


def test_curly_quotes_as_delimiters_and_inside_content() -> None:
    text = (
        "{\u201csections\u201d: {\u201cSession Title\u201d: {\u201cop\u201d: \u201cKEEP\u201d}, "
        '"Current State": {"op": "UPDATE", "content": "she said \u201chi\u201d"}}}'
    )
    assert parse_update_arguments(text) == {
        "Session Title": KEEP,
        "Current State": {"op": "UPDATE", "content": "she said \u201chi\u201d"},
    }


def test_stray_quotes_single_quotes_trailing_commas_and_python_literals() -> None:
    text = (
        "{'sections': {'Session Title': {'op': 'UPDATE', 'content': 'Bob's \"new\" title',},"
        " 'Open Issues': {'op': 'APPEND', 'items': ['one', 'two',], 'content': None},}}"
    )
    assert parse_update_arguments(text) == {
        "Session Title": {"op": "UPDATE", "content": 'Bob\'s "new" title'},
        "Open Issues": {"op": "APPEND", "items": ["one", "two"]},
    }


def test_lowercase_ops_and_section_name_variants() -> None:
    ops = parse_update_arguments(
        {
            "sections": {
                "session title": {"op": "keep"},
                "CURRENT STATE": {"op": "Update", "content": "now"},
                "Task and Goals": {"op": " append ", "items": ["g"]},
                "key_facts_and_decisions": {"op": "keep"},
                "Files &amp; Context": {"op": "KEEP"},
                "errors & corrections": "keep",
                "Open Issues": {"op": "append", "items": ["- bullet marker removed", "", 7]},
            }
        }
    )
    assert ops == {
        "Session Title": KEEP,
        "Current State": {"op": "UPDATE", "content": "now"},
        "Task & Goals": {"op": "APPEND", "items": ["g"]},
        "Key Facts & Decisions": KEEP,
        "Files & Context": KEEP,
        "Errors & Corrections": KEEP,
        "Open Issues": {"op": "APPEND", "items": ["bullet marker removed", "7"]},
    }


def test_unknown_ops_and_invalid_values_are_absent() -> None:
    ops = parse_update_arguments(
        {
            "sections": {
                "Session Title": {"op": "DELETE", "content": "x"},
                "Current State": 42,
                "Task & Goals": "some free text that is not an op",
                "Key Facts & Decisions": {"op": "UPDATE"},
                "Not A Section": {"op": "KEEP"},
                "Open Issues": {"op": "APPEND", "items": [None, {"a": 1}]},
            }
        }
    )
    assert ops == {"Open Issues": {"op": "APPEND", "items": []}}


def test_regex_salvage_when_no_repair_parses() -> None:
    text = (
        "Here are my decisions.\n"
        "Session Title: KEEP\n"
        'Current State = {op: UPDATE, content: "Tests pass; \\"deploy\\" next"}\n'
        'Key Facts & Decisions: {op: APPEND, items: ["Port 5432", "[new] eu-west-1"'
        '\nOpen Issues: {op: UPDATE, content: "cut before the end'
    )
    assert parse_update_arguments(text) == {
        "Session Title": KEEP,
        "Current State": {"op": "UPDATE", "content": 'Tests pass; "deploy" next'},
        "Key Facts & Decisions": {"op": "APPEND", "items": ["Port 5432", "[new] eu-west-1"]},
    }


def test_code_fence_and_leading_prose() -> None:
    text = "Sure!\n```json\n" + json.dumps({"sections": FULL_OPS}) + "\n```\nDone."
    assert parse_update_arguments(text) == FULL_OPS


def test_list_of_section_entries() -> None:
    ops = parse_update_arguments(
        {
            "sections": [
                {"section": "Session Title", "op": "KEEP"},
                {"name": "Open Issues", "op": "KEEP"},
            ]
        }
    )
    assert ops == {"Session Title": KEEP, "Open Issues": KEEP}


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "   ",
        "not json at all",
        "{",
        "[]",
        "{}",
        "null",
        0,
        3.5,
        [1, "a"],
        b"\xff\xfe",
        object(),
    ],
)
def test_nothing_recoverable_gives_empty(raw: Any) -> None:
    assert parse_update_arguments(raw) == {}


def test_deeply_nested_input_does_not_raise() -> None:
    assert parse_update_arguments("[" * 100_000) == {}
    assert parse_update_arguments("{" * 100_000) == {}
    nested: dict[str, Any] = {}
    node = nested
    for _ in range(2000):
        node["args"] = {}
        node = node["args"]
    assert parse_update_arguments(nested) == {}


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from([*SECTIONS, "sections", "op", "content", "items", "raw", "x"]),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), _json_values, _json_values.map(json.dumps)))
def test_never_raises(raw: Any) -> None:
    result = parse_update_arguments(raw)
    assert set(result) <= set(SECTIONS)
    for op in result.values():
        assert op["op"] in {"KEEP", "UPDATE", "APPEND"}
        if op["op"] == "UPDATE":
            assert isinstance(op["content"], str)
        if op["op"] == "APPEND":
            assert all(isinstance(item, str) and item for item in op["items"])


# CUT_MARK (a private-use character) is removed from a model's reply by design, raw or escaped
_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters=CUT_MARK)
_item_text = st.text(_chars, min_size=1, max_size=30).filter(
    lambda s: s.strip() and s.strip() == s and not s.startswith(("- ", "* ", "+ ", "• "))
)
_op = st.one_of(
    st.just({"op": "KEEP"}),
    st.builds(lambda c: {"op": "UPDATE", "content": c}, st.text(_chars, max_size=60)),
    st.builds(lambda items: {"op": "APPEND", "items": items}, st.lists(_item_text, max_size=4)),
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(SECTIONS), _op, min_size=1),
    st.booleans(),
    st.data(),
)
def test_truncation_recovers_every_section_completed_before_the_cut(
    ops: dict[str, dict[str, Any]], strict: bool, data: st.DataObject
) -> None:
    ordered = {name: ops[name] for name in SECTIONS if name in ops}
    args = _strict_form(ordered) if strict else {"sections": ordered}
    ascii_only = data.draw(st.booleans())
    text = json.dumps(args, ensure_ascii=ascii_only)
    cut = data.draw(st.integers(0, len(text)))
    prefix = text[:cut]
    result = parse_update_arguments(prefix)
    for name, expected in ordered.items():
        # the same escaping as the whole text ("\x7f" is ASCII but escaped only by ensure_ascii)
        value_json = json.dumps(args["sections"][name], ensure_ascii=ascii_only)
        start = text.index(json.dumps(name, ensure_ascii=ascii_only) + ": ")
        if text.index(value_json, start) + len(value_json) <= cut:
            assert result.get(name) == expected, (name, prefix)
    # a cut-off UPDATE body keeps only a prefix of what was written (never invented text)
    for name, op in result.items():
        if op["op"] == "UPDATE":
            assert ordered[name]["content"].startswith(op["content"]), (name, prefix)


# --------------------------------------------------------------------------- size warnings


def _wm(**bodies: str) -> str:
    return render_working_memory({name.replace("_", " "): body for name, body in bodies.items()})


def test_no_warnings_for_small_document() -> None:
    assert section_size_warnings(_wm(Open_Issues="- one\n- two")) == ""
    assert section_size_warnings("") == ""
    assert EMPTY_SECTION_SIZE_WARNINGS == "<section_size_warnings></section_size_warnings>"


def test_bullet_threshold_is_exclusive_and_template_lines_do_not_count() -> None:
    at_limit = "\n".join(f"- fact {i}" for i in range(BULLET_THRESHOLD))
    wm = render_working_memory({"Key Facts & Decisions": "_durable facts_\n" + at_limit})
    assert section_size_warnings(wm) == ""
    over = at_limit + "\n- one more"
    block = section_size_warnings(render_working_memory({"Key Facts & Decisions": over}))
    assert block.startswith("<section_size_warnings>\n")
    assert block.endswith("\n</section_size_warnings>")
    assert "Key Facts & Decisions: 26 bullets" in block
    assert "MUST consolidate this section with UPDATE" in block
    assert f"{section_size(over).tokens:,} tokens" in block


def test_token_threshold_and_append_only_section_is_exempt() -> None:
    long_body = " ".join(["consolidate"] * (TOKEN_THRESHOLD + 10))
    assert section_size(long_body).tokens > TOKEN_THRESHOLD
    many = "\n".join(f"- error {i}" for i in range(BULLET_THRESHOLD + 5))
    block = section_size_warnings(
        render_working_memory(
            {"Files & Context": long_body, "Errors & Corrections": many, "Session Title": "T"}
        )
    )
    lines = block.splitlines()
    assert lines[0] == "<section_size_warnings>"
    assert lines[-1] == "</section_size_warnings>"
    assert len(lines) == 3
    assert lines[1].startswith("- Files & Context: 1 bullets, about ")
    assert "Errors & Corrections" not in block


def test_every_non_append_only_section_can_warn() -> None:
    many = "\n".join(f"- item {i}" for i in range(BULLET_THRESHOLD + 1))
    block = section_size_warnings(render_working_memory(dict.fromkeys(SECTIONS, many)))
    warned = [name for name in SECTIONS if f"- {name}: " in block]
    assert warned == [name for name in SECTIONS if name != "Errors & Corrections"]


@pytest.mark.parametrize(
    "body",
    [
        "\n".join(f"- fact {i}" for i in range(BULLET_THRESHOLD)),
        "\n".join(f"- fact {i}" for i in range(BULLET_THRESHOLD + 1)),
        "_template line_\n" + "\n".join(f"- fact {i}" for i in range(BULLET_THRESHOLD)),
        " ".join(["token"] * TOKEN_THRESHOLD),
        " ".join(["token"] * (TOKEN_THRESHOLD + 1)),
    ],
)
def test_prompt_warnings_and_key_facts_guard_agree_on_oversized(body: str) -> None:
    from wm_langgraph.document import guards

    warned = "Key Facts" in section_size_warnings(
        render_working_memory({"Key Facts & Decisions": body})
    )
    assert warned == section_size(body).oversized == guards.is_oversized(body)


def test_cut_mark_in_a_reply_is_ordinary_text_removed_raw_or_escaped() -> None:
    # the private-use character that marks a cut-off value internally, sent by a model (raw or
    # as a JSON escape), must not make a complete reply look cut off
    for ascii_only in (True, False):
        args = {"sections": {"Open Issues": {"op": "APPEND", "items": [f"fix login{CUT_MARK}"]}}}
        text = json.dumps(args, ensure_ascii=ascii_only)
        assert parse_update_arguments(text) == {
            "Open Issues": {"op": "APPEND", "items": ["fix login"]}
        }
