"""Messages -> prompt text, token sizes of messages, and the artifact trail.

The create and update prompts show the model the messages being folded in (SPEC §5): each
message's role and text, an assistant's tool calls (tool name and JSON arguments — the
reference never showed tool inputs, so paths that appear only there were invisible to it) and
each tool result (tool name, status, output). Very long text of any kind — tool outputs and
tool arguments, and user, assistant and system text alike (a pasted log must not overflow the
writer's context) — is capped in the prompt with a visible ``[… N tokens truncated …]`` marker;
the archive keeps it whole.

Rendered format, one block per message, blocks separated by a blank line::

    [user]
    Please fix src/app.py

    [assistant]
    Reading the file first.
    tool call read_file (id call_1): {"path": "src/app.py"}

    [tool result read_file, status=success, id call_1]
    def main(): ...

Rendering never raises on odd content: content block lists contribute their text parts,
images become ``[image]``, other blocks a short ``[<type>]`` placeholder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from wm_langgraph.document.text import extract_paths
from wm_langgraph.document.tokens import TokenCounter, count_tokens

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "content_text",
    "extract_paths_from_messages",
    "message_tokens",
    "render_message_blocks",
    "render_messages",
    "truncate_text",
]

MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message overhead (role and separators) added by :func:`message_tokens`."""

IMAGE_TOKENS = 765
"""Tokens charged per image block by :func:`message_tokens` (a 1024x1024 high-detail image in
OpenAI's accounting); the ``[image]`` placeholder alone would under-count images badly."""

_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_TOOL_USE_TYPES = frozenset({"tool_use", "tool_call", "function_call", "tool_call_chunk"})
_HEAD_SHARE = (
    2 / 3
)  # truncation keeps this share of the budget from the start, the rest from the end


def _safe_str(value: object) -> str:
    try:
        return value if isinstance(value, str) else str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=_safe_str)
    except (TypeError, ValueError):  # circular structures and the like
        return _safe_str(value)


def _block_text(block: object, *, skip_tool_use: bool) -> tuple[str, int]:
    """Text of one content block and the number of images it represents."""
    if isinstance(block, str):
        return block, 0
    if not isinstance(block, Mapping):
        return f"[{type(block).__name__}]", 0
    kind = _safe_str(block.get("type", "block"))
    if kind in {"reasoning", "thinking"}:
        return "", 0  # private model reasoning is not part of the conversation record
    if kind == "text" or (kind not in _IMAGE_TYPES and isinstance(block.get("text"), str)):
        return _safe_str(block.get("text", "")), 0
    if kind in _IMAGE_TYPES:
        return "[image]", 1
    if kind in _TOOL_USE_TYPES:
        if skip_tool_use:
            return "", 0  # the same call is rendered from tool_calls
        return f"[{kind} {_safe_str(block.get('name', ''))}]".replace(" ]", "]"), 0
    return f"[{kind}]", 0


def _content(content: object, *, skip_tool_use: bool = False) -> tuple[str, int]:
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        parts: list[str] = []
        images = 0
        for block in content:
            text, count = _block_text(block, skip_tool_use=skip_tool_use)
            images += count
            if text:
                parts.append(text)
        return "\n".join(parts), images
    text, count = _block_text(content, skip_tool_use=skip_tool_use)
    return text, count


def content_text(content: object) -> str:
    """The text of a message's ``content``: a string as is, a block list as its text parts.

    Images become ``[image]``, other non-text blocks a short ``[<type>]`` placeholder,
    reasoning blocks are left out. Never raises.
    """
    return _content(content)[0]


