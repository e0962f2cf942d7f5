"""Sliding-window token accounting and tool-pair-safe split points (behaviour §6.2, design
§3.4-§3.5).

``pending_tokens`` is the sum of the token counts of the live messages outside the most recent
``keep_recent_count`` messages. :func:`account_messages` derives it from the live messages on
every turn (edits and removals anywhere are seen), tokenising through the engine's per-message
token cache, so only new or changed messages are tokenised.

System messages: the one at the head of the live messages is the thread's system prompt; it is
neither counted nor archived. Any later system message (a note added during the conversation,
e.g. one per turn) is conversation: counted, and archived with its turn like any other message.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from wm_langgraph.state import (
    META_VERSION,
    WorkingMemoryMeta,
    validate_keep_recent_count,
)

__all__ = [
    "MessageCounter",
    "account_messages",
    "account_tail",
    "conversation",
    "ensure_message_ids",
    "is_system_prompt",
    "live_tokens",
    "new_messages_start",
    "newest_turn_start",
    "pending_tokens_of",
    "rebuild_meta",
    "safe_split",
]

MessageCounter = Callable[[BaseMessage], int]


def is_system_prompt(messages: Sequence[BaseMessage], index: int) -> bool:
    """True for the thread's system prompt: a system message at the head of the live messages."""
    return index == 0 and bool(messages) and isinstance(messages[0], SystemMessage)


