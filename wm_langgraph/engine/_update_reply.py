"""What an update call returned: its ops, what could not be read, and the targeted retry
(private helper of ``engine.llm``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from wm_langgraph.document.protocol import UPDATE_TOOL_NAME, UpdateReading, read_update_arguments
from wm_langgraph.engine._invoke import GenerationError
from wm_langgraph.engine._provider import reply_cut_off

__all__ = ["RETRY_NOTE", "UpdateReply", "read_reply"]


RETRY_NOTE = (
    "Your update_working_memory call could not be read completely ({why}). Call "
    "update_working_memory once more. Give a decision for these sections: {sections}. For every "
    'other section give {{"op": "KEEP"}}. Write each decision completely and briefly.'
)


@dataclass(frozen=True, slots=True)
class UpdateReply:
    """What an update call returned.

    Attributes:
        ops: The parsed section ops, or None when the reply has no update_working_memory call.
        reading: What the parser could and could not read (None without a call).
        cut_off: The reply stopped at its output limit.
    """

    ops: dict[str, dict[str, Any]] | None
    reading: UpdateReading | None = None
    cut_off: bool = False

    @property
    def retry_sections(self) -> tuple[str, ...]:
        """Sections worth one targeted retry: unreadable ones and the one the cut went through
        (its complete part is in ``ops`` meanwhile). Empty when nothing or everything failed
        to read — a reply with no readable section takes the create fallback instead."""
        if self.reading is None or not self.ops:
            return ()
        cut = (self.reading.cut,) if self.reading.cut else ()
        return tuple(dict.fromkeys((*self.reading.unreadable, *cut)))


def _update_arguments(reply: object) -> object | None:
    """The raw arguments of the update_working_memory call in a reply, or None if there is none.

    Looks at ``tool_calls`` (parsed dicts), then ``invalid_tool_calls`` (raw strings the
    provider could not parse), then a legacy ``additional_kwargs["function_call"]``.
    """
    if not isinstance(reply, AIMessage):
        raise GenerationError(f"update: unexpected model output of type {type(reply).__name__}")
    for call in reply.tool_calls or []:
        if call.get("name") == UPDATE_TOOL_NAME:
            return call.get("args")
    for bad in reply.invalid_tool_calls or []:
        if bad.get("name") in {UPDATE_TOOL_NAME, None}:
            return bad.get("args") or ""
    legacy = (reply.additional_kwargs or {}).get("function_call")
    if isinstance(legacy, Mapping) and legacy.get("name") == UPDATE_TOOL_NAME:
        return legacy.get("arguments") or ""
    return None


def read_reply(reply: BaseMessage, limit: int | None) -> UpdateReply:
    raw = _update_arguments(reply)
    if raw is None:
        return UpdateReply(None)
    if not isinstance(raw, (str, Mapping)):
        raw = {"raw": str(raw)}
    cut = isinstance(reply, AIMessage) and reply_cut_off(reply, limit)
    reading = read_update_arguments(raw, cut_off=cut)
    return UpdateReply(reading.ops, reading, cut)
