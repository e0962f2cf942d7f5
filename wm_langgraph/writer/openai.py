"""OpenAI (and OpenAI-compatible) chat models: construction from the environment, the update
tool binding, and the output limit.

``langchain_openai`` is imported only when a ChatOpenAI is actually built, so importing this
module stays cheap and works for users who never touch OpenAI.

Tool schema per provider: OpenAI proper (``api.openai.com``, Azure OpenAI) enforces strict
schemas natively, so it gets the strict variant with ``strict: true``. Any other server behind a
ChatOpenAI (a custom ``base_url``: llama.cpp, vLLM, Ollama, LM Studio, …) gets the reference
``oneOf`` schema: such servers turn the schema into a decoding grammar, and the strict form
(``content`` and ``items`` required in every section) makes small grammar-forced models fill
KEEP sections with junk or loop until the output limit.

Environment variables read by :func:`chat_openai_from_env`:

- ``OPENAI_API_KEY``: required; without it no OpenAI model is built.
- ``OPENAI_BASE_URL`` (or the older ``OPENAI_API_BASE``): any OpenAI-compatible server, for
  example vLLM (``http://localhost:8000/v1``) or Ollama (``http://localhost:11434/v1``).
- ``WM_LANGGRAPH_MODEL``: the model name (default :data:`DEFAULT_OPENAI_MODEL`).

The model is built with a request timeout (``config.DEFAULT_MODEL_TIMEOUT_SECONDS``,
120 s) and ``max_tokens`` (``config.DEFAULT_WRITER_MAX_TOKENS``), so a hung server or a
looping model is bounded even outside the engine.
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

from wm_langgraph.document.protocol import (
    UPDATE_TOOL_NAME,
    UPDATE_WORKING_MEMORY_TOOL,
    update_tool_schema,
)

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENVS",
    "CLIENT_MAX_RETRIES",
    "DEFAULT_OPENAI_MODEL",
    "MODEL_ENV",
    "bind_openai_update_tool",
    "chat_openai_from_env",
    "enforces_strict_schemas",
    "is_openai_chat_model",
    "openai_output_limit_kwargs",
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

CLIENT_MAX_RETRIES = 1
"""Client-side retries of :func:`chat_openai_from_env` models (the engine retries at the next
commit; a client retrying a timed-out request twice would outlive the engine's timeout)."""


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

    from wm_langgraph.config import (
        DEFAULT_MODEL_TIMEOUT_SECONDS,
        DEFAULT_WRITER_MAX_TOKENS,
    )

    model = ChatOpenAI(  # type: ignore[call-arg]
        model=model_name,
        api_key=api_key,  # type: ignore[arg-type]
        base_url=base_url,
        timeout=DEFAULT_MODEL_TIMEOUT_SECONDS if timeout is None else timeout,
        max_retries=CLIENT_MAX_RETRIES,
        max_tokens=DEFAULT_WRITER_MAX_TOKENS,
    )
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


def _base_url(model: Any) -> str | None:
    """The endpoint the model's client really talks to (None: OpenAI's default)."""
    client = getattr(model, "root_client", None)
    resolved = getattr(client, "base_url", None)
    if resolved is not None:
        return str(resolved)
    configured = getattr(model, "openai_api_base", None)
    if configured:
        return str(configured)
    return next((os.environ[n] for n in BASE_URL_ENVS if os.environ.get(n, "").strip()), None)


def enforces_strict_schemas(model: Any) -> bool:
    """Whether the model's provider enforces strict tool schemas natively: OpenAI proper
    (``api.openai.com``) and Azure OpenAI — not other servers behind a ChatOpenAI."""
    if type(model).__name__.startswith("AzureChatOpenAI"):
        return True
    url = _base_url(model)
    if url is None:
        return True
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def openai_output_limit_kwargs(model: Any, max_tokens: int) -> dict[str, Any]:
    """Call arguments that cap a ChatOpenAI reply at ``max_tokens`` on any server.

    OpenAI proper reads ``max_completion_tokens`` (langchain-openai sends ``max_tokens`` under
    that name); other OpenAI-compatible servers also get a plain ``max_tokens`` in the body.
    """
    kwargs: dict[str, Any] = {"max_tokens": max_tokens}
    if not enforces_strict_schemas(model):
        extra = dict(getattr(model, "extra_body", None) or {})
        extra.setdefault("max_tokens", max_tokens)
        kwargs["extra_body"] = extra
    return kwargs


def bind_openai_update_tool(model: BaseChatModel) -> Runnable[LanguageModelInput, BaseMessage]:
    """Bind the update tool to an OpenAI chat model, forced by name.

    Args:
        model: A ChatOpenAI / AzureChatOpenAI.

    Returns:
        The bound runnable. On OpenAI proper and Azure (:func:`enforces_strict_schemas`) its
        requests carry the strict schema, ``tool_choice`` naming ``update_working_memory`` and
        ``parallel_tool_calls=False``; on any other OpenAI-compatible server, the reference
        ``oneOf`` schema with ``tool_choice`` naming the tool.
    """
    if not enforces_strict_schemas(model):
        return model.bind_tools([dict(UPDATE_WORKING_MEMORY_TOOL)], tool_choice=UPDATE_TOOL_NAME)
    return model.bind_tools(
        [strict_update_tool()],
        tool_choice=UPDATE_TOOL_NAME,
        strict=True,
        parallel_tool_calls=False,
    )
