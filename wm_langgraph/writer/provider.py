"""What the writer's provider tells us besides the reply: context-length errors, output limits,
rejected requests, replies cut at ``max_tokens`` — and how to ask for an output limit.

Context-length errors, as the providers phrase them (matched on the error's code, type and
message, through the whole ``__cause__`` chain):

- OpenAI (``BadRequestError``, HTTP 400, ``code: "context_length_exceeded"``): "This model's
  maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens" / "…
  you requested 4203 tokens (3703 in the messages, 500 in the completion)".
- vLLM: the same sentence, and "'max_tokens' or 'max_completion_tokens' is too large: N. This
  model's maximum context length is L tokens and your request has P input tokens".
- llama.cpp server (``type: "exceed_context_size_error"``, ``n_prompt_tokens``, ``n_ctx``): "the
  request exceeds the available context size, try increasing it" / "request (4476 tokens)
  exceeds the available context size (4096 tokens)"; llama-cpp-python: "Requested tokens (2285)
  exceed context window of 2048".
- Ollama: "input length exceeds the context length" / "input exceeds context length" (by default
  it truncates silently instead: set ``num_ctx``).
- Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"; others: "length of
  prompt_tokens (X) must be less than max_seq_len (Y)", "maximum number of tokens allowed".

Every provider's numbers are in its own tokens; only their ratio is used against our counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from wm_langgraph.errors import ContextOverflow

__all__ = [
    "ContextOverflow",
    "ErrorKind",
    "classify_error",
    "context_overflow",
    "output_limit_kwargs",
    "output_token_limit",
    "reply_cut_off",
]

ErrorKind = Literal["overflow", "rejected", "transient"]

_OVERFLOW_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "request_too_large"}
)
_OVERFLOW_RE = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|exceeds? the (?:available )?context"
    r"|exceed(?:s|ed)? (?:the )?context (?:size|window|length)|context window (?:is )?full"
    r"|input (?:length )?exceeds (?:the )?(?:maximum )?context length|prompt is too long"
    r"|must be less than max_seq_len|too many (?:input )?tokens|input is too long"
    r"|exceeds? (?:the )?token limit|maximum number of tokens allowed"
    r"|reduce the length of the (?:messages|prompt)",
    re.I,
)
_NUMBER = r"(\d[\d,]*)"


def _patterns(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.I) for p in patterns)


_LIMIT_RES = _patterns(
    rf"maximum context length is {_NUMBER}",
    rf"context size \({_NUMBER} tokens?\)",
    rf"context window of {_NUMBER}",
    rf"""n_ctx['"]?\s*[:=]\s*{_NUMBER}""",
    rf"max_seq_len \({_NUMBER}\)",
    rf"> {_NUMBER} maximum",
    rf"maximum number of tokens allowed \(?{_NUMBER}",
)
_REQUESTED_RES = _patterns(
    rf"you requested {_NUMBER} tokens",
    rf"resulted in {_NUMBER} tokens",
    rf"request \({_NUMBER} tokens?\)",
    rf"requested tokens \({_NUMBER}\)",
    rf"""n_prompt_tokens['"]?\s*[:=]\s*{_NUMBER}""",
    rf"prompt is too long: {_NUMBER}",
    rf"prompt_tokens \({_NUMBER}\)",
    rf"input token count \(?{_NUMBER}",
)
_PROMPT_PART_RES = _patterns(
    rf"{_NUMBER} in the messages",
    rf"{_NUMBER} in your prompt",
    rf"request has {_NUMBER} input tokens",
)
_COMPLETION_RES = _patterns(
    rf"{_NUMBER} in the completion",
    rf"{_NUMBER} for the completion",
    rf"max_(?:completion_)?tokens'? is too large: {_NUMBER}",
)
_OUTPUT_LIMIT_RES = _patterns(
    rf"supports at most {_NUMBER} completion tokens",
    rf"max_tokens: \d+ > {_NUMBER}",
    rf"max(?:imum)?[_ ](?:completion[_ ])?tokens?[^.\n]{{0,60}}?"
    rf"(?:less than or equal to|<=|at most|cannot exceed) {_NUMBER}",
    rf"maximum allowed number of output tokens[^.\n]{{0,40}}?{_NUMBER}",
)
_REJECTED_STATUS = frozenset({400, 413, 415, 422})
_CONTENT_FILTER_RE = re.compile(r"content[_ ](?:filter|policy|management)|safety system", re.I)
_CUT_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_length"})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _fields(exc: BaseException) -> Iterator[tuple[str, object]]:
    """(name, value) pairs an error carries: code, type, status, body fields, message."""
    for name in ("code", "type", "status_code", "status"):
        value = getattr(exc, name, None)
        if value is not None:
            yield name, value
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        yield "status_code", status
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error")
        for mapping in (body, inner if isinstance(inner, Mapping) else {}):
            for key, value in mapping.items():
                yield str(key), value
    elif body is not None:
        yield "body", body
    yield "message", str(exc)


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def context_overflow(exc: BaseException) -> ContextOverflow | None:
    """The context-length error in ``exc`` (or its causes), or None when it is not one."""
    for error in _chain(exc):
        fields = list(_fields(error))
        texts = " | ".join(f"{k}={v}" for k, v in fields)
        codes = {str(v).lower() for k, v in fields if k in {"code", "type"}}
        statuses = {v for k, v in fields if k in {"status_code", "status"}}
        if not (codes & _OVERFLOW_CODES or _OVERFLOW_RE.search(texts) or 413 in statuses):
            continue
        return ContextOverflow(
            limit=_first_number(_LIMIT_RES, texts),
            requested=_first_number(_REQUESTED_RES, texts),
            prompt=_first_number(_PROMPT_PART_RES, texts),
            completion=_first_number(_COMPLETION_RES, texts),
        )
    return None


