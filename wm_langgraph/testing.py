"""Test doubles for chat models: :class:`ScriptedChatModel` and :class:`OfflineAgentModel`.

:class:`ScriptedChatModel` is a LangChain chat model that answers from a script, for tests,
benchmarks, demos and notebooks that need an agent (or a Working Memory writer) without a
provider. It binds tools the way a provider's client does (converted to OpenAI format, with the
``tool_choice``), records every call, and builds a fresh ``AIMessage`` for each answer.
langchain-core's ``FakeMessagesListChatModel`` is not enough for agents: it cannot bind tools
and hands out the same message objects again, whose ids then collide once a graph stores them.

A script is a list of replies, consumed one per call, and/or a ``respond`` function that
answers every call (after the list, when both are given). A reply is:

- a ``str``: a plain text answer;
- an ``AIMessage``: copied (text, tool calls, invalid tool calls, metadata);
- a ``dict`` of ``AIMessage`` fields, e.g. :func:`tool_reply`'s
  ``{"content": "", "tool_calls": [{"name": ..., "args": {...}}]}``;
- an exception instance: raised by the call, as a provider's error would be;
- a function ``(messages, tools, tool_choice) -> reply``: ``tools`` are the bound tools in
  OpenAI format (``None`` when none are bound), ``tool_choice`` the bound choice. An ``async``
  function is awaited by ``ainvoke`` (e.g. one that never answers, for timeout tests).

Usage::

    model = ScriptedChatModel(replies=["hi", tool_reply("search", {"q": "x"}), RuntimeError()])
    model = ScriptedChatModel(respond=lambda messages, tools, tool_choice: "hi")
    agent = create_agent(model, [search])
    ...
    assert "x" in model.calls[-1].prompt_text

:class:`OfflineAgentModel` is a ScriptedChatModel configured as a stand-in for the *agent's*
model in examples and docs: the README's agent snippets use ``ChatOpenAI``; with no key they run
offline by swapping that one line for ``OfflineAgentModel()``. It answers every turn with a short
acknowledgement of the newest user message and never calls a tool. Neither model writes a
Working Memory: that is ``OfflineWorkingMemoryModel``'s job (or a real model's).
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolCallChunk,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr, SkipValidation

__all__ = [
    "ModelCall",
    "OfflineAgentModel",
    "Reply",
    "ReplyFunction",
    "ScriptedChatModel",
    "tool_reply",
]

Reply = str | AIMessage | dict[str, Any] | BaseException
"""One scripted answer: text, a message, ``AIMessage`` fields, or an exception to raise."""

ReplyFunction = Callable[
    [list[BaseMessage], list[dict[str, Any]] | None, Any], Reply | Awaitable[Reply]
]
"""``(messages, tools, tool_choice) -> Reply``, or an awaitable of one (for ``ainvoke``)."""

_QUOTE_CHARS = 120


def tool_reply(
    name: str, args: dict[str, Any], content: str = "", *, call_id: str | None = None
) -> dict[str, Any]:
    """A reply that calls one tool.

    Args:
        name: The tool's name.
        args: Its arguments.
        content: Text beside the call.
        call_id: The call's id, kept only by a model with ``keep_ids=True``; otherwise (and
            when ``None``) every use of the reply draws a fresh one.

    Returns:
        ``AIMessage`` fields, usable as a scripted reply.
    """
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return {"content": content, "tool_calls": [call]}


@dataclass
class ModelCall:
    """One call of a :class:`ScriptedChatModel`, as recorded for assertions.

    Attributes:
        messages: The messages the model was given (system message included).
        tools: The bound tools in OpenAI format, ``None`` when no tools were bound.
        tool_choice: The bound ``tool_choice``.
        prompt_chars: Characters of message text sent.
        reply: The answer, once given.
        error: The exception the call raised, if any.
        kwargs: Further call options (whatever was bound besides tools and ``tool_choice``).
    """

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] | None
    tool_choice: Any
    prompt_chars: int = 0
    reply: AIMessage | None = None
    error: BaseException | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_text(self) -> str:
        """All message text of the prompt, joined by newlines."""
        return "\n".join(m.text for m in self.messages)


class ScriptedChatModel(BaseChatModel):
    """A tool-capable chat model that answers from a script (see the module docstring).

    Attributes:
        replies: Replies consumed one per call, in order; an item may be a reply function.
        respond: Answers every call once ``replies`` is used up (or alone).
        repeat_last: Once ``replies`` is used up and there is no ``respond``, keep giving the
            last reply. Otherwise running out raises ``AssertionError``.
        keep_ids: Keep the message id and tool-call ids a reply carries (ids it lacks are still
            drawn). By default every answer gets fresh ids, so that a reused reply never
            collides with a message a graph already stores.
        tool_calling: ``False``: a model without tool calling (``bind_tools`` raises
            ``NotImplementedError``, as ``BaseChatModel``'s does).
        accepted_tool_choices: The ``tool_choice`` values ``bind_tools`` accepts besides
            ``None`` (another raises ``ValueError``, as some providers' clients do); ``None``
            accepts any.
        record_calls: Record every call in :attr:`calls` (turn off for long runs that
            record what they need themselves).
        disable_streaming: ``True`` by default: a call never streams (``stream()`` gives the
            whole answer as one chunk). ``False``: where LangChain streams (``stream()``,
            ``astream_events``, ``stream_mode="messages"``) the answer's text comes word by
            word, then its tool calls as chunks, as a provider would send them.

    Example:
        >>> model = ScriptedChatModel(replies=["one"], respond=lambda m, t, c: f"{len(m)} seen")
        >>> [model.invoke("hi").text, model.invoke("hi").text]
        ['one', '1 seen']
        >>> model.calls[0].prompt_text
        'hi'
    """

    replies: SkipValidation[Sequence[Reply | ReplyFunction]] = ()
    respond: SkipValidation[ReplyFunction | None] = None
    repeat_last: bool = False
    keep_ids: bool = False
    tool_calling: bool = True
    accepted_tool_choices: tuple[str, ...] | None = None
    record_calls: bool = True
    disable_streaming: bool | Literal["tool_calling"] = True

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _index: int = PrivateAttr(default=0)
    _calls: list[ModelCall] = PrivateAttr(default_factory=list)
    _bound: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def calls(self) -> list[ModelCall]:
        """Every call so far (a copy of the list), in order."""
        with self._lock:
            return list(self._calls)

    @property
    def bound(self) -> list[dict[str, Any]]:
        """Every accepted ``bind_tools``: ``{"tools": [...], "tool_choice": ..., "kwargs": {}}``."""
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
        """Bind ``tools`` (converted to OpenAI format) and ``tool_choice`` for later calls.

        Args:
            tools: Tools, functions, pydantic models or OpenAI-format dicts.
            tool_choice: Recorded and passed to the script with every call.
            **kwargs: Further call options, recorded and bound as well.

        Returns:
            The model with the tools bound.

        Raises:
            NotImplementedError: With ``tool_calling=False``.
            ValueError: When ``tool_choice`` is not among ``accepted_tool_choices``.
        """
        if not self.tool_calling:
            raise NotImplementedError(f"{type(self).__name__} was set up without tool calling")
        accepted = self.accepted_tool_choices
        if tool_choice is not None and accepted is not None and tool_choice not in accepted:
            raise ValueError(f"unsupported tool_choice {tool_choice!r}")
        formatted = [convert_to_openai_tool(t) for t in tools]
        with self._lock:
            self._bound.append({"tools": formatted, "tool_choice": tool_choice, "kwargs": kwargs})
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    # -- one call: record, ask the script, build the answer ----------------------------------

    def _start(
        self, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> tuple[ModelCall, Reply | Awaitable[Reply]]:
        tools = kwargs.get("tools")
        tool_choice = kwargs.get("tool_choice")
        record = ModelCall(
            messages=list(messages),
            tools=tools,
            tool_choice=tool_choice,
            prompt_chars=sum(len(m.text) for m in messages),
            kwargs={k: v for k, v in kwargs.items() if k not in {"tools", "tool_choice"}},
        )
        if self.record_calls:
            with self._lock:
                self._calls.append(record)
        try:
            item = self._next_item()
            reply = item(list(messages), tools, tool_choice) if callable(item) else item
        except BaseException as exc:
            record.error = exc
            raise
        return record, reply

    def _next_item(self) -> Reply | ReplyFunction:
        with self._lock:
            index = self._index
            self._index += 1
        if index < len(self.replies):
            return self.replies[index]
        if self.respond is not None:
            return self.respond
        if self.repeat_last and self.replies:
            return self.replies[-1]
        raise AssertionError(
            f"ScriptedChatModel ran out of replies after {len(self.replies)} calls"
        )

    def _finish(self, record: ModelCall, reply: Reply) -> AIMessage:
        if isinstance(reply, BaseException):
            record.error = reply
            raise reply
        message = _fresh_message(reply, keep_ids=self.keep_ids)
        record.reply = message
        return message

    def _answer(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        record, reply = self._start(messages, kwargs)
        if inspect.isawaitable(reply):
            if inspect.iscoroutine(reply):
                reply.close()
            error = TypeError("an async reply needs an async call (ainvoke, astream)")
            record.error = error
            raise error
        return self._finish(record, reply)

    async def _aanswer(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        # The script's synchronous part runs in a worker thread (as BaseChatModel's default
        # async path does), so a blocking reply function never stalls the event loop.
        record, reply = await run_in_executor(None, self._start, messages, kwargs)
        if inspect.isawaitable(reply):
            try:
                reply = await reply
            except BaseException as exc:
                record.error = exc
                raise
        return self._finish(record, reply)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._answer(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = await self._aanswer(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in _chunks(self._answer(messages, kwargs)):
            if run_manager is not None and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in _chunks(await self._aanswer(messages, kwargs)):
            if run_manager is not None and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


_call_numbers = itertools.count(1)


def _fresh_call_id() -> str:
    return f"call_{next(_call_numbers):06d}_{uuid.uuid4().hex[:6]}"


def _fresh_message(reply: Reply, *, keep_ids: bool) -> AIMessage:
    """A new ``AIMessage`` for ``reply`` (never the scripted object itself)."""
    if isinstance(reply, str):
        fields: dict[str, Any] = {"content": reply}
    elif isinstance(reply, AIMessage):
        fields = reply.model_dump(exclude={"type"})
    elif isinstance(reply, dict):
        fields = copy.deepcopy(reply)
    else:
        raise TypeError(f"unsupported scripted reply: {reply!r}")
    fields.setdefault("content", "")
    calls = []
    for scripted in fields.get("tool_calls") or []:
        call = dict(scripted)
        call.setdefault("args", {})
        if not (keep_ids and call.get("id")):
            call["id"] = _fresh_call_id()
        calls.append(call)
    fields["tool_calls"] = calls
    if not (keep_ids and fields.get("id")):
        fields["id"] = f"ai_{uuid.uuid4().hex}"
    return AIMessage(**fields)


def _chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
    """``message`` as a provider streams it: its words, then one chunk per tool call."""
    text = message.content if isinstance(message.content, str) else message.text
    words = text.split(" ")
    for i, word in enumerate(words):
        piece = word if i == len(words) - 1 else word + " "
        yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
    pending: list[ToolCallChunk] = [
        ToolCallChunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
        for i, c in enumerate(message.tool_calls)
    ]
    offset = len(pending)
    pending += [
        ToolCallChunk(name=c.get("name"), args=c.get("args"), id=c.get("id"), index=offset + i)
        for i, c in enumerate(message.invalid_tool_calls)
    ]
    for call in pending:
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", tool_call_chunks=[call], id=message.id)
        )
    if message.response_metadata or message.usage_metadata:
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                id=message.id,
                response_metadata=dict(message.response_metadata),
                usage_metadata=message.usage_metadata,
            )
        )


def _acknowledge(
    messages: list[BaseMessage], tools: list[dict[str, Any]] | None, tool_choice: Any
) -> str:
    """``"Noted: <newest user message>"`` (cut to 120 characters), or ``"Noted."``."""
    users = [m for m in messages if isinstance(m, HumanMessage)]
    text = " ".join(str(users[-1].text).split()) if users else ""
    quoted = text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1] + "…"
    return f"Noted: {quoted}" if quoted else "Noted."


class OfflineAgentModel(ScriptedChatModel):
    """An offline agent model: replies ``"Noted: <newest user message>"``, calls no tool.

    A :class:`ScriptedChatModel` whose ``respond`` acknowledges the newest user message. It
    accepts any tools and does not record its calls (an example may run for long).
    """

    respond: SkipValidation[ReplyFunction | None] = _acknowledge
    record_calls: bool = False

    @property
    def _llm_type(self) -> str:
        return "wm-offline-agent"
