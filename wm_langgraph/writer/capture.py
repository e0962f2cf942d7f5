"""The capture check's follow-up call: the ``capture_working_memory`` tool (behaviour §5.11).

After a round's merge, code finds the statements of the folded messages the document does not
hold (``phase2.capture``). They go back to the writer once, numbered and quoted as data, with
the forced ``capture_working_memory`` tool: for each, ``add`` (a section and a short bullet) or
``dismiss`` (a reason). :func:`request_capture` makes that call and reads the reply leniently:
an entry with an unknown number, a section the check does not take, or no text is ignored; a
reply with no call of the tool is ``None`` (nothing decided). The reply's ``add`` entries then
go through the guards as APPENDs (the caller's job).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig

from wm_langgraph.errors import ToolCallingNotSupportedError
from wm_langgraph.writer.calls import (
    check_max_tokens,
    check_timeout,
    invoke_limited,
    limited,
    traced,
)
from wm_langgraph.writer.prompts import render_capture_prompt

__all__ = [
    "CAPTURE_SECTIONS",
    "CAPTURE_TOOL",
    "CAPTURE_TOOL_NAME",
    "CaptureAnswer",
    "CaptureQuestion",
    "read_capture_reply",
    "render_capture_items",
    "request_capture",
]

logger = logging.getLogger("wm_langgraph")

CAPTURE_TOOL_NAME = "capture_working_memory"
"""The follow-up tool's name."""
CAPTURE_SECTIONS: tuple[str, ...] = (
    "Task & Goals",
    "Key Facts & Decisions",
    "Files & Context",
    "Errors & Corrections",
    "Open Issues",
)
"""The sections an ``add`` may name (the title and Current State are no place for a unit)."""
MAX_ANSWER_CHARS = 400
"""The longest ``text`` or ``reason`` of one entry that is read (longer is cut)."""

CAPTURE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": CAPTURE_TOOL_NAME,
        "description": (
            "Decide about each statement the Working Memory does not hold yet: add it to a "
            "section as a short bullet, or dismiss it with a reason."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer", "description": "The statement's number."},
                            "action": {"type": "string", "enum": ["add", "dismiss"]},
                            "section": {"type": "string", "enum": list(CAPTURE_SECTIONS)},
                            "text": {"type": "string", "description": "The bullet to add."},
                            "reason": {"type": "string", "description": "Why it is dismissed."},
                        },
                        "required": ["id", "action"],
                    },
                }
            },
            "required": ["items"],
        },
    },
}
"""The ``capture_working_memory`` tool in OpenAI format."""

_TOOL_CHOICES: tuple[str, ...] = (CAPTURE_TOOL_NAME, "any", "required")


@dataclass(frozen=True, slots=True)
class CaptureQuestion:
    """One statement the follow-up asks about.

    Attributes:
        number: Its number in the prompt (from 1).
        kind: The unit's kind (``decision``, ``todo``, ``event``…).
        text: The quoted statement (already bounded by the caller).
        source: Who said it (``user``, ``assistant``, or a tool's name).
    """

    number: int
    kind: str
    text: str
    source: str


@dataclass(frozen=True, slots=True)
class CaptureAnswer:
    """What the follow-up decided.

    Attributes:
        added: Number -> (section, bullet text) for the statements to add.
        dismissed: Number -> the reason for the statements dismissed.
    """

    added: dict[int, tuple[str, str]] = field(default_factory=dict)
    dismissed: dict[int, str] = field(default_factory=dict)


