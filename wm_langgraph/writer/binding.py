"""The model side: which chat model writes the Working Memory, and how the update tool is bound.

- :func:`resolve_default_model` picks the model used when ``WorkingMemory(model=None)``: a
  ChatOpenAI configured from the environment when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is
  set, otherwise the offline extractive model (no key, no network).
- :func:`bind_update_tool` binds the ``update_working_memory`` tool with the call forced: the
  strict-mode schema for OpenAI proper and Azure OpenAI (no parallel tool calls), the
  reference ``oneOf`` schema for every other provider and server (``writer.openai`` decides
  per endpoint).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from wm_langgraph.document.protocol import UPDATE_TOOL_NAME, UPDATE_WORKING_MEMORY_TOOL
from wm_langgraph.errors import ToolCallingNotSupportedError
from wm_langgraph.writer.openai import (
    API_KEY_ENV,
    BASE_URL_ENVS,
    MODEL_ENV,
    bind_openai_update_tool,
    chat_openai_from_env,
    is_openai_chat_model,
)

__all__ = [
    "ToolCallingNotSupportedError",
    "bind_update_tool",
    "model_provider",
    "resolve_default_model",
    "writer_model",
]

logger = logging.getLogger(__name__)

LOCAL_SERVER_KEY = "sk-local-no-key-needed"
"""The placeholder API key sent to an ``OPENAI_BASE_URL`` server when no key is set."""

# How to force the tool, most specific first: by name, then "some tool" in the two spellings
# providers use. With a single tool bound, "any"/"required" still forces update_working_memory.
_TOOL_CHOICES: tuple[str, ...] = (UPDATE_TOOL_NAME, "any", "required")


def writer_model(model: BaseChatModel | str) -> BaseChatModel:
    """The writer a ``model=`` argument names: a chat model as is, a ``"provider:model"``
    string (what ``create_agent`` and LangChain's ``SummarizationMiddleware`` accept) through
    ``langchain.chat_models.init_chat_model``.

    Raises:
        TypeError: Neither a chat model nor a string.
        ValueError: An empty string, or one ``init_chat_model`` cannot turn into a model (its
            message says which provider package or key is missing).
    """
    if isinstance(model, BaseChatModel):
        return model
    if not isinstance(model, str):
        raise TypeError(
            "model must be a LangChain chat model or a 'provider:model' string, got "
            f"{type(model).__name__}"
        )
    if not model.strip():
        raise ValueError("model must name a model, e.g. 'openai:gpt-4.1-mini', got ''")
    from langchain.chat_models import init_chat_model

    try:
        built = init_chat_model(model.strip())
    except (ImportError, ValueError, TypeError) as exc:
        raise ValueError(f"model={model!r}: init_chat_model could not build it: {exc}") from exc
    except Exception as exc:  # the provider's client refusing (e.g. no API key)
        raise ValueError(f"model={model!r}: the {type(exc).__name__} of its client: {exc}") from exc
    if not isinstance(built, BaseChatModel):  # pragma: no cover - a configurable model
        raise ValueError(f"model {model!r} did not name one chat model")
    return built


def model_provider(model: object) -> str | None:
    """The provider a chat model reports for tracing (``ls_provider``: ``"openai"``,
    ``"anthropic"``, …), or None when it reports none."""
    params = getattr(model, "_get_ls_params", None)
    if params is None:
        return None
    try:
        provider = params().get("ls_provider")
    except Exception:  # a model whose params need a call's arguments
        return None
    return provider if isinstance(provider, str) and provider else None


def resolve_default_model(*, timeout: float | None = None) -> BaseChatModel:
    """The chat model used when none is given.

    Args:
        timeout: Request timeout in seconds for the ChatOpenAI client (``None``: its default).

    Returns:
        A ChatOpenAI built from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``WM_LANGGRAPH_MODEL``
        when a key or a server address is set (a local OpenAI-compatible server such as
        llama.cpp, Ollama or vLLM needs no key: a placeholder key is sent), otherwise
        ``OfflineWorkingMemoryModel``. The choice is logged at INFO (model name and redacted
        endpoint, never the key).
    """
    model = chat_openai_from_env(timeout=timeout)
    if model is not None:
        return model
    base_url = next((name for name in BASE_URL_ENVS if os.environ.get(name, "").strip()), None)
    if base_url is not None:
        logger.info(
            "wm_langgraph: %s is set without OPENAI_API_KEY; sending a placeholder key (a local "
            "server needs none)",
            base_url,
        )
        environ = {**os.environ, API_KEY_ENV: LOCAL_SERVER_KEY}
        local = chat_openai_from_env(environ, timeout=timeout)
        if local is not None:
            return local
    from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

    if os.environ.get(MODEL_ENV, "").strip():
        logger.warning(
            "wm_langgraph: %s set but neither OPENAI_API_KEY nor OPENAI_BASE_URL is, so it is "
            "ignored; set one of them to use it",
            MODEL_ENV,
        )
    logger.info(
        "wm_langgraph: neither OPENAI_API_KEY nor OPENAI_BASE_URL is set; using the offline "
        "extractive model (OfflineWorkingMemoryModel) for working-memory calls"
    )
    return OfflineWorkingMemoryModel()


def bind_update_tool(model: BaseChatModel) -> Runnable[LanguageModelInput, BaseMessage]:
    """Bind the ``update_working_memory`` tool to ``model`` with the call forced.

    OpenAI chat models (``ChatOpenAI``, ``AzureChatOpenAI`` and subclasses) get the strict-mode
    schema with ``strict=True``, ``tool_choice`` naming the tool and ``parallel_tool_calls=False``.
    Every other model gets the reference ``oneOf`` schema with ``tool_choice`` naming the tool;
    when a model's ``bind_tools`` rejects a tool name as ``tool_choice``, ``"any"`` and then
    ``"required"`` are tried, and as a last resort the tool is bound unforced (logged as a
    warning; the engine then falls back to the create path when no tool call comes back).

    Args:
        model: A LangChain chat model that supports tool calling.

    Returns:
        The bound runnable; invoking it returns an ``AIMessage``.

    Raises:
        ToolCallingNotSupportedError: When the model has no ``bind_tools`` implementation.
    """
    if is_openai_chat_model(model):
        return bind_openai_update_tool(model)
    bind_tools: Any = getattr(model, "bind_tools", None)
    if not callable(bind_tools):
        raise _unsupported(model)
    rejections: list[str] = []
    for choice in _TOOL_CHOICES:
        try:
            bound: Runnable[LanguageModelInput, BaseMessage] = bind_tools(
                [UPDATE_WORKING_MEMORY_TOOL], tool_choice=choice
            )
        except NotImplementedError as exc:
            raise _unsupported(model) from exc
        except (ValueError, TypeError, KeyError) as exc:
            rejections.append(f"tool_choice={choice!r}: {exc}")
            continue
        if rejections:
            logger.info(
                "wm_langgraph: %s rejected forcing the update tool by name; using tool_choice=%r",
                type(model).__name__,
                choice,
            )
        return bound
    try:
        unforced: Runnable[LanguageModelInput, BaseMessage] = bind_tools(
            [UPDATE_WORKING_MEMORY_TOOL]
        )
    except NotImplementedError as exc:
        raise _unsupported(model) from exc
    logger.warning(
        "wm_langgraph: %s accepts no forced tool_choice (%s); the update tool is bound unforced",
        type(model).__name__,
        "; ".join(rejections),
    )
    return unforced


def _unsupported(model: object) -> ToolCallingNotSupportedError:
    return ToolCallingNotSupportedError(
        f"{type(model).__name__} does not support tool calling (no bind_tools implementation). "
        f"wm_langgraph updates the working memory through the {UPDATE_TOOL_NAME!r} tool, so the "
        "model must support tool calling; use a chat model with bind_tools (for example "
        "ChatOpenAI, ChatAnthropic) or leave model=None for the default."
    )
