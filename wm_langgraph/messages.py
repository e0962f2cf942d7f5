"""Messages as text and tokens: the rendering the writer sees, and each message's token size.

The create and update prompts show the model the messages being folded in (behaviour §5.2): each
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

What the writer is shown is text entering the memory: every text of a block (a message's text,
a document's title and source, a tool call's name and arguments, a tool result) has the
engine's marks quoted and its hidden characters shown
(:func:`wm_langgraph.document.text.entry.entry_text`), before any cap; a token count reads
the message as the provider gets it.

Rendering never raises on odd content: content block lists contribute their text, including
the text inside ``document`` (a text or content source), ``search_result``, ``json``, tool-result
lists and ``refusal`` blocks; images become ``[image]``, files, audio and video ``[<type>]``,
and a block of a type not known here a short ``[<type>]`` placeholder. Reasoning blocks
(``reasoning``, ``thinking``, ``redacted_thinking``) are not shown to the writer (private model
reasoning is not part of the conversation record).

A message's token size is the size of its rendering without the ``[role]`` line, plus
:data:`MESSAGE_OVERHEAD_TOKENS` for the role and separators (:func:`message_tokens`; a plain
text message costs its text + 4, as in OpenAI's chat accounting, so a budget counted here is
not spent on labels the provider never sends), with three rules for what the rendering leaves
out but a provider is sent: a reasoning block counts its text (or,
redacted, its serialised size) since providers take it back as input; an image, file, audio or
video block counts :data:`IMAGE_TOKENS`; and a block of an unknown type counts its serialised
JSON size, never its placeholder. Assemble runs
before every model call over every live and pending message, so :class:`MessageTokenCache`
keeps each message's count: it maps the message's id and a fingerprint of everything the
rendering reads (class, content, name, role, tool calls, tool result fields) to its count. An
edited message (same id, new content) misses and is counted afresh; the same message handed back
as a new object (a checkpointer deserialises the state every invocation) hits. Only the id and a
64-bit hash of the fingerprint are kept, not the content (about 250 bytes per entry); the oldest
entries go first.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

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

from wm_langgraph.document.text.entry import entry_text
from wm_langgraph.document.tokens import TokenCounter, count_tokens, longest_fitting

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "content_text",
    "message_tokens",
    "render_message_blocks",
    "render_messages",
    "safe_str",
    "truncate_text",
]


DEFAULT_MAX_ENTRIES = 100_000
"""Entries kept by default (about 25 MB when full)."""

_PLAIN = frozenset({str, type(None)})  # numbers go through _frozen: True == 1, "True" != "1"
# Everything render.message_tokens looks at, besides the class.
_FIELDS = (
    "content",
    "name",
    "role",
    "type",
    "tool_call_id",
    "status",
    "tool_calls",
    "invalid_tool_calls",
)


def _tagged(value: object) -> str:
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        text = ""
    return f"<{type(value).__module__}.{type(value).__qualname__}>{text}"


def _frozen(value: object) -> object:
    """A hashable stand-in for a non-plain ``value``: equal stand-ins render equally."""
    if isinstance(value, list) and not value:
        return list
    return (type(value), json.dumps(value, ensure_ascii=False, default=_tagged))


_PLANS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, bool], ...]:
    """Which of ``_FIELDS`` a message class has: (name, is a pydantic field) pairs. Reading a
    missing attribute of a pydantic model is slow, and its absence is implied by the class."""
    plan = _PLANS.get(cls)
    if plan is None:
        model_fields = getattr(cls, "model_fields", {})
        plan = tuple(
            (name, name in model_fields)
            for name in _FIELDS
            if name in model_fields or hasattr(cls, name)
        )
        _PLANS[cls] = plan
    return plan


def _fingerprint(message: BaseMessage) -> int:
    cls = type(message)
    values = message.__dict__
    parts: list[object] = [cls]
    for name, is_field in _PLANS.get(cls) or _plan(cls):
        value = values.get(name) if is_field else getattr(message, name, None)
        parts.append(value if value.__class__ in _PLAIN else _frozen(value))
    extra = values.get("additional_kwargs")
    if extra and isinstance(extra, Mapping) and "function_call" in extra:
        parts.append(_frozen(extra["function_call"]))
    return hash(tuple(parts))


class MessageTokenCache:
    """``count(message)`` with memory: each distinct message is counted once per process.

    Thread-safe; bounded to ``max_entries``: when full, the oldest tenth is evicted (a message
    still live when its entry goes is counted once more). Messages whose fingerprint cannot be
    built (e.g. circular content) are counted every time, uncached.
    """

    def __init__(
        self, count: Callable[[BaseMessage], int], *, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        """Wrap ``count`` (message -> tokens, a pure function of the message)."""
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be an int >= 1, got {max_entries!r}")
        self._count = count
        self._max = max_entries
        self._entries: dict[tuple[Any, int], int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, message: BaseMessage) -> int:
        """The token count of ``message`` (from the cache when this message was counted)."""
        try:
            key = (message.id, _fingerprint(message))
        except Exception:  # unhashable or circular content: count it, keep nothing
            return self._count(message)
        cached = self._entries.get(key)  # a single dict read needs no lock
        if cached is not None:
            return cached
        tokens = self._count(message)
        with self._lock:
            entries = self._entries
            entries[key] = tokens
            if len(entries) > self._max:  # dicts keep insertion order: drop the oldest tenth
                drop = len(entries) - self._max + self._max // 10
                for old in list(itertools.islice(entries, drop)):
                    del entries[old]
        return tokens


MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message overhead (role and separators) added by :func:`message_tokens`: the text of a
user, assistant or system message is counted without its ``[role]`` label (OpenAI's chat
accounting: 3 tokens per message plus 1 for the role)."""

