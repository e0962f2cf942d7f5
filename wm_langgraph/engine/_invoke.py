"""How the writer's model calls are made: errors of the right kind, timeouts without a pile of
abandoned threads, and an output limit on every call (private helper of ``engine.llm``).

Errors carry a :attr:`GenerationError.kind`: ``"overflow"`` (:class:`ContextLengthError`: the
prompt exceeds the writer's context — send less, never the same prompt again), ``"rejected"``
(the provider refuses this request: 400/413/422, a content filter), ``"unusable"`` (the reply
cannot be used: refusal, not a WM, cut off) or ``"transient"`` (timeouts, 429, 5xx, ...).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from wm_langgraph.engine._calls import CallRefusedError, CallTimeoutError, call_within
from wm_langgraph.engine._provider import (
    ContextOverflow,
    classify_error,
    context_overflow,
    output_limit_kwargs,
    output_token_limit,
)

__all__ = [
    "TRACE_TAGS",
    "ContextLengthError",
    "ErrorKindName",
    "GenerationError",
    "ainvoke",
    "check_max_tokens",
    "check_timeout",
    "invoke_limited",
    "limited",
    "traced",
]

TRACE_TAGS: tuple[str, ...] = ("wm_langgraph", "nostream")
"""Tags on both model runs."""


ErrorKindName = Literal["overflow", "rejected", "transient", "unusable"]


class GenerationError(Exception):
    """A Working Memory model call failed: the model raised, timed out, or its reply was not
    usable. The previous Working Memory stays in force (SPEC §4.7).

    Attributes:
        kind: ``"overflow"``, ``"rejected"``, ``"unusable"`` or ``"transient"`` (module docstring).
    """

    kind: ErrorKindName = "transient"

    def __init__(self, message: str, *, kind: ErrorKindName | None = None) -> None:
        """Create the error; ``kind`` defaults to the class's."""
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class ContextLengthError(GenerationError):
    """The prompt exceeded the writer's context (the provider said so).

    Attributes:
        overflow: The numbers the provider gave (its own tokens), for sizing the next batch.
    """

    kind: ErrorKindName = "overflow"

    def __init__(self, message: str, overflow: ContextOverflow) -> None:
        """Create the error with the provider's numbers."""
        super().__init__(message)
        self.overflow = overflow


def traced(
    runnable: Runnable[LanguageModelInput, BaseMessage],
    run_name: str,
    metadata: Mapping[str, Any] | None,
) -> Runnable[LanguageModelInput, BaseMessage]:
    return runnable.with_config(
        run_name=run_name, tags=list(TRACE_TAGS), metadata=dict(metadata or {})
    )


def check_timeout(timeout: float | None) -> None:
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")


def check_max_tokens(max_tokens: int | None) -> None:
    if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive int or None, got {max_tokens!r}")


def limited(
    model: BaseChatModel,
    runnable: Runnable[LanguageModelInput, BaseMessage],
    max_tokens: int | None,
) -> tuple[Runnable[LanguageModelInput, BaseMessage], int | None]:
    """``runnable`` asking for at most ``max_tokens`` output tokens, and the limit in force."""
    if max_tokens is None:
        return runnable, None
    kwargs, limit = output_limit_kwargs(model, max_tokens)
    return (runnable.bind(**kwargs) if kwargs else runnable), limit


def _wrap(exc: Exception, label: str) -> GenerationError:
    """A model call's exception as a :class:`GenerationError` of the right kind."""
    kind = classify_error(exc)
    if kind == "overflow":
        found = context_overflow(exc) or ContextOverflow()
        return ContextLengthError(
            f"{label}: the prompt exceeds the model's context: {exc!r}", found
        )
    return GenerationError(f"{label}: the model call failed: {exc!r}", kind=kind)


def _invoke(
    runnable: Runnable[LanguageModelInput, BaseMessage],
    messages: list[BaseMessage],
    config: RunnableConfig | None,
    timeout: float | None,
    label: str,
    *,
    call_key: object = None,
) -> BaseMessage:
    """Call the model; every failure (error, timeout) becomes a :class:`GenerationError`."""
    try:
        return call_within(
            lambda: runnable.invoke(messages, config), timeout, f"wm.{label}", call_key
        )
    except (CallTimeoutError, CallRefusedError) as exc:
        raise GenerationError(str(exc)) from exc
    except GenerationError:
        raise
    except Exception as exc:
        raise _wrap(exc, label) from exc


def invoke_limited(
    model: BaseChatModel,
    build: Callable[[int | None], Runnable[LanguageModelInput, BaseMessage]],
    messages: list[BaseMessage],
    *,
    config: RunnableConfig | None,
    timeout: float | None,
    label: str,
    max_tokens: int | None,
    call_key: object,
    on_output_limit: Callable[[int], None] | None,
) -> tuple[BaseMessage, int | None]:
    """:func:`_invoke` with an output limit; a provider that refuses the limit and names its
    maximum is asked once more with that (a different request, not the same one again)."""
    try:
        reply = _invoke(build(max_tokens), messages, config, timeout, label, call_key=call_key)
    except GenerationError as exc:
        allowed = output_token_limit(exc.__cause__) if exc.__cause__ is not None else None
        if max_tokens is None or allowed is None or allowed >= max_tokens or exc.kind == "overflow":
            raise
        if on_output_limit is not None:
            on_output_limit(allowed)
        max_tokens = allowed
        reply = _invoke(build(max_tokens), messages, config, timeout, label, call_key=call_key)
    return reply, limited(model, model, max_tokens)[1]


async def ainvoke(
    runnable: Runnable[LanguageModelInput, BaseMessage],
    messages: list[BaseMessage],
    config: RunnableConfig | None,
    timeout: float | None,
    label: str,
) -> BaseMessage:
    """Async :func:`_invoke`; ``timeout`` cancels the call."""
    try:
        return await asyncio.wait_for(runnable.ainvoke(messages, config), timeout)
    except TimeoutError as exc:
        raise GenerationError(f"wm.{label}: the model did not answer within {timeout} s") from exc
    except Exception as exc:
        raise _wrap(exc, label) from exc
