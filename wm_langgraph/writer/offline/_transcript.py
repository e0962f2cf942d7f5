"""Read the offline summariser's prompt back: tagged inputs and the rendered transcript.

Private to ``wm_langgraph.writer.offline``. The engine renders messages as text (``messages``)
and the prompt files wrap each input in a tag (``<messages>…</messages>``). This module finds
those blocks and turns the rendered transcript back into turns: role, text, tool calls with
their arguments, tool results with their status. It is tolerant: unknown lines stay text,
a transcript without role markers becomes one user turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCallRecord", "Turn", "parse_transcript"]


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of an assistant turn: the tool's name and its arguments."""

    name: str
    args: dict[str, Any]
    args_text: str


@dataclass(slots=True)
class Turn:
    """One rendered message: ``role`` is user, assistant, tool or system."""

    role: str
    text: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tool_name: str = ""
    status: str = ""
    archive: str = ""


_ROLE_ALIASES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "tool result": "tool",
    "function": "tool",
    "function result": "tool",
    "system": "system",
}

# engine.render's block header: "[user]", "[user (alice)]", "[assistant]", "[system]",
# "[tool result read_file, status=error, id call_1]", "[function result lookup]".
_BRACKET_HEADER_RE = re.compile(
    r"^\[(?P<role>tool result|function result|user|human|assistant|ai|system|tool)"
    r"(?P<rest>(?:[ ,(][^\]\n]*)?)\]\s*$",
    re.IGNORECASE,
)
# Fallback for hand-written transcripts: "user: …", "Assistant: …", "tool (read_file): …".
_PLAIN_HEADER_RE = re.compile(
    r"^(?P<role>user|human|assistant|ai|system|tool)(?P<rest>(?:\s*\([^)\n]*\))?)\s*:\s?(?P<inline>.*)$",
    re.IGNORECASE,
)
# messages.py's tool call line: 'tool call read_file (id call_1): {"path": "src/app.py"}'.
_TOOL_CALL_RE = re.compile(
    r"^(?:invalid )?tool call (?P<name>\S+?)(?: \(id [^)]*\))?:[ \t]?(?P<args>.*)$"
)
_STATUS_RE = re.compile(r"status=(?P<status>[A-Za-z_]+)")
# The engine's archive marker line (``document.abstracts.archive_marker``): not a message.
_ARCHIVE_RE = re.compile(r"^\[archive ([A-Za-z0-9][A-Za-z0-9_.:-]{0,127})\]\s*$")


def _parse_args(text: str) -> tuple[dict[str, Any], str]:
    """Parse tool-call arguments written as JSON; tolerate anything else as raw text."""
    text = text.strip()
    if not text:
        return {}, ""
    try:
        value = json.loads(text)
    except ValueError:
        return {"raw": text}, text
    if isinstance(value, dict):
        return value, text
    return {"value": value}, text


def _header(line: str, plain: bool) -> tuple[Turn, str] | None:
    """A new turn when ``line`` starts a message block, with any text on the header line."""
    match = _BRACKET_HEADER_RE.match(line)
    if match is None and plain:
        match = _PLAIN_HEADER_RE.match(line)
    if match is None:
        return None
    turn = Turn(role=_ROLE_ALIASES[match.group("role").lower()])
    rest = match.group("rest") or ""
    if turn.role == "tool":
        status = _STATUS_RE.search(rest)
        turn.status = status.group("status").lower() if status else ""
        name = rest.split(",")[0].strip(" ()")
        turn.tool_name = name.split(" ")[0] if name and not name.startswith("status=") else ""
    inline = match.groupdict().get("inline") or ""
    return turn, inline


def _collect_json(lines: list[str], index: int, first: str) -> tuple[str, int]:
    """Gather tool-call arguments that continue over the following lines (capped JSON)."""
    text = first
    while index + 1 < len(lines) and _unbalanced(text) and lines[index + 1].strip():
        if _BRACKET_HEADER_RE.match(lines[index + 1]) or _TOOL_CALL_RE.match(lines[index + 1]):
            break
        index += 1
        text += "\n" + lines[index]
    return text, index


def _unbalanced(text: str) -> bool:
    return text.count("{") > text.count("}") or text.count("[") > text.count("]")


def parse_transcript(rendered: str) -> list[Turn]:
    """Turn the engine's rendered transcript back into turns, in order.

    Args:
        rendered: The text inside the prompt's ``<messages>`` block (``messages`` format;
            ``role: text`` lines are accepted too when no bracket header is present).

    Returns:
        The turns found, each with the archive whose marker line came before it (``archive``;
        marker lines are not text). A transcript without any role marker becomes one user
        turn (so that plain text is still summarised); an empty transcript gives ``[]``.
    """
    lines = rendered.replace("\r\n", "\n").split("\n")
    plain = not any(_BRACKET_HEADER_RE.match(line) for line in lines)
    turns: list[Turn] = []
    body: list[str] = []
    current: Turn | None = None
    archive = ""

    def close() -> None:
        if current is not None:
            current.text = "\n".join([current.text, *body]).strip()
            if current.role == "tool" and not current.status:
                current.status = "error" if _looks_failed(current.text) else "success"
            turns.append(current)

    index = 0
    while index < len(lines):
        line = lines[index]
        marker = _ARCHIVE_RE.match(line)
        if marker is not None:
            close()
            current, body, archive = None, [], marker.group(1)
            index += 1
            continue
        header = _header(line, plain)
        call = _TOOL_CALL_RE.match(line) if current is not None else None
        if header is not None:
            close()
            (current, first), body = header, []
            current.text = first.strip()
            current.archive = archive
        elif call is not None and current is not None and current.role == "assistant":
            raw, index = _collect_json(lines, index, call.group("args"))
            args, args_text = _parse_args(raw)
            current.tool_calls.append(ToolCallRecord(call.group("name"), args, args_text))
        elif current is None:
            if line.strip():
                current, body = Turn(role="user", archive=archive), [line]
        else:
            body.append(line)
        index += 1
    close()
    return turns


def _looks_failed(text: str) -> bool:
    head = text[:200].lstrip()
    return bool(re.match(r"(error|exception|traceback)\b", head, re.IGNORECASE))
