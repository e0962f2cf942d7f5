"""Archive recall tools for the agent: ``archive_expand`` and ``archive_search`` (behaviour §7.6).

The Working Memory is a summary; the archives keep every message verbatim. These two tools let
the agent read them back:

- ``archive_expand(archive_id, offset=0)``: one archive's original messages with its abstract and
  message count, in pages (``offset`` is a message offset; the output says how to get the next
  page).
- ``archive_search(query, archive_id=None)``: a literal, case-insensitive search over the
  thread's archived messages (not the summaries), newest archive first, at most
  :data:`MAX_SEARCH_HITS` hits of at most :data:`MAX_HIT_CHARS` characters each, each labelled
  with its archive id. Without ``archive_id`` it first searches the items the size contract
  moved out of the Working Memory (the WM's ``[moved out: N older items …]`` marker points
  here), when the engine offers them (``moved_items(config)``).

Both tools read the thread from the ``RunnableConfig`` of the tool call
(``configurable.thread_id``), so they only ever see the calling thread's archives. An id that is
not one of them — another thread's, a malformed one, anything path-like — is refused with a
message returned as the tool output; the tools never raise on bad input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

__all__ = [
    "ARCHIVE_EXPAND",
    "ARCHIVE_SEARCH",
    "MAX_HIT_CHARS",
    "MAX_SEARCH_HITS",
    "PAGE_CHARS",
    "PAGE_MESSAGES",
    "ArchiveRecordLike",
    "ArchiveSource",
    "archive_expand_text",
    "archive_search_text",
    "make_archive_tools",
]

ARCHIVE_EXPAND = "archive_expand"
ARCHIVE_SEARCH = "archive_search"

MAX_SEARCH_HITS = 12
"""At most this many hits per search."""

MAX_HIT_CHARS = 1500
"""At most this many characters of message text per hit."""

PAGE_MESSAGES = 40
"""At most this many messages per ``archive_expand`` page."""

PAGE_CHARS = 24_000
"""Rendered characters per ``archive_expand`` page (about 6,000 tokens); a page always holds at
least one message, a single longer message is cut with a visible marker."""

_MAX_ID_CHARS = 128
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_MAX_QUERY_CHARS = 500
_MAX_LISTED_IDS = 20


class ArchiveRecordLike(Protocol):
    """What the tools read from an archive record (``WorkingMemory.list_archives`` items)."""

    @property
    def id(self) -> str:
        """The archive id, unique within the store (e.g. ``archive_003``)."""

    @property
    def seq(self) -> int:
        """The archive's position in the thread's order (1 = oldest)."""

    @property
    def status(self) -> str:
        """``"pending"``, ``"done"`` or ``"failed"``."""

    @property
    def messages(self) -> Sequence[BaseMessage]:
        """The archived messages, verbatim."""

    @property
    def abstract(self) -> str | None:
        """One-line abstract written when Phase 2 completed (empty/None before)."""


class ArchiveSource(Protocol):
    """The engine side the tools need: the calling thread's archives."""

    def list_archives(self, config: RunnableConfig) -> Sequence[ArchiveRecordLike]:
        """The archives of ``config``'s thread (oldest first)."""


class _ExpandInput(BaseModel):
    archive_id: str = Field(description="An archive id of this conversation, e.g. archive_003.")
    offset: int = Field(
        default=0,
        description="Message offset to start from (0 = first message); use it for later pages.",
    )


class _SearchInput(BaseModel):
    query: str = Field(description="Literal text to find (case-insensitive, not a regex).")
    archive_id: str | None = Field(
        default=None, description="Limit the search to this archive id (default: all archives)."
    )


_EXPAND_DESCRIPTION = (
    "Read the original, verbatim messages of one archived part of this conversation "
    "(the [Session History Summary] compresses them). Returns the archive's abstract, its "
    "message count and one page of messages; pass offset to read further pages."
)
_SEARCH_DESCRIPTION = (
    "Search the original messages of this conversation's archives for literal text "
    "(case-insensitive). Newest archive first; returns up to 12 matching excerpts labelled "
    "with their archive id and message number. Use archive_expand to read around a hit."
)


