"""OpenAI (and OpenAI-compatible) chat models: construction from the environment, strict binding.

``langchain_openai`` is imported only when a ChatOpenAI is actually built, so importing this
module stays cheap and works for users who never touch OpenAI.

Environment variables read by :func:`chat_openai_from_env`:

- ``OPENAI_API_KEY``: required; without it no OpenAI model is built.
- ``OPENAI_BASE_URL`` (or the older ``OPENAI_API_BASE``): any OpenAI-compatible server, for
  example vLLM (``http://localhost:8000/v1``) or Ollama (``http://localhost:11434/v1``).
- ``WM_LANGGRAPH_MODEL``: the model name (default :data:`DEFAULT_OPENAI_MODEL`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from wm_langgraph.core.protocol import UPDATE_TOOL_NAME, update_tool_schema

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENVS",
    "DEFAULT_OPENAI_MODEL",
    "MODEL_ENV",
    "bind_openai_update_tool",
    "chat_openai_from_env",
    "is_openai_chat_model",
    "redact_url",
    "strict_update_tool",
]

logger = logging.getLogger(__name__)

API_KEY_ENV = "OPENAI_API_KEY"
"""Environment variable holding the API key."""

BASE_URL_ENVS = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
"""Environment variables naming the server, in priority order."""

MODEL_ENV = "WM_LANGGRAPH_MODEL"
"""Environment variable naming the model used for Working Memory calls."""

DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"
"""Model used when ``WM_LANGGRAPH_MODEL`` is not set: cheap, strict tool calling, long context."""


def chat_openai_from_env(
    environ: Mapping[str, str] | None = None, *, timeout: float | None = None
) -> BaseChatModel | None:
    """Build a ChatOpenAI from environment variables.

    Args:
        environ: The variables to read (default: ``os.environ``).
        timeout: The client's request timeout in seconds (``None``: the client's default).

    Returns:
        A configured ``ChatOpenAI``, or ``None`` when no API key is set.
    """
    env = os.environ if environ is None else environ
    api_key = env.get(API_KEY_ENV, "").strip()
    if not api_key:
        return None
    base_url = next(
        (env[name].strip() for name in BASE_URL_ENVS if env.get(name, "").strip()), None
    )
    model_name = env.get(MODEL_ENV, "").strip() or DEFAULT_OPENAI_MODEL

    from langchain_openai import ChatOpenAI

    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    model = ChatOpenAI(model=model_name, api_key=api_key, base_url=base_url, **extra)  # type: ignore[arg-type]
    logger.info(
        "wm_langgraph: using ChatOpenAI model %r at %s for working-memory calls",
        model_name,
        redact_url(base_url) if base_url else "the OpenAI API (default endpoint)",
    )
    return model


def redact_url(url: str) -> str:
    """A URL safe to log: scheme, host, port and path only (no credentials, query or fragment).

    Args:
        url: Any URL, possibly with ``user:password@`` or a token in the query string.

    Returns:
        The URL without user info, query and fragment; ``"<unparseable url>"`` when it does
        not parse.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<unparseable url>"
    return urlunsplit((parts.scheme, f"{host}{port}", parts.path, "", ""))


def is_openai_chat_model(model: Any) -> bool:
    """Whether ``model`` is a langchain-openai chat model (ChatOpenAI, AzureChatOpenAI, …).

    Args:
        model: Any object.

    Returns:
        True for instances of ``BaseChatOpenAI`` and its subclasses.
    """
    if "langchain_openai" not in sys.modules:  # no instance can exist without the import
        return False
    from langchain_openai.chat_models.base import BaseChatOpenAI

    return isinstance(model, BaseChatOpenAI)


def strict_update_tool() -> dict[str, Any]:
    """The strict-mode update tool in OpenAI tool format, with ``strict: true`` set on it.

    Returns:
        ``{"type": "function", "function": {"name": ..., "parameters": ..., "strict": True}}``.

    Raises:
        ValueError: When the protocol's strict schema is not a function tool of the right name.
    """
    schema = update_tool_schema(strict=True)
    raw_function = schema["function"] if schema.get("type") == "function" else schema
    function = dict(raw_function)
    if function.get("name") != UPDATE_TOOL_NAME or "parameters" not in function:
        raise ValueError(
            f"update_tool_schema(strict=True) is not a {UPDATE_TOOL_NAME!r} function tool: "
            f"{schema!r}"
        )
    function["strict"] = True
    return {"type": "function", "function": function}


def bind_openai_update_tool(model: BaseChatModel) -> Runnable[LanguageModelInput, BaseMessage]:
    """Bind the strict update tool to an OpenAI chat model, forced by name, one call only.

    Args:
        model: A ChatOpenAI / AzureChatOpenAI.

    Returns:
        The bound runnable; its requests carry the strict schema,
        ``tool_choice={"type": "function", "function": {"name": "update_working_memory"}}`` and
        ``parallel_tool_calls=False``.
    """
    return model.bind_tools(
        [strict_update_tool()],
        tool_choice=UPDATE_TOOL_NAME,
        strict=True,
        parallel_tool_calls=False,
    )
