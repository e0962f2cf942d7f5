"""A fake OpenAI-compatible chat-completions server behind a real ``ChatOpenAI`` (no socket).

``ChatOpenAI(http_client=httpx.Client(transport=httpx.MockTransport(server)))`` sends real
request bodies to :class:`FakeOpenAIServer`, which answers like the real API: a completion
(text or one tool call, with ``finish_reason`` and ``usage``), or an error with the status code
and body the provider would send (``context_length_exceeded``, llama.cpp's
``exceed_context_size_error``, ...). So the whole path — payload building, the openai client's
error classes, langchain-openai's parsing of ``tool_calls`` / ``invalid_tool_calls`` — is real.

A reply is decided by ``respond(request) -> Answer`` where ``request`` is the parsed JSON body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from langchain_openai import ChatOpenAI

__all__ = ["Answer", "FakeOpenAIServer", "chat_openai", "prompt_of"]


@dataclass
class Answer:
    """One response: ``text``, or ``tool_args`` (a raw JSON string, possibly cut), or an error."""

    text: str | None = None
    tool_args: str | None = None
    finish_reason: str | None = None
    completion_tokens: int = 50
    status: int = 200
    error: dict[str, Any] | None = None


def prompt_of(request: dict[str, Any]) -> str:
    """The text of all messages of a request."""
    parts = []
    for message in request.get("messages", []):
        content = message.get("content")
        parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


@dataclass
class FakeOpenAIServer:
    """Answers chat-completion requests with ``respond``; records every request body."""

    respond: Callable[[dict[str, Any]], Answer]
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"{}")
        with self._lock:
            self.requests.append(body)
        answer = self.respond(body)
        if answer.status != 200:
            return httpx.Response(answer.status, json={"error": answer.error or {}})
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        finish = answer.finish_reason or "stop"
        if answer.tool_args is not None:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{len(self.requests)}",
                    "type": "function",
                    "function": {"name": "update_working_memory", "arguments": answer.tool_args},
                }
            ]
            finish = answer.finish_reason or "tool_calls"
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": answer.completion_tokens,
                "total_tokens": 100 + answer.completion_tokens,
            },
        }
        return httpx.Response(200, json=payload)


def chat_openai(
    server: FakeOpenAIServer, *, base_url: str = "http://127.0.0.1:9/v1", **kwargs: Any
) -> ChatOpenAI:
    """A real ChatOpenAI whose HTTP goes to ``server`` (``base_url`` only names the endpoint:
    the OpenAI host for OpenAI proper, anything else for an OpenAI-compatible server)."""
    return ChatOpenAI(  # type: ignore[call-arg]
        model=kwargs.pop("model", "fake-model"),
        api_key="sk-test",  # type: ignore[arg-type]
        base_url=base_url,
        http_client=httpx.Client(transport=httpx.MockTransport(server)),
        max_retries=0,
        **kwargs,
    )
