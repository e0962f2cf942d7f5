"""The two model calls that write the Working Memory: create and update (SPEC §5).

- :func:`generate_create` — a plain completion with the create prompt; the reply must be a
  Working Memory document (validated, unwrapped from a code fence, normalised to the seven
  sections). A reply that is not a WM at all is a :class:`GenerationError`, never the new WM.
- :func:`generate_update` — the update prompt with the ``update_working_memory`` tool bound and
  forced (:func:`wm_langgraph.models.bind_update_tool`); returns the parsed section operations,
  or ``None`` when the model made no tool call (the caller then falls back to create).

Both calls run as their own traced runs (``run_name`` ``"wm.create"`` / ``"wm.update"``, tags
``["wm_langgraph", "nostream"]`` — ``nostream`` keeps these internal completions out of a
graph's ``stream_mode="messages"`` output — plus caller metadata), so they show up in LangSmith
and in any tracer passed through ``config["callbacks"]``.

Timeouts: async twins (:func:`agenerate_create`, :func:`agenerate_update`) enforce ``timeout``
with ``asyncio.wait_for``, which cancels the model call cleanly. The sync functions cannot
cancel a blocking call: with a ``timeout`` they run the call in one daemon worker thread (the
caller's context variables copied, so tracing parents are kept) and raise
:class:`GenerationError` when it has not finished in time; the abandoned call runs on until
the model client returns or times out by itself and its result is discarded. Set the client's
own timeout (e.g. ``ChatOpenAI(timeout=...)``) to bound that. Without ``timeout`` no thread is
started.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig

from wm_langgraph.core.protocol import (
    UPDATE_TOOL_NAME,
    parse_update_arguments,
)
from wm_langgraph.core.sections import (
    is_working_memory,
    normalise_working_memory,
    parse_working_memory,
    section_items,
)
from wm_langgraph.engine.prompts import render_create_prompt, render_update_prompt
from wm_langgraph.engine.render import content_text
from wm_langgraph.models import bind_update_tool

__all__ = [
    "TRACE_TAGS",
    "GenerationError",
    "agenerate_create",
    "agenerate_update",
    "generate_create",
    "generate_update",
    "validate_created_document",
]

TRACE_TAGS: tuple[str, ...] = ("wm_langgraph", "nostream")
"""Tags on both model runs."""

# A headerless reply shorter than this cannot be a Working Memory (SPEC §5: not a WM at all).
_MIN_HEADERLESS_CHARS = 200
_FENCE_RE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)(?:\n[ \t]*```|\Z)", re.S)
_TRAILING_FENCE_RE = re.compile(r"\s*```\s*\Z")
_REFUSAL_RE = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i am unable|i'?m unable|"
    r"i won'?t|unfortunately,? i|as an ai)",
    re.I,
)

_T = TypeVar("_T")


class GenerationError(Exception):
    """A Working Memory model call failed: the model raised, timed out, or its reply was not
    usable. The previous Working Memory stays in force (SPEC §4.7)."""


def _traced(
    runnable: Runnable[LanguageModelInput, BaseMessage],
    run_name: str,
    metadata: Mapping[str, Any] | None,
) -> Runnable[LanguageModelInput, BaseMessage]:
    return runnable.with_config(
        run_name=run_name, tags=list(TRACE_TAGS), metadata=dict(metadata or {})
    )


def _call_with_timeout(call: Callable[[], _T], timeout: float | None, what: str) -> _T:
    if timeout is None or math.isinf(timeout):
        return call()
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

    threading.Thread(target=work, name=f"wm_langgraph-{what}", daemon=True).start()
    if not done.wait(timeout):
        raise GenerationError(f"{what}: the model did not answer within {timeout} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")


def _strip_fence(text: str) -> str:
    """Unwrap a reply wrapped in a code fence, or take the fenced block that holds the WM."""
    stripped = text.strip()
    match = _FENCE_RE.fullmatch(stripped)
    if match and match.group("lang").lower() in {"", "markdown", "md", "text"}:
        return _TRAILING_FENCE_RE.sub("", match.group("body")).strip()
    if not is_working_memory(_FENCE_RE.sub("", stripped)):
        for block in _FENCE_RE.finditer(stripped):
            if is_working_memory(block.group("body")):
                return block.group("body").strip()
    return stripped


def validate_created_document(reply: str) -> str:
    """Check that a create reply is a Working Memory and return it normalised.

    Args:
        reply: The model's reply text.

    Returns:
        The canonical seven-section document (code fence removed; text outside the seven
        sections folded in by normalisation, never dropped).

    Raises:
        GenerationError: The reply is empty, a refusal, only a code fence, a short text with no
            section header, or a document whose sections are all empty.
    """
    text = _strip_fence(reply)
    if not text.strip().strip("`").strip():
        raise GenerationError("create: the model returned no Working Memory (empty reply)")
    if not is_working_memory(text):
        if _REFUSAL_RE.match(text):
            raise GenerationError(f"create: the model refused: {text[:200]!r}")
        if len(text.strip()) < _MIN_HEADERLESS_CHARS:
            raise GenerationError(
                f"create: the reply is not a Working Memory (no section headers): {text[:200]!r}"
            )
    document = normalise_working_memory(text)
    if not any(section_items(body) for body in parse_working_memory(document).values()):
        raise GenerationError("create: the reply has the section headers but no content")
    return document


def _create_inputs(
    model: BaseChatModel,
    prior: str,
    messages_text: str,
    prompt: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[Runnable[LanguageModelInput, BaseMessage], list[BaseMessage]]:
    text = render_create_prompt(prior_summary=prior, messages=messages_text, template=prompt)
    return _traced(model, "wm.create", metadata), [HumanMessage(content=text)]


def _reply_text(reply: object) -> str:
    if isinstance(reply, BaseMessage):
        if isinstance(reply, AIMessage) and reply.additional_kwargs.get("refusal"):
            raise GenerationError(
                f"create: the model refused: {reply.additional_kwargs['refusal']!r}"
            )
        return content_text(reply.content)
    if isinstance(reply, str):
        return reply
    raise GenerationError(f"create: unexpected model output of type {type(reply).__name__}")


def generate_create(
    model: BaseChatModel,
    *,
    prior: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> str:
    """Write a whole Working Memory with the create prompt (plain completion).

    Args:
        model: The chat model.
        prior: The prior WM or legacy summary to carry forward; ``""`` for none.
        messages_text: The rendered messages being folded in (:func:`render_messages`).
        prompt: A create prompt template overriding ``prompts/create.md`` (same placeholders).
        config: Runnable config of the calling graph step (callbacks, tags, ...).
        metadata: Extra trace metadata (thread, archive ids, ...).
        timeout: Seconds to wait for the model; ``None`` waits as long as the model does.

    Returns:
        The normalised seven-section document.

    Raises:
        GenerationError: The model raised or timed out, or the reply is not a WM.
        ValueError: A bad ``timeout`` or a prompt template with wrong placeholders.
    """
    _check_timeout(timeout)
    runnable, messages = _create_inputs(model, prior, messages_text, prompt, metadata)
    reply = _invoke(runnable, messages, config, timeout, "create")
    return validate_created_document(_reply_text(reply))


async def agenerate_create(
    model: BaseChatModel,
    *,
    prior: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> str:
    """Async twin of :func:`generate_create`; ``timeout`` cancels the model call."""
    _check_timeout(timeout)
    runnable, messages = _create_inputs(model, prior, messages_text, prompt, metadata)
    reply = await _ainvoke(runnable, messages, config, timeout, "create")
    return validate_created_document(_reply_text(reply))


def _invoke(
    runnable: Runnable[LanguageModelInput, BaseMessage],
    messages: list[BaseMessage],
    config: RunnableConfig | None,
    timeout: float | None,
    label: str,
) -> BaseMessage:
    """Call the model; every failure (error, timeout) becomes a :class:`GenerationError`."""
    try:
        return _call_with_timeout(lambda: runnable.invoke(messages, config), timeout, f"wm.{label}")
    except GenerationError:
        raise
    except Exception as exc:
        raise GenerationError(f"{label}: the model call failed: {exc!r}") from exc


async def _ainvoke(
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
        raise GenerationError(f"{label}: the model call failed: {exc!r}") from exc


def _update_inputs(
    model: BaseChatModel,
    working_memory: str,
    messages_text: str,
    prompt: str | None,
    metadata: Mapping[str, Any] | None,
    *,
    size_target: int | None = None,
) -> tuple[Runnable[LanguageModelInput, BaseMessage], list[BaseMessage]]:
    text = render_update_prompt(
        working_memory=working_memory,
        messages=messages_text,
        template=prompt,
        size_target=size_target,
    )
    return _traced(bind_update_tool(model), "wm.update", metadata), [HumanMessage(content=text)]


def _update_arguments(reply: object) -> object | None:
    """The raw arguments of the update_working_memory call in a reply, or None if there is none.

    Looks at ``tool_calls`` (parsed dicts), then ``invalid_tool_calls`` (raw strings the
    provider could not parse), then a legacy ``additional_kwargs["function_call"]``.
    """
    if not isinstance(reply, AIMessage):
        raise GenerationError(f"update: unexpected model output of type {type(reply).__name__}")
    for call in reply.tool_calls or []:
        if call.get("name") == UPDATE_TOOL_NAME:
            return call.get("args")
    for bad in reply.invalid_tool_calls or []:
        if bad.get("name") in {UPDATE_TOOL_NAME, None}:
            return bad.get("args") or ""
    legacy = (reply.additional_kwargs or {}).get("function_call")
    if isinstance(legacy, Mapping) and legacy.get("name") == UPDATE_TOOL_NAME:
        return legacy.get("arguments") or ""
    return None


def _parse(raw: object) -> dict[str, dict[str, Any]]:
    if raw is not None and not isinstance(raw, (str, Mapping)):
        raw = {"raw": str(raw)}
    try:
        return parse_update_arguments(raw)
    except (TypeError, ValueError) as exc:
        raise GenerationError(f"update: the tool arguments could not be used: {exc}") from exc


def generate_update(
    model: BaseChatModel,
    *,
    working_memory: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    size_target: int | None = None,
) -> dict[str, dict[str, Any]] | None:
    """Ask the model for section operations through the forced ``update_working_memory`` tool.

    Args:
        model: The chat model (must support tool calling).
        working_memory: The current v2 Working Memory document.
        messages_text: The rendered messages being folded in.
        prompt: An update prompt template overriding ``prompts/update.md``.
        config: Runnable config of the calling graph step.
        metadata: Extra trace metadata.
        timeout: Seconds to wait for the model; ``None`` waits as long as the model does.
        size_target: The document's size target (tokens); a document over it gets
            consolidation warnings in the prompt (``section_size_warnings``).

    Returns:
        ``parse_update_arguments`` of the call's arguments (tolerant: malformed JSON is
        repaired, missing sections become KEEP), or ``None`` when the reply has no
        ``update_working_memory`` call.

    Raises:
        GenerationError: The model raised or timed out, or the arguments were unusable.
        ToolCallingNotSupportedError: The model cannot bind tools (a configuration error).
        ValueError: A bad ``timeout`` or a prompt template with wrong placeholders.
    """
    _check_timeout(timeout)
    runnable, messages = _update_inputs(
        model, working_memory, messages_text, prompt, metadata, size_target=size_target
    )
    reply = _invoke(runnable, messages, config, timeout, "update")
    raw = _update_arguments(reply)
    return None if raw is None else _parse(raw)


async def agenerate_update(
    model: BaseChatModel,
    *,
    working_memory: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    size_target: int | None = None,
) -> dict[str, dict[str, Any]] | None:
    """Async twin of :func:`generate_update`; ``timeout`` cancels the model call."""
    _check_timeout(timeout)
    runnable, messages = _update_inputs(
        model, working_memory, messages_text, prompt, metadata, size_target=size_target
    )
    reply = await _ainvoke(runnable, messages, config, timeout, "update")
    raw = _update_arguments(reply)
    return None if raw is None else _parse(raw)
