"""The graph state schema and the JSON-plain meta value that travels with it (design §2.1).

The meta (``state["working_memory"]``) holds only dicts, lists, str and int so that every
checkpointer serialises it without warnings:

``pending_tokens``
    tokens of the live messages outside the recent window (what the next commit archives).
``keep_recent_count``
    size of the recent window.
``window``
    the recent window, oldest first, as ``[message id, tokens]`` pairs.
``last_counted_id`` / ``last_counted_index``
    the newest message already accounted, and where it stood in ``messages``.
``archives``
    the ordered archive ids of this timeline (a fork keeps its own list).

All helpers here are pure: they take a meta and return a new one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypedDict, cast

from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage, convert_to_messages
from langgraph.channels import UntrackedValue
from langgraph.graph.message import REMOVE_ALL_MESSAGES, Messages, add_messages
from langgraph.managed import RemainingSteps

from wm_langgraph.config import MAX_KEEP_RECENT_COUNT

__all__ = [
    "META_KEY",
    "META_VERSION",
    "MODEL_INPUT_KEY",
    "ModelInputMessages",
    "WorkingMemoryMeta",
    "WorkingMemoryReactState",
    "WorkingMemoryState",
    "archive_aware_add_messages",
    "clamp_meta",
    "empty_meta",
    "validate_keep_recent_count",
]

META_KEY = "working_memory"
"""The state key of the meta value."""

META_VERSION = 1

MODEL_INPUT_KEY = "llm_input_messages"
"""The state key of the assembled model input (``assemble`` / ``pre_model_hook`` output)."""


class WorkingMemoryMeta(TypedDict):
    """The JSON-plain meta value (see the module docstring)."""

    v: int
    pending_tokens: int
    keep_recent_count: int
    window: list[list[Any]]
    last_counted_id: str | None
    last_counted_index: int
    archives: list[str]


def archive_aware_add_messages(left: Messages, right: Messages) -> Messages:
    """``add_messages``, except that removing a message that is not live does not fail.

    The messages the engine archived are no longer in the state, so LangGraph's reducer raises
    on ``RemoveMessage(id)`` of one of them and the whole turn fails. Here such a removal stays in
    the state as a removal request (the ``RemoveMessage`` itself, after the live messages) that
    the next Working Memory hook carries out and takes out again: an archived message is hidden
    from the archive tools, from the pending layer of assemble and from Phase 2 (its record
    stays verbatim: archives are immutable); an id known nowhere is ignored.
    """
    lefts: list[Any] = list(left) if isinstance(left, list) else [left]
    rights: list[Any] = list(right) if isinstance(right, list) else [right]
    cut = max((i for i, m in enumerate(rights) if _removes_all(m)), default=None)
    if cut is not None:  # like add_messages: what follows the last REMOVE_ALL replaces all
        lefts, rights = [], rights[cut + 1 :]
    known = {m.id for m in convert_to_messages(lefts)}
    requests: list[RemoveMessage] = []
    passed: list[Any] = []
    for message in convert_to_messages(rights):
        if isinstance(message, RemoveMessage) and message.id not in known:
            requests.append(message)
            continue
        passed.append(message)
        if not isinstance(message, RemoveMessage) and message.id:
            known.add(message.id)
    merged: list[Any] = list(cast("list[Any]", add_messages(lefts, passed)))
    present = {m.id for m in merged if isinstance(m, BaseMessage)}
    for request in requests:
        if request.id not in present:
            merged.append(request)
            present.add(request.id)
    return merged


def _removes_all(message: object) -> bool:
    return isinstance(message, RemoveMessage) and message.id == REMOVE_ALL_MESSAGES


ModelInputMessages = Annotated[list[AnyMessage], UntrackedValue]
"""The type of a state key that carries the assembled model input (``llm_input_messages``).