def make_archive_tools(memory: ArchiveSource) -> list[BaseTool]:
    """The two archive tools bound to ``memory`` (what ``WorkingMemory.tools`` returns).

    Args:
        memory: The engine whose ``list_archives(config)`` the tools read.

    Returns:
        ``[archive_expand, archive_search]`` as LangChain tools; each reads the thread from
        the ``RunnableConfig`` it is called with, so it works under ``ToolNode``,
        ``create_agent`` and ``create_react_agent``.
    """

    def archive_expand(archive_id: str, config: RunnableConfig, offset: int = 0) -> str:
        return archive_expand_text(memory, config, archive_id, offset)

    def archive_search(query: str, config: RunnableConfig, archive_id: str | None = None) -> str:
        return archive_search_text(memory, config, query, archive_id)

    return [
        StructuredTool.from_function(
            func=archive_expand,
            name=ARCHIVE_EXPAND,
            description=_EXPAND_DESCRIPTION,
            args_schema=_ExpandInput,
        ),
        StructuredTool.from_function(
            func=archive_search,
            name=ARCHIVE_SEARCH,
            description=_SEARCH_DESCRIPTION,
            args_schema=_SearchInput,
        ),
    ]


def archive_expand_text(
    memory: ArchiveSource, config: RunnableConfig, archive_id: object, offset: object = 0
) -> str:
    """The ``archive_expand`` tool output (never raises on bad input; refusals are text).

    Args:
        memory: The engine to read archives from.
        config: The tool call's config (its ``thread_id`` selects the archives).
        archive_id: The requested id.
        offset: The message offset of the page.

    Returns:
        A page of the archive, or a refusal explaining what was wrong.
    """
    archives = _archives_or_error(memory, config)
    if isinstance(archives, str):
        return archives
    record = _find(archives, archive_id)
    if isinstance(record, str):
        return record
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        return f"Refused: offset must be a whole number >= 0, got {offset!r}."
    messages = list(record.messages)
    total = len(messages)
    header = [f"Archive {record.id} (#{record.seq}, status {record.status}): {total} messages."]
    abstract = (record.abstract or "").strip()
    header.append(f"Abstract: {abstract}" if abstract else "Abstract: (not written yet)")
    if total == 0:
        return "\n".join([*header, "(this archive holds no messages)"])
    if offset >= total:
        return "\n".join(
            [*header, f"Offset {offset} is past the end; valid offsets are 0..{total - 1}."]
        )
    lines, end = _page(messages, offset)
    header.append(f"Messages {offset + 1}-{end} of {total}:")
    if end < total:
        footer = (
            f"[{total - end} more messages: call archive_expand(archive_id={record.id!r}, "
            f"offset={end}) for the next page.]"
        )
    else:
        footer = "[End of archive.]"
    return "\n".join([*header, "", *lines, "", footer])


def archive_search_text(
    memory: ArchiveSource, config: RunnableConfig, query: object, archive_id: object = None
) -> str:
    """The ``archive_search`` tool output (never raises on bad input; refusals are text).

    Args:
        memory: The engine to read archives from.
        config: The tool call's config (its ``thread_id`` selects the archives).
        query: Literal text to find, case-insensitively.
        archive_id: Optionally one archive id of this thread to search in.

    Returns:
        Up to :data:`MAX_SEARCH_HITS` labelled excerpts, newest archive first, or a message
        saying nothing matched / what was wrong.
    """
    if not isinstance(query, str) or not query.strip():
        return "Refused: query must be non-empty text."
    needle = query.strip()
    if len(needle) > _MAX_QUERY_CHARS:
        return f"Refused: query is longer than {_MAX_QUERY_CHARS} characters; use a keyword."
    archives = _archives_or_error(memory, config)
    if isinstance(archives, str):
        return archives
    if archive_id is not None and archive_id != "":
        found = _find(archives, archive_id)
        if isinstance(found, str):
            return found
        archives = [found]
    # A case-insensitive regex of the escaped text: literal, and its match positions are
    # positions in the original text (casefold() can change lengths, e.g. "ß" -> "ss").
    pattern = re.compile(re.escape(needle), re.IGNORECASE)
    hits: list[str] = []
    more = False
    for record in sorted(archives, key=lambda r: r.seq, reverse=True):
        messages = list(record.messages)
        for index, message in enumerate(messages):
            text = _render(message)
            match = pattern.search(text)
            if match is None:
                continue
            if len(hits) == MAX_SEARCH_HITS:
                more = True
                break
            label = f"[{record.id} · message {index + 1}/{len(messages)} · {_role(message)}]"
            hits.append(f"{label}\n{_excerpt(text, match.start(), match.end() - match.start())}")
        if more:
            break
    if not archive_id:
        hits = [*_moved_hits(memory, config, pattern), *hits]
        more = more or len(hits) > MAX_SEARCH_HITS
        hits = hits[:MAX_SEARCH_HITS]
    scope = f"archive {archives[0].id}" if archive_id else "this conversation's archives"
    if not hits:
        return f"No match for {needle!r} in {scope} ({len(archives)} searched)."
    summary = f"{len(hits)} match(es) for {needle!r} in {scope}, newest archive first"
    if more:
        summary += f" (showing the first {MAX_SEARCH_HITS}; narrow the query or pass archive_id)"
    return "\n\n".join([summary + ":", *hits])