def _plain(text: str) -> str:
    """One line: line breaks and control characters made spaces."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def render_capture_items(questions: Sequence[CaptureQuestion]) -> str:
    """The numbered statements, one per line, each quoted with its kind and source."""
    return "\n".join(
        f'{q.number}. [{q.kind}, from {_plain(q.source)}] "{_plain(q.text)}"' for q in questions
    )


def _bind(model: BaseChatModel) -> Runnable[LanguageModelInput, BaseMessage]:
    """``model`` with the capture tool bound, the call forced where the model allows it."""
    bind_tools: Any = getattr(model, "bind_tools", None)
    if not callable(bind_tools):
        raise ToolCallingNotSupportedError(f"{type(model).__name__} has no bind_tools")
    for choice in _TOOL_CHOICES:
        try:
            bound: Runnable[LanguageModelInput, BaseMessage] = bind_tools(
                [CAPTURE_TOOL], tool_choice=choice
            )
        except NotImplementedError as exc:
            raise ToolCallingNotSupportedError(str(exc)) from exc
        except (ValueError, TypeError, KeyError):
            continue
        return bound
    try:
        unforced: Runnable[LanguageModelInput, BaseMessage] = bind_tools([CAPTURE_TOOL])
    except NotImplementedError as exc:
        raise ToolCallingNotSupportedError(str(exc)) from exc
    return unforced


def _arguments(reply: object) -> object | None:
    """The raw arguments of the capture call in ``reply``, or None."""
    if not isinstance(reply, AIMessage):
        return None
    for call in reply.tool_calls or []:
        if call.get("name") == CAPTURE_TOOL_NAME:
            return call.get("args")
    for bad in reply.invalid_tool_calls or []:
        if bad.get("name") in {CAPTURE_TOOL_NAME, None}:
            return bad.get("args") or ""
    return None


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def read_capture_reply(reply: object, numbers: Sequence[int]) -> CaptureAnswer | None:
    """The decisions of a follow-up reply, for the statements ``numbers``; None without a call.

    Lenient: arguments as a JSON string are parsed; an entry whose number was not asked,
    whose action is unknown, whose ``add`` names no known section or has no text is ignored;
    a second entry for the same number is ignored. Texts and reasons are made one line and
    cut at :data:`MAX_ANSWER_CHARS`.
    """
    raw = _arguments(reply)
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return CaptureAnswer()
    entries = raw.get("items") if isinstance(raw, Mapping) else raw
    if not isinstance(entries, list):
        return CaptureAnswer()
    wanted = set(numbers)
    sections = {name.casefold(): name for name in CAPTURE_SECTIONS}
    added: dict[int, tuple[str, str]] = {}
    dismissed: dict[int, str] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        number = _number(entry.get("id"))
        if number is None or number not in wanted or number in added or number in dismissed:
            continue
        action = str(entry.get("action") or "").strip().casefold()
        if action == "add":
            section = sections.get(str(entry.get("section") or "").strip().casefold())
            text = _plain(str(entry.get("text") or ""))[:MAX_ANSWER_CHARS]
            if section and text:
                added[number] = (section, text)
        elif action == "dismiss":
            reason = _plain(str(entry.get("reason") or ""))[:MAX_ANSWER_CHARS]
            dismissed[number] = reason or "dismissed by the writer"
    return CaptureAnswer(added, dismissed)


def request_capture(
    model: BaseChatModel,
    *,
    working_memory: str,
    questions: Sequence[CaptureQuestion],
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
    call_key: object = None,
    on_output_limit: Callable[[int], None] | None = None,
) -> CaptureAnswer | None:
    """One follow-up call about ``questions``; the decisions, or None when no call came back.

    Args:
        model: The writer (must support tool calling).
        working_memory: The merged document the statements are missing from.
        questions: The statements, numbered.
        prompt: A capture prompt template replacing ``prompts/capture.md``.
        config: Runnable config of the calling graph step.
        metadata: Extra trace metadata.
        timeout: Seconds to wait for the model.
        max_tokens: Output limit sent with the call.
        call_key: Groups calls whose abandoned (timed-out) threads must not pile up.
        on_output_limit: Told the provider's maximum when it refused ``max_tokens``.

    Raises:
        GenerationError: The model raised or timed out.
        ToolCallingNotSupportedError: The model cannot bind tools.
    """
    check_timeout(timeout)
    check_max_tokens(max_tokens)
    text = render_capture_prompt(
        working_memory=working_memory, items=render_capture_items(questions), template=prompt
    )
    bound = _bind(model)

    def build(limit: int | None) -> Runnable[LanguageModelInput, BaseMessage]:
        return traced(limited(model, bound, limit)[0], "wm.capture", metadata)

    reply, _ = invoke_limited(
        model,
        build,
        [HumanMessage(content=text)],
        config=config,
        timeout=timeout,
        label="capture",
        max_tokens=max_tokens,
        call_key=call_key,
        on_output_limit=on_output_limit,
    )
    return read_capture_reply(reply, [q.number for q in questions])
