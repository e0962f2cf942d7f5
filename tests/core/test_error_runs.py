"""Which tool results may give an error (``session_paths.runs_here``, the error trail): only a
run of the session's own — a command, a test run, a file operation, or any run whose result
says it failed — never a page fetched, a search, a lookup, or a file's text read back."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from wm_langgraph.document.text.session_paths import ToolCall, runs_here
from wm_langgraph.phase2.capture import unit_candidates
from wm_langgraph.phase2.trails import extract_errors_from_messages

ERROR_OUTPUT = "E   ValueError: the payments API key must be sent in the query string"


@pytest.mark.parametrize(
    ("call", "own"),
    [
        (ToolCall("run_tests", {"path": "tests/"}), True),
        (ToolCall("run_tests", {}), True),
        (ToolCall("bash", {"command": "pytest -q tests/test_pay.py"}), True),
        (ToolCall("python", {"code": "import billing; billing.run()"}), True),
        (ToolCall("edit_file", {"path": "src/pay.py", "new": "x = 1"}), True),
        (ToolCall("file_tool", {"path": "src/pay.py"}), True),
        (ToolCall("fetch_url", {"url": "https://docs.example.com/v2"}), False),
        (ToolCall("bash", {"command": "curl -s docs.example.com/v2 | head"}), False),
        (ToolCall("bash", {"command": "wget https://docs.example.com/v2"}), False),
        (ToolCall("web_search", {"query": "ValueError payments API key"}), False),
        (ToolCall("lookup", {"key": "payments"}), False),
        (ToolCall("read_file", {"path": "KNOWN_ISSUES.md"}), False),
        (ToolCall("grep", {"pattern": "Error", "path": "logs/"}), False),
        (ToolCall("getLatestNews", {}), False),
        (ToolCall("run_tests", {"url": "https://ci.example.com/runs/1"}), False),
    ],
)
def test_a_run_is_the_sessions_own_unless_it_fetches_or_reads(call: ToolCall, own: bool) -> None:
    assert runs_here(call) is own


def _result(name: str, args: dict[str, object], *, status: str = "success") -> list[object]:
    call = {"name": name, "args": args, "id": f"call_{name}", "type": "tool_call"}
    return [
        AIMessage("", tool_calls=[call]),
        ToolMessage(ERROR_OUTPUT, tool_call_id=f"call_{name}", name=name, status=status),
    ]


def test_the_error_trail_reads_only_the_sessions_own_runs() -> None:
    fetched = extract_errors_from_messages(_result("fetch_url", {"url": "https://x.example"}))
    read = extract_errors_from_messages(_result("read_file", {"path": "NOTES.md"}))
    ran = extract_errors_from_messages(_result("run_tests", {"path": "tests/"}))
    assert fetched == read == []
    assert ran == [
        "ValueError: the payments API key must be sent in the query string (reported by run_tests)"
    ]


def test_a_run_whose_status_says_it_failed_is_the_sessions_own_whatever_the_tool() -> None:
    # the fetch itself failed: its own error, not the text of a page
    failed = extract_errors_from_messages(
        _result("fetch_url", {"url": "https://x.example"}, status="error")
    )
    assert failed == [
        "ValueError: the payments API key must be sent in the query string (reported by fetch_url)"
    ]


def _turn(tool: str, args: dict[str, object], output: str, reply: str) -> list[BaseMessage]:
    call = {"name": tool, "args": args, "id": "c1", "type": "tool_call"}
    return [
        HumanMessage("What does it say?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage(output, tool_call_id="c1", name=tool),
        AIMessage(reply),
    ]


def _error_units(messages: list[BaseMessage]) -> list[str]:
    return [c.text for c in unit_candidates(messages) if c.kind == "error"]


def test_the_capture_check_takes_an_error_the_assistant_quotes_only_from_the_sessions_run() -> None:
    said = "The failure was `KeyError: 'tenant_749' raised in retry_policy.load()`, I will fix it."
    log = "E       KeyError: 'tenant_749' raised in retry_policy.load()\n1 failed, 20 passed"
    ran = _turn("run_tests", {"target": "tests/unit/test_retry.py"}, log, said)
    fetched = _turn("fetch_url", {"url": "https://docs.example.com"}, log, said)
    assert any("tenant_749" in u for u in _error_units(ran))
    assert _error_units(fetched) == []


def test_the_capture_check_takes_no_error_from_a_pasted_traceback() -> None:
    pasted = (
        "It crashed last night:\n```\nTraceback (most recent call last):\n"
        '  File "billing/nightly.py", line 41, in <module>\n'
        "KeyError: 'tenant_42'\n```\nThe job then failed with a TypeError in my own run too."
    )
    units = _error_units([HumanMessage(pasted), AIMessage("I will look.")])
    assert not [u for u in units if "tenant_42" in u]