An ``UntrackedValue`` channel: nodes of the same run read it, but it is never written to a
checkpoint or to the pending writes, so the prompt built before every model call (WM, pending
archives, live messages) does not grow the checkpointer by a copy of the context per step.
"""


class WorkingMemoryState(TypedDict):
    """A StateGraph schema for agents with Working Memory.

    ``messages`` are the live messages (:func:`archive_aware_add_messages`: ``add_messages``
    that also accepts ``RemoveMessage`` of an archived id); ``working_memory`` is the meta value
    the hooks maintain; ``llm_input_messages`` is what ``assemble`` builds for the model
    (:data:`ModelInputMessages`: available to the nodes after ``assemble`` in the same run,
    never checkpointed — keep ``assemble`` right before the model node).
    """

    messages: Annotated[list[AnyMessage], archive_aware_add_messages]
    working_memory: NotRequired[dict[str, Any]]
    llm_input_messages: NotRequired[ModelInputMessages]


class WorkingMemoryReactState(TypedDict):
    """``create_react_agent``'s ``AgentState`` plus an uncheckpointed ``llm_input_messages``.

    Pass it as ``state_schema=`` with ``pre_model_hook=memory.pre_model_hook``: the hook's
    assembled context then reaches the model without being stored in every checkpoint.
    A custom schema gets the same by declaring ``llm_input_messages: ModelInputMessages``.
    """

    messages: Annotated[Sequence[BaseMessage], archive_aware_add_messages]
    remaining_steps: NotRequired[RemainingSteps]
    llm_input_messages: NotRequired[ModelInputMessages]


def validate_keep_recent_count(value: object) -> int:
    """Return ``value`` when it is an int in 0..10,000, else raise a clear error.

    Raises:
        TypeError: Not an int.
        ValueError: Outside 0..10,000.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"keep_recent_count must be an int, got {type(value).__name__}")
    if not 0 <= value <= MAX_KEEP_RECENT_COUNT:
        raise ValueError(
            f"keep_recent_count must be between 0 and {MAX_KEEP_RECENT_COUNT}, got {value}"
        )
    return value


def empty_meta(keep_recent_count: int) -> WorkingMemoryMeta:
    """A meta for a thread with no messages accounted yet."""
    return {
        "v": META_VERSION,
        "pending_tokens": 0,
        "keep_recent_count": validate_keep_recent_count(keep_recent_count),
        "window": [],
        "last_counted_id": None,
        "last_counted_index": -1,
        "archives": [],
    }


def _int(value: object, default: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def clamp_meta(raw: Mapping[str, Any] | None, keep_recent_count: int) -> WorkingMemoryMeta:
    """Read a meta value defensively: clamp counters at 0, drop malformed window entries.

    Args:
        raw: A stored meta value, or None.
        keep_recent_count: The window size to use when ``raw`` has none (validated).

    Returns:
        A fresh meta; ``raw`` is not modified.
    """
    keep = validate_keep_recent_count(keep_recent_count)
    if not isinstance(raw, Mapping):
        return empty_meta(keep)
    stored_keep = raw.get("keep_recent_count", keep)
    try:
        keep = validate_keep_recent_count(stored_keep)
    except (TypeError, ValueError):
        keep = max(0, min(MAX_KEEP_RECENT_COUNT, _int(stored_keep, keep)))
    window = [
        [str(entry[0]), max(0, _int(entry[1]))]
        for entry in raw.get("window") or []
        if isinstance(entry, list | tuple) and len(entry) == 2 and entry[0] is not None
    ]
    last_id = raw.get("last_counted_id")
    archives = raw.get("archives") or []
    return {
        "v": META_VERSION,
        "pending_tokens": max(0, _int(raw.get("pending_tokens"))),
        "keep_recent_count": keep,
        "window": window,
        "last_counted_id": str(last_id) if last_id is not None else None,
        "last_counted_index": max(-1, _int(raw.get("last_counted_index"), -1)),
        "archives": [str(a) for a in archives if isinstance(a, str)],
    }
