"""How the writer's model calls are made: errors of the right kind, timeouts without a pile of
abandoned threads, and an output limit on every call.

Errors carry a :attr:`GenerationError.kind`: ``"overflow"`` (:class:`ContextLengthError`: the
prompt exceeds the writer's context — send less, never the same prompt again), ``"rejected"``
(the provider refuses this request: 400/413/422, a content filter), ``"unusable"`` (the reply
cannot be used: refusal, not a WM, cut off) or ``"transient"`` (timeouts, 429, 5xx, ...).

A sync model call cannot be cancelled: to give up on it after ``timeout`` seconds it runs in a
daemon thread of its own (the caller's context variables copied, so tracing parents are kept),
and on timeout that thread is *abandoned* — it runs on until the model client returns or times
out by itself, and its result is discarded. Two rules bound how many such threads exist:

- **one per key** (the engine passes the conversation thread id): a new call for a key whose
  previous call is still running first waits for it, within its own timeout; if it is still
  running then, the new call fails at once instead of starting a second thread;
- **at most** :data:`MAX_ABANDONED_CALLS` in the process: beyond that a call fails at once.

So 50 timeouts on one conversation leave at most one thread behind, not 50.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from wm_langgraph.writer.provider import (
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


MAX_ABANDONED_CALLS = 32
"""Abandoned (timed-out, still running) writer calls the process keeps at most."""

_T = TypeVar("_T")
_lock = threading.Lock()
_abandoned: dict[object, threading.Thread] = {}
_anonymous = itertools.count(1)


class CallTimeoutError(Exception):
    """The call did not finish within its timeout (it was abandoned)."""


class CallRefusedError(Exception):
    """The call was not started: an earlier call of the same key, or too many calls, hang."""


def _prune() -> None:
    for key in [k for k, t in _abandoned.items() if not t.is_alive()]:
        del _abandoned[key]


def abandoned_calls() -> int:
    """How many abandoned writer calls are still running in this process."""
    with _lock:
        _prune()
        return len(_abandoned)


def _wait_for_previous(key: object, timeout: float | None) -> float | None:
    """Wait (within ``timeout``) for the key's abandoned call; the time left, or raise."""
    with _lock:
        _prune()
        previous = _abandoned.get(key)
        crowded = previous is None and len(_abandoned) >= MAX_ABANDONED_CALLS
    if crowded:
        raise CallRefusedError(
            f"{MAX_ABANDONED_CALLS} earlier writer calls timed out and still run; not starting "
            "another (set the model client's own timeout so abandoned calls end)"
        )
    if previous is None:
        return timeout
    started = time.monotonic()
    previous.join(timeout)
    if previous.is_alive():
        raise CallRefusedError(
            "the previous writer call of this thread timed out and is still running; not "
            "starting a second one"
        )
    return None if timeout is None else max(0.0, timeout - (time.monotonic() - started))


def call_within(call: Callable[[], _T], timeout: float | None, what: str, key: object = None) -> _T:
    """Run ``call``; raise :class:`CallTimeoutError` when it takes longer than ``timeout`` seconds.

    Args:
        call: The blocking call.
        timeout: Seconds; None (or infinity) runs the call in the caller's thread, unbounded.
        what: A label for the thread name and messages.
        key: Groups calls that must not pile up (the conversation thread id).

    Raises:
        CallTimeoutError: The call was abandoned after ``timeout`` seconds.
        CallRefusedError: The call was not started (see the module docstring).
        BaseException: Whatever the call raised.
    """
    if timeout is not None and math.isinf(timeout):
        timeout = None
    remaining = _wait_for_previous(key, timeout)
    if remaining is None:
        return call()
    if remaining <= 0:
        raise CallTimeoutError(f"{what}: no time left for the model within {timeout} s")
    context = contextvars.copy_context()
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = context.run(call)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=work, name=f"wm_langgraph-{what}", daemon=True)
    thread.start()
    if not done.wait(remaining):
        with _lock:
            if key is None:
                key = ("anonymous", next(_anonymous))
            _abandoned[key] = thread
        raise CallTimeoutError(f"{what}: the model did not answer within {timeout} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


TRACE_TAGS: tuple[str, ...] = ("wm_langgraph", "nostream")
"""Tags on both model runs."""


ErrorKindName = Literal["overflow", "rejected", "transient", "unusable"]


class GenerationError(Exception):
    """A Working Memory model call failed: the model raised, timed out, or its reply was not
    usable. The previous Working Memory stays in force (behaviour §4.7, §5.7).

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