def _moved_hits(
    memory: ArchiveSource, config: RunnableConfig, pattern: re.Pattern[str]
) -> list[str]:
    """Hits among the items moved out of the Working Memory, newest first."""
    moved = getattr(memory, "moved_items", None)
    if not callable(moved):
        return []
    hits: list[str] = []
    for key, section, text in reversed(list(moved(config))):
        match = pattern.search(text)
        if match is None:
            continue
        label = f"[moved out of the Working Memory · {section} · at {key}]"
        hits.append(f"{label}\n{_excerpt(text, match.start(), match.end() - match.start())}")
        if len(hits) > MAX_SEARCH_HITS:
            break
    return hits


def _archives_or_error(
    memory: ArchiveSource, config: RunnableConfig
) -> list[ArchiveRecordLike] | str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or thread == "":
        return (
            "Refused: no thread_id in the tool call's config, so there is no conversation "
            "whose archives could be read."
        )
    try:
        # An engine hides messages removed after they were archived (RemoveMessage).
        recall = getattr(memory, "recall_archives", None)
        return list(recall(config) if callable(recall) else memory.list_archives(config))
    except ValueError as exc:
        return f"Refused: {exc}"


def _find(archives: Sequence[ArchiveRecordLike], archive_id: object) -> ArchiveRecordLike | str:
    if not isinstance(archive_id, str):
        return f"Refused: archive_id must be text such as 'archive_001', got {archive_id!r}."
    shown = archive_id if len(archive_id) <= 80 else archive_id[:80] + "…"
    if "/" in archive_id or "\\" in archive_id or ".." in archive_id:
        return (
            f"Refused: {shown!r} looks like a path; archive ids are plain names like archive_001."
        )
    if len(archive_id) > _MAX_ID_CHARS or not _ID_RE.fullmatch(archive_id):
        return f"Refused: {shown!r} is not a valid archive id (expected e.g. 'archive_001')."
    for record in archives:
        if record.id == archive_id:
            return record
    if not archives:
        return f"Refused: {shown!r} is not an archive of this conversation (it has none yet)."
    ids = [r.id for r in sorted(archives, key=lambda r: r.seq)]
    listed = ", ".join(ids[-_MAX_LISTED_IDS:])
    prefix = "…, " if len(ids) > _MAX_LISTED_IDS else ""
    return (
        f"Refused: {shown!r} is not an archive of this conversation. "
        f"Its archives are: {prefix}{listed}."
    )


def _page(messages: Sequence[BaseMessage], offset: int) -> tuple[list[str], int]:
    lines: list[str] = []
    used = 0
    index = offset
    while index < len(messages) and index - offset < PAGE_MESSAGES:
        block = f"[{index + 1}] {_role(messages[index])}: {_render(messages[index])}"
        if lines and used + len(block) > PAGE_CHARS:
            break
        if len(block) > PAGE_CHARS:
            cut = len(block) - PAGE_CHARS
            block = (
                block[:PAGE_CHARS] + f"\n[… {cut} more characters of this message not shown; "
                "use archive_search with a keyword from it to see other parts …]"
            )
        lines.append(block)
        used += len(block)
        index += 1
    return lines, index


def _role(message: BaseMessage) -> str:
    if isinstance(message, ToolMessage):
        name = message.name or "tool"
        status = " error" if message.status == "error" else ""
        return f"tool result{status} ({name})"
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


def _render(message: BaseMessage) -> str:
    parts: list[str] = [str(message.text)]
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = json.dumps(call.get("args", {}), ensure_ascii=False, default=str)
            parts.append(f"→ tool call {call['name']}({args})")
    return "\n".join(p for p in parts if p)


def _excerpt(text: str, position: int, length: int) -> str:
    if len(text) <= MAX_HIT_CHARS:
        return text
    marker = "…"
    room = MAX_HIT_CHARS - 2 * len(marker)
    start = max(0, min(position - (room - length) // 2, len(text) - room))
    end = start + room
    head = marker if start > 0 else ""
    tail = marker if end < len(text) else ""
    return f"{head}{text[start:end]}{tail}"
