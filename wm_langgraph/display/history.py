"""A thread's model calls, found again in its checkpoint history (for the report's per-call
sizes).

Nothing on the turn's path records what each model call saw: recording it would cost a store
write per call. The report rebuilds it instead, after the fact, from what is stored anyway:

- **The calls.** The checkpointer keeps one checkpoint per graph step. Walking the lineage of
  the thread's newest checkpoint (``parent_config``, oldest first), every assistant message
  that first appears in a checkpoint is the answer of one model call, and the checkpoint
  before it is the state that call started from: its live messages and its meta (the
  timeline of archives). The call counts only when that state ends with the message the
  answer follows (a graph run with ``durability="exit"`` keeps no step in between; its calls
  are counted as not rebuilt).
- **The Working Memory at the time.** Working Memory versions are immutable and stamped with
  the time they were written. :class:`AsOfStore` is a read-only view of the store in which
  the versions written after a moment are not there yet; the engine's own ``build_context``,
  run over that view with the state of the call, assembles the input again, with the same
  code, the same budgets and the same counter.

What cannot be known is said: the agent's own system prompt is not in the state (the rebuilt
input carries the memory's system addition only), and a version written while a call was
being assembled counts as not seen by it (the moment is the checkpoint the call started from).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.store.base import BaseStore, GetOp, Item, Op, PutOp, Result, SearchOp

from wm_langgraph.state import META_KEY

__all__ = ["AsOfStore", "CallStart", "History", "parse_time", "read_history"]

_WM_KIND = "wm"
"""The last namespace segment of a memory's Working Memory versions."""


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 time as an aware datetime (UTC when it names no zone); None when it is not
    one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


class AsOfStore(BaseStore):
    """A read-only view of ``store`` at the moment :attr:`as_of`.

    Working Memory versions written after that moment are absent (gets return nothing,
    searches leave them out); every other record reads as it is. Writes are dropped: a report
    never changes the store it reads. ``as_of = None`` shows everything.
    """

    def __init__(self, store: BaseStore) -> None:
        """View ``store``."""
        self._store = store
        self.as_of: datetime | None = None

    def _visible(self, item: Item | None) -> bool:
        if item is None or self.as_of is None or not item.namespace:
            return True
        if item.namespace[-1] != _WM_KIND:
            return True
        written = parse_time(item.value.get("created_at"))
        return written is None or written <= self.as_of

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The reads of ``ops`` through the view; a write gives None and is not made."""
        ops = list(ops)
        reads = [op for op in ops if not isinstance(op, PutOp)]
        found = iter(self._store.batch(reads) if reads else [])
        out: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp):
                out.append(None)
                continue
            result = next(found)
            if isinstance(op, GetOp) and isinstance(result, Item) and not self._visible(result):
                result = None
            elif isinstance(op, SearchOp) and isinstance(result, list):
                result = [i for i in result if isinstance(i, Item) and self._visible(i)]
            out.append(result)
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch` (the sync API of the store, off the event loop)."""
        return await asyncio.to_thread(self.batch, list(ops))


@dataclass(frozen=True, slots=True)
class CallStart:
    """One model call as the checkpoints show it.

    Attributes:
        number: 1-based, in the order of the calls.
        turn: The user turn it belongs to (1-based: the user messages seen up to it).
        at: When the state it started from was saved (None when the saver gives no time).
        state: That state: ``messages`` and the memory's meta, as the checkpoint holds them.
        answer_id: The id of the assistant message it produced.
    """

    number: int
    turn: int
    at: datetime | None
    state: dict[str, Any]
    answer_id: str


@dataclass(frozen=True, slots=True)
class History:
    """What a thread's checkpoint lineage shows.

    Attributes:
        calls: The model calls whose starting state is in the lineage, in order.
        not_rebuilt: Answers whose starting state the checkpointer did not keep.
        turn_times: When each user turn's message first appears (id -> time), in order.
        checkpoints: How many checkpoints the lineage has.
    """

    calls: list[CallStart]
    not_rebuilt: int
    turn_times: dict[str, datetime | None]
    checkpoints: int


def _messages(found: CheckpointTuple) -> list[BaseMessage]:
    raw = (found.checkpoint.get("channel_values") or {}).get("messages")
    return [m for m in raw if isinstance(m, BaseMessage)] if isinstance(raw, list) else []


def _state(found: CheckpointTuple, messages: list[BaseMessage]) -> dict[str, Any]:
    values = found.checkpoint.get("channel_values") or {}
    state: dict[str, Any] = {"messages": messages}
    meta = values.get(META_KEY)
    if isinstance(meta, Mapping):
        state[META_KEY] = dict(meta)
    return state


def _lineage(checkpointer: BaseCheckpointSaver[Any], thread_id: str) -> list[CheckpointTuple]:
    """The checkpoints from the thread's first to its newest, following ``parent_config``."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    every = list(checkpointer.list(config))  # type: ignore[arg-type]
    if not every:
        return []
    by_id = {str(t.config["configurable"].get("checkpoint_id")): t for t in every}
    newest = max(by_id)  # checkpoint ids grow with time (uuid6)
    chain: list[CheckpointTuple] = []
    seen: set[str] = set()
    current: str | None = newest
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        found = by_id[current]
        chain.append(found)
        parent = found.parent_config or {}
        current = (parent.get("configurable") or {}).get("checkpoint_id")
    return chain[::-1]


def read_history(checkpointer: BaseCheckpointSaver[Any], thread_id: str) -> History:
    """The model calls and the user turns of ``thread_id``'s newest lineage (module docstring).

    Args:
        checkpointer: The graph's checkpointer.
        thread_id: The thread (the top-level graph's checkpoints are read).
    """
    chain = _lineage(checkpointer, thread_id)
    calls: list[CallStart] = []
    answered: set[str] = set()
    humans: dict[str, datetime | None] = {}
    not_rebuilt = 0
    previous: list[BaseMessage] = []
    previous_found: CheckpointTuple | None = None
    for found in chain:
        messages = _messages(found)
        at = parse_time(found.checkpoint.get("ts"))
        for index, message in enumerate(messages):
            if isinstance(message, HumanMessage) and message.id and message.id not in humans:
                humans[str(message.id)] = at
            if not isinstance(message, AIMessage) or not message.id or message.id in answered:
                continue
            answered.add(str(message.id))
            before = messages[index - 1].id if index else None
            if previous_found is None or not previous or before is None:
                not_rebuilt += 1
                continue
            if previous[-1].id != before:
                not_rebuilt += 1
                continue
            calls.append(
                CallStart(
                    number=len(calls) + 1,
                    turn=max(1, len(_humans_before(humans, previous))),
                    at=parse_time(previous_found.checkpoint.get("ts")),
                    state=_state(previous_found, previous),
                    answer_id=str(message.id),
                )
            )
        previous, previous_found = messages, found
    return History(calls, not_rebuilt, humans, len(chain))


def _humans_before(
    humans: Mapping[str, datetime | None], state: Sequence[BaseMessage]
) -> list[str]:
    """The user turns seen up to ``state`` (its newest user message and every earlier one)."""
    order = list(humans)
    newest = next((m.id for m in reversed(state) if isinstance(m, HumanMessage) and m.id), None)
    if newest is None or newest not in humans:
        return order
    return order[: order.index(newest) + 1]