def truncate_text(text: str, max_tokens: int, counter: TokenCounter = count_tokens) -> str:
    """Cap ``text`` at about ``max_tokens`` tokens, keeping its start and its end.

    The cut-out middle is replaced by a visible ``[… N tokens truncated …]`` marker (the ends
    of a tool output — what was run, how it finished — are usually the informative parts).

    Args:
        text: The text to cap.
        max_tokens: The token budget for the kept text (the marker comes on top).
        counter: Token counter.

    Returns:
        ``text`` unchanged when it fits, otherwise head + marker + tail.

    Raises:
        ValueError: ``max_tokens`` is negative.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    total = counter(text)
    if total <= max_tokens:
        return text
    head_budget = int(max_tokens * _HEAD_SHARE)
    tail_budget = max_tokens - head_budget
    head = text[: _longest_fitting(text, head_budget, counter, from_end=False)]
    rest = text[len(head) :]
    tail_len = _longest_fitting(rest, tail_budget, counter, from_end=True)
    tail = rest[len(rest) - tail_len :] if tail_len else ""
    omitted = max(1, total - counter(head) - counter(tail))
    return f"{head}\n[… {omitted} tokens truncated …]\n{tail}"


def _longest_fitting(text: str, budget: int, counter: TokenCounter, *, from_end: bool) -> int:
    """Largest n such that the first (or last) n characters of text count <= budget tokens."""

    def piece(n: int) -> str:
        return text[len(text) - n :] if from_end else text[:n]

    if budget <= 0 or not text:
        return 0
    # A token is rarely longer than 64 characters: search a bounded window first, so that a
    # huge output costs a few counts of a small string, not of the whole output.
    hi = min(len(text), budget * 64)
    while hi < len(text) and counter(piece(hi)) <= budget:
        hi = min(len(text), hi * 2)
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter(piece(mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        role = "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
    elif isinstance(message, SystemMessage):
        role = "system"
    elif isinstance(message, ChatMessage):
        role = _safe_str(message.role) or "chat"
    elif isinstance(message, FunctionMessage):
        role = f"function result {_safe_str(message.name)}"
    else:
        role = _safe_str(getattr(message, "type", "message")) or "message"
    name = getattr(message, "name", None)
    if name and not isinstance(message, FunctionMessage):
        role = f"{role} ({_safe_str(name)})"
    return role


def _tool_call_lines(message: AIMessage, cap: int | None, counter: TokenCounter) -> list[str]:
    def fmt(name: object, call_id: object, args_text: str, label: str = "tool call") -> str:
        if cap is not None:
            args_text = truncate_text(args_text, cap, counter)
        ident = f" (id {_safe_str(call_id)})" if call_id else ""
        return f"{label} {_safe_str(name or '?')}{ident}: {args_text}"

    lines = [
        fmt(call.get("name"), call.get("id"), _json(call.get("args", {})))
        for call in getattr(message, "tool_calls", None) or []
    ]
    for bad in getattr(message, "invalid_tool_calls", None) or []:
        raw = bad.get("args")
        line = fmt(bad.get("name"), bad.get("id"), _safe_str(raw or ""), "invalid tool call")
        if bad.get("error"):
            line += f" [error: {_safe_str(bad.get('error'))}]"
        lines.append(line)
    legacy = (getattr(message, "additional_kwargs", None) or {}).get("function_call")
    if not lines and isinstance(legacy, Mapping):
        lines.append(fmt(legacy.get("name"), None, _safe_str(legacy.get("arguments", ""))))
    return lines


def _render_one(
    message: BaseMessage,
    *,
    counter: TokenCounter,
    cap: int | None,
    tool_names: Mapping[str, str],
    text_cap: int | None = None,
) -> tuple[str, int]:
    """One message block (header line + body) and its image count.

    ``cap`` bounds tool outputs and tool-call arguments, ``text_cap`` every other message text.
    """
    if isinstance(message, ToolMessage):
        call_id = _safe_str(getattr(message, "tool_call_id", "") or "")
        name = message.name or tool_names.get(call_id) or "?"
        status = _safe_str(getattr(message, "status", None) or "success")
        header = f"[tool result {_safe_str(name)}, status={status}"
        header += f", id {call_id}]" if call_id else "]"
        body, images = _content(message.content)
        if cap is not None:
            body = truncate_text(body, cap, counter)
        return f"{header}\n{body}".rstrip("\n"), images
    calls = _tool_call_lines(message, cap, counter) if isinstance(message, AIMessage) else []
    body, images = _content(getattr(message, "content", ""), skip_tool_use=bool(calls))
    if text_cap is not None:
        body = truncate_text(body, text_cap, counter)
    lines = [f"[{_role(message)}]"]
    if body:
        lines.append(body)
    lines.extend(calls)
    return "\n".join(lines), images


def _tool_names(messages: Iterable[BaseMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls or []:
                if call.get("id"):
                    names[_safe_str(call["id"])] = _safe_str(call.get("name") or "?")
    return names


def render_message_blocks(
    messages: Sequence[BaseMessage],
    *,
    counter: TokenCounter = count_tokens,
    max_tool_output_tokens: int = 2000,
    max_message_tokens: int | None = None,
) -> list[str]:
    """One prompt block per message (see :func:`render_messages`), for sizing and slicing.

    Args:
        messages: The messages to show.
        counter: Token counter used for capping.
        max_tool_output_tokens: Cap for each tool result's output and tool call's arguments.
        max_message_tokens: Cap for the text of every other message (user, assistant,
            system, ...); None leaves it whole.

    Raises:
        ValueError: A negative cap.
    """
    if max_tool_output_tokens < 0:
        raise ValueError(f"max_tool_output_tokens must be >= 0, got {max_tool_output_tokens}")
    if max_message_tokens is not None and max_message_tokens < 0:
        raise ValueError(f"max_message_tokens must be >= 0, got {max_message_tokens}")
    shown = [m for m in messages if not isinstance(m, RemoveMessage)]
    names = _tool_names(shown)
    return [
        _render_one(
            m,
            counter=counter,
            cap=max_tool_output_tokens,
            tool_names=names,
            text_cap=max_message_tokens,
        )[0]
        for m in shown
    ]


def render_messages(
    messages: Sequence[BaseMessage],
    *,
    counter: TokenCounter = count_tokens,
    max_tool_output_tokens: int = 2000,
    max_message_tokens: int | None = None,
) -> str:
    """Render messages as prompt text for the create and update calls.

    Args:
        messages: The messages to show (typically the archived messages being folded in).
        counter: Token counter used for capping.
        max_tool_output_tokens: Cap for each tool result's output and each tool call's JSON
            arguments; longer text keeps its start and end around a visible
            ``[… N tokens truncated …]`` marker.
        max_message_tokens: The same cap for the text of every other message (user,
            assistant, system, ...); None leaves it whole. The engine always sets it
            (``WorkingMemoryConfig.max_message_tokens``).

    Returns:
        One block per message (see the module docstring), separated by blank lines; ``""``
        for no messages. ``RemoveMessage`` markers are skipped.

    Raises:
        ValueError: A negative cap.
    """
    return "\n\n".join(
        render_message_blocks(
            messages,
            counter=counter,
            max_tool_output_tokens=max_tool_output_tokens,
            max_message_tokens=max_message_tokens,
        )
    )


def message_tokens(message: BaseMessage, counter: TokenCounter = count_tokens) -> int:
    """Tokens a message costs in a prompt: its full rendering (text, tool call names and JSON
    arguments, tool result name and output — nothing capped) plus a fixed per-message overhead,
    plus :data:`IMAGE_TOKENS` per image block.

    Args:
        message: Any LangChain message.
        counter: Token counter for the text.
    """
    text, images = _render_one(message, counter=counter, cap=None, tool_names={})
    return counter(text) + MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS * images


def _string_leaves(value: object) -> Iterable[str]:
    """Every string inside a JSON-like value (keys excluded), depth first, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _string_leaves(item)


