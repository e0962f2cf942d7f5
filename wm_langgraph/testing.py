"""``OfflineAgentModel``: a stand-in for the *agent's* chat model in examples, docs and tests.

The README's agent snippets use ``ChatOpenAI``; with no key they run offline by swapping that one
line for ``OfflineAgentModel()``. It accepts any tools (``create_agent`` binds the agent's tools
and the archive tools) and answers every turn with a short acknowledgement of the newest user
message, never calling a tool. It does not write the Working Memory: that is
``OfflineWorkingMemoryModel``'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

__all__ = ["OfflineAgentModel"]

_QUOTE_CHARS = 120


class OfflineAgentModel(BaseChatModel):
    """An offline agent model: replies ``"Noted: <newest user message>"``, calls no tool."""

    @property
    def _llm_type(self) -> str:
        return "wm-offline-agent"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept the tools (it never calls one)."""
        return cast("Runnable[LanguageModelInput, AIMessage]", self.bind(**kwargs))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        users = [m for m in messages if isinstance(m, HumanMessage)]
        text = " ".join(str(users[-1].text).split()) if users else ""
        quoted = text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1] + "…"
        reply = AIMessage(content=f"Noted: {quoted}" if quoted else "Noted.")
        return ChatResult(generations=[ChatGeneration(message=reply)])
