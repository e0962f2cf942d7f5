"""Phase 1 of a commit: move the oldest live messages into a new archive (SPEC §6).

The archive record is written to the store first; the caller then returns the state update that
removes the messages. If the process dies in between, the messages are still live and the next
commit takes the orphaned record over (same id, same messages): nothing is lost or duplicated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from wm_langgraph.engine.archives import ArchiveRecord, ArchiveStore, now_iso
from wm_langgraph.engine.render import content_text
from wm_langgraph.engine.state import WorkingMemoryMeta
from wm_langgraph.engine.window import MessageCounter, conversation, rebuild_meta, safe_split

__all__ = ["Phase1Result", "abstract_of", "archive_oldest"]

_ABSTRACT_CHARS = 120


@dataclass(frozen=True, slots=True)
class Phase1Result:
    """A new archive and what stays live."""

    record: ArchiveRecord
    remaining: list[BaseMessage]
    meta: WorkingMemoryMeta


def _one_line(text: str, limit: int = _ABSTRACT_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def abstract_of(messages: Sequence[BaseMessage]) -> str:
    """A one-line description: the message count and the first and last user requests."""
    asks = [content_text(m.content) for m in messages if isinstance(m, HumanMessage)]
    asks = [a for a in asks if a.strip()]
    head = f"{len(messages)} messages"
    if not asks:
        texts = [content_text(m.content) for m in messages if content_text(m.content).strip()]
        return f"{head}: {_one_line(texts[0])}" if texts else head
    if len(asks) == 1:
        return f"{head}: {_one_line(asks[0])}"
    return f"{head}: {_one_line(asks[0], 60)} … {_one_line(asks[-1], 60)}"


def archive_oldest(
    archives: ArchiveStore,
    thread_id: str,
    messages: Sequence[BaseMessage],
    meta: WorkingMemoryMeta,
    *,
    keep: int,
    window_keep: int,
    count: MessageCounter,
) -> Phase1Result | None:
    """Archive all but the newest ``keep`` conversation messages (tool-pair-safe).

    Args:
        archives: Where the record goes.
        thread_id: The thread.
        messages: The live messages (all with ids).
        meta: The accounted meta of ``messages``.
        keep: Messages to keep live (the split moves back so no tool pair is cut).
        window_keep: The recent-window size for the rebuilt meta.
        count: Tokens of one message.

    Returns:
        The result, or None when nothing can be archived.
    """
    convo = conversation(messages)
    split = safe_split(convo, len(convo) - max(0, keep))
    if split <= 0:
        return None
    archived = convo[:split]
    gone = {m.id for m in archived}
    remaining = [m for m in messages if isinstance(m, SystemMessage) or m.id not in gone]
    known = {str(k): int(v) for k, v in meta["window"]}
    tokens = sum(known[m.id] if m.id in known else count(m) for m in archived)
    timeline = list(meta["archives"])
    archived_ids = [str(m.id) for m in archived]
    archive_id = archives.allocate_id(thread_id, timeline, archived_ids)
    # The index first: an index entry naming an archive that never got written is harmless
    # (lookups only count archives of the asking timeline), a record missing from it is not.
    archives.index_messages(thread_id, archive_id, archived_ids)
    stamp = now_iso()
    record = ArchiveRecord(
        id=archive_id,
        seq=len(timeline) + 1,
        status="pending",
        messages=list(archived),
        message_count=len(archived),
        token_count=tokens,
        abstract=abstract_of(archived),
        metadata={"kept_live": len(conversation(remaining))},
        thread_id=thread_id,
        created_at=stamp,
        updated_at=stamp,
    )
    archives.put_archive(record)
    new_meta = rebuild_meta(
        remaining, window_keep, count, archives=[*timeline, archive_id], known=known
    )
    return Phase1Result(record=record, remaining=remaining, meta=new_meta)
