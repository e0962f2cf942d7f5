"""Archive recall tools for the agent: ``archive_expand`` and ``archive_search`` (behaviour §7.6).

The Working Memory is a summary; the archives keep every message verbatim. These two tools let
the agent read them back:

- ``archive_expand(archive_id, offset=0)``: one archive's original messages with its abstract and
  message count, in pages (``offset`` is a message offset; the output says how to get the next
  page).
- ``archive_search(query=None, queries=None, archive_id=None)``: a ranked search in plain
  words over the thread's archived messages and their abstracts (not the summaries) and,
  without ``archive_id``, the items the size contract moved out of the Working Memory (the
  WM's ``[moved out: N older items …]`` marker points here) when the engine offers them
  (``moved_items(config)``). ``queries`` takes several phrasings at once (at most
  :data:`MAX_QUERIES`; ``query`` is one more): each is ranked and their hits are merged, the
  best of each first, without repeats. Hits, best first, each labelled with its archive id,
  message number and role, with the messages before and after it, its archive's abstract (once
  per archive), when it was archived and the ``archive_expand`` offset that reads around it; a
  hit is at most :data:`MAX_HIT_CHARS` characters, and the whole output at most
  :data:`MAX_RESULT_TOKENS` tokens whatever the input (hits are shortened, then left out). A
  miss says that it is no proof: try other words, or read an archive whose abstract fits (the
  archives and their abstracts are listed). How queries are read and ranked:
  :mod:`wm_langgraph.recall.search`. An engine that offers ``recall_corpus(config)`` serves
  its stored index; any other source is indexed per query.

Both tools read the thread from the ``RunnableConfig`` of the tool call
(``configurable.thread_id``), so they only ever see the calling thread's archives. An id that is
not one of them — another thread's, a malformed one, anything path-like — is refused with a
message returned as the tool output; the tools never raise on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.messages import truncate_text
from wm_langgraph.recall.search import (
    ABSTRACT_ROLE,
    Corpus,
    Hit,
    Neighbour,
    StaleIndexError,
    rank,
)
from wm_langgraph.storage.search_index import (
    AbstractIndex,
    ArchiveIndex,
    role_label,
    searchable_text,
)

__all__ = [
    "ARCHIVE_EXPAND",
    "ARCHIVE_SEARCH",
    "HIT_ABSTRACT_CHARS",
    "MAX_HIT_CHARS",
    "MAX_QUERIES",
    "MAX_RESULT_TOKENS",
    "MAX_SEARCH_HITS",
    "MIN_EXCERPT_CHARS",
    "NEIGHBOUR_CHARS",
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

MAX_RESULT_TOKENS = 1_800
"""An ``archive_search`` output is at most this many tokens (``count_tokens``), whatever the
queries and the archived text: hits are shortened, then left out, to stay within it."""

MAX_QUERIES = 5
"""At most this many phrasings are searched per call (``query`` and ``queries`` together)."""

HIT_ABSTRACT_CHARS = 300
"""A hit shows its archive's abstract (the first hit of that archive in a result) in at most
this many characters, besides its own room."""

_SHOWN_QUERY_CHARS = 80
_HIT_ROOMS = (MAX_HIT_CHARS, 900, 500, 250, 120)
_LISTED_ABSTRACT_CHARS = 200
_MAX_LISTED_ABSTRACTS = 12

NEIGHBOUR_CHARS = 300
"""A neighbouring message gets this many characters of a hit (more when the hit is short)."""

MIN_EXCERPT_CHARS = 200
"""The matching message always gets at least this many characters of its hit."""

PAGE_MESSAGES = 40
"""At most this many messages per ``archive_expand`` page."""

PAGE_CHARS = 24_000
"""Rendered characters per ``archive_expand`` page (about 6,000 tokens); a page always holds at
least one message, a single longer message is cut with a visible marker."""

_MAX_ID_CHARS = 128
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_MAX_QUERY_CHARS = 500
_MAX_LISTED_IDS = 20
_NO_THREAD = (
    "Refused: no thread_id in the tool call's config, so there is no conversation "
    "whose archives could be read."
)


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
        """A one-line abstract: the writer's (Phase 2), else Phase 1's line (or empty)."""


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
    queries: list[str] | None = Field(
        default=None,
        description=(
            "Two to five phrasings of what to find, in your own words: the question, the "
            "keywords a message would contain (names, places, things, e.g. 'billing database "
            "migration'), synonyms and related events; an exact name, path, id or error text "
            "finds that text. Each is searched; the hits are merged."
        ),
    )
    query: str | None = Field(
        default=None, description="One phrasing (the same as a one-item queries list)."
    )
    archive_id: str | None = Field(
        default=None, description="Limit the search to this archive id (default: all archives)."
    )


_EXPAND_DESCRIPTION = (
    "Read the original, verbatim messages of one archived part of this conversation "
    "(the [Session History Summary] compresses them). Returns the archive's abstract, its "
    "message count and one page of messages; pass offset to read further pages."
)
_SEARCH_DESCRIPTION = (
    "Search the earlier, archived part of this conversation (the original messages, each "
    "archive's abstract, and the items moved out of the Working Memory). Use it whenever the "
    "answer is not in the messages and summary you can see: never answer from memory that "
    "something was not said before searching. Pass several phrasings in `queries`: the "
    "question in your own words, the keywords a message would use (names, places, things), "
    "synonyms and related events. Exact names, paths, ids and error text rank first. Returns "
    "the best hits, each with its archive id, message number, the messages around it and its "
    "archive's abstract; archive_expand with the offset a hit gives reads around it. No match "
    "does not mean it never happened: search again with other words, or expand an archive "
    "whose abstract fits."
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

    def archive_search(
        config: RunnableConfig,
        query: str | None = None,
        queries: list[str] | None = None,
        archive_id: str | None = None,
    ) -> str:
        return archive_search_text(memory, config, query, archive_id, queries=queries)

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


def _needles(query: object, queries: object) -> list[str] | str:
    """The phrasings to search (``query`` first, repeats once, at most :data:`MAX_QUERIES`),
    or a refusal saying what was wrong."""
    given: list[object] = []
    for value in (query, queries):
        if value is None or value == "":
            continue
        if isinstance(value, str):
            given.append(value)
        elif isinstance(value, list | tuple):
            given.extend(value)
        else:
            return "Refused: queries must be a list of texts, e.g. ['dog name', 'new puppy']."
    needles: list[str] = []
    for item in given:
        if not isinstance(item, str):
            return f"Refused: every query must be text, got {type(item).__name__}."
        needle = " ".join(item.split())
        if len(needle) > _MAX_QUERY_CHARS:
            return (
                f"Refused: a query is longer than {_MAX_QUERY_CHARS} characters; use fewer words."
            )
        if needle and needle.casefold() not in {n.casefold() for n in needles}:
            needles.append(needle)
    if not needles:
        return "Refused: give what to find: query (text) or queries (a list of texts)."
    return needles[:MAX_QUERIES]


def archive_search_text(
    memory: ArchiveSource,
    config: RunnableConfig,
    query: object,
    archive_id: object = None,
    *,
    queries: object = None,
) -> str:
    """The ``archive_search`` tool output (never raises on bad input; refusals are text).

    Args:
        memory: The engine to read archives from.
        config: The tool call's config (its ``thread_id`` selects the archives).
        query: What to find, in plain words, or an exact identifier (see
            :mod:`wm_langgraph.recall.search` for how a query is read and ranked); a list is
            read as ``queries``.
        archive_id: Optionally one archive id of this thread to search in.
        queries: More phrasings, searched each (at most :data:`MAX_QUERIES` in all).

    Returns:
        The merged hits, best first, each with its archive id, message number, role, its
        neighbouring messages, its archive's abstract and when it was archived; or a message
        saying nothing matched (and what to try) or what was wrong. At most
        :data:`MAX_RESULT_TOKENS` tokens.
    """
    needles = _needles(query, queries)
    if isinstance(needles, str):
        return needles
    ranked: list[list[Hit]] = []
    more = False
    searched = 0
    corpus: Corpus | str = ""
    for attempt in range(2):
        corpus = _corpus_or_error(memory, config)
        if isinstance(corpus, str):
            return corpus
        searched = len(corpus.indexes)
        if archive_id is not None and archive_id != "":
            found = _find_id(corpus.indexes, archive_id)
            if found != archive_id:
                return found
            corpus.indexes = [i for i in corpus.indexes if i.archive_id == found]
            corpus.moved = []
            searched = 1
        try:
            ranked, more = [], False
            for needle in needles:
                hits, over = rank(corpus, needle, MAX_SEARCH_HITS)
                ranked.append(hits)
                more = more or over
        except StaleIndexError:  # the records changed under the cache: read them anew, once
            if attempt:
                raise
            continue
        break
    scope = f"archive {archive_id}" if archive_id else "this conversation's archives"
    hits = _merged(ranked)
    asked = ", ".join(repr(_head(n, _SHOWN_QUERY_CHARS)) for n in needles)
    if not hits:
        listed = corpus.abstracts if isinstance(corpus, Corpus) else {}
        return _missed(asked, len(needles), scope, searched, listed)
    summary = f"{len(hits)} match(es) for {asked} in {scope}, best first"
    if count_tokens(summary) > MAX_RESULT_TOKENS // 4:
        summary = f"{len(hits)} match(es) for {len(needles)} queries in {scope}, best first"
    if more:
        summary += "; more matched: use other words or pass archive_id"
    summary += "; archive_expand(archive_id, offset=<message number - 1>) reads around a hit:"
    return _within_bound(summary, hits)


def _merged(ranked: list[list[Hit]]) -> list[Hit]:
    """The hits of several queries in turns (the best of each first), each once."""
    out: list[Hit] = []
    seen: set[tuple[object, ...]] = set()
    for place in range(max((len(r) for r in ranked), default=0)):
        for hits in ranked:
            if place >= len(hits):
                continue
            hit = hits[place]
            key: tuple[object, ...] = (hit.archive_id, hit.number, hit.role == ABSTRACT_ROLE)
            if hit.archive_id is None:
                key = (hit.moved_key, hit.section, hit.text)
            if key not in seen:
                seen.add(key)
                out.append(hit)
    # an abstract hit is redundant once a message of its archive is shown
    shown = {h.archive_id for h in out if h.role != ABSTRACT_ROLE}
    return [h for h in out if h.role != ABSTRACT_ROLE or h.archive_id not in shown]


def _within_bound(summary: str, hits: Sequence[Hit]) -> str:
    """The summary and as many hits as fit :data:`MAX_RESULT_TOKENS` (each as long as it may
    be, shortened before it is left out); a note says how many were left out."""
    blocks: list[str] = [summary]
    used = count_tokens(summary)
    shown: set[str] = set()
    note_room = 40
    for index, hit in enumerate(hits):
        placed = False
        for room in _HIT_ROOMS:
            block = _format_hit(hit, room, with_abstract=hit.archive_id not in shown)
            cost = count_tokens(block) + 2
            if used + cost <= MAX_RESULT_TOKENS - note_room:
                blocks.append(block)
                used += cost
                placed = True
                break
        if not placed:
            left = len(hits) - index
            blocks.append(f"[{left} more hit(s) not shown: search with narrower words.]")
            break
        if hit.archive_id is not None:
            shown.add(hit.archive_id)
    text = "\n\n".join(blocks)
    while count_tokens(text) > MAX_RESULT_TOKENS and len(blocks) > 1:
        blocks.pop()  # token counts of the parts and the whole can differ by a few
        text = "\n\n".join(blocks)
    return _capped(text)


def _capped(text: str) -> str:
    """``text`` within :data:`MAX_RESULT_TOKENS` (its start and end kept around a marker)."""
    return truncate_text(text, MAX_RESULT_TOKENS - 20)


def _missed(
    asked: str, count: int, scope: str, searched: int, abstracts: dict[str, AbstractIndex]
) -> str:
    """A miss: what it means, what to try, and the archives' abstracts to choose from."""
    head = f"No match for {asked} in {scope} ({searched} searched)."
    if count_tokens(head) > MAX_RESULT_TOKENS // 4:
        head = f"No match for {count} queries in {scope} ({searched} searched)."
    lines = [
        head,
        "A miss does not mean it never happened: the messages may use other words. Search "
        "again with synonyms, names, places or a related event, with fewer words, or read an "
        "archive whose abstract fits with archive_expand.",
    ]
    listed = list(abstracts.items())
    if len(listed) > _MAX_LISTED_ABSTRACTS:  # spread over the whole conversation
        step = len(listed) / _MAX_LISTED_ABSTRACTS
        listed = [listed[int(i * step)] for i in range(_MAX_LISTED_ABSTRACTS)]
    if listed:
        lines.append("Some archives and their abstracts:")
    text = "\n".join(lines)
    used = count_tokens(text)
    for archive_id, found in listed:
        line = f"- {archive_id}: {_head(found.text, _LISTED_ABSTRACT_CHARS)}"
        cost = count_tokens(line) + 1
        if used + cost > MAX_RESULT_TOKENS - 20:
            break
        text, used = f"{text}\n{line}", used + cost
    return _capped(text)


