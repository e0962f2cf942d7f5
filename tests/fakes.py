"""Shared test doubles: a scripted, tool-capable chat model.

The fakes in langchain-core cannot bind tools, and ``FakeMessagesListChatModel`` hands out the
same message objects again (so ids collide once a graph stores them). ``ScriptedChatModel``
builds a fresh ``AIMessage`` for every call, records what it was asked, supports ``bind_tools``
(recording the tools and ``tool_choice``), and can raise a scripted exception.

Usage::

    model = ScriptedChatModel(replies=["hi", tool_reply("search", {"q": "x"}), RuntimeError()])
    model = ScriptedChatModel(replies=lambda messages, tools, tool_choice: AIMessage("hi"))

A reply is a ``str`` (plain text), an ``AIMessage`` (copied, fresh ids), a ``dict`` of AIMessage
fields (``{"content": ..., "tool_calls": [...]}``), or an exception instance (raised). A callable
receives ``(messages, tools, tool_choice)`` and returns any of those.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

__all__ = ["ModelCall", "ScriptedChatModel", "tool_call", "tool_reply"]

Reply = str | AIMessage | dict[str, Any] | BaseException
ReplyFn = Callable[[list[BaseMessage], list[dict[str, Any]] | None, Any], Reply]

_ids = itertools.count(1)


def tool_call(name: str, args: dict[str, Any], call_id: str | None = None) -> ToolCall:
    """A tool call dict with a fresh id unless one is given."""
    return ToolCall(name=name, args=args, id=call_id or f"call_{uuid.uuid4().hex[:12]}")


def tool_reply(name: str, args: dict[str, Any], content: str = "") -> dict[str, Any]:
    """A reply that calls one tool (a fresh call id is drawn each time it is used)."""
    return {"content": content, "tool_calls": [{"name": name, "args": args}]}


@dataclass
class ModelCall:
    """One recorded model call."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] | None
    tool_choice: Any
    prompt_chars: int = 0
    reply: AIMessage | None = None
    error: BaseException | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_text(self) -> str:
        """All message text of the prompt joined, for assertions on what the model saw."""
        return "\n".join(m.text for m in self.messages)


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies from a script (a list, consumed in order, or a callable).

    Attributes:
        replies: The script. A list is consumed one reply per call; running out raises
            ``AssertionError`` unless ``repeat_last`` is set.
        repeat_last: Keep returning the last reply of a list once it is exhausted.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: Any = None
    repeat_last: bool = False

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _index: int = PrivateAttr(default=0)
    _calls: list[ModelCall] = PrivateAttr(default_factory=list)
    _bound: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    @property
    def calls(self) -> list[ModelCall]:
        """Every call so far (a copy), in order."""
        with self._lock:
            return list(self._calls)

    @property
    def bound(self) -> list[dict[str, Any]]:
        """Every ``bind_tools`` call: ``{"tools": [...], "tool_choice": ..., "kwargs": {...}}``."""
        with self._lock:
            return list(self._bound)

    @property
    def prompt_sizes(self) -> list[int]:
        """Characters of message text sent in each call."""
        return [c.prompt_chars for c in self.calls]

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the tools and bind them (OpenAI format) for the following calls."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        with self._lock:
            self._bound.append({"tools": formatted, "tool_choice": tool_choice, "kwargs": kwargs})
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _next(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Reply:
        script = self.replies
        if callable(script):
            return script(messages, tools, tool_choice)  # type: ignore[no-any-return]
        items = list(script or [])
        with self._lock:
            index = self._index
            self._index += 1
        if index >= len(items):
            if self.repeat_last and items:
                return items[-1]  # type: ignore[no-any-return]
            raise AssertionError(f"ScriptedChatModel ran out of replies after {len(items)} calls")
        return items[index]  # type: ignore[no-any-return]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = kwargs.get("tools")
        tool_choice = kwargs.get("tool_choice")
        record = ModelCall(
            messages=list(messages),
            tools=tools,
            tool_choice=tool_choice,
            prompt_chars=sum(len(m.text) for m in messages),
            kwargs={k: v for k, v in kwargs.items() if k not in {"tools", "tool_choice"}},
        )
        with self._lock:
            self._calls.append(record)
        reply = self._next(list(messages), tools, tool_choice)
        if isinstance(reply, BaseException):
            record.error = reply
            raise reply
        message = _fresh_message(reply)
        record.reply = message
        return ChatResult(generations=[ChatGeneration(message=message)])


def _fresh_message(reply: Reply) -> AIMessage:
    if isinstance(reply, str):
        fields: dict[str, Any] = {"content": reply}
    elif isinstance(reply, AIMessage):
        fields = {
            "content": reply.content,
            "tool_calls": [dict(tc) for tc in reply.tool_calls],
            "invalid_tool_calls": [dict(tc) for tc in reply.invalid_tool_calls],
        }
    elif isinstance(reply, dict):
        fields = dict(reply)
    else:
        raise TypeError(f"unsupported scripted reply: {reply!r}")
    calls = []
    for tc in fields.get("tool_calls") or []:
        call = dict(tc)
        call["id"] = f"call_{next(_ids):06d}_{uuid.uuid4().hex[:6]}"
        call.setdefault("args", {})
        calls.append(call)
    fields["tool_calls"] = calls
    fields.setdefault("content", "")
    fields["id"] = f"ai_{uuid.uuid4().hex}"
    return AIMessage(**fields)
