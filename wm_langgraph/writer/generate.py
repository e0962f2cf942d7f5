"""The two model calls that write the Working Memory: create and update (behaviour §5).

- :func:`generate_create` — a plain completion with the create prompt; the reply must be a
  Working Memory document (validated, unwrapped from a code fence, normalised to the seven
  sections). A reply that is not a WM at all is a :class:`GenerationError`, never the new WM.
  :func:`request_create` also returns the archives' abstracts the reply wrote after the
  document (its ``<archive_abstracts>`` block, which never reaches the document).
- :func:`generate_update` — the update prompt with the ``update_working_memory`` tool bound and
  forced (:func:`wm_langgraph.writer.binding.bind_update_tool`); returns the parsed section
  operations, or ``None`` when the model made no tool call (the caller then falls back to create).

Both calls run as their own traced runs (``run_name`` ``"wm.create"`` / ``"wm.update"``, tags
``["wm_langgraph", "nostream"]`` — ``nostream`` keeps these internal completions out of a
graph's ``stream_mode="messages"`` output — plus caller metadata), so they show up in LangSmith
and in any tracer passed through ``config["callbacks"]``.

Timeouts: a blocking model call cannot be cancelled, so with a ``timeout`` both calls run it in
one daemon worker thread (the caller's context variables copied, so tracing parents are kept)
and raise :class:`GenerationError` when it has not finished in time; the abandoned call runs on
until the model client returns or times out by itself and its result is discarded. At most one
abandoned call per ``call_key`` (the engine passes the thread id) and
``writer.calls.MAX_ABANDONED_CALLS`` in all exist; set the client's own timeout (e.g.
``ChatOpenAI(timeout=...)``) so they end. Without ``timeout`` no thread is started.

Output limit: ``max_tokens`` is sent with the call (see ``writer.provider.output_limit_kwargs``);
a provider that refuses it and names its own maximum is asked once more with that. A reply that
stopped at the limit is *cut off*, whatever the finish reason says: an update's complete part is
kept and the rest reported unreadable (:class:`UpdateReply`), a create reply fails.

Errors carry a :attr:`GenerationError.kind`: ``"overflow"`` (:class:`ContextLengthError`: the
prompt exceeds the writer's context — send less, never the same prompt again), ``"rejected"``
(the provider refuses this request: 400/413/422, a content filter), ``"unusable"`` (the reply
cannot be used: refusal, not a WM, cut off) or ``"transient"`` (timeouts, 429, 5xx, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig

from wm_langgraph.document.abstracts import split_created_abstracts
from wm_langgraph.document.create_repair import repair_created_document
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME, UpdateReading, read_update_arguments
from wm_langgraph.document.sections import (
    is_working_memory,
    normalise_working_memory,
    parse_working_memory,
    section_items,
)
from wm_langgraph.messages import content_text
from wm_langgraph.writer.binding import bind_update_tool
from wm_langgraph.writer.calls import (
    TRACE_TAGS,
    ContextLengthError,
    GenerationError,
    check_max_tokens,
    check_timeout,
    invoke_limited,
    limited,
    traced,
)
from wm_langgraph.writer.prompts import load_prompt, render_create_prompt, render_update_prompt
from wm_langgraph.writer.provider import reply_cut_off

__all__ = [
    "TRACE_TAGS",
    "ContextLengthError",
    "CreateReply",
    "GenerationError",
    "NoContentError",
    "UpdateReply",
    "generate_create",
    "generate_update",
    "request_create",
    "request_update",
    "validate_created_document",
]


class NoContentError(GenerationError):
    """A create reply without usable content: empty, the section headers and nothing under
    them, or cut off at the output limit.

    A weak writer answers so (a small real model returned the seven headers alone; on a longer
    session the same model ran every create call to its 1,024-token limit); the commit then
    builds the round's Working Memory by extraction instead (``phase2.nodes.Create``). A retry
    would not help: at temperature 0 the same prompt runs to the same limit again.
    """

    kind = "unusable"


RETRY_NOTE = (
    "Your update_working_memory call could not be read completely ({why}). Call "
    "update_working_memory once more. Give a decision for these sections: {sections}. For every "
    'other section give {{"op": "KEEP"}}. Write each decision completely and briefly.'
)


@dataclass(frozen=True, slots=True)
class UpdateReply:
    """What an update call returned.

    Attributes:
        ops: The parsed section ops, or None when the reply has no update_working_memory call.
        reading: What the parser could and could not read (None without a call).
        cut_off: The reply stopped at its output limit.
    """

    ops: dict[str, dict[str, Any]] | None
    reading: UpdateReading | None = None
    cut_off: bool = False

    @property
    def abstracts(self) -> object:
        """The raw ``abstracts`` argument of the call (None without one)."""
        return self.reading.abstracts if self.reading is not None else None

    @property
    def retry_sections(self) -> tuple[str, ...]:
        """Sections worth one targeted retry: unreadable ones and the one the cut went through
        (its complete part is in ``ops`` meanwhile). Empty when nothing or everything failed
        to read — a reply with no readable section takes the create fallback instead."""
        if self.reading is None or not self.ops:
            return ()
        cut = (self.reading.cut,) if self.reading.cut else ()
        return tuple(dict.fromkeys((*self.reading.unreadable, *cut)))


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


def read_reply(reply: BaseMessage, limit: int | None) -> UpdateReply:
    raw = _update_arguments(reply)
    if raw is None:
        return UpdateReply(None)
    if not isinstance(raw, (str, Mapping)):
        raw = {"raw": str(raw)}
    cut = isinstance(reply, AIMessage) and reply_cut_off(reply, limit)
    reading = read_update_arguments(raw, cut_off=cut)
    return UpdateReply(reading.ops, reading, cut)


# A headerless reply shorter than this cannot be a Working Memory (behaviour §5.5: not a WM at all).
_MIN_HEADERLESS_CHARS = 200
_FENCE_RE = re.compile(r"```[ \t]*(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)(?:\n[ \t]*```|\Z)", re.S)
_TRAILING_FENCE_RE = re.compile(r"\s*```\s*\Z")
_REFUSAL_RE = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i am unable|i'?m unable|"
    r"i won'?t|unfortunately,? i|as an ai)",
    re.I,
)


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


def validate_created_document(reply: str, *, template: str = "", source: str = "") -> str:
    """Check that a create reply is a Working Memory and return it normalised.

    Args:
        reply: The model's reply text.
        template: The create prompt template the model was given: lines copied from it are
            dropped (``""``: no such check).
        source: The prior summary and messages the prompt carried (their lines and HTML
            entities are content, never echo).

    Returns:
        The canonical seven-section document: the archive abstracts block and a code fence
        removed, section headers brought to
        the top level (``## Title: value``, ``### Title``, bold labels), prompt echo and a
        one-line preamble dropped, HTML entities the conversation did not contain unescaped
        (:func:`wm_langgraph.document.create_repair.repair_created_document`); other text outside
        the seven sections is folded in by normalisation, never dropped.

    Raises:
        NoContentError: The reply is empty, only a code fence, or a document whose sections
            are all empty once the prompt echo is removed.
        GenerationError: The reply is a refusal or a short text with no section header.
    """
    text = _strip_fence(split_created_abstracts(reply)[0])
    if not text.strip().strip("`").strip():
        raise NoContentError("create: the model returned no Working Memory (empty reply)")
    text = repair_created_document(text, template=template, source=source)
    if not is_working_memory(text):
        if _REFUSAL_RE.match(text):
            raise GenerationError(f"create: the model refused: {text[:200]!r}")
        if len(text.strip()) < _MIN_HEADERLESS_CHARS:
            raise GenerationError(
                f"create: the reply is not a Working Memory (no section headers): {text[:200]!r}"
            )
    document = normalise_working_memory(text)
    if not any(section_items(body) for body in parse_working_memory(document).values()):
        raise NoContentError("create: the reply has the section headers but no content")
    return document


def _validated(reply: object, prompt: str | None, prior: str, messages_text: str) -> str:
    template = prompt if prompt is not None else load_prompt("create")
    source = f"{prior}\n{messages_text}"
    return validate_created_document(_reply_text(reply), template=template, source=source)


def _create_inputs(
    model: BaseChatModel,
    prior: str,
    messages_text: str,
    prompt: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[Callable[[int | None], Runnable[LanguageModelInput, BaseMessage]], list[BaseMessage]]:
    text = render_create_prompt(prior_summary=prior, messages=messages_text, template=prompt)

    def build(limit: int | None) -> Runnable[LanguageModelInput, BaseMessage]:
        return traced(limited(model, model, limit)[0], "wm.create", metadata)

    return build, [HumanMessage(content=text)]


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


@dataclass(frozen=True, slots=True)
class CreateReply:
    """What a create call returned.

    Attributes:
        document: The validated, normalised seven-section document.
        abstracts: The body of the reply's ``<archive_abstracts>`` block (``""`` without one),
            read by ``document.abstracts.read_abstracts``.
    """

    document: str
    abstracts: str = ""


def _created(
    reply: BaseMessage, limit: int | None, prompt: str | None, prior: str, messages_text: str
) -> CreateReply:
    """The create reply as a validated document and its abstracts block; unusable replies
    are ``kind="unusable"``."""
    try:
        if isinstance(reply, AIMessage) and reply_cut_off(reply, limit):
            raise NoContentError(
                f"create: the reply stopped at the output limit ({limit} tokens): cut off"
            )
        text, abstracts = split_created_abstracts(_reply_text(reply))
        return CreateReply(_validated(text, prompt, prior, messages_text), abstracts)
    except GenerationError as exc:
        exc.kind = "unusable"
        raise


def generate_create(
    model: BaseChatModel,
    *,
    prior: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
    call_key: object = None,
    on_output_limit: Callable[[int], None] | None = None,
) -> str:
    """Write a whole Working Memory with the create prompt (plain completion): the document
    of :func:`request_create` (same arguments)."""
    return request_create(
        model,
        prior=prior,
        messages_text=messages_text,
        prompt=prompt,
        config=config,
        metadata=metadata,
        timeout=timeout,
        max_tokens=max_tokens,
        call_key=call_key,
        on_output_limit=on_output_limit,
    ).document


def request_create(
    model: BaseChatModel,
    *,
    prior: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
    call_key: object = None,
    on_output_limit: Callable[[int], None] | None = None,
) -> CreateReply:
    """Write a whole Working Memory with the create prompt (plain completion), and read the
    archives' abstracts the reply gives after it.

    Args:
        model: The chat model.
        prior: The prior WM or legacy summary to carry forward; ``""`` for none.
        messages_text: The rendered messages being folded in (:func:`render_messages`).
        prompt: A create prompt template overriding ``prompts/create.md`` (same placeholders).
        config: Runnable config of the calling graph step (callbacks, tags, ...).
        metadata: Extra trace metadata (thread, archive ids, ...).
        timeout: Seconds to wait for the model; ``None`` waits as long as the model does.
        max_tokens: Output limit sent with the call (None: the model's own setting).
        call_key: Groups calls whose abandoned (timed-out) threads must not pile up.
        on_output_limit: Told the provider's maximum when it refused ``max_tokens``.

    Returns:
        The normalised seven-section document and the reply's abstracts block.

    Raises:
        ContextLengthError: The prompt exceeds the writer's context.
        GenerationError: The model raised or timed out, or the reply is not a WM (or was cut
            off at the output limit).
        ValueError: A bad ``timeout``/``max_tokens`` or a prompt template with wrong placeholders.
    """
    check_timeout(timeout)
    check_max_tokens(max_tokens)
    build, messages = _create_inputs(model, prior, messages_text, prompt, metadata)
    reply, limit = invoke_limited(
        model,
        build,
        messages,
        config=config,
        timeout=timeout,
        label="create",
        max_tokens=max_tokens,
        call_key=call_key,
        on_output_limit=on_output_limit,
    )
    return _created(reply, limit, prompt, prior, messages_text)


def _update_inputs(
    model: BaseChatModel,
    working_memory: str,
    messages_text: str,
    prompt: str | None,
    metadata: Mapping[str, Any] | None,
    *,
    retry: UpdateReply | None = None,
    size_target: int | None = None,
) -> tuple[Callable[[int | None], Runnable[LanguageModelInput, BaseMessage]], list[BaseMessage]]:
    text = render_update_prompt(
        working_memory=working_memory,
        messages=messages_text,
        template=prompt,
        size_target=size_target,
    )
    bound = bind_update_tool(model)

    def build(limit: int | None) -> Runnable[LanguageModelInput, BaseMessage]:
        return traced(limited(model, bound, limit)[0], "wm.update", metadata)

    if retry is not None and retry.retry_sections:
        why = (
            "it was cut off at the output limit"
            if retry.cut_off or (retry.reading and not retry.reading.complete)
            else "some sections were unreadable"
        )
        note = RETRY_NOTE.format(why=why, sections=", ".join(retry.retry_sections))
        text = f"{text}\n\n{note}"  # one message: the prompt with the note at its end
    return build, [HumanMessage(content=text)]


def request_update(
    model: BaseChatModel,
    *,
    working_memory: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
    call_key: object = None,
    on_output_limit: Callable[[int], None] | None = None,
    retry: UpdateReply | None = None,
    size_target: int | None = None,
) -> UpdateReply:
    """One update call, with what could and could not be read from it.

    Args:
        model: The chat model (must support tool calling).
        working_memory: The current v2 Working Memory document.
        messages_text: The rendered messages being folded in.
        prompt: An update prompt template overriding ``prompts/update.md``.
        config: Runnable config of the calling graph step.
        metadata: Extra trace metadata.
        timeout: Seconds to wait for the model; ``None`` waits as long as the model does.
        max_tokens: Output limit sent with the call (None: the model's own setting).
        call_key: Groups calls whose abandoned (timed-out) threads must not pile up.
        on_output_limit: Told the provider's maximum when it refused ``max_tokens``.
        retry: The earlier reply of a targeted retry: the same prompt, plus a note naming its
            :attr:`UpdateReply.retry_sections` (only those sections are then taken).
        size_target: The document's size target (tokens); a document over it gets
            consolidation warnings in the prompt (``section_size_warnings``).

    Raises:
        ContextLengthError: The prompt exceeds the writer's context.
        GenerationError: The model raised or timed out.
        ToolCallingNotSupportedError: The model cannot bind tools (a configuration error).
        ValueError: A bad ``timeout``/``max_tokens`` or a prompt template with wrong placeholders.
    """
    check_timeout(timeout)
    check_max_tokens(max_tokens)
    build, messages = _update_inputs(
        model, working_memory, messages_text, prompt, metadata, retry=retry, size_target=size_target
    )
    reply, limit = invoke_limited(
        model,
        build,
        messages,
        config=config,
        timeout=timeout,
        label="update",
        max_tokens=max_tokens,
        call_key=call_key,
        on_output_limit=on_output_limit,
    )
    answer = read_reply(reply, limit)
    if retry is None or answer.ops is None:
        return answer
    wanted = set(retry.retry_sections)
    return UpdateReply(
        {name: op for name, op in answer.ops.items() if name in wanted},
        answer.reading,
        answer.cut_off,
    )


def generate_update(
    model: BaseChatModel,
    *,
    working_memory: str,
    messages_text: str,
    prompt: str | None = None,
    config: RunnableConfig | None = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_tokens: int | None = None,
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
        max_tokens: Output limit sent with the call (None: the model's own setting).
        size_target: The document's size target (tokens); a document over it gets
            consolidation warnings in the prompt (``section_size_warnings``).

    Returns:
        ``parse_update_arguments`` of the call's arguments (tolerant: malformed JSON is
        repaired, missing sections become KEEP), or ``None`` when the reply has no
        ``update_working_memory`` call. :func:`request_update` also says what was unreadable.

    Raises:
        GenerationError: The model raised or timed out, or the arguments were unusable.
        ToolCallingNotSupportedError: The model cannot bind tools (a configuration error).
        ValueError: A bad ``timeout`` or a prompt template with wrong placeholders.
    """
    return request_update(
        model,
        working_memory=working_memory,
        messages_text=messages_text,
        prompt=prompt,
        config=config,
        metadata=metadata,
        timeout=timeout,
        max_tokens=max_tokens,
        size_target=size_target,
    ).ops