def conversation(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages that are accounted and archivable: all but the system prompt at the head
    (and removal requests of archived ids, see ``state.archive_aware_add_messages``)."""
    body = messages[1:] if is_system_prompt(messages, 0) else messages
    return [m for m in body if not isinstance(m, RemoveMessage)]


def ensure_message_ids(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], bool]:
    """Give every message an id (copies; the caller's objects are not modified).

    Returns:
        The messages (copies where an id was missing) and whether any id was assigned.
    """
    out: list[BaseMessage] = []
    changed = False
    for message in messages:
        if not isinstance(message, BaseMessage):
            raise TypeError(f"expected LangChain messages, got {type(message).__name__}")
        if message.id:
            out.append(message)
        else:
            out.append(message.model_copy(update={"id": str(uuid.uuid4())}))
            changed = True
    return out, changed


def pending_tokens_of(messages: Sequence[BaseMessage], keep: int, count: MessageCounter) -> int:
    """The definition of ``pending_tokens``: tokens of the messages outside the recent window."""
    convo = conversation(messages)
    head = convo[: max(0, len(convo) - keep)]
    return sum(max(0, count(m)) for m in head)


def rebuild_meta(
    messages: Sequence[BaseMessage],
    keep: int,
    count: MessageCounter,
    *,
    archives: Sequence[str] = (),
    known: Mapping[str, int] | None = None,
) -> WorkingMemoryMeta:
    """Account ``messages`` from scratch.

    Args:
        messages: The live messages (with ids).
        keep: The recent window size.
        count: Tokens of one message.
        archives: The timeline's archive ids to carry.
        known: Token counts already known by message id (saves recounting the window).
    """
    keep = validate_keep_recent_count(keep)
    known = known or {}
    convo = conversation(messages)
    split = max(0, len(convo) - keep)

    def tokens(m: BaseMessage) -> int:
        cached = known.get(m.id) if m.id else None
        return max(0, cached if cached is not None else count(m))

    pending = sum(tokens(m) for m in convo[:split])
    window = [[str(m.id), tokens(m)] for m in convo[split:]]
    last = messages[-1] if messages else None
    return {
        "v": META_VERSION,
        "pending_tokens": pending,
        "keep_recent_count": keep,
        "window": window,
        "last_counted_id": str(last.id) if last is not None and last.id else None,
        "last_counted_index": len(messages) - 1,
        "archives": list(archives),
    }


def new_messages_start(meta: WorkingMemoryMeta, messages: Sequence[BaseMessage]) -> int | None:
    """Index of the first unaccounted message, or None when the meta does not fit ``messages``."""
    last_id = meta["last_counted_id"]
    if last_id is None:
        return 0 if not meta["window"] and not meta["pending_tokens"] else None
    index = meta["last_counted_index"]
    if 0 <= index < len(messages) and messages[index].id == last_id:
        return index + 1
    for j in range(len(messages) - 1, -1, -1):  # O(new) when the id moved only a little
        if messages[j].id == last_id:
            return j + 1
    return None


def account_messages(
    meta: WorkingMemoryMeta, messages: Sequence[BaseMessage], count: MessageCounter
) -> WorkingMemoryMeta:
    """Account the live messages: the meta of ``messages`` (the timeline is carried over).

    The live messages can change anywhere between two hooks, not only at the end: a message
    re-sent with the id of a live one replaces it in place (an edit), ``RemoveMessage`` takes one
    out, a fork resumes an older list. So every turn derives the window and ``pending_tokens``
    from the messages themselves, which makes them exact by construction (design §3.5).

    ``count`` is meant to be the engine's per-message token cache: an unchanged message is a
    dictionary hit, so tokenising costs O(changed + new messages) per turn, and the pass over
    the live messages is the one assemble makes before every model call anyway.
    """
    return rebuild_meta(messages, meta["keep_recent_count"], count, archives=meta["archives"])


def account_tail(
    meta: WorkingMemoryMeta, messages: Sequence[BaseMessage], start: int, count: MessageCounter
) -> WorkingMemoryMeta:
    """:func:`account_messages` of ``messages`` when ``meta`` is the exact accounting of
    ``messages[:start]`` (``start >= 1``): only the messages from ``start`` on are counted.

    The recent window moves over the new messages; the window entries it leaves behind are
    added to ``pending_tokens``. The result equals a rebuild of the whole list.
    """
    if start < 1:
        raise ValueError("account_tail needs an accounted prefix (start >= 1)")
    keep = meta["keep_recent_count"]
    entries = [list(e) for e in meta["window"]]
    entries += [
        [str(m.id), max(0, count(m))] for m in messages[start:] if not isinstance(m, RemoveMessage)
    ]
    split = max(0, len(entries) - keep)
    last = messages[-1]
    return {
        "v": META_VERSION,
        "pending_tokens": meta["pending_tokens"] + sum(int(e[1]) for e in entries[:split]),
        "keep_recent_count": keep,
        "window": entries[split:],
        "last_counted_id": str(last.id) if last.id else None,
        "last_counted_index": len(messages) - 1,
        "archives": list(meta["archives"]),
    }


def live_tokens(meta: WorkingMemoryMeta) -> int:
    """Tokens of all accounted live messages (pending + window)."""
    return meta["pending_tokens"] + sum(int(entry[1]) for entry in meta["window"])


def _pair_ends(messages: Sequence[BaseMessage]) -> dict[int, int]:
    """For each AI message with tool calls: the index of the last message of its tool pair."""
    owner: dict[str, int] = {}
    ends: dict[int, int] = {}
    open_calls: dict[int, set[str]] = {}
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            ids = {str(tc.get("id")) for tc in message.tool_calls}
            for call_id in ids:
                owner[call_id] = i
            ends[i] = i
            open_calls[i] = set(ids)
        elif isinstance(message, ToolMessage) and message.tool_call_id in owner:
            i_ai = owner[message.tool_call_id]
            ends[i_ai] = max(ends[i_ai], i)
            open_calls[i_ai].discard(message.tool_call_id)
    n = len(messages)
    for i_ai, calls in open_calls.items():
        if not calls:
            continue
        # Unanswered calls: the pair runs to the end of the tool results that follow, and to
        # the end of the list when nothing else follows yet (the results are still to come).
        j = i_ai + 1
        while j < n and isinstance(messages[j], ToolMessage):
            j += 1
        ends[i_ai] = n if j >= n else max(ends[i_ai], j - 1)
    return ends


def safe_split(messages: Sequence[BaseMessage], split: int) -> int:
    """Move ``split`` back (or, failing that, forward) so no tool pair straddles it.

    ``messages[:split]`` and ``messages[split:]`` then each hold every AI tool call together with
    all of its tool results (parallel calls included). A call still waiting for its results (the
    newest messages: a graph interrupted before its tools node) stays on the live side, even
    when everything is to be archived (``split == len(messages)``, a compaction): its results
    arrive later and must find it there.
    """
    n = len(messages)
    split = max(0, min(n, split))
    if split == 0:
        return 0
    ends = _pair_ends(messages)
    candidate = split
    while candidate > 0:
        owners = [i for i, end in ends.items() if i < candidate <= end]
        if not owners:
            return candidate
        candidate = min(owners)
    waiting = any(end >= n for end in ends.values())  # an unanswered call at the end
    if split == n:
        return 0
    candidate = split  # nothing fits before: try after the pair instead
    while candidate < n:
        spans = [end for i, end in ends.items() if i < candidate <= end]
        if not spans:
            return candidate
        candidate = max(spans) + 1
    return 0 if waiting else min(candidate, n)


def newest_turn_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the newest human message (the start of the current turn), or 0."""
    for j in range(len(messages) - 1, -1, -1):
        if isinstance(messages[j], HumanMessage):
            return j
    return 0
