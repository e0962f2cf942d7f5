"""What the model input may hold: rules assemble applies to the messages it is given.

Kept apart from the budget logic of :mod:`wm_langgraph.engine.assemble` (which trims whole turns
to fit): these rules decide which messages are eligible at all, and how messages that are not
the engine's own are presented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

__all__ = [
    "QUOTEDSUMMARY_HEADER",
    "drop_orphan_tool_results",
    "neutralise_summary_headers",
    "neutralise_text",
    "split_system_messages",
]

SUMMARY_HEADER = "[Session History Summary]"
"""First line of the user message that carries the Working Memory (re-exported by assemble)."""
QUOTEDSUMMARY_HEADER = "[quoted text: Session History Summary]"
"""What a ``[Session History Summary]`` line that the engine did not write is shown as."""

_HEADER_LINE_RE = re.compile(r"(?m)^(\s*)" + re.escape(SUMMARY_HEADER))


def neutralise_text(text: str) -> str:
    """``text`` with every line that starts with the summary header (after any blank space)
    shown as quoted text instead."""
    if SUMMARY_HEADER not in text:
        return text
    return _HEADER_LINE_RE.sub(lambda m: m.group(1) + QUOTEDSUMMARY_HEADER, text)


def _neutral_content(content: Any) -> Any:
    if isinstance(content, str):
        return neutralise_text(content)
    if isinstance(content, list):
        out: list[Any] = []
        for block in content:
            if isinstance(block, str):
                out.append(neutralise_text(block))
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                out.append({**block, "text": neutralise_text(block["text"])})
            else:
                out.append(block)
        return out
    return content


def neutralise_summary_headers(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Only the engine writes the ``[Session History Summary]`` message, and the system-prompt
    addition tells the model to read it as the summary of earlier turns. A message of the
    conversation whose text starts a line with that header (a pasted or forged summary) is
    shown with the header quoted (a copy; the state keeps the message verbatim)."""
    out: list[BaseMessage] = []
    for message in messages:
        content = _neutral_content(message.content)
        out.append(
            message
            if content == message.content
            else message.model_copy(update={"content": content})
        )
    return out


def split_system_messages(
    pending: Sequence[BaseMessage], live: Sequence[BaseMessage]
) -> tuple[list[SystemMessage], list[BaseMessage], int]:
    """Sort the pending-archive and live messages into system text and conversation.

    The system message at the head of the live messages is the thread's system prompt and is
    always shown. Of the later system messages (notes added during the conversation, perhaps
    one per turn; they are counted and archived like any message) only the newest is shown,
    folded into the leading system message next to the system prompt: it is the instruction in
    force, and the prompt stays inside the budget however many were added.

    Returns:
        The system messages to fold (system prompt first), the other messages in order, and how
        many older system messages were left out.
    """
    pinned: list[SystemMessage] = []
    if live and isinstance(live[0], SystemMessage):
        pinned.append(live[0])
        live = live[1:]
    notes: list[SystemMessage] = []
    body: list[BaseMessage] = []
    for message in [*pending, *live]:
        if isinstance(message, RemoveMessage):  # a removal request, not a message
            continue
        if isinstance(message, SystemMessage):
            notes.append(message)
        else:
            body.append(message)
    return pinned + notes[-1:], body, max(0, len(notes) - 1)


def drop_orphan_tool_results(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` without the tool results whose call no earlier message shows.

    OpenAI-style APIs reject a tool message that does not answer a call of an earlier assistant
    message. Phase 1 never archives a call that still waits for its results, but an archive
    written before that rule, or a state edited by hand, can leave a result whose call is only
    in the Working Memory: the model sees the call's effect there, not a dangling result.
    """
    called: set[str] = set()
    kept: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            called.update(str(c.get("id")) for c in message.tool_calls or [] if c.get("id"))
            called.update(str(c.get("id")) for c in message.invalid_tool_calls or [] if c.get("id"))
        elif isinstance(message, ToolMessage) and message.tool_call_id not in called:
            continue
        kept.append(message)
    return kept