def _trail_texts(message: BaseMessage) -> Iterable[str]:
    if isinstance(message, AIMessage):
        for call in message.tool_calls or []:
            yield from _string_leaves(call.get("args", {}))
        for bad in message.invalid_tool_calls or []:
            yield _safe_str(bad.get("args") or "")
        legacy = (message.additional_kwargs or {}).get("function_call")
        if isinstance(legacy, Mapping):
            raw = legacy.get("arguments", "")
            try:
                yield from _string_leaves(json.loads(raw))
            except (TypeError, ValueError):
                yield _safe_str(raw)
    elif isinstance(message, (ToolMessage, FunctionMessage)):
        yield content_text(message.content)


def extract_paths_from_messages(messages: Iterable[BaseMessage]) -> list[str]:
    """The artifact trail: file paths in tool-call arguments and tool results, in order, unique.

    Tool-call arguments are scanned value by value (so JSON escaping cannot mangle a path);
    tool results are scanned as text. Path detection is
    :func:`wm_langgraph.document.text.extract_paths`. User and assistant prose is not scanned
    (the model sees it and records what matters).

    Args:
        messages: The messages being folded into the Working Memory.
    """
    seen: set[str] = set()
    paths: list[str] = []
    for message in messages:
        for text in _trail_texts(message):
            if not text:
                continue
            for path in extract_paths(text):
                if path not in seen:
                    seen.add(path)
                    paths.append(path)
    return paths