IMAGE_TOKENS = 765
"""Tokens charged per image block by :func:`message_tokens` (a 1024x1024 high-detail image in
OpenAI's accounting); the ``[image]`` placeholder alone would under-count images badly."""

_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_MEDIA_TYPES = frozenset({"file", "audio", "video", "input_file", "input_audio"})
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})
_TEXT_TYPES = frozenset({"text", "text-plain", "input_text", "output_text", "summary_text"})
_MAX_DEPTH = 8  # nested block lists deeper than this are counted by their serialised size
_TOOL_USE_TYPES = frozenset({"tool_use", "tool_call", "function_call", "tool_call_chunk"})
_HEAD_SHARE = (
    2 / 3
)  # truncation keeps this share of the budget from the start, the rest from the end


def safe_str(value: object) -> str:
    """``str(value)`` that never raises (an odd object becomes ``<TypeName>``)."""
    try:
        return value if isinstance(value, str) else str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=safe_str)
    except (TypeError, ValueError):  # circular structures and the like
        return safe_str(value)


def _joined(*parts: tuple[str, int]) -> tuple[str, int]:
    return "\n".join(t for t, _ in parts if t), sum(n for _, n in parts)


def _source_text(source: object, *, counting: bool, depth: int) -> tuple[str, int]:
    """The text of a ``document`` block's ``source`` (Anthropic's shape)."""
    if isinstance(source, str):
        return source, 0
    if not isinstance(source, Mapping):
        return "", 0
    kind = source.get("type")
    if kind == "text" and isinstance(source.get("data"), str):
        return str(source["data"]), 0
    if kind == "content":
        return _content(source.get("content"), counting=counting, depth=depth + 1)
    return "[document]", 1  # base64, url, file: a binary document, charged like an image