def output_token_limit(exc: BaseException) -> int | None:
    """The largest ``max_tokens`` the model accepts, from an error that rejected ours."""
    for error in _chain(exc):
        text = " | ".join(f"{k}={v}" for k, v in _fields(error))
        found = _first_number(_OUTPUT_LIMIT_RES, text)
        if found:
            return found
    return None


def classify_error(exc: BaseException) -> ErrorKind:
    """``"overflow"`` (prompt too long: send less), ``"rejected"`` (the provider refuses this
    request for what it contains: 400/413/422, a content filter — the same request fails the
    same way again) or ``"transient"`` (timeouts, connection errors, 429, 5xx, anything else)."""
    if context_overflow(exc) is not None:
        return "overflow"
    for error in _chain(exc):
        fields = list(_fields(error))
        if any(k in {"status_code", "status"} and v in _REJECTED_STATUS for k, v in fields):
            return "rejected"
        if any(_CONTENT_FILTER_RE.search(str(v)) for k, v in fields if k in {"code", "type"}):
            return "rejected"
    return "transient"


def _declared(model: BaseChatModel, name: str) -> tuple[bool, Any]:
    fields = getattr(type(model), "model_fields", {})
    if name not in fields:
        return False, None
    return True, getattr(model, name, None)


def output_limit_kwargs(model: BaseChatModel, wanted: int) -> tuple[dict[str, Any], int | None]:
    """How to ask ``model`` for at most ``wanted`` output tokens, and the limit then in force.

    OpenAI chat models get ``max_tokens`` (sent as ``max_completion_tokens``; an
    OpenAI-compatible server elsewhere also gets a plain ``max_tokens`` in the body, which
    llama.cpp, vLLM and Ollama read). Other models whose class declares a ``max_tokens`` field
    left at None get it as a call argument. A model that sets its own limit keeps it.

    Returns:
        The call arguments to bind, and the effective output limit (None when unknown).
    """
    from wm_langgraph.writer.openai import is_openai_chat_model, openai_output_limit_kwargs

    declared, own = _declared(model, "max_tokens")
    if isinstance(own, int) and own > 0:
        return {}, own
    if is_openai_chat_model(model):
        return openai_output_limit_kwargs(model, wanted), wanted
    if declared:
        return {"max_tokens": wanted}, wanted
    return {}, None


def reply_cut_off(reply: AIMessage, limit: int | None) -> bool:
    """Whether the reply stopped at its output limit, whatever the finish reason says.

    True when the provider reports a length stop (``finish_reason`` ``"length"``, Anthropic's
    ``stop_reason`` ``"max_tokens"``, Ollama's ``done_reason``), or when the reply used all of
    ``limit`` output tokens (a grammar-forced server may still say ``"tool_calls"``).
    """
    meta = reply.response_metadata or {}
    for key in ("finish_reason", "stop_reason", "done_reason"):
        value = meta.get(key)
        if isinstance(value, str) and value.lower() in _CUT_REASONS:
            return True
    output = reply.usage_metadata["output_tokens"] if reply.usage_metadata else None
    return bool(limit and isinstance(output, int) and output >= limit)
