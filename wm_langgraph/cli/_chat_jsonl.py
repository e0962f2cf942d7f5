"""Read a chat transcript in JSONL: one OpenAI-style chat message per line.

Private helper of the CLI (``replay``) and the demo. Each line is an object such as::

    {"role": "user", "content": "Please fix src/app.py"}
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "read_file", "arguments": "{\\"path\\": \\"src/app.py\\"}"}}]}
    {"role": "tool", "tool_call_id": "call_1", "content": "def main(): ..."}

Roles: ``system``, ``developer`` (as system), ``user``, ``assistant``, ``tool``. ``content`` is a
string, a list of content parts or null. Bad lines are not fatal: each one is reported with its
line number and the reason, and every valid line is still returned.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

__all__ = ["BadLine", "Transcript", "load_chat_jsonl", "parse_chat_lines", "split_turns"]

_ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that was skipped, with its 1-based number and the reason."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(slots=True)
class Transcript:
    """The valid messages of a transcript (in order) and the lines that were skipped."""

    messages: list[BaseMessage] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)


class _LineError(ValueError):
    """One line cannot be used; the message is the reason shown to the user."""


def _content(record: Mapping[str, Any]) -> str | list[str | dict[str, Any]]:
    content = record.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, (str, dict)) for p in content):
        return list(content)
    raise _LineError(f"'content' must be a string, a list of parts or null, got {_kind(content)}")


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else type(value).__name__


def _tool_calls(record: Mapping[str, Any]) -> list[ToolCall]:
    raw = record.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _LineError(f"'tool_calls' must be a list, got {_kind(raw)}")
    calls: list[ToolCall] = []
    for index, call in enumerate(raw):
        where = f"tool_calls[{index}]"
        if not isinstance(call, Mapping):
            raise _LineError(f"{where} must be an object, got {_kind(call)}")
        function = call.get("function", call)
        if not isinstance(function, Mapping):
            raise _LineError(f"{where}.function must be an object")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise _LineError(f"{where}.function.name is missing")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise _LineError(f"{where}.id is missing (a tool result must be able to refer to it)")
        arguments = function.get("arguments", function.get("args", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                raise _LineError(f"{where}.function.arguments is not valid JSON ({exc})") from exc
        if not isinstance(arguments, dict):
            raise _LineError(f"{where}.function.arguments must be a JSON object")
        calls.append(ToolCall(name=name, args=arguments, id=call_id, type="tool_call"))
    return calls


def _message(record: object, open_calls: dict[str, str]) -> BaseMessage:
    if not isinstance(record, Mapping):
        raise _LineError(f"expected a JSON object (one chat message), got {_kind(record)}")
    role = record.get("role")
    if role not in _ROLES:
        raise _LineError(f"unknown role {role!r} (expected one of {', '.join(_ROLES)})")
    content = _content(record)
    name = record.get("name") if isinstance(record.get("name"), str) else None
    if role in ("system", "developer"):
        return SystemMessage(content=content)
    if role == "user":
        return HumanMessage(content=content, name=name)
    if role == "assistant":
        calls = _tool_calls(record)
        for call in calls:
            open_calls[str(call["id"])] = call["name"]
        return AIMessage(content=content, tool_calls=calls, name=name)
    call_id = record.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _LineError("a 'tool' message needs a 'tool_call_id'")
    if call_id not in open_calls:
        raise _LineError(f"tool result for unknown tool_call_id {call_id!r} (no earlier call)")
    status = "error" if record.get("status") == "error" else "success"
    tool_name = name or open_calls.pop(call_id)
    return ToolMessage(content=content, tool_call_id=call_id, name=tool_name, status=status)


def parse_chat_lines(lines: Iterable[str]) -> Transcript:
    """Parse JSONL lines (see the module docstring); blank lines are ignored.

    Args:
        lines: The lines of the file, without or with their line breaks.

    Returns:
        The valid messages in order, and one :class:`BadLine` per skipped line.
    """
    transcript = Transcript()
    open_calls: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            transcript.bad_lines.append(BadLine(number, f"invalid JSON ({exc})"))
            continue
        try:
            transcript.messages.append(_message(record, open_calls))
        except _LineError as exc:
            transcript.bad_lines.append(BadLine(number, str(exc)))
    return transcript


def load_chat_jsonl(path: str | Path) -> Transcript:
    """Read and parse a JSONL transcript file (UTF-8).

    Raises:
        OSError: The file cannot be read.
        UnicodeDecodeError: The file is not UTF-8 text.
    """
    with Path(path).open(encoding="utf-8") as handle:
        return parse_chat_lines(handle)


def split_turns(messages: list[BaseMessage]) -> list[list[BaseMessage]]:
    """Group messages into turns: each user message starts a turn with what follows it.

    System messages and anything before the first user message join the first turn.
    """
    turns: list[list[BaseMessage]] = []
    current: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, HumanMessage) and any(isinstance(m, HumanMessage) for m in current):
            turns.append(current)
            current = []
        current.append(message)
    if current:
        turns.append(current)
    return turns
