"""Phase 1 of a commit: move the oldest live messages into a new archive (behaviour §6.3).

The archive record is written to the store first; the caller then returns the state update that
removes the messages. If the process dies in between, the messages are still live and the next
commit on that timeline adopts the orphaned record (it holds exactly the next messages to
archive, after the same archive), then archives what follows under a new id: nothing is lost,
duplicated or left behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from wm_langgraph.messages import content_text
from wm_langgraph.phase1.window import MessageCounter, conversation, rebuild_meta, safe_split
from wm_langgraph.state import WorkingMemoryMeta
from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore, digest_of, now_iso
from wm_langgraph.storage.search_index import SearchIndex

__all__ = ["Phase1Result", "abstract_of", "archive_oldest"]

_ABSTRACT_CHARS = 120


@dataclass(frozen=True, slots=True)
class Phase1Result:
    """The archives a commit put on the timeline (usually one) and what stays live."""

    records: list[ArchiveRecord]
    remaining: list[BaseMessage]
    meta: WorkingMemoryMeta

    @property
    def archived(self) -> list[BaseMessage]:
        """Every message the commit took out of the live state, in order."""
        return [m for record in self.records for m in record.messages]


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


def _adoptable(
    records: Sequence[ArchiveRecord], convo: Sequence[BaseMessage], start: int, split: int
) -> ArchiveRecord | None:
    """A record already at this position that holds exactly the next messages to archive."""
    for record in records:
        end = start + record.message_count
        if record.message_count <= 0 or end > split or safe_split(convo, end) != end:
            continue
        if digest_of(convo[start:end]) == record.digest:
            return record
    return None


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

    A record already written at the next position of the timeline for exactly the next
    messages (verbatim, after the same archive) is put on the timeline instead of a new one:
    the record of a commit whose state update a crash kept out of the checkpoint, or the one
    another branch wrote from the same history. The rest gets a new record under an id no
    other branch uses. Records are never rewritten.

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
    if len(convo) == len(messages):
        # No system prompt at the head: a system note right after the split would become one
        # (never counted or archived again); it goes with the archived part instead.
        while 0 < split < len(convo) and isinstance(convo[split], SystemMessage):
            split += 1
    if split <= 0:
        return None
    known = {str(k): int(v) for k, v in meta["window"]}
    timeline = list(meta["archives"])
    records: list[ArchiveRecord] = []
    start = 0
    while start < split:
        existing, free_id = archives.slot(thread_id, timeline)
        record = _adoptable(existing, convo, start, split)
        if record is None:
            chunk = convo[start:split]
            record = _new_record(
                archives, thread_id, free_id, timeline, chunk, tokens=known, count=count
            )
        else:  # the index may predate the record's write or miss it after a crash
            archives.index_messages(thread_id, record.id, record.messages)
        records.append(record)
        timeline.append(record.id)
        start += record.message_count
    gone = {m.id for m in convo[:split]}
    remaining = [m for m in messages if m.id not in gone]
    new_meta = rebuild_meta(remaining, window_keep, count, archives=timeline, known=known)
    return Phase1Result(records=records, remaining=remaining, meta=new_meta)


def _new_record(
    archives: ArchiveStore,
    thread_id: str,
    archive_id: str,
    timeline: Sequence[str],
    archived: Sequence[BaseMessage],
    *,
    tokens: dict[str, int],
    count: MessageCounter,
) -> ArchiveRecord:
    sizes = [tokens[m.id] if m.id in tokens else count(m) for m in archived]
    stamp = now_iso()
    record = ArchiveRecord(
        id=archive_id,
        seq=len(timeline) + 1,
        status="pending",
        messages=list(archived),
        message_count=len(archived),
        token_count=sum(sizes),
        abstract=abstract_of(archived),
        thread_id=thread_id,
        created_at=stamp,
        updated_at=stamp,
        prev=timeline[-1] if timeline else None,
        digest=digest_of(archived),
        message_tokens=sizes,
    )
    # The message index first, then the record (an index entry naming an archive that never
    # got written is harmless: lookups only count archives of the asking timeline; a record
    # missing from it is not), then its search index (behaviour §7.6), once: archives are
    # immutable; a crash before it leaves the archive to be indexed by the first search that
    # needs it. One read and one write batch: the commit waits for each round trip.
    search = SearchIndex(archives)
    op, index = search.prepare(thread_id, record)
    archives.put_new_archive(record, then=[op])
    search.written(thread_id, record, index)
    return record