def _block_text(
    block: object, *, skip_tool_use: bool, counting: bool = False, depth: int = 0
) -> tuple[str, int]:
    """Text of one content block and the number of images (or other media) it represents.

    ``counting``: the text a token count needs (reasoning included, unknown blocks by their
    serialised size) rather than the text the writer is shown.
    """
    if isinstance(block, str):
        return block, 0
    if not isinstance(block, Mapping):
        return (_json(block) if counting else f"[{type(block).__name__}]"), 0
    kind = safe_str(block.get("type", "block"))
    if depth > _MAX_DEPTH:
        return (_json(block) if counting else f"[{kind}]"), 0
    inner = depth + 1
    if kind in _REASONING_TYPES:
        if not counting:
            return "", 0  # private model reasoning is not part of the conversation record
        if kind == "redacted_thinking":
            return _json(block.get("data")), 0
        texts = [block.get(k) for k in ("reasoning", "thinking", "text")]
        found = [(str(t), 0) for t in texts if isinstance(t, str)]
        summary = block.get("summary")
        if summary:
            found.append(_content(summary, counting=True, depth=inner))
        return _joined(*found)
    if kind in _TEXT_TYPES:
        return safe_str(block.get("text", "")), 0
    if kind == "refusal" and isinstance(block.get("refusal"), str):
        return str(block["refusal"]), 0
    if kind == "json":
        return _json(block.get("json", block.get("data"))), 0
    if kind == "document":
        return _joined(
            (safe_str(block.get("title") or ""), 0),
            (safe_str(block.get("context") or ""), 0),
            _source_text(block.get("source"), counting=counting, depth=inner),
        )
    if kind == "search_result":
        return _joined(
            (safe_str(block.get("title") or ""), 0),
            (safe_str(block.get("source") or ""), 0),
            _content(block.get("content"), counting=counting, depth=inner),
        )
    if kind.endswith("tool_result") or kind in ("server_tool_result", "tool_search_result"):
        content = block.get("content", block.get("output"))
        return _content(content, counting=counting, depth=inner)
    if kind == "non_standard":
        value = block.get("value")
        return (_json(value) if counting else "[non_standard]"), 0
    if kind in _IMAGE_TYPES:
        return "[image]", 1
    if kind in _MEDIA_TYPES:
        return f"[{kind}]", 1
    if kind in _TOOL_USE_TYPES:
        if skip_tool_use:
            return "", 0  # the same call is rendered from tool_calls
        text = f"[{kind} {safe_str(block.get('name', ''))}]".replace(" ]", "]")
        args = block.get("input", block.get("args"))
        return (f"{text} {_json(args)}" if counting and args else text), 0
    if isinstance(block.get("text"), str):
        return safe_str(block.get("text", "")), 0
    return (_json(block) if counting else f"[{kind}]"), 0


def _content(
    content: object, *, skip_tool_use: bool = False, counting: bool = False, depth: int = 0
) -> tuple[str, int]:
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        parts: list[str] = []
        images = 0
        for block in content:
            text, count = _block_text(
                block, skip_tool_use=skip_tool_use, counting=counting, depth=depth
            )
            images += count
            if text:
                parts.append(text)
        return "\n".join(parts), images
    return _block_text(content, skip_tool_use=skip_tool_use, counting=counting, depth=depth)


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
    return longest_fitting(len(text), budget * 64, lambda n: counter(piece(n)) <= budget)


_STANDARD_ROLES = frozenset({"user", "assistant", "system"})


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        role = "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
    elif isinstance(message, SystemMessage):
        role = "system"
    elif isinstance(message, ChatMessage):
        role = safe_str(message.role) or "chat"
    elif isinstance(message, FunctionMessage):
        role = f"function result {safe_str(message.name)}"
    else:
        role = safe_str(getattr(message, "type", "message")) or "message"
    name = getattr(message, "name", None)
    if name and not isinstance(message, FunctionMessage):
        role = f"{role} ({safe_str(name)})"
    return role


