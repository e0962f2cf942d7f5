"""Tool-binding plumbing of the offline writer (OfflineWorkingMemoryModel)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from wm_langgraph.document.protocol import UPDATE_TOOL_NAME

ToolLike = dict[str, Any] | type | Callable[..., Any] | BaseTool


def tool_name(tool: object) -> str:
    """The name of a tool in OpenAI format (``{"function": {"name": …}}``), flat dict or object."""
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict):
            return str(function.get("name", ""))
        return str(tool.get("name", ""))
    return str(getattr(tool, "name", ""))


def asks_for_update(tools: Sequence[object], tool_choice: object) -> bool:
    """True when the call binds ``update_working_memory`` and does not disable tools."""
    return tool_choice != "none" and any(tool_name(t) == UPDATE_TOOL_NAME for t in tools)


def bind_openai_tools(
    model: BaseChatModel,
    tools: Sequence[ToolLike],
    tool_choice: str | dict[str, Any] | bool | None,
    **kwargs: Any,
) -> Runnable[LanguageModelInput, AIMessage]:
    """Bind ``tools`` (converted to OpenAI format) and ``tool_choice`` as call kwargs."""
    formatted = [convert_to_openai_tool(tool) for tool in tools]
    bound = model.bind(tools=formatted, tool_choice=tool_choice, **kwargs)
    return cast("Runnable[LanguageModelInput, AIMessage]", bound)
