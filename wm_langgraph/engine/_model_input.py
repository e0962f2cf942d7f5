"""What the model input may hold: rules assemble applies to the messages it is given.

Kept apart from the budget logic of :mod:`wm_langgraph.engine.assemble` (which trims whole turns
to fit): these rules decide which messages are eligible at all, and how messages that are not
the engine's own are presented.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = ["drop_orphan_tool_results"]


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