def _corpus_or_error(memory: ArchiveSource, config: RunnableConfig) -> Corpus | str:
    """The engine's indexed corpus, or one built from the records of a plain archive source."""
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or thread == "":
        return _NO_THREAD
    engine = getattr(memory, "recall_corpus", None)
    if callable(engine):
        try:
            corpus = engine(config)
        except ValueError as exc:
            return f"Refused: {exc}"
        if isinstance(corpus, Corpus):
            return corpus
    archives = _archives_or_error(memory, config)
    if isinstance(archives, str):
        return archives
    ordered = sorted(archives, key=lambda r: r.seq)
    records = [
        (r.id, r.seq, list(r.messages), str(getattr(r, "created_at", "") or "")) for r in ordered
    ]
    moved = getattr(memory, "moved_items", None)
    return Corpus.of_records(records, list(moved(config)) if callable(moved) else [])


def _format_hit(hit: Hit, room: int = MAX_HIT_CHARS, *, with_abstract: bool = True) -> str:
    """One hit: a label line, the message (an excerpt around the match), the messages before
    and after it, its archive's abstract (``with_abstract``) and where to read on; at most
    ``room`` characters after the label. An abstract hit shows the abstract and how to read
    its archive."""
    if hit.archive_id is None:
        label = f"[moved out of the Working Memory · {hit.section} · at {hit.moved_key}]"
        return f"{label}\n{_excerpt(hit.text, hit.start, hit.length, room)}"
    when = _when(hit.created_at)
    if hit.role == ABSTRACT_ROLE:
        label = f"[{hit.archive_id} · abstract · {hit.total} messages]"
        lines = [f"  abstract: {_head(_squashed(hit.text), max(40, room - 120))}"]
        lines.append(
            f"  archive_expand(archive_id={hit.archive_id!r}) reads its messages"
            + (f" (archived {when})" if when else "")
        )
        return "\n".join([label, *lines])
    label = f"[{hit.archive_id} · message {hit.number}/{hit.total} · {hit.role}]"
    footer = [f"  (archived {when})"] if when else []
    context = []  # on top of the room: the archive's abstract, once per result
    if with_abstract and hit.abstract:
        share = min(HIT_ABSTRACT_CHARS, max(40, room // 5))
        context = [f"  abstract of {hit.archive_id}: {_head(_squashed(hit.abstract), share)}"]
    # nearest neighbours first: they get their share before the farther ones
    near = [*zip(reversed(hit.before), hit.after, strict=False)]
    order = [n for pair in near for n in pair]
    order += [n for n in (*hit.before, *hit.after) if n not in order]
    room -= sum(len(f) + 1 for f in footer)
    main = min(len(hit.text), max(min(MIN_EXCERPT_CHARS, room), room // 2))
    room -= main
    shares: dict[int, int] = {}
    neighbour = max(40, min(NEIGHBOUR_CHARS, room // 2))
    for place, n in enumerate(order):
        prefix = _prefix(n, hit)
        want = min(len(_squashed(n.text)), neighbour if place < 2 else neighbour // 2)
        if room - len(prefix) - 1 < min(want, 40):
            break
        shares[id(n)] = min(want, room - len(prefix) - 1)
        room -= len(prefix) + 1 + shares[id(n)]
    if room > 0:  # a short hit and short neighbours: the rest goes to the hit, then to them
        grow = min(len(hit.text) - main, room)
        main += grow
        room -= grow
        for n in order:
            if id(n) in shares and room > 0:
                extra = min(len(_squashed(n.text)) - shares[id(n)], room)
                shares[id(n)] += extra
                room -= extra
    lines = [_excerpt(hit.text, hit.start, hit.length, max(1, main))]
    lines += [
        _prefix(n, hit) + _head(_squashed(n.text), shares[id(n)])
        for n in (*hit.before, *hit.after)
        if id(n) in shares
    ]
    return "\n".join([label, *lines, *context, *footer])


def _prefix(neighbour: Neighbour, hit: Hit) -> str:
    side = "before" if neighbour in hit.before else "after"
    place = "" if neighbour.archive_id == hit.archive_id else f"{neighbour.archive_id} "
    return f"  {side} · {place}message {neighbour.number}/{neighbour.total} · {neighbour.role}: "


def _squashed(text: str) -> str:
    return " ".join(text.split())


def _when(stamp: str) -> str:
    """An ISO time as ``2026-03-01 14:05 UTC`` (as given when it does not parse)."""
    if not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp[:32]
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _archives_or_error(
    memory: ArchiveSource, config: RunnableConfig
) -> list[ArchiveRecordLike] | str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None or thread == "":
        return _NO_THREAD
    try:
        # An engine hides messages removed after they were archived (RemoveMessage).
        recall = getattr(memory, "recall_archives", None)
        return list(recall(config) if callable(recall) else memory.list_archives(config))
    except ValueError as exc:
        return f"Refused: {exc}"


def _find(archives: Sequence[ArchiveRecordLike], archive_id: object) -> ArchiveRecordLike | str:
    found = _find_id([(r.id, r.seq) for r in archives], archive_id)
    for record in archives:
        if record.id == found:
            return record
    return found


def _find_id(archives: Sequence[tuple[str, int] | ArchiveIndex], archive_id: object) -> str:
    """``archive_id`` when it names one of ``archives`` (``(id, seq)`` pairs or indexes), else
    a refusal saying why (ids are untrusted input: path-like and malformed ones are refused)."""
    pairs = [(a.archive_id, a.seq) if isinstance(a, ArchiveIndex) else a for a in archives]
    if not isinstance(archive_id, str):
        return f"Refused: archive_id must be text such as 'archive_001', got {archive_id!r}."
    shown = archive_id if len(archive_id) <= 80 else archive_id[:80] + "…"
    if "/" in archive_id or "\\" in archive_id or ".." in archive_id:
        return (
            f"Refused: {shown!r} looks like a path; archive ids are plain names like archive_001."
        )
    if len(archive_id) > _MAX_ID_CHARS or not _ID_RE.fullmatch(archive_id):
        return f"Refused: {shown!r} is not a valid archive id (expected e.g. 'archive_001')."
    if any(a == archive_id for a, _ in pairs):
        return archive_id
    if not pairs:
        return f"Refused: {shown!r} is not an archive of this conversation (it has none yet)."
    ids = [a for a, _ in sorted(pairs, key=lambda p: p[1])]
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
                "use archive_search with words from it to see other parts …]"
            )
        lines.append(block)
        used += len(block)
        index += 1
    return lines, index


def _role(message: BaseMessage) -> str:
    return role_label(message)


def _render(message: BaseMessage) -> str:
    return searchable_text(message)


def _excerpt(text: str, position: int, length: int, limit: int = MAX_HIT_CHARS) -> str:
    """At most ``limit`` characters of ``text`` around ``position`` (cuts marked with …)."""
    if len(text) <= limit:
        return text
    marker = "…"
    room = limit - 2 * len(marker)
    start = max(0, min(position - (room - length) // 2, len(text) - room))
    end = start + room
    head = marker if start > 0 else ""
    tail = marker if end < len(text) else ""
    return f"{head}{text[start:end]}{tail}"
