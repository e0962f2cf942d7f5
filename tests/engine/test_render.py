"""Rendering messages for the create/update prompts, message sizes, and the artifact trail."""

from __future__ import annotations

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.messages import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    content_text,
    message_tokens,
    render_messages,
    truncate_text,
)
from wm_langgraph.phase2.trails import extract_paths_from_messages


def _tool_turn() -> list[BaseMessage]:
    return [
        HumanMessage("Please fix the crash in the app", id="h1"),
        AIMessage(
            "Reading the file first.",
            tool_calls=[{"name": "read_file", "args": {"path": "src/app.py"}, "id": "call_1"}],
            id="a1",
        ),
        ToolMessage("def main():\n    raise KeyError('x')", tool_call_id="call_1", id="t1"),
        AIMessage("The KeyError comes from main().", id="a2"),
    ]


def test_renders_roles_text_tool_inputs_and_results_in_order() -> None:
    text = render_messages(_tool_turn())
    blocks = text.split("\n\n")
    assert blocks[0] == "[user]\nPlease fix the crash in the app"
    assert blocks[1].startswith("[assistant]\nReading the file first.\n")
    # the tool input is visible: name, id and JSON arguments
    assert 'tool call read_file (id call_1): {"path": "src/app.py"}' in blocks[1]
    # the tool result names its tool (looked up from the call), status and output
    assert blocks[2] == (
        "[tool result read_file, status=success, id call_1]\ndef main():\n    raise KeyError('x')"
    )
    assert blocks[3] == "[assistant]\nThe KeyError comes from main()."


def test_error_status_and_explicit_tool_name_are_shown() -> None:
    message = ToolMessage("boom", tool_call_id="c9", name="shell", status="error")
    assert render_messages([message]).startswith("[tool result shell, status=error, id c9]\nboom")


def test_parallel_tool_calls_each_rendered_with_their_results() -> None:
    messages: list[BaseMessage] = [
        AIMessage(
            "",
            tool_calls=[
                {"name": "grep", "args": {"pattern": "TODO"}, "id": "p1"},
                {"name": "ls", "args": {"dir": "docs"}, "id": "p2"},
            ],
        ),
        ToolMessage("docs/a.md", tool_call_id="p2"),
        ToolMessage("3 hits", tool_call_id="p1"),
    ]
    text = render_messages(messages)
    assert 'tool call grep (id p1): {"pattern": "TODO"}' in text
    assert 'tool call ls (id p2): {"dir": "docs"}' in text
    assert "[tool result ls, status=success, id p2]\ndocs/a.md" in text
    assert "[tool result grep, status=success, id p1]\n3 hits" in text


def test_long_tool_output_is_capped_with_a_visible_marker_keeping_both_ends() -> None:
    output = "START " + "lorem ipsum dolor " * 3000 + " END-OF-OUTPUT"
    text = render_messages(
        [ToolMessage(output, tool_call_id="c", name="cat")], max_tool_output_tokens=100
    )
    assert "tokens truncated …]" in text
    assert "START" in text
    assert "END-OF-OUTPUT" in text
    assert count_tokens(text) < 150
    assert count_tokens(output) > 5000


def test_long_tool_arguments_are_capped_too() -> None:
    content = "x = 1\n" * 5000
    message = AIMessage(
        "",
        tool_calls=[
            {"name": "write_file", "args": {"path": "a.py", "content": content}, "id": "w"}
        ],
    )
    text = render_messages([message], max_tool_output_tokens=50)
    assert text.startswith('[assistant]\ntool call write_file (id w): {"path": "a.py"')
    assert "tokens truncated …]" in text
    assert count_tokens(text) < 120


def test_short_output_is_not_marked() -> None:
    text = render_messages(
        [ToolMessage("ok", tool_call_id="c", name="t")], max_tool_output_tokens=5
    )
    assert "truncated" not in text


def test_content_blocks_images_and_unknown_blocks() -> None:
    message = HumanMessage(
        content=[
            {"type": "text", "text": "What is in"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            "this picture?",
            {"type": "audio", "data": "..."},
        ]
    )
    assert render_messages([message]) == "[user]\nWhat is in\n[image]\nthis picture?\n[audio]"
    assert "base64" not in render_messages([message])


def test_anthropic_style_tool_use_block_is_not_rendered_twice_and_reasoning_is_left_out() -> None:
    message = AIMessage(
        content=[
            {"type": "thinking", "thinking": "private chain of thought"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "x.py"}},
        ],
        tool_calls=[{"name": "read_file", "args": {"path": "x.py"}, "id": "tu1"}],
    )
    text = render_messages([message])
    assert text == '[assistant]\nLet me look.\ntool call read_file (id tu1): {"path": "x.py"}'