def _tool_call_lines(
    message: AIMessage,
    cap: int | None,
    counter: TokenCounter,
    shown: Callable[[str], str],
) -> list[str]:
    def fmt(name: object, call_id: object, args_text: str, label: str = "tool call") -> str:
        args_text = shown(args_text)
        if cap is not None:
            args_text = truncate_text(args_text, cap, counter)
        ident = f" (id {shown(safe_str(call_id))})" if call_id else ""
        return f"{label} {shown(safe_str(name or '?'))}{ident}: {args_text}"

    lines = [
        fmt(call.get("name"), call.get("id"), _json(call.get("args", {})))
        for call in getattr(message, "tool_calls", None) or []
    ]
    for bad in getattr(message, "invalid_tool_calls", None) or []:
        raw = bad.get("args")
        line = fmt(bad.get("name"), bad.get("id"), safe_str(raw or ""), "invalid tool call")
        if bad.get("error"):
            line += f" [error: {shown(safe_str(bad.get('error')))}]"
        lines.append(line)
    legacy = (getattr(message, "additional_kwargs", None) or {}).get("function_call")
    if not lines and isinstance(legacy, Mapping):
        lines.append(fmt(legacy.get("name"), None, safe_str(legacy.get("arguments", ""))))
    return lines


def _render_one(
    message: BaseMessage,
    *,
    counter: TokenCounter,
    cap: int | None,
    tool_names: Mapping[str, str],
    text_cap: int | None = None,
    counting: bool = False,
) -> tuple[str, int]:
    """One message block (header line + body) and its image count.

    ``cap`` bounds tool outputs and tool-call arguments, ``text_cap`` every other message text;
    ``counting`` renders what a token count needs (see :func:`_block_text`).
    """
    # What the writer is shown is text entering the memory: the engine's marks typed by
    # anyone are quoted and hidden characters shown (document.text.entry). A count reads the
    # message as the provider gets it.
    shown: Callable[[str], str] = _same if counting else entry_text
    if isinstance(message, ToolMessage):
        raw_id = safe_str(getattr(message, "tool_call_id", "") or "")
        call_id = shown(raw_id)
        name = shown(safe_str(message.name or tool_names.get(raw_id) or "?"))
        status = shown(safe_str(getattr(message, "status", None) or "success"))
        header = f"[tool result {_one_line(name)}, status={_one_line(status)}"
        header += f", id {_one_line(call_id)}]" if call_id else "]"
        body, images = _content(message.content, counting=counting)
        body = shown(body)
        if cap is not None:
            body = truncate_text(body, cap, counter)
        return f"{header}\n{body}".rstrip("\n"), images
    calls = _tool_call_lines(message, cap, counter, shown) if isinstance(message, AIMessage) else []
    content = getattr(message, "content", "")
    body, images = _content(content, skip_tool_use=bool(calls), counting=counting)
    body = shown(body)
    if text_cap is not None:
        body = truncate_text(body, text_cap, counter)
    role = _role(message) if counting else _one_line(entry_text(_role(message)))
    # A count leaves a standard role's label out: the per-message overhead pays for the role
    # (a name or a custom role is sent to the provider, so it still counts).
    lines = [] if counting and role in _STANDARD_ROLES else [f"[{role}]"]
    if body:
        lines.append(body)
    lines.extend(calls)
    return "\n".join(lines), images


def _same(text: str) -> str:
    return text


def _one_line(text: str) -> str:
    """A name in a block's header line stays on that line."""
    return text.replace("\n", " ")


def _tool_names(messages: Iterable[BaseMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls or []:
                if call.get("id"):
                    names[safe_str(call["id"])] = safe_str(call.get("name") or "?")
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
    """Tokens a message costs in a prompt: its full rendering without the role label (text,
    tool call names and JSON arguments, tool result name and output — nothing capped) plus a
    fixed per-message overhead for the role and separators,
    plus :data:`IMAGE_TOKENS` per image (file, audio, video, binary document) block; reasoning
    blocks count their text and unknown blocks their serialised size (module docstring).

    Args:
        message: Any LangChain message.
        counter: Token counter for the text.
    """
    text, images = _render_one(message, counter=counter, cap=None, tool_names={}, counting=True)
    return counter(text) + MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS * images
