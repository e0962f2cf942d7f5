"""The model side: which chat model writes the Working Memory, and how the update tool is bound.

- :func:`resolve_default_model` picks the model used when ``WorkingMemory(model=None)``: a
  ChatOpenAI configured from the environment when ``OPENAI_API_KEY`` is set, otherwise the
  offline extractive model (no key, no network).
- :func:`bind_update_tool` binds the ``update_working_memory`` tool with the call forced: the
  strict-mode schema for OpenAI models (no parallel tool calls), the reference ``oneOf``
  schema for every other provider.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from wm_langgraph.core.protocol import UPDATE_TOOL_NAME, UPDATE_WORKING_MEMORY_TOOL
from wm_langgraph.models.openai import (
    BASE_URL_ENVS,
    MODEL_ENV,
    bind_openai_update_tool,
    chat_openai_from_env,
    is_openai_chat_model,
)

__all__ = ["ToolCallingNotSupportedError", "bind_update_tool", "resolve_default_model"]

logger = logging.getLogger(__name__)

# How to force the tool, most specific first: by name, then "some tool" in the two spellings
# providers use. With a single tool bound, "any"/"required" still forces update_working_memory.
_TOOL_CHOICES: tuple[str, ...] = (UPDATE_TOOL_NAME, "any", "required")


class ToolCallingNotSupportedError(TypeError):
    """The chat model cannot call tools, which the Working Memory update protocol needs."""


def resolve_default_model() -> BaseChatModel:
    """The chat model used when none is given.

    Returns:
        A ChatOpenAI built from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``WM_LANGGRAPH_MODEL``
        when a key is set, otherwise ``OfflineWorkingMemoryModel``. The choice is logged at INFO
        (model name and redacted endpoint, never the key).
    """
    model = chat_openai_from_env()
    if model is not None:
        return model
    from wm_langgraph.models.offline import OfflineWorkingMemoryModel

    ignored = [name for name in (*BASE_URL_ENVS, MODEL_ENV) if os.environ.get(name, "").strip()]
    if ignored:
        logger.warning(
            "wm_langgraph: %s set but OPENAI_API_KEY is not, so they are ignored; set "
            "OPENAI_API_KEY (any non-empty value for a local server that needs no key) to use them",
            " and ".join(ignored),
        )
    logger.info(
        "wm_langgraph: OPENAI_API_KEY is not set; using the offline extractive model "
        "(OfflineWorkingMemoryModel) for working-memory calls"
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