def test_invalid_and_legacy_function_calls_are_shown() -> None:
    invalid = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "edit", "args": '{"path": "a.py",', "id": "i1", "error": "bad json"}
        ],
    )
    legacy = AIMessage(
        "", additional_kwargs={"function_call": {"name": "search", "arguments": '{"q": "x"}'}}
    )
    text = render_messages([invalid, legacy])
    assert 'invalid tool call edit (id i1): {"path": "a.py", [error: bad json]' in text
    assert 'tool call search: {"q": "x"}' in text


def test_other_roles_names_and_remove_markers() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("be brief"),
        ChatMessage(role="critic", content="too long"),
        HumanMessage("hi", name="ana"),
        RemoveMessage(id="gone"),
    ]
    assert (
        render_messages(messages) == "[system]\nbe brief\n\n[critic]\ntoo long\n\n[user (ana)]\nhi"
    )


def test_never_raises_on_odd_content() -> None:
    class Weird:
        def __str__(self) -> str:
            raise RuntimeError("no str")

    odd = HumanMessage.model_construct(content=[{"no_type": 1}, 42, None, {"type": "text"}])
    circular: dict[str, object] = {}
    circular["self"] = circular
    calls = AIMessage.model_construct(
        content=None,
        tool_calls=[{"name": "t", "args": {"w": Weird(), "c": circular}, "id": "z"}],
        invalid_tool_calls=[],
        additional_kwargs={},
    )
    text = render_messages([odd, calls])
    assert text.startswith("[user]")
    assert "tool call t (id z)" in text
    assert message_tokens(odd) > 0
    assert content_text(None) == ""
    assert content_text({"type": "image"}) == "[image]"


def test_render_rejects_negative_cap_and_renders_nothing_for_no_messages() -> None:
    assert render_messages([]) == ""
    with pytest.raises(ValueError, match="max_tool_output_tokens"):
        render_messages([], max_tool_output_tokens=-1)


def test_message_tokens_counts_everything_uncapped() -> None:
    big = "token " * 4000
    tool = ToolMessage(big, tool_call_id="c", name="cat")
    assert message_tokens(tool) >= count_tokens(big)
    call = AIMessage("", tool_calls=[{"name": "write", "args": {"body": big}, "id": "c"}])
    assert message_tokens(call) >= count_tokens(big)
    plain = HumanMessage("hello world")
    # the text plus the per-message overhead, which pays for the role (OpenAI's accounting)
    assert message_tokens(plain) == count_tokens("hello world") + MESSAGE_OVERHEAD_TOKENS
    named = HumanMessage("hello world", name="ana")  # a name is sent: it counts
    assert message_tokens(named) > message_tokens(plain)


def test_message_tokens_charges_images_and_takes_a_custom_counter() -> None:
    with_image = HumanMessage(content=[{"type": "image_url", "image_url": {"url": "x"}}])
    assert message_tokens(with_image) >= IMAGE_TOKENS
    assert message_tokens(HumanMessage("abc"), counter=len) == len("abc") + 4


def test_truncate_text() -> None:
    assert truncate_text("short", 10) == "short"
    cut = truncate_text("alpha " * 1000 + "omega", 30)
    assert cut.startswith("alpha")
    assert cut.endswith("omega")
    assert "tokens truncated" in cut
    assert truncate_text("abc" * 50, 0, counter=len).startswith("\n[… 150 tokens truncated …]")
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_text("x", -1)


def test_artifact_trail_takes_the_paths_acted_on_in_order_unique() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("look at notes/ideas.md please"),  # named by the user
        AIMessage(
            "",
            tool_calls=[
                {"name": "read_file", "args": {"path": "src/app.py"}, "id": "1"},
                {
                    "name": "grep",
                    "args": {"pattern": "x", "paths": ["lib/util.py", "src/app.py"]},
                    "id": "2",
                },
            ],
        ),
        ToolMessage("see tests/test_app.py and lib/util.py", tool_call_id="2"),  # not acted on
        ToolMessage(content=[{"type": "text", "text": "wrote docs/guide.md"}], tool_call_id="1"),
        AIMessage(
            "",
            invalid_tool_calls=[
                {"name": "e", "args": '{"path": "conf/app.toml"', "id": "3", "error": None}
            ],
        ),
        AIMessage(
            "",
            additional_kwargs={
                "function_call": {"name": "f", "arguments": '{"file": "C:\\\\proj\\\\run.bat"}'}
            },
        ),
    ]
    trail = extract_paths_from_messages(messages)
    assert trail[:5] == [
        "notes/ideas.md",
        "src/app.py",
        "lib/util.py",
        "docs/guide.md",
        "conf/app.toml",
    ]
    assert "tests/test_app.py" not in trail
    assert len(trail) == len(set(trail))
    assert any("run.bat" in p for p in trail)


def test_artifact_trail_takes_a_path_the_user_or_assistant_names() -> None:
    assert extract_paths_from_messages(
        [HumanMessage("edit src/x.py"), AIMessage("done src/x.py")]
    ) == ["src/x.py"]
